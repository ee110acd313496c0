"""One writer per run folder: an exclusive ``flock`` on ``RUN_DIR/train.lock``, taken (by rank 0)
before anything is written there; the file records the holder's PID, host and start time. The
kernel drops the lock however its holder ends, so a free lock written on this host is stale and
taken over (logged); one written on another host is not (some shared file systems keep locks per
host): the line says to delete it. A file system without locks is noted and the run goes on. A
second training into a held folder is refused naming the holder; ``--overwrite`` clears only once
it holds the lock."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import time
from pathlib import Path

from seq2seq.atomic import make_folders, remove_empty
from seq2seq.training.run_dir import clear_run
from seq2seq.training.state import TrainingError

log = logging.getLogger("seq2seq")

LOCK_FILE = "train.lock"


class RunFolderBusy(TrainingError):
    """Another live process holds the run folder's lock."""


def _describe(holder: dict) -> str:
    """``PID 1234 on host gpu1, since 2026-12-03 16:40:12 UTC`` (what the lock file records)."""
    if not holder:
        return "a process that has not yet recorded itself"
    since = holder.get("since")
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(since)) if since is not None else "?"
    return f"PID {holder.get('pid', '?')} on host {holder.get('host', '?')}, since {when}"


def _read_holder(fd: int) -> dict:
    """The JSON the holder wrote into the lock file ({} when empty or unreadable)."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = json.loads(os.read(fd, 4096).decode("utf-8") or "{}")
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def live_holder(run_dir: Path) -> str | None:
    """Who holds ``run_dir``'s lock, in words (``PID 1234 on host gpu1, since ...``), when a live
    process does; None when none does (no lock file, or a stale one). Takes nothing."""
    try:
        fd = os.open(Path(run_dir) / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        return _describe(_read_holder(fd)) if e.errno in (errno.EACCES, errno.EAGAIN) else None
    finally:
        os.close(fd)  # drops the shared lock, if taken
    return None


class RunLock:
    """A context manager holding ``run_dir``'s lock (``enabled`` False: does nothing, for ranks
    other than 0): on entry makes the folder and takes the lock; on exit removes the lock file and,
    after an error with no checkpoint in the folder, the run files (``clear_run``'s names) and
    folders this run made.

    Raises:
        RunFolderBusy: another live process holds the lock (names it, and what to do).
        OSError: the folder or the lock file cannot be made.
    """

    def __init__(self, run_dir: Path, enabled: bool = True):
        self.run_dir, self.enabled = Path(run_dir), enabled
        self.path = self.run_dir / LOCK_FILE
        self.fd: int | None = None
        self.made: list[Path] = []  # folders made here, the deepest first
        self.before: frozenset[str] = frozenset()  # what the folder held before

    def __enter__(self) -> RunLock:
        if not self.enabled:
            return self
        self.made = make_folders(self.run_dir)
        self.before = frozenset(os.listdir(self.run_dir))  # a failed start removes only the new
        try:
            self._acquire()
        except BaseException:
            remove_empty(self.made)  # empty: nothing of the holder's is touched
            raise
        return self

    def _acquire(self) -> None:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                holder = _read_holder(fd)
                os.close(fd)
                if e.errno in (errno.EACCES, errno.EAGAIN):
                    raise RunFolderBusy(
                        f"{self.run_dir}: another training is writing this run folder "
                        f"({_describe(holder)}; lock {self.path}): wait for it to finish or stop "
                        "it (it saves last.pt), or train into another --run-dir"
                    ) from None
                if not holder:  # the empty file just made: leave no lock file that locks nothing
                    with contextlib.suppress(OSError):
                        self.path.unlink()
                why = f"cannot lock ({e.strerror}): make sure no other training writes this folder"
                log.warning(f"{self.path}: {why}")
                return
            # the file may have been removed (a holder's exit) between open and lock
            with contextlib.suppress(FileNotFoundError):
                if os.stat(self.path).st_ino == os.fstat(fd).st_ino:
                    break
            os.close(fd)
        old, host = _read_holder(fd), socket.gethostname()
        if old and old.get("host", host) != host:  # its lock may just not reach this host
            os.close(fd)
            raise RunFolderBusy(
                f"{self.run_dir}: a training on another host wrote {LOCK_FILE} ({_describe(old)}) "
                "and its lock is free here: it has ended, or this file system does not share "
                f"locks between hosts; if it no longer runs, delete {self.path} and try again"
            )
        if old:
            log.warning(
                "%s: taking over a stale lock (%s, no longer running)", self.path, _describe(old)
            )
        me = {"pid": os.getpid(), "host": host, "since": time.time()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(me) + "\n").encode("utf-8"), 0)
        self.fd = fd

    def __exit__(self, exc_type, exc, tb) -> None:
        failed = exc_type is not None and self.enabled and not any(self.run_dir.glob("*.pt"))
        if failed:
            with contextlib.suppress(OSError):  # still under the lock
                clear_run(self.run_dir, keep=self.before - {LOCK_FILE})
        if self.fd is not None:
            # unlinked before the lock goes: a waiter that opened this file sees it is gone
            with contextlib.suppress(OSError):
                self.path.unlink()
            os.close(self.fd)
            self.fd = None
        if failed:
            remove_empty(self.made)

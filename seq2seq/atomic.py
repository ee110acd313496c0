"""Atomic file writes: a temporary file in the same folder, fsync, rename, fsync the folder, so a
crash leaves the old file or the new one, never half of one. ``open_output`` and ``write_output``
serve every command's output option: ``-`` is standard output, a ``.gz`` path is gzip-compressed;
``check_writable`` and ``check_not_input`` refuse an output path before the work starts;
``sole_writer`` keeps a second process from writing an output a live one writes.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import fcntl
import gzip
import io
import os
import socket
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO


@contextmanager
def atomic_open(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file beside ``path`` (``mode`` "w": UTF-8 text, gzip-compressed for a
    ``.gz`` path; "wb": bytes as given); on a clean exit it is fsync'ed and renamed over ``path``,
    the folder fsync'ed; an error half-way leaves ``path`` as it was."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path}: is a folder; give a file name to write")
    target = replaced_path(path)
    if target is None:  # a device or a FIFO: written through, never replaced
        with named_errors(path), open(path, "wb") as raw:
            f = gzip_writer(raw, path) if "b" not in mode else _Unclosed(raw)
            yield f
            f.close()
        return
    path = target
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:  # name the user's file, not the temporary one beside it
        raise OSError(e.errno, e.strerror, str(path)) from None
    try:
        # mkstemp makes the file 0600; give it the mode an ordinary open() would (0666 - umask)
        os.fchmod(fd, 0o666 & ~_UMASK)
        with named_errors(path), os.fdopen(fd, "wb") as raw:
            f = gzip_writer(raw, path) if "b" not in mode else _Unclosed(raw)
            yield f
            f.close()  # the gzip trailer, if any; ``raw`` stays open
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_folder(path.parent)


@contextmanager
def named_errors(path: str | Path) -> Iterator[None]:
    """An OSError without a file name within the block (a full disk on a write: ``[Errno 28] No
    space left on device``) is raised again naming ``path``."""
    try:
        yield
    except OSError as e:
        if e.filename is not None:
            raise
        raise OSError(e.errno, e.strerror, str(path)) from None


def replaced_path(path: str | Path) -> Path | None:
    """The file an atomic write of ``path`` renames over: ``path`` itself, or a symbolic link's
    target (the link stays a link); None for an existing file that is not a regular one -- a
    device such as /dev/null, a FIFO, a shell's ``>(...)`` -- which is written through, as a shell
    redirect writes it, since a rename would replace it with a regular file."""
    path = Path(path)
    if path.exists() and not path.is_file() and not path.is_dir():
        return None
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def fsync_folder(folder: str | Path) -> None:
    """fsync a folder, so a rename into it survives a crash."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _escape(e: UnicodeEncodeError) -> tuple[str | bytes, int]:
    """The ``ESCAPE`` error handler: a run of lone surrogates -- the bytes of a file name (or an
    argument) that the locale could not decode -- as the bytes, when they are UTF-8, else escaped
    as ``\\udce9`` (JSON's own escape, which reads back as the name)."""
    run = e.object[e.start : e.end]
    try:
        raw = run.encode("utf-8", "surrogateescape")
        raw.decode("utf-8")  # are they UTF-8?
    except UnicodeError:
        return run.encode("ascii", "backslashreplace").decode("ascii"), e.end
    return raw, e.end


ESCAPE = "seq2seq.escape"  # the errors= of every text the tool writes (files, stdout, stderr, log)
codecs.register_error(ESCAPE, _escape)


def escaped(text: str) -> str:
    """``text`` as ``ESCAPE`` writes it: nothing left that UTF-8 cannot encode."""
    return text.encode("utf-8", ESCAPE).decode("utf-8")


def gzip_writer(raw: IO[bytes], path: str | Path) -> IO[str]:
    """A UTF-8 text stream (``ESCAPE``) that writes to the binary file ``raw`` (the file of
    ``path``), gzip-compressed when ``path`` ends in ``.gz``. Closing it leaves ``raw`` open."""
    if str(path).endswith(".gz"):  # GzipFile never closes a file it was given
        out: IO[bytes] = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
    else:
        out = _Unclosed(raw)
    return io.TextIOWrapper(out, encoding="utf-8", errors=ESCAPE)  # type: ignore[arg-type]


class _Unclosed(io.RawIOBase):
    """``raw`` behind a wrapper whose ``close`` only flushes it (the wrapper's owner closes it)."""

    def __init__(self, raw: IO[bytes]):
        super().__init__()
        self._raw = raw

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        return self._raw.write(b)

    def flush(self) -> None:
        if not self.closed:
            self._raw.flush()

    def fileno(self) -> int:
        return self._raw.fileno()


# Read once, at import (before any writer thread starts): os.umask can only be read by setting it,
# and setting it to 0 while another thread creates a file would make that file world-writable.
_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, rename, fsync the folder)."""
    with atomic_open(path, "wb") as f:
        f.write(data)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, as UTF-8 (gzip-compressed for a ``.gz`` path)."""
    with atomic_open(path) as f:
        f.write(text)


def is_stdout(path: str | Path | None) -> bool:
    """True for the path ``-`` (standard output); ``./-`` names a file called ``-``."""
    return path is not None and str(path) == "-"


@contextmanager
def open_output(path: str | Path) -> Iterator[IO[str]]:
    """A text stream for an output option: standard output for ``-`` (flushed on exit), else
    ``path`` written atomically (``atomic_open``: an error half-way leaves no truncated file)."""
    if is_stdout(path):
        yield sys.stdout
        sys.stdout.flush()
        return
    with atomic_open(path) as f:
        yield f


def write_output(path: str | Path, text: str) -> None:
    """Write ``text`` to an output option's path (``-``: standard output), atomically."""
    with open_output(path) as f:
        f.write(text)


class OutputError(ValueError):
    """An output path refused before the work starts (one line naming the option and path)."""


ANOTHER_PATH = "give a path in a folder you can write to"
# a run's own files besides its checkpoints and tokenizers: what loading it reads, its training
# record and the one-writer lock
RUN_FILES = (
    "config.yaml",
    "decode.yaml",
    "run_info.json",
    "train_summary.json",
    "train.log",
    "train_log.jsonl",
    "train.lock",
)


def check_writable(
    path: str | Path | None, option: str, *, folder: bool = False, fix: str = ANOTHER_PATH
) -> None:
    """Refuse in one line (``option`` ... ``fix``) an output the command could not write (a folder
    if ``folder``): a folder where a file goes or the reverse, a file on the way, or the nearest
    existing folder not writable (tried with an unnamed temporary file). None and ``-`` pass; leaves
    nothing made (the folders are the writer's)."""
    if path is None or is_stdout(path):
        return
    p = Path(path)
    if not folder and replaced_path(p) is None:  # a device, a FIFO: written through
        if not os.access(p, os.W_OK):
            raise OutputError(f"{option} {path}: cannot write there: not writable; {fix}")
        return
    if folder and p.exists() and not p.is_dir():
        raise OutputError(f"{option} {path}: is a file, not a folder; give a folder to write into")
    if not folder and p.is_dir():
        raise OutputError(f"{option} {path}: is a folder; give a file name to write")
    nearest = p if folder else p.parent
    while not nearest.exists() and not nearest.is_symlink() and nearest != nearest.parent:
        nearest = nearest.parent  # missing folders are made by the writer
    if not nearest.is_dir():
        kind = "a file, not a folder" if nearest.is_file() else "not a folder"
        raise OutputError(f"{option} {path}: cannot write there: {nearest} is {kind}; {fix}")
    if not _can_write(nearest):
        raise OutputError(
            f"{option} {path}: cannot write there: folder {nearest} is not writable; {fix}"
        )


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` name one file or folder: the same path once resolved, or one
    file by two names (a hard link, as a run's best.pt is to the last.pt of its step)."""
    try:
        return Path(a).resolve() == Path(b).resolve() or os.path.samefile(a, b)
    except OSError:  # either is missing: two different paths
        return False


def check_not_input(
    path: str | Path | None,
    option: str,
    inputs: Sequence[tuple[str, str | Path | None]] = (),
    runs: Sequence[str | Path] = (),
    checkpoints: bool = True,
    outputs: Sequence[tuple[str, str | Path | None]] = (),
) -> None:
    """Refuse in one line an output ``path`` of ``option`` that is one of ``inputs``
    or ``outputs`` ((option, path) each), or a checkpoint (``*.pt``, unless ``checkpoints`` is
    False), tokenizer or one of ``RUN_FILES`` of ``runs``. None and ``-``
    pass."""
    if path is None or is_stdout(path):
        return
    out = Path(path).resolve()

    def same(given: str | Path | None) -> bool:
        return given is not None and not is_stdout(given) and same_file(given, out)

    for opt, given in outputs:
        if same(given):
            raise OutputError(f"{option} {path} is also the {opt} path; give each output its own")
    for opt, given in inputs:
        if same(given):
            raise OutputError(
                f"{option} {path} is the {opt} file: writing it would replace what is read; "
                "write to another file"
            )
    for run in runs:
        folder = Path(run).resolve()
        folder = folder if folder.is_dir() else folder.parent
        run_file = (checkpoints and out.suffix == ".pt") or out.name in RUN_FILES
        run_file = run_file or out.name.startswith("spm")
        if out.parent == folder and (run_file or out == Path(run).resolve()):
            raise OutputError(
                f"{option} {path}: would overwrite the run's own {out.name}; write to a file "
                f"that is not one of the run's checkpoints, tokenizers or {', '.join(RUN_FILES)}"
            )


@contextmanager
def sole_writer(path: str | Path, option: str) -> Iterator[None]:
    """Within the block this process alone writes ``path``: it holds an exclusive ``flock`` on
    ``PATH.lock``, which records its PID and host (the kernel drops the lock however the holder
    ends, so a lock file left by a killed process is taken over). Nothing is held for standard
    output, a device or a FIFO, nor where the file system has no locks. On exit the lock file,
    and the folders made for it if left empty, are removed.

    Raises:
        OutputError: a live process holds the lock (names its PID and host).
    """
    target = None if is_stdout(path) else replaced_path(path)
    if target is None:
        yield
        return
    made = make_folders(target.parent)
    lock, held = Path(f"{target}.lock"), None
    try:
        while held is None:  # again if the holder removed the file between our open and lock
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                pid, _, host = os.pread(fd, 256, 0).decode(errors="replace").strip().partition(" ")
                os.close(fd)
                if e.errno in (errno.EAGAIN, errno.EACCES):
                    raise OutputError(
                        f"{option} {path}: another process is writing it (PID {pid or '?'} on host "
                        f"{host or '?'}; lock {lock}); wait for it to finish or stop it, or give "
                        f"another {option}"
                    ) from None
                lock.unlink(missing_ok=True)  # no locks on this file system: none is held
                break
            if os.path.exists(lock) and os.stat(lock).st_ino == os.fstat(fd).st_ino:
                held = fd
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
            else:
                os.close(fd)
        yield
    finally:
        if held is not None:  # removed before the lock goes: a waiter that opened it sees it gone
            lock.unlink(missing_ok=True)
            os.close(held)
        remove_empty(made)


def make_folders(folder: Path) -> list[Path]:
    """Make ``folder`` and the missing folders above it; returns those made, the deepest first
    (for ``remove_empty``)."""
    made = [p for p in (folder, *folder.parents) if not p.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    return made


def remove_empty(folders: Iterable[Path]) -> None:
    """Remove each of ``folders`` (the deepest first) that is empty; the others stay."""
    for folder in folders:
        with contextlib.suppress(OSError):  # not empty: something was written there
            folder.rmdir()


def _can_write(folder: Path) -> bool:
    """New files can be made in ``folder``: an unnamed temporary file made there and dropped, as
    permissions seen by root or a read-only file system do not say so (/proc)."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False

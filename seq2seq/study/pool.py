"""Worker processes for the study: ``run_pool`` runs jobs ``jobs`` at a time, one torch thread
each, and passes SIGTERM on to them; ``machine_line`` says how the runs shared the machine."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import torch

from seq2seq.runtime import describe_machine

log = logging.getLogger("seq2seq")

_STOP = None  # in a worker of ``run_pool``: the pool's stop event (set by SIGTERM to the main)
_BUSY = False  # and whether a job is running


def _worker_init(stop) -> None:
    """A worker's start: keep the pool's stop event; SIGTERM stops a running job (training saves
    last.pt first) and leaves an idle worker to the pool's shutdown."""
    import signal

    global _STOP
    _STOP = stop

    def on_sigterm(signum, frame):
        if _BUSY:
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)


def _guarded(fn: Callable, *args):
    """``fn(*args)`` in a worker, unless the pool was told to stop before it started."""
    global _BUSY
    if _STOP is not None and _STOP.is_set():
        raise KeyboardInterrupt  # queued before SIGTERM, never started
    _BUSY = True
    try:
        return fn(*args)
    finally:
        _BUSY = False


def machine_line(jobs: int) -> str:
    """The machine, and how the runs shared it (``jobs`` > 1 worker processes of one thread)."""
    if jobs <= 1:
        return describe_machine()
    return f"{describe_machine()}; {jobs} runs at a time, one torch thread each"


def worker_setup(name: str) -> None:
    """In a worker process of ``run_pool`` (not the main process): one torch thread, and log
    lines to stderr prefixed by the run's ``name``."""
    import multiprocessing

    from seq2seq.console import setup_logging

    if multiprocessing.parent_process() is None:
        return
    torch.set_num_threads(1)
    setup_logging()
    prefix = logging.Formatter(f"%(asctime)s %(levelname)s [{name}] %(message)s", "%H:%M:%S")
    for handler in log.handlers:
        handler.setFormatter(prefix)


def run_pool(fn: Callable, calls: Sequence[tuple], jobs: int, what: str) -> list:
    """``fn(*args)`` for every ``args`` in ``calls``, results in order: in this process one
    after the other when ``jobs`` <= 1, else ``jobs`` at a time in spawned worker processes
    (``fn``: a module-level function that calls ``worker_setup``). Raises whatever a job raises
    (KeyboardInterrupt: finished jobs' runs stay reusable)."""
    if jobs <= 1 or len(calls) <= 1:
        return [fn(*args) for args in calls]
    import multiprocessing
    import os
    import signal
    from concurrent.futures import CancelledError, ProcessPoolExecutor

    log.info("compare: %s %d runs, %d at a time (one thread each)", what, len(calls), jobs)
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    pool = ProcessPoolExecutor(
        max_workers=jobs, mp_context=ctx, initializer=_worker_init, initargs=(stop,)
    )
    futures = []

    def forward(signum, frame):  # kill, timeout or a hang-up signal this process only: pass on
        stop.set()  # a job already handed to a worker's queue does not start either
        for f in futures:
            f.cancel()  # the jobs not started yet
        workers = list(getattr(pool, "_processes", None) or {})  # the workers' pids
        name = signal.Signals(signum).name
        log.warning("compare: %s: the running jobs save their runs and stop", name)
        for pid in workers:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    previous = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):  # a hang-up (terminal closed) as SIGTERM
        try:
            if signal.getsignal(sig) is not signal.SIG_IGN:  # nohup's ignored SIGHUP stays so
                previous[sig] = signal.signal(sig, forward)
        except ValueError:  # not the main thread: signals keep their usual effect
            break
    try:
        futures += [pool.submit(_guarded, fn, *args) for args in calls]
        return [f.result() for f in futures]
    except CancelledError:  # a job SIGTERM cancelled before it started
        raise KeyboardInterrupt from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # no worker outlives this process
        for sig, handler in previous.items():
            signal.signal(sig, handler)

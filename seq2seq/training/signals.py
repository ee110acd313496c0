"""Stopping a run cleanly: the first Ctrl-C (SIGINT) or SIGTERM (``kill``, ``timeout``, a
scheduler's preemption) asks the loop to stop after the current step and save ``last.pt``; a second
one aborts at once."""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Callable, Iterator

log = logging.getLogger("seq2seq")


@contextlib.contextmanager
def interruptible() -> Iterator[Callable[[], bool]]:
    """Within the block, SIGINT and SIGTERM set a flag instead of killing the process; yields a
    function that says whether one arrived. The previous handlers come back on exit. Outside the
    main thread (where handlers cannot be set) signals keep their usual effect.

    Raises:
        KeyboardInterrupt: a second signal while the first is being handled.
    """
    flag = {"hit": False}

    def handler(signum, frame):
        if flag["hit"]:
            raise KeyboardInterrupt
        flag["hit"] = True
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        log.warning(f"{name}: finishing this step, then saving (press Ctrl-C again to abort)")

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread
            pass
    try:
        yield lambda: flag["hit"]
    finally:
        for sig, handler_before in previous.items():
            signal.signal(sig, handler_before)

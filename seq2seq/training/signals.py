"""Stopping a run cleanly. In the loop, the first Ctrl-C (SIGINT), SIGTERM (``kill``, ``timeout``, a
scheduler's preemption) or SIGHUP (the terminal or SSH session closed) asks it to stop after the
current step and save ``last.pt``; a second one aborts at once. Before the loop (setup, tokenizer
training), SIGTERM and SIGHUP end the run as Ctrl-C does, through its cleanup (the run folder's
lock is released, a failed start's files removed). A signal that is ignored when training starts
stays ignored: ``nohup seq2seq train ...`` keeps running when its terminal closes."""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Callable, Iterator

log = logging.getLogger("seq2seq")

# SIGHUP does not exist on Windows
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def _handling(handler: Callable, signals: tuple[signal.Signals, ...]) -> Iterator[None]:
    """``handler`` for each of ``signals`` within the block, the previous handlers back on exit.
    An ignored signal stays ignored; outside the main thread (where handlers cannot be set)
    signals keep their usual effect."""
    previous = {}
    for sig in signals:
        try:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                previous[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread
            pass
    try:
        yield
    finally:
        for sig, handler_before in previous.items():
            signal.signal(sig, handler_before)


@contextlib.contextmanager
def interruptible() -> Iterator[Callable[[], bool]]:
    """Within the block, SIGINT, SIGTERM and SIGHUP set a flag instead of ending the process;
    yields a function that says whether one arrived.

    Raises:
        KeyboardInterrupt: a second signal while the first is being handled.
    """
    flag = {"hit": False}

    def handler(signum, frame):
        if flag["hit"]:
            raise KeyboardInterrupt
        flag["hit"] = True
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        again = " (press Ctrl-C again to abort)" if signum == signal.SIGINT else ""
        log.warning(f"{name}: finishing this step, then saving{again}")

    with _handling(handler, STOP_SIGNALS):
        yield lambda: flag["hit"]


@contextlib.contextmanager
def ended_like_ctrl_c() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise KeyboardInterrupt, as Ctrl-C does, so the
    block's cleanup runs (``interruptible`` inside it handles them its own way)."""

    def handler(signum, frame):
        raise KeyboardInterrupt

    with _handling(handler, tuple(s for s in STOP_SIGNALS if s != signal.SIGINT)):
        yield

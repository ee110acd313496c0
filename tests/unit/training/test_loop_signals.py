"""``seq2seq/training/loop.py``'s signal handling: in the loop SIGINT, SIGTERM and SIGHUP ask for
a clean stop; before it SIGTERM and SIGHUP end the run as Ctrl-C does (its cleanup runs); a signal
ignored when training starts (``nohup``) stays ignored; the previous handlers come back."""

from __future__ import annotations

import os
import signal

import pytest

from seq2seq.runtime import ended_like_ctrl_c
from seq2seq.training.loop import interruptible


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_each_stop_signal_in_the_loop_asks_for_a_clean_stop(sig, caplog):
    # start from Python's own handler: an earlier test in this worker may have left the signal
    # ignored, and interruptible keeps an ignored signal ignored (as under nohup)
    own = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
    previous = signal.signal(sig, own)
    try:
        with interruptible() as interrupted:
            assert not interrupted()
            os.kill(os.getpid(), sig)
            assert interrupted()
            with pytest.raises(KeyboardInterrupt):  # a second one aborts
                os.kill(os.getpid(), sig)
        assert signal.getsignal(sig) == own
    finally:
        signal.signal(sig, previous)
    name = "Ctrl-C" if sig == signal.SIGINT else signal.Signals(sig).name
    assert f"{name}: finishing this step, then saving" in caplog.text
    no_terminal = "press Ctrl-C again" not in caplog.text  # after a hang-up or a kill
    assert no_terminal == (sig != signal.SIGINT)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_before_the_loop_sigterm_and_sighup_unwind_like_ctrl_c(sig):
    with pytest.raises(KeyboardInterrupt), ended_like_ctrl_c():
        os.kill(os.getpid(), sig)


def test_an_ignored_hangup_stays_ignored(monkeypatch):
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with ended_like_ctrl_c(), interruptible() as interrupted:
            os.kill(os.getpid(), signal.SIGHUP)
            assert not interrupted()
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)

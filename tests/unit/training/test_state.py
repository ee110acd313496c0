"""``seq2seq/training/state.py``: booking a validation score, and the stop rule as a function of the
state."""

from __future__ import annotations

from seq2seq.config import TrainConfig
from seq2seq.training.state import TrainState, book_score, stop_reason


def test_book_score_plateau_and_patience():
    t = TrainConfig(max_steps=1, schedule="plateau", plateau_patience=1, plateau_factor=0.5)
    st = TrainState()
    for step, score in enumerate([1.0, 2.0, 1.5, 1.5, 1.5, 3.0], start=1):
        st.step = step
        book_score(st, score, t)
        if step == 5:
            assert (st.bad_validations, st.plateau_scale) == (3, 0.5)
    assert (st.best_score, st.best_step, st.bad_validations) == (3.0, 6, 0)


def test_stop_reason_is_a_function_of_the_state():
    t = TrainConfig(max_steps=10, max_epochs=3, max_time=1.0, max_tokens=500, patience=2)
    assert stop_reason(TrainState(), t) == ""
    short = TrainState(step=9, epoch=2, train_seconds=59.9, target_tokens=499, bad_validations=1)
    assert stop_reason(short, t) == ""
    assert stop_reason(TrainState(step=10), t) == "max_steps"
    assert stop_reason(TrainState(epoch=3), t) == "max_epochs"
    assert stop_reason(TrainState(train_seconds=60.0), t) == "max_time"
    assert stop_reason(TrainState(target_tokens=500), t) == "max_tokens"
    assert stop_reason(TrainState(bad_validations=2), t) == "early_stopping"
    # several at once: the first of interrupted, steps, epochs, time, tokens, patience
    every = TrainState(step=10, epoch=3, train_seconds=60.0, target_tokens=500, bad_validations=2)
    assert stop_reason(every, t) == "max_steps"
    assert stop_reason(every, t, interrupted=True) == "interrupted"
    # without the clock (ranks under torchrun between log points): no signal, no time
    assert stop_reason(TrainState(train_seconds=60.0), t, interrupted=True, clock=False) == ""
    assert stop_reason(every, t, interrupted=True, clock=False) == "max_steps"
    # a budget left unset never stops a run
    only_tokens = TrainConfig(max_tokens=500)
    assert stop_reason(TrainState(step=10**6, epoch=99, train_seconds=1e9), only_tokens) == ""

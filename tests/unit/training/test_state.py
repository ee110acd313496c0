"""``seq2seq/training/state.py``: booking a validation score, and the stop rule as a function of the
state."""

from __future__ import annotations

from seq2seq.config import TrainConfig
from seq2seq.training.state import TrainState, book_score, nothing_left, stop_reason


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


def test_nothing_left_names_each_stop_and_the_option_that_goes_on():
    st = TrainState(step=10, epoch=3, target_tokens=5000, train_seconds=120.0, bad_validations=4)
    t = TrainConfig(max_steps=5, max_epochs=3, max_time=2.0, max_tokens=4000, patience=4)
    for reason, said in [
        ("max_steps", "--max-steps above 10 continues it"),
        ("max_epochs", "already 3 epochs trained, and train.max_epochs is 3"),
        ("max_time", "already 2 min trained, and train.max_time is 2 min: nothing to train; "
         "--max-time above 2 (minutes"),
        ("max_tokens", "--set train.max_tokens=N above 5000 continues it"),
        ("early_stopping", "--set train.patience=N above 4 continues it"),
    ]:  # fmt: skip
        assert stop_reason(st, t) == "max_steps"
        assert said in nothing_left(reason, st, t)

"""``seq2seq/training/state.py``: booking a validation score, the stop rule as a function of the
state, and the position in an epoch carried to another number of processes."""

from __future__ import annotations

from seq2seq.config import TrainConfig
from seq2seq.training.state import TrainState, book_score, nothing_left, reshard, stop_reason


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


def test_a_position_saved_by_other_processes_goes_on_exactly_or_the_epoch_says_it_restarts():
    """W processes at their batch b have trained the epoch's first W x b batches (each takes every
    W-th): W' go on from W x b / W' each when that divides, or at the end of an epoch already done;
    otherwise the epoch restarts from its first batch, with a line that says so and why."""
    said = "last.pt was saved by 2 processes (torchrun ranks), this resume has 1: "
    st = TrainState(epoch=2, batch_in_epoch=3, world=2)
    assert reshard(st, 1, 50) == (
        True,
        f"{said}epoch 3 goes on exactly after the 6 batches it has trained",
    )
    assert (st.batch_in_epoch, st.world, st.epoch) == (6, 1, 2)
    st = TrainState(batch_in_epoch=6, world=1)
    assert reshard(st, 3, 20)[0] and (st.batch_in_epoch, st.world) == (2, 3)
    st = TrainState(batch_in_epoch=7, world=1)  # the 2 processes' 3 batches each are all done
    assert reshard(st, 2, 3)[0] and st.batch_in_epoch == 3
    st = TrainState(epoch=0, batch_in_epoch=5, world=1)
    assert reshard(st, 2, 25) == (
        False,
        "last.pt was saved by 1 process (torchrun ranks), this resume has 2: the 5 batches "
        "epoch 1 has trained cannot be shared evenly by 2 processes taking turns batch by batch, "
        "so epoch 1 restarts from its first batch and those 5 are seen again; resume with 1 "
        "process (or a number that divides 5) to go on exactly",
    )
    assert (st.batch_in_epoch, st.world) == (0, 2)
    assert reshard(st, 2, 25) == (True, "")  # the same number: nothing to carry

"""``seq2seq/training/state.py``: the learning rate and teacher-forcing schedules."""

from __future__ import annotations

import pytest

from seq2seq.config import TrainConfig
from seq2seq.training.state import lr_at, run_length, teacher_forcing_at, unreached_peak


def test_lr_schedules():
    t = TrainConfig(max_steps=110, lr=1.0, schedule="noam", warmup_steps=100)
    assert lr_at(100, t) == pytest.approx(1.0)  # the peak is lr, at warmup
    assert lr_at(25, t) == pytest.approx(0.25)
    assert lr_at(400, t) == pytest.approx(0.5)  # (warmup / step)^0.5
    t = TrainConfig(max_steps=110, lr=1.0, min_lr=0.1, schedule="cosine", warmup_steps=10)
    assert lr_at(5, t) == pytest.approx(0.5)
    assert lr_at(10, t) == pytest.approx(1.0)
    assert lr_at(60, t) == pytest.approx(0.55)  # halfway between lr and min_lr
    assert lr_at(110, t) == pytest.approx(0.1)
    t = TrainConfig(
        max_steps=110, lr=1.0, min_lr=0.1, schedule="cosine", warmup_steps=10, decay_steps=60
    )
    assert lr_at(35, t) == pytest.approx(0.55)  # halfway to decay_steps
    assert lr_at(60, t) == lr_at(61, t) == lr_at(110, t) == pytest.approx(0.1)  # then it holds
    with pytest.raises(ValueError, match=r"warmup_steps \(10\) must be below decay_steps \(10\)"):
        TrainConfig(max_steps=110, schedule="cosine", warmup_steps=10, decay_steps=10)
    t = TrainConfig(max_steps=10, lr=1.0, min_lr=0.1, schedule="plateau", warmup_steps=4)
    assert lr_at(2, t, plateau_scale=0.5) == pytest.approx(0.25)
    assert lr_at(8, t, plateau_scale=0.5) == pytest.approx(0.5)
    assert lr_at(8, t, plateau_scale=0.01) == pytest.approx(0.1)  # floored at min_lr
    assert lr_at(3, TrainConfig(max_steps=9, lr=2.0)) == 2.0


def test_teacher_forcing_schedules():
    tf = TrainConfig(max_steps=1).teacher_forcing
    assert tf.always and teacher_forcing_at(10**6, tf) == 1.0
    linear = {"schedule": "linear", "start": 1.0, "end": 0.2, "decay_steps": 100}
    tf = TrainConfig(max_steps=1, teacher_forcing=linear).teacher_forcing
    assert teacher_forcing_at(50, tf) == pytest.approx(0.6)
    assert teacher_forcing_at(500, tf) == pytest.approx(0.2)
    tf = TrainConfig(
        max_steps=1, teacher_forcing={"schedule": "exponential", "k": 0.99, "end": 0.1}
    ).teacher_forcing
    assert teacher_forcing_at(100, tf) == pytest.approx(0.99**100)
    assert teacher_forcing_at(10_000, tf) == pytest.approx(0.1)
    tf = TrainConfig(max_steps=1, teacher_forcing={"schedule": "inverse_sigmoid", "k": 10})
    tf = tf.teacher_forcing
    assert teacher_forcing_at(0, tf) == pytest.approx(10 / 11)
    assert teacher_forcing_at(23.026, tf) == pytest.approx(0.5, rel=1e-4)  # exp(i/k) = k
    assert teacher_forcing_at(10**9, tf) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("schedule", ["constant", "noam", "plateau", "cosine"])
def test_a_warmup_longer_than_the_run_is_accepted_and_warned_of_alike_in_every_schedule(schedule):
    t = TrainConfig(max_steps=20, lr=1e-3, schedule=schedule, warmup_steps=4000)
    assert unreached_peak(t, run_length(t, 7)) == (
        "train.warmup_steps 4000 is longer than the run (20 updates): the learning rate rises to "
        "5.00e-06 at the last update and never reaches its peak, train.lr 0.001; lower "
        "warmup_steps or train longer"
    )
    assert unreached_peak(t, 4000) == "" and unreached_peak(t, None) == ""
    if schedule == "cosine":  # needs max_steps: its decay ends there
        return
    by_epochs = TrainConfig(max_epochs=3, lr=1e-3, schedule=schedule, warmup_steps=40)
    assert run_length(by_epochs, 10) == 30 and "(30 updates)" in unreached_peak(by_epochs, 30)
    assert run_length(TrainConfig(max_time=5.0), 10) is None

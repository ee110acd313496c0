"""``seq2seq/training/updates.py``: the loop never waits for the device between log points; target
tokens counted on the host (``train.max_tokens``) and the training clock across resumes.

On CUDA, reading a tensor on the host (``item``, ``tolist``, ``cpu``, ``bool``, ``float``, ``int``,
``nonzero``) waits for every queued kernel, so the host can no longer run ahead of the GPU. On the
CPU those calls cost nothing, but they are the same calls: counting them here, over the updates
between two log points of a real training run, proves the loop makes none.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter

import pytest
import torch

import seq2seq.training.updates as updates
from seq2seq.checkpoint import load_checkpoint
from seq2seq.training.loop import train
from seq2seq.training.updates import Updates
from tests.corpora import write_word_reversal
from tests.toys import WORD_REVERSAL_MODELS, step_tokens, synth_run_config, word_reversal_config

BUDGET = 1500  # target tokens: about 8 updates of 300-token batches

# torch functions whose reads are of tensors that always live on the host (a PackedSequence's
# batch_sizes), so they never wait for a device
ON_THE_HOST = {"get_expected_hidden_size"}

SYNCING = ("item", "tolist", "cpu", "__bool__", "__float__", "__int__", "nonzero")

SLEEP = 0.2  # seconds added to every update, so a stretch of training takes measurable time


def saved_seconds(path) -> float:
    return load_checkpoint(path)["train_state"]["train_seconds"]


def test_a_token_budget_stops_every_family_at_the_same_data(
    tmp_path, synth_corpus, synth_tokenizer
):
    seen = {}
    for family in ("rnn", "transformer"):
        run = tmp_path / family
        cfg = synth_run_config(synth_corpus, family, max_tokens=BUDGET)
        summary = train(cfg, run, tokenizer=synth_tokenizer)
        tokens = step_tokens(run)
        assert summary["stopped"] == "max_tokens" and summary["steps"] == len(tokens) > 2
        assert summary["target_tokens"] == sum(tokens)  # the host count is the device's count
        # the first update that reaches the budget stops: it overshoots by less than its batch
        assert summary["target_tokens"] - tokens[-1] < BUDGET <= summary["target_tokens"]
        seen[family] = summary["target_tokens"]
    assert abs(seen["rnn"] - seen["transformer"]) <= 0.03 * BUDGET


def test_a_resumed_run_keeps_counting_target_tokens(tmp_path, synth_corpus, synth_tokenizer):
    whole = train(
        synth_run_config(synth_corpus, max_tokens=BUDGET),
        tmp_path / "whole",
        tokenizer=synth_tokenizer,
    )
    first = train(
        synth_run_config(synth_corpus, max_steps=3), tmp_path / "parts", tokenizer=synth_tokenizer
    )
    assert first["stopped"] == "max_steps" and 0 < first["target_tokens"] < BUDGET
    again = train(
        synth_run_config(synth_corpus, max_tokens=BUDGET), tmp_path / "parts", resume=True
    )
    assert again["stopped"] == "max_tokens"
    assert (again["steps"], again["target_tokens"]) == (whole["steps"], whole["target_tokens"])


@pytest.mark.parametrize("name", list(WORD_REVERSAL_MODELS))
def test_no_host_sync_between_log_points(tmp_path, monkeypatch, name):
    write_word_reversal(tmp_path, 300)
    log_every = 4
    cfg = word_reversal_config(tmp_path, name, log_every, 3 * log_every)
    calls, window = Counter(), {"open": False, "updates": 0, "closed": 0}

    def counting(label, fn):
        def counted(*args, **kwargs):
            if window["open"] and sys._getframe(1).f_code.co_name not in ON_THE_HOST:
                calls[label] += 1
            return fn(*args, **kwargs)

        return counted

    for method in SYNCING:
        monkeypatch.setattr(torch.Tensor, method, counting(method, getattr(torch.Tensor, method)))
    monkeypatch.setattr(torch, "nonzero", counting("torch.nonzero", torch.nonzero))

    flush, update = Updates.flush, Updates.update

    def flush_closing_the_window(self):
        if window["open"]:  # the first log point after the window opened closes it
            window["open"], window["closed"] = False, window["closed"] + 1
        out = flush(self)
        if self.state.step == log_every and not window["closed"]:
            window["open"] = True  # counting starts after the first log point's reads
        return out

    def counted_update(self, batches):
        window["updates"] += window["open"]
        return update(self, batches)

    monkeypatch.setattr(Updates, "flush", flush_closing_the_window)
    monkeypatch.setattr(Updates, "update", counted_update)
    summary = train(cfg, tmp_path / "run")
    assert summary["steps"] == 3 * log_every
    assert window["closed"] and window["updates"] == log_every
    assert not calls, f"host syncs between log points: {dict(calls)}"
    run_config = (tmp_path / "run" / "config.yaml").read_text()
    assert "precision: fp32" in run_config  # auto, recorded as resolved on the CPU
    runtime = json.loads((tmp_path / "run" / "run_info.json").read_text())["runtime"]
    assert runtime == {"device": "cpu", "precision": "fp32", "pad_multiple": 1, "cudnn_sdp": False}


def test_every_checkpoint_records_the_time_so_far_and_a_resume_counts_every_stretch(
    tmp_path, synth_corpus, synth_tokenizer, monkeypatch
):
    """Three stretches of 2 slowed-down updates each, validated (and saved) at their last step:
    each save records the training time up to it, the summary after a resume is the sum over the
    stretches, and ``max_time`` stops a resume that has no time left before its first update."""
    real_step = updates.train_step

    def slow_step(*args, **kwargs):
        time.sleep(SLEEP)
        return real_step(*args, **kwargs)

    monkeypatch.setattr(updates, "train_step", slow_step)
    run, walls, summaries = tmp_path / "run", [], []
    for i, steps in enumerate((2, 4, 6)):
        cfg = synth_run_config(synth_corpus, max_steps=steps, valid_every=2, keep_last=3)
        tick = time.time()
        summaries.append(train(cfg, run, resume=i > 0, tokenizer=None if i else synth_tokenizer))
        walls.append(time.time() - tick)
        done = saved_seconds(run / "last.pt")
        # every stretch so far is in last.pt (its updates slept), within the calls' wall time
        assert 2 * SLEEP * (i + 1) <= done <= sum(walls)
        # the summary: the same time, and the bookkeeping after the last save
        assert done - 0.05 <= summaries[-1]["train_seconds"] <= done + 0.5
    # step<N>.pt are last.pt as saved at step N: the time of the stretches up to it
    per_save = [saved_seconds(run / f"step{n}.pt") for n in (2, 4, 6)]
    assert per_save[0] <= summaries[0]["train_seconds"] + 0.05
    assert per_save[1] <= summaries[1]["train_seconds"] + 0.05
    assert per_save[2] == saved_seconds(run / "last.pt")
    assert all(b - a >= 2 * SLEEP for a, b in zip(per_save, per_save[1:], strict=False))
    # tokens/s too counts every stretch: every update's tokens over every update's busy time
    state = load_checkpoint(run / "last.pt")["train_state"]
    assert state["busy_tokens"] == summaries[-1]["target_tokens"] > 0
    assert 6 * SLEEP <= state["busy_seconds"] <= per_save[2]
    rate = state["busy_tokens"] / state["busy_seconds"]
    assert summaries[-1]["target_tokens_per_s"] == pytest.approx(rate, rel=0.01)

    # a budget below the time already spent: the resume stops before its first update
    minutes = per_save[2] / 2 / 60
    cfg = synth_run_config(synth_corpus, max_steps=100, max_time=minutes, valid_every=2)
    summary = train(cfg, run, resume=True)
    assert (summary["stopped"], summary["steps"]) == ("max_time", 6)


def test_a_wall_clock_that_jumps_two_hours_ahead_moves_no_time_budget(
    tmp_path, synth_corpus, synth_tokenizer, monkeypatch
):
    """NTP, a suspended laptop or a migrated VM moves the wall clock 2 h ahead after the first
    update: a ``max_time`` 30 run goes on to its ``max_steps``, and only the monotonic time of
    the stretch is recorded (it stopped at once, "max_time", with 120 min booked)."""
    real_time, real_update, jumped = time.time, Updates.update, []

    def update_then_jump(self, batches):
        real_update(self, batches)
        jumped.append(True)

    monkeypatch.setattr(Updates, "update", update_then_jump)
    monkeypatch.setattr(time, "time", lambda: real_time() + (7200 if jumped else 0))
    cfg = synth_run_config(synth_corpus, max_steps=3, max_time=30)
    summary = train(cfg, tmp_path / "run", tokenizer=synth_tokenizer)
    assert (summary["stopped"], summary["steps"]) == ("max_steps", 3)
    assert summary["train_seconds"] < 60 and saved_seconds(tmp_path / "run" / "last.pt") < 60

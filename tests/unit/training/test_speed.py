"""``seq2seq/training/speed.py``: a run whose speed collapses against its first windows while the
load average exceeds the cores says, once, that ``train.num_threads`` may help."""

from __future__ import annotations

import logging

import pytest
import torch

import seq2seq.training.speed as speed
from seq2seq.training.speed import SpeedWatch

CPU = torch.device("cpu")


def _feed(watch: SpeedWatch, rates: list[float]) -> None:
    tokens, seconds = 0, 0.0
    watch.window(0, tokens, seconds)
    for step, rate in enumerate(rates, start=1):
        tokens, seconds = tokens + int(rate), seconds + 1.0
        watch.window(step, tokens, seconds)


@pytest.mark.parametrize(
    ("threads", "load", "device", "rates", "says"),
    [
        (2, 3.5, CPU, [1000, 1000, 1000, 900, 300, 200], True),  # collapsed on a busy machine
        (2, 1.5, CPU, [1000, 1000, 1000, 300], False),  # collapsed, the machine not busy
        (2, 3.5, CPU, [1000, 1000, 1000, 600], False),  # slower, not collapsed
        (1, 3.5, CPU, [1000, 1000, 1000, 300], False),  # one thread already
        (2, 3.5, torch.device("cuda"), [1000, 1000, 1000, 300], False),
    ],
)
def test_the_hint_comes_once_for_a_collapse_on_a_busy_cpu_only(
    monkeypatch, caplog, threads, load, device, rates, says
):
    monkeypatch.setattr(torch, "get_num_threads", lambda: threads)
    monkeypatch.setattr(speed, "cpu_cores", lambda: 2)
    with caplog.at_level(logging.WARNING, logger="seq2seq"):
        _feed(SpeedWatch(device, load=lambda: load), rates)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == int(says)
    if says:
        assert said[0] == (
            "step 5: 300 target tokens/s, under 50% of this run's first windows' 1,000, while "
            "the load average (3.5) exceeds the 2 CPU cores: other work competes for them, and "
            "train.num_threads=1 (now 2; --set train.num_threads=1 on --resume) may train faster"
        )


def test_a_training_on_a_busy_cpu_says_it(
    tmp_path, synth_corpus, synth_tokenizer, caplog, monkeypatch
):
    """Every window counts as collapsed (COLLAPSE huge) and the load as high: the run's log says
    it once, whatever the run's length."""
    from seq2seq.training.loop import train
    from tests.toys import synth_run_config

    monkeypatch.setattr(speed, "COLLAPSE", 1e9)
    monkeypatch.setattr(speed.os, "getloadavg", lambda: (99.0, 99.0, 99.0))
    cfg = synth_run_config(synth_corpus, max_steps=8, log_every=1, num_threads=2)
    caplog.set_level("INFO", logger="seq2seq")
    train(cfg, tmp_path / "run", tokenizer=synth_tokenizer)
    said = [r.getMessage() for r in caplog.records if "train.num_threads=1" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("step ") and "load average (99.0)" in said[0]
    assert said[0] in (tmp_path / "run" / "train.log").read_text()

"""What a user of ``train`` sees across stretches of one run: the training time every checkpoint
records (and a resumed run's summary and ``max_time`` count), the exit code and message of a run
stopped by Ctrl-C, and the files the run leaves in its folder (``train_summary.json``,
``train.log``).

Tiny runs on the synthetic corpus, in this process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import shlex
import time
from logging.handlers import MemoryHandler

import pytest
import yaml

import seq2seq.training.loop as loop
import seq2seq.training.updates as updates
from seq2seq.checkpoint import load_checkpoint
from seq2seq.training.loop import train

from .toys import run_main, synth_run_config, synth_run_raw

SLEEP = 0.2  # seconds added to every update, so a stretch of training takes measurable time


def saved_seconds(path) -> float:
    return load_checkpoint(path)["train_state"]["train_seconds"]


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

    # a budget below the time already spent: the resume stops before its first update
    minutes = per_save[2] / 2 / 60
    cfg = synth_run_config(synth_corpus, max_steps=100, max_time=minutes, valid_every=2)
    summary = train(cfg, run, resume=True)
    assert (summary["stopped"], summary["steps"]) == ("max_time", 6)


@contextlib.contextmanager
def ctrl_c_at_step_3():
    """``interruptible`` as if Ctrl-C arrived during step 3."""
    calls = {"n": 0}

    def hit():
        calls["n"] += 1
        return calls["n"] >= 3

    yield hit


@pytest.mark.parametrize(
    "flags", [[], ["--max-steps", "6"]], ids=["config-alone", "with-overrides"]
)
def test_ctrl_c_saves_last_pt_and_exits_130_naming_the_resume_command(
    tmp_path, synth_corpus, monkeypatch, capsys, flags
):
    """``train && eval`` must not go on after Ctrl-C: last.pt is saved, the exit code is 130 and
    the last stderr line says how to resume; that command (the run's own config.yaml when options
    changed the config) finishes the run."""
    path, run = tmp_path / "cfg.yaml", tmp_path / "run"
    path.write_text(yaml.safe_dump(synth_run_raw(synth_corpus, max_steps=6)))
    real = loop.interruptible
    monkeypatch.setattr(loop, "interruptible", ctrl_c_at_step_3)
    code, err = run_main(monkeypatch, capsys, "train", path, "--run-dir", run, *flags)
    assert code == 130, err
    again = path if not flags else run / "config.yaml"
    assert err.strip().splitlines()[-1] == (
        f"error: interrupted at step 3: last.pt saved; resume with seq2seq train {again} "
        f"--resume {run}"
    )
    assert load_checkpoint(run / "last.pt")["train_state"]["step"] == 3
    assert json.loads((run / "train_summary.json").read_text())["stopped"] == "interrupted"

    monkeypatch.setattr(loop, "interruptible", real)
    command = re.search(r"resume with seq2seq (.*)$", err.strip()).group(1)
    code, err = run_main(monkeypatch, capsys, *shlex.split(command))
    assert code == 0, err
    summary = json.loads((run / "train_summary.json").read_text())
    assert (summary["steps"], summary["stopped"]) == (6, "max_steps")


def test_a_run_leaves_its_summary_and_log_in_its_folder_and_a_resume_appends_to_the_log(
    tmp_path, synth_corpus, synth_tokenizer, caplog
):
    caplog.set_level("INFO", logger="seq2seq")
    logger, run = logging.getLogger("seq2seq"), tmp_path / "run"
    handlers = list(logger.handlers)
    summary = train(synth_run_config(synth_corpus, max_steps=2), run, tokenizer=synth_tokenizer)
    assert json.loads((run / "train_summary.json").read_text()) == summary
    first = (run / "train.log").read_text()
    model_line = re.compile(r"^\S+ \S+ INFO model rnn: [\d,]+ parameters; ", re.M)
    assert len(model_line.findall(first)) == 1
    assert logger.handlers == handlers  # train.log is written only while the run trains

    summary = train(synth_run_config(synth_corpus, max_steps=3), run, resume=True)
    assert json.loads((run / "train_summary.json").read_text()) == summary
    assert summary["steps"] == 3
    log = (run / "train.log").read_text()
    assert log.startswith(first) and len(model_line.findall(log)) == 2
    assert not any(isinstance(h, logging.FileHandler | MemoryHandler) for h in logger.handlers)

    # another run's lines go to its own train.log; --overwrite starts the log afresh
    train(synth_run_config(synth_corpus, max_steps=1), tmp_path / "b", tokenizer=synth_tokenizer)
    assert (run / "train.log").read_text() == log
    train(
        synth_run_config(synth_corpus, max_steps=1), run, overwrite=True, tokenizer=synth_tokenizer
    )
    assert len(model_line.findall((run / "train.log").read_text())) == 1

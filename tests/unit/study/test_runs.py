"""``seq2seq/study/runs.py``: compare resumes an interrupted run of the same config and reuses a
finished one whatever device or spelling of its path it is asked with."""

from __future__ import annotations

from pathlib import Path

import pytest

from seq2seq.checkpoint import load_checkpoint
from seq2seq.training.loop import train
from tests.toys import synth_run_config


def test_compare_resumes_an_interrupted_run_of_the_same_config(
    tmp_path, synth_corpus, synth_tokenizer, monkeypatch, caplog
):
    """A study stopped by Ctrl-C or kill continues its unfinished run on the next compare (from
    last.pt, as ``train --resume`` does), ending where an uninterrupted run ends; a run of another
    config in that folder is trained afresh."""
    import contextlib

    import seq2seq.training.loop as loop
    from seq2seq.study.runs import run_identity, train_or_reuse

    cfg = synth_run_config(synth_corpus, max_steps=6)
    whole = train(cfg, tmp_path / "whole", tokenizer=synth_tokenizer)
    real = loop.interruptible

    @contextlib.contextmanager
    def stop_at_step_3():  # a Ctrl-C that arrives during step 3
        calls = {"n": 0}

        def hit():
            calls["n"] += 1
            return calls["n"] >= 3

        yield hit

    monkeypatch.setattr(loop, "interruptible", stop_at_step_3)
    with pytest.raises(KeyboardInterrupt):
        train_or_reuse("cfg.yaml", cfg, tmp_path / "cut", synth_tokenizer)
    assert load_checkpoint(tmp_path / "cut" / "last.pt")["train_state"]["step"] < 6
    monkeypatch.setattr(loop, "interruptible", real)
    caplog.set_level("INFO", logger="seq2seq")
    run = train_or_reuse("cfg.yaml", cfg, tmp_path / "cut", synth_tokenizer)
    assert "resuming the interrupted run" in caplog.text
    for key in ("steps", "target_tokens", "stopped"):
        assert run.summary[key] == whole[key], key
    # the same run on another device, its init_from spelled otherwise: reused, not retrained
    moved = cfg.model_dump(mode="json")
    moved["train"] |= {"device": "cuda", "init_from": None}
    again = train_or_reuse(
        "cfg.yaml",
        type(cfg).model_validate(moved),
        tmp_path / "cut",
        synth_tokenizer,
        may_train=False,
    )
    assert again.reused and again.summary == run.summary
    rel = {"train": {"init_from": "runs/a/../a/last.pt", "device": "cpu"}, "model": {}}
    assert run_identity(rel) == run_identity(
        {
            "train": {"init_from": str(Path("runs/a/last.pt").resolve()), "device": "cuda"},
            "model": {},
        }
    )
    caplog.clear()
    other = synth_run_config(synth_corpus, max_steps=4)  # another budget: not the same run
    run = train_or_reuse("cfg.yaml", other, tmp_path / "cut", synth_tokenizer)
    assert "resuming" not in caplog.text and run.summary["steps"] == 4

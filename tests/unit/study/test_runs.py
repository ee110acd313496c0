"""``seq2seq/study/runs.py``: compare resumes an interrupted run of the same config, reuses a
finished one whatever device or place it is asked with, and replaces another only when told."""

from __future__ import annotations

import shutil

import pytest

from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import ConfigError
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
    from seq2seq.study.runs import train_or_reuse

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
    cut = tmp_path / "cut"
    run = train_or_reuse("cfg.yaml", cfg, cut, synth_tokenizer)
    assert "resuming the interrupted run" in caplog.text
    for key in ("steps", "target_tokens", "stopped"):
        assert run.summary[key] == whole[key], key
    # the same run on another device: reused, not retrained
    moved = cfg.model_dump(mode="json")
    moved["train"] |= {"device": "cuda"}
    again = train_or_reuse(
        "cfg.yaml", type(cfg).model_validate(moved), cut, synth_tokenizer, may_train=False
    )
    assert again.reused and again.summary == run.summary
    # another budget: refused in one line naming the difference, replaced only with overwrite
    other = synth_run_config(synth_corpus, max_steps=4)
    differs = r"\(train\.max_steps is 6 there but 4 here, as --budget-steps, .* set it\)"
    with pytest.raises(ConfigError, match=rf"holds another run of .* {differs}; give --overwrite"):
        train_or_reuse("cfg.yaml", other, cut, synth_tokenizer)
    with pytest.raises(ConfigError, match=rf"--score-only: .* {differs}; train it first"):
        train_or_reuse("cfg.yaml", other, cut, synth_tokenizer, may_train=False)
    assert load_checkpoint(cut / "last.pt")["train_state"]["step"] == 6  # nothing lost
    caplog.clear()
    run = train_or_reuse("cfg.yaml", other, cut, synth_tokenizer, overwrite=True)
    assert "resuming" not in caplog.text and run.summary["steps"] == 4


def test_a_warm_started_run_is_the_same_wherever_its_start_lies_and_not_when_its_bytes_change(
    tmp_path, synth_corpus, synth_tokenizer
):
    """compare's joined stage starts from the single stage's last.pt: a study folder moved
    (another ``init_from`` path) reuses its finished runs, while a start retrained since (other
    bytes) is another run: never a joined stage of the old start reused as the new one's."""
    from seq2seq.study.runs import train_or_reuse

    start = tmp_path / "a" / "start"
    train(synth_run_config(synth_corpus, max_steps=2), start, tokenizer=synth_tokenizer)
    first = synth_run_config(synth_corpus, max_steps=3, init_from=str(start / "last.pt"))
    done = train_or_reuse("cfg.yaml", first, tmp_path / "a" / "joined", synth_tokenizer)
    shutil.move(tmp_path / "a", tmp_path / "b")  # the folder moved, mtimes kept
    start = tmp_path / "b" / "start"
    moved = synth_run_config(synth_corpus, max_steps=3, init_from=str(start / "last.pt"))
    again = train_or_reuse("cfg.yaml", moved, tmp_path / "b" / "joined", synth_tokenizer)
    assert again.reused and again.summary == done.summary
    train(
        synth_run_config(synth_corpus, max_steps=2, seed=2),
        start,
        tokenizer=synth_tokenizer,
        overwrite=True,
    )  # the start retrained: other weights at the same path
    with pytest.raises(ConfigError, match=r"\(init_from_sha256 is '[0-9a-f]+ there but "):
        train_or_reuse("cfg.yaml", moved, tmp_path / "b" / "joined", synth_tokenizer)


def test_a_study_keeps_its_tokenizer_while_runs_trained_with_it_are_there(tmp_path, synth_corpus):
    """Another tokenizer section (or data) on a study folder with runs: refused before the
    tokenizer is retrained, so no finished run is left beside a tokenizer it was not trained
    with; with overwrite, trained afresh."""
    from seq2seq.study.runs import shared_tokenizer

    cfg = synth_run_config(synth_corpus, max_steps=1)
    first = shared_tokenizer(cfg, tmp_path)
    (tmp_path / "runs" / "x").mkdir(parents=True)
    (tmp_path / "runs" / "x" / "compare.json").write_text("{}")
    raw = cfg.model_dump(mode="json")
    raw["tokenizer"]["vocab_size"] = 150
    other = type(cfg).model_validate(raw)
    before = {p.name: p.read_bytes() for p in (tmp_path / "tokenizer").iterdir()}
    with pytest.raises(ConfigError, match=r"tokenizer .* another tokenizer section or data; give"):
        shared_tokenizer(other, tmp_path)
    assert {p.name: p.read_bytes() for p in (tmp_path / "tokenizer").iterdir()} == before
    assert shared_tokenizer(cfg, tmp_path).digest() == first.digest()  # still reused
    assert shared_tokenizer(other, tmp_path, overwrite=True).digest() != first.digest()

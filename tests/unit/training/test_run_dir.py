"""``seq2seq/training/run_dir.py``: what a resume checks and restores -- batching changed mid-epoch,
schedules and stop rules changed, counts a checkpoint predates."""

from __future__ import annotations

import logging

import pytest

from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.training.loop import train
from tests.toys import copy_run_config, step_tokens, synth_run_config


def test_a_batching_change_mid_epoch_is_refused_on_resume(tmp_path):
    from seq2seq.checkpoint import load_checkpoint
    from seq2seq.config import ConfigError

    cfg = copy_run_config(tmp_path, batch_tokens=48, max_steps=2, valid_every=100)
    train(cfg, tmp_path / "run")
    state = load_checkpoint(tmp_path / "run" / "last.pt")["train_state"]
    assert state["batch_in_epoch"] > 0  # stopped mid-epoch
    more = cfg.model_copy(update={"train": cfg.train.model_copy(update={"max_steps": 4})})
    wider = more.model_copy(update={"train": more.train.model_copy(update={"batch_tokens": 64})})
    with pytest.raises(ConfigError, match="train.batch_tokens 48 -> 64 while the run stopped mid"):
        train(wider, tmp_path / "run", resume=True)
    assert train(more, tmp_path / "run", resume=True)["steps"] == 4  # the same batching resumes


def test_a_schedule_change_on_resume_is_named_with_the_learning_rates(tmp_path, caplog):
    from seq2seq.training.state import lr_at

    cfg = copy_run_config(tmp_path, schedule="cosine", lr=1e-3, min_lr=1e-4, max_steps=10)
    cfg.train.valid_every = 100
    train(cfg, tmp_path / "run")
    longer = cfg.train.model_copy(update={"max_steps": 20})
    with caplog.at_level(logging.WARNING, logger="seq2seq"):
        train(cfg.model_copy(update={"train": longer}), tmp_path / "run", resume=True)
    warnings = [r.getMessage() for r in caplog.records if "resume is not exact" in r.getMessage()]
    assert len(warnings) == 1
    assert "train.max_steps 10 -> 20" in warnings[0]
    assert f"from 1.0e-04 at step 10 to {lr_at(11, longer):.1e} at step 11" in warnings[0]


def test_a_stop_condition_change_on_resume_is_exact_and_silent(tmp_path, caplog):
    cfg = copy_run_config(tmp_path, max_steps=2)
    train(cfg, tmp_path / "run")
    more = cfg.train.model_copy(update={"max_steps": 3, "log_every": 5, "keep_last": 2})
    with caplog.at_level(logging.WARNING, logger="seq2seq"):
        train(cfg.model_copy(update={"train": more}), tmp_path / "run", resume=True)
    assert "resume is not exact" not in caplog.text


def test_a_checkpoint_from_before_the_count_resumes_it_from_tokens_seen(
    tmp_path, synth_corpus, synth_tokenizer
):
    run = tmp_path / "old"
    first = train(synth_run_config(synth_corpus, max_steps=3), run, tokenizer=synth_tokenizer)
    ckpt = load_checkpoint(run / "last.pt")
    del ckpt["train_state"]["target_tokens"]  # as written before target_tokens existed
    save_checkpoint(
        run / "last.pt", {k: v for k, v in ckpt.items() if k not in ("format", "version")}
    )
    again = train(synth_run_config(synth_corpus, max_steps=4), run, resume=True)
    assert again["target_tokens"] == first["target_tokens"] + step_tokens(run)[-1]


def test_a_resume_refuses_a_folder_whose_best_pt_is_of_another_run(tmp_path):
    """A last.pt copied into another run's folder resumed, and translate then loaded the other
    run's best.pt (a new-user trial)."""
    import shutil

    from seq2seq.checkpoint import CheckpointError

    a = copy_run_config(tmp_path, max_steps=2)
    b = copy_run_config(tmp_path, max_steps=2, data={"max_len": 29})
    for cfg, name in ((a, "run_a"), (b, "run_b")):
        train(cfg, tmp_path / name)
    (tmp_path / "run_a" / "last.pt").unlink()  # a hard link to its best.pt: keep that one
    shutil.copy(tmp_path / "run_b" / "last.pt", tmp_path / "run_a" / "last.pt")
    longer = b.model_copy(update={"train": b.train.model_copy(update={"max_steps": 4})})
    with pytest.raises(CheckpointError) as e:
        train(longer, tmp_path / "run_a", resume=True)
    assert str(e.value).startswith(f"{tmp_path / 'run_a' / 'best.pt'}: is of another run than")
    assert train(longer, tmp_path / "run_b", resume=True)["steps"] == 4  # its own folder resumes

"""``seq2seq/training/setup.py``: a run leaves its summary and train.log in its folder; a resume
says where it resumes from."""

from __future__ import annotations

import json
import logging
import re
from logging.handlers import MemoryHandler

from seq2seq.training.loop import train
from tests.toys import synth_run_config


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
    assert "resuming" not in first
    resumed = re.findall(r"INFO resuming (\S+) at step 2 \(epoch \d+, [\d.]+ min trained", log)
    assert resumed == [str(run / "last.pt")]  # the resume says so, where and from what step
    assert not any(isinstance(h, logging.FileHandler | MemoryHandler) for h in logger.handlers)

    # another run's lines go to its own train.log; --overwrite starts the log afresh
    train(synth_run_config(synth_corpus, max_steps=1), tmp_path / "b", tokenizer=synth_tokenizer)
    assert (run / "train.log").read_text() == log
    train(
        synth_run_config(synth_corpus, max_steps=1), run, overwrite=True, tokenizer=synth_tokenizer
    )
    assert len(model_line.findall((run / "train.log").read_text())) == 1


def test_a_folder_a_killed_run_left_without_a_checkpoint_is_started_clean_saying_so(
    tmp_path, synth_corpus, synth_tokenizer, caplog
):
    """Killed before its first checkpoint, a run leaves train.log lines and TensorBoard events
    that a new run in the folder would mix with its own (TensorBoard then shows the dead run's
    loss at steps the new one never reached)."""
    run = tmp_path / "run"
    (run / "tensorboard").mkdir(parents=True)
    (run / "tensorboard" / "events.out.tfevents.1.dead").write_bytes(b"dead run")
    (run / "train.log").write_text("00:00:00 INFO the dead run's line\n")
    (run / "train_log.jsonl").write_text('{"step": 900, "loss": 9.9}\n')
    (run / "notes.txt").write_text("mine\n")  # not a run's file: kept
    caplog.set_level("INFO", logger="seq2seq")
    train(synth_run_config(synth_corpus, max_steps=2), run, tokenizer=synth_tokenizer)
    said = f"{run} holds files of a run that saved no checkpoint (train.log, train_log.jsonl, "
    assert said + "tensorboard/): starting clean, as --overwrite would" in caplog.text
    assert "dead run" not in (run / "train.log").read_text()
    assert '"step": 900' not in (run / "train_log.jsonl").read_text()
    assert not (run / "tensorboard" / "events.out.tfevents.1.dead").exists()
    assert (run / "notes.txt").read_text() == "mine\n"
    # a folder with a checkpoint is never cleared this way: a new run there is refused as before
    caplog.clear()
    train(synth_run_config(synth_corpus, max_steps=3), run, resume=True)
    assert "starting clean" not in caplog.text

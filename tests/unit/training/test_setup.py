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

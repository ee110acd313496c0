"""``seq2seq/training/loop.py``: side outputs use the run's settings and never stop it, an error
after an update leaves a resumable last.pt, and update groups stop at the epoch's end."""

from __future__ import annotations

import json
import logging
import math
import re

import pytest

from seq2seq.checkpoint import load_checkpoint
from seq2seq.training.loop import train
from seq2seq.training.state import epoch_number
from tests.corpora import SENTENCES, write_split
from tests.toys import copy_run_config


def _long_first_valid(tmp_path):
    words = " ".join(SENTENCES * 2).split()
    return write_split(tmp_path, "valid", [" ".join(words[:65])] + SENTENCES[:3])


def test_a_65_token_first_validation_sentence_is_cut_by_the_runs_settings(tmp_path, caplog):
    cfg = copy_run_config(tmp_path, valid=_long_first_valid(tmp_path))
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        out = train(cfg, tmp_path / "run")
    assert out["steps"] == 2 and (tmp_path / "run" / "attention.png").exists()
    # max_positions 40, max_len_b 5, max_len_a 1.5: a source is cut to (40 - 5) / 1.5 = 23 tokens
    # for BLEU and for the plot alike (the default decode settings would cut it to 20)
    assert "attention plot line 1: 65 source tokens, cut to the first 23" in caplog.text
    assert "cut to the first 20" not in caplog.text


def test_a_failing_side_output_is_a_warning(tmp_path, caplog, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("sequence of 65 tokens exceeds max_positions 40")

    monkeypatch.setattr("seq2seq.training.loop.attention_heatmap", broken)
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        out = train(copy_run_config(tmp_path, max_steps=4), tmp_path / "run")
    assert out["steps"] == 4 and out["stopped"] == "max_steps"
    assert "step 2: attention plot skipped: ValueError: sequence of 65 tokens" in caplog.text


def test_a_stop_by_any_error_after_an_update_leaves_a_resumable_last_pt(tmp_path, monkeypatch):
    from seq2seq.checkpoint import load_checkpoint
    from seq2seq.training.updates import Updates

    real, calls = Updates.update, []

    def fails_at_step_4(self, group):
        calls.append(1)
        if len(calls) == 4:
            raise RuntimeError("CUDA error: an illegal memory access")
        return real(self, group)

    monkeypatch.setattr(Updates, "update", fails_at_step_4)
    cfg = copy_run_config(tmp_path, max_steps=6, valid_every=100)
    with pytest.raises(RuntimeError, match="illegal memory access"):
        train(cfg, tmp_path / "run")
    assert load_checkpoint(tmp_path / "run" / "last.pt")["train_state"]["step"] == 3
    monkeypatch.setattr(Updates, "update", real)
    assert train(cfg, tmp_path / "run", resume=True)["steps"] == 6


def test_update_freq_groups_stop_at_the_epoch_end_and_the_start_says_so(
    tmp_path, caplog, synth_corpus, synth_tokenizer
):
    """update_freq 3 over two epochs of N batches (N not a multiple of 3): each epoch takes
    ceil(N / 3) updates, its last one short, and one INFO line at the start says so."""
    from tests.toys import synth_run_config

    cfg = synth_run_config(synth_corpus, max_epochs=2, update_freq=3, batch_tokens=2000)
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        summary = train(cfg, tmp_path / "run", tokenizer=synth_tokenizer)
    notes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("update_freq")]
    assert len(notes) == 1, notes
    found = re.fullmatch(
        r"update_freq 3: an epoch of (\d+) batches ends with an update of (\d) batch(es)? "
        r"\(groups do not span epochs\)",
        notes[0],
    )
    assert found, notes[0]
    n, tail = int(found[1]), int(found[2])
    assert tail == n % 3 != 0
    assert summary["epochs"] == 2 and summary["steps"] == 2 * math.ceil(n / 3)


def test_the_summary_counts_epochs_trained_as_the_log_counts_the_epoch_under_way(
    tmp_path, caplog, synth_corpus, synth_tokenizer
):
    """Stopped half-way through its second epoch, a run has trained 1.5 epochs, and the log's
    last line says "epoch 2"; a whole number of epochs is that number."""
    from tests.toys import synth_run_config

    cfg = synth_run_config(synth_corpus, max_epochs=1, batch_tokens=2000)
    n = train(cfg, tmp_path / "one", tokenizer=synth_tokenizer)["steps"]  # batches an epoch
    assert n >= 4 and train(cfg, tmp_path / "one", resume=True)["epochs"] == 1
    cfg = synth_run_config(synth_corpus, max_steps=n + n // 2, batch_tokens=2000, log_every=1)
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        summary = train(cfg, tmp_path / "run", tokenizer=synth_tokenizer)
    assert summary["epochs"] == round(1 + (n // 2) / n, 2) and 1 < summary["epochs"] < 2
    steps = [r.getMessage() for r in caplog.records if r.getMessage().startswith("step ")]
    assert steps[-1].startswith(f"step {n + n // 2} epoch 2 ")
    # train_log.jsonl and serve's card count epochs as the log does, from 1
    logged = {
        int(a): int(b) for a, b in re.findall(r"^step (\d+) epoch (\d+) ", "\n".join(steps), re.M)
    }
    rows = (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()
    assert {r["step"]: r["epoch"] for r in map(json.loads, rows) if "epoch" in r} == logged
    assert set(logged.values()) == {1, 2}
    state = load_checkpoint(tmp_path / "run" / "last.pt")["train_state"]
    assert (
        epoch_number(state) == 2 and epoch_number(dict(state, batch_in_epoch=0)) == state["epoch"]
    )
    # resumed with nothing left to do, it says the same
    assert train(cfg, tmp_path / "run", resume=True)["epochs"] == summary["epochs"]


def test_a_warmup_longer_than_the_run_is_a_warning_at_its_start(tmp_path, caplog):
    caplog.set_level("WARNING", logger="seq2seq")
    cfg = copy_run_config(tmp_path, schedule="noam", warmup_steps=4000)
    train(cfg, tmp_path / "run")
    assert "train.warmup_steps 4000 is longer than the run (2 updates): the learning rate " in (
        caplog.text
    )


def test_output_to_a_file_gets_a_step_line_between_sparse_log_points(tmp_path, caplog, monkeypatch):
    """log_every 1000 in a 2-step run: no log point, yet each step past HEARTBEAT_SECONDS since
    the last line is said (here 0 s: every step), with its loss, as at a log point."""
    import seq2seq.training.updates as updates

    caplog.set_level("INFO", logger="seq2seq")
    cfg = copy_run_config(tmp_path, log_every=1000, valid_every=1000)  # validated at the end
    train(cfg, tmp_path / "quiet")
    assert not re.search(r"step \d+ epoch", caplog.text)
    monkeypatch.setattr(updates, "HEARTBEAT_SECONDS", 0.0)
    caplog.clear()
    train(cfg, tmp_path / "alive")
    assert "validating at step 2 on 4 pairs" in caplog.text  # before its decoding starts
    assert re.findall(r"step (\d+) epoch \d+ loss [\d.]+ lr [\d.e+-]+ [\d,]+ tok/s", caplog.text)[
        :2
    ] == ["1", "2"]


def test_a_resume_with_nothing_left_to_train_says_so_and_which_option_goes_on(tmp_path, caplog):
    run = tmp_path / "run"
    train(copy_run_config(tmp_path), run)
    caplog.set_level("WARNING", logger="seq2seq")
    for change, said in [
        ({"max_steps": 1}, "already at step 2, and train.max_steps is 1: nothing to train; "
         "--max-steps above 2 continues it"),
        ({"max_steps": 9, "max_time": 1e-6}, "min trained, and train.max_time is 1e-06 min: "
         "nothing to train; --max-time above "),
    ]:  # fmt: skip
        caplog.clear()
        summary = train(copy_run_config(tmp_path, **change), run, resume=True)
        assert summary["steps"] == 2 and f"--resume {run}: already " in caplog.text
        assert said in caplog.text, caplog.text

"""``seq2seq tune-decode`` (``seq2seq/commands/tune.py``): tuning on the run's test split is
warned about."""

from __future__ import annotations


def test_tuning_on_the_runs_own_test_split_is_warned_about(tmp_path, caplog):
    from seq2seq.commands.tune import _warn_if_test_split
    from seq2seq.config import load_config

    for name in ("test.de", "test.en", "val.de"):
        (tmp_path / name).write_text("ein hund .\n")
    cfg = load_config(None, [f"data.test={tmp_path / 'test'}", "train.max_steps=1"])
    with caplog.at_level("WARNING", logger="seq2seq"):
        _warn_if_test_split(tmp_path / "val.de", cfg)
    assert not caplog.records
    with caplog.at_level("WARNING", logger="seq2seq"):
        _warn_if_test_split(tmp_path / "test.de", cfg)
    (record,) = caplog.records
    assert "is the run's test split (data.test)" in record.getMessage()

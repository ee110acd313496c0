"""Leakage (``seq2seq/data/prepare.py``): evaluation pairs seen in training and repeated pairs
are reported, and ``data.dedup`` drops them."""

from __future__ import annotations

import logging

import pytest

from tests.corpora import SENTENCES, write_split
from tests.toys import copy_run_config


def _leaky(tmp_path):
    d = tmp_path / "leak"
    d.mkdir()
    # 12 training pairs: SENTENCES[0] three times, SENTENCES[1:3] also in the test split
    train_lines = [SENTENCES[0]] * 3 + SENTENCES[1:10]
    test_lines = SENTENCES[1:3] + ["a horse eats", "the sun shines", "a fish swims"]
    data = {"test": write_split(d, "test", [x.replace(" ", "  ") for x in test_lines])}
    return write_split(d, "train", train_lines), data


@pytest.mark.parametrize("backend", ["memory", "stream"])
def test_overlap_with_training_and_duplicates_are_reported(tmp_path, caplog, backend):
    from seq2seq.data.prepare import prepare_data
    from seq2seq.training.distributed import DistInfo

    train_prefix, data = _leaky(tmp_path)
    data.update(backend=backend, cache_dir=str(tmp_path / "cache"))
    valid = write_split(tmp_path, "valid", ["a quiet night", SENTENCES[0]])
    cfg = copy_run_config(tmp_path, train=train_prefix, valid=valid, data=data)
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        prepare_data(cfg, tmp_path, None, DistInfo())
    assert (
        "leakage: test: 2 of 5 pairs, and 2 of 5 source sentences (with any translation), also"
        in caplog.text
    )
    assert (
        "leakage: valid: 1 of 2 pairs, and 1 of 2 source sentences (with any translation), also"
        in caplog.text
    )
    duplicates = "leakage: train: 2 duplicate pairs (1 distinct pairs occur more than once)"
    assert (duplicates in caplog.text) == (backend == "memory")


def test_dedup_drops_repeated_and_held_out_pairs(tmp_path, caplog):
    from seq2seq.data.prepare import prepare_data
    from seq2seq.training.distributed import DistInfo

    train_prefix, data = _leaky(tmp_path)
    valid = write_split(tmp_path, "valid", ["a quiet night", "the rain falls"])
    cfg = copy_run_config(tmp_path, train=train_prefix, valid=valid, data={**data, "dedup": True})
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        out = prepare_data(cfg, tmp_path, None, DistInfo())
    assert len(out.train) == 8  # 12 - 2 repeats - 2 in the test split
    assert "dropped 2 pairs (duplicate of an earlier training pair) at lines 2, 3" in caplog.text
    assert "dropped 2 pairs (also in a validation or test split) at lines 4, 5" in caplog.text


@pytest.mark.parametrize("backend", ["memory", "stream"])
def test_untranslated_pairs_are_counted_per_split_and_warned_past_a_small_share(
    tmp_path, caplog, backend
):
    """A third of the training pairs with the target equal to the source trained with no word."""
    from seq2seq.data.prepare import prepare_data
    from seq2seq.training.distributed import DistInfo

    src = SENTENCES[:12]
    tgt = [s if i % 3 == 0 else f"{s} translated" for i, s in enumerate(src)]  # 4 copies
    train = write_split(tmp_path, "train", src, [f" {t}  " for t in tgt])  # spaces: still copies
    valid = write_split(tmp_path, "valid", ["a quiet night", "the rain falls"], ["x", "y"])
    data = {"backend": backend, "cache_dir": str(tmp_path / "cache"), "test": None}
    cfg = copy_run_config(tmp_path, train=train, valid=valid, data=data)
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        prepare_data(cfg, tmp_path, None, DistInfo())
    said = {
        r.getMessage().split(": ")[1]: r
        for r in caplog.records
        if r.getMessage().startswith("untranslated:")
    }
    assert said["train"].levelno == logging.WARNING
    assert said["train"].getMessage() == (
        "untranslated: train: 4 of 12 pairs (33%, over 5%) have the target equal to the source: "
        "check that the target file holds the translations, and remove such pairs (a model "
        "learns to copy them, a score counts them as translated)"
    )
    assert said["valid"].levelno == logging.INFO
    assert said["valid"].getMessage() == (
        "untranslated: valid: 0 of 2 pairs have the target equal to the source"
    )

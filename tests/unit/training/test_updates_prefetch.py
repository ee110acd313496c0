"""``built_ahead`` (training/updates.py): batches built ahead change nothing a run computes."""

from __future__ import annotations

import torch


def test_batches_built_ahead_give_the_same_run(tmp_path, monkeypatch):
    """The background thread CUDA uses to build batches ahead changes nothing a run computes."""
    from seq2seq.checkpoint import load_checkpoint
    from seq2seq.training import loop
    from tests.corpora import write_word_reversal
    from tests.toys import word_reversal_config

    write_word_reversal(tmp_path, 200)
    weights = []
    for ahead in (False, True):
        monkeypatch.setattr(loop, "builds_ahead", lambda device, ahead=ahead: ahead)
        cfg = word_reversal_config(tmp_path, "transformer", log_every=3, max_steps=7, update_freq=2)
        loop.train(cfg, tmp_path / f"run{ahead}")
        weights.append(load_checkpoint(tmp_path / f"run{ahead}" / "last.pt")["model"])
    assert all(torch.equal(w, weights[1][k]) for k, w in weights[0].items())


def test_built_ahead_keeps_order_raises_in_turn_and_stops_on_exit():
    """Results come in order; a failed build raises at its turn; leaving early starts no more."""
    import threading

    import pytest

    from seq2seq.training.updates import built_ahead

    started = []

    def build(group: int) -> int:
        started.append(group)
        if group == 5:
            raise ValueError("group 5")
        return 10 * group

    seen = []
    with pytest.raises(ValueError, match="group 5"), built_ahead(build, range(50), True) as built:
        seen.extend(built)
    assert seen == [0, 10, 20, 30, 40]
    before = threading.active_count()
    with built_ahead(build, range(100, 200), True) as built:
        assert next(built) == 1000
    assert threading.active_count() <= before and len(started) < 6 + 10
    with built_ahead(build, range(3), False) as built:
        assert list(built) == [0, 10, 20]

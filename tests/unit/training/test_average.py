"""``seq2seq/training/average.py``: checkpoints of different models are not averaged, and the
average's target vocabulary is the union of its inputs'."""

from __future__ import annotations

import pytest

from seq2seq.checkpoint import CheckpointError, save_checkpoint
from seq2seq.config import validate_config
from seq2seq.models import build_model
from seq2seq.training.average import average_checkpoints
from tests.toys import tiny_model_config


def test_average_rejects_checkpoints_of_different_models(tmp_path, synth_tokenizer):
    v = synth_tokenizer.src_vocab_size
    for name, hidden in (("a.pt", 24), ("b.pt", 32)):
        cfg = validate_config(
            {
                "train": {"max_steps": 1},
                "model": tiny_model_config("rnn", emb_size=8, hidden_size=hidden),
            }
        )
        model = build_model(cfg.model, v, v, True)
        save_checkpoint(
            tmp_path / name,
            {
                "config": cfg.model_dump(mode="json"),
                "model": model.state_dict(),
                "tokenizer": synth_tokenizer.state_dict(),
            },
        )
    with pytest.raises(CheckpointError, match="a different model"):
        average_checkpoints([tmp_path / "a.pt", tmp_path / "b.pt"])


def _saved(path, tok, **extra):
    cfg = validate_config({"train": {"max_steps": 1}, "model": tiny_model_config("rnn")})
    v = tok.src_vocab_size
    model = build_model(cfg.model, v, v, True)
    save_checkpoint(
        path,
        {
            "config": cfg.model_dump(mode="json"),
            "model": model.state_dict(),
            "tokenizer": tok.state_dict(),
            **extra,
        },
    )
    return path


def test_the_average_carries_the_union_of_its_inputs_target_vocabularies(tmp_path, synth_tokenizer):
    a = _saved(tmp_path / "a.pt", synth_tokenizer, target_vocab=[3, 4, 9])
    b = _saved(tmp_path / "b.pt", synth_tokenizer, target_vocab=[3, 5])
    old = _saved(tmp_path / "old.pt", synth_tokenizer)  # written before target_vocab existed
    assert average_checkpoints([a, b, old])["target_vocab"] == [3, 4, 5, 9]
    assert "target_vocab" not in average_checkpoints([old, old])

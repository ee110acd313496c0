"""``seq2seq/training/average.py``: checkpoints of different models are not averaged."""

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

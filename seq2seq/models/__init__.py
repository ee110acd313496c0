"""The model zoo: an explicit name -> builder table.

``build_model(cfg, src_vocab, tgt_vocab, joint_vocab)`` is the only constructor training and
inference call; every model speaks the protocol in ``base.Seq2SeqModel``.
"""

from __future__ import annotations

from seq2seq.config import ModelConfig
from seq2seq.models.base import Seq2SeqModel, State, masked_softmax
from seq2seq.models.rnn import BahdanauSeq2Seq, LuongSeq2Seq, RNNSeq2Seq
from seq2seq.models.transformer import Transformer

MODELS = {
    "rnn": RNNSeq2Seq,
    "bahdanau": BahdanauSeq2Seq,
    "luong": LuongSeq2Seq,
    "transformer": Transformer,
}


def build_model(
    cfg: ModelConfig, src_vocab: int, tgt_vocab: int, joint_vocab: bool
) -> Seq2SeqModel:
    """Instantiate the model named by ``cfg.name`` for the given vocabulary sizes."""
    if cfg.name == "transformer":
        return Transformer(src_vocab, tgt_vocab, cfg, joint_vocab)
    return MODELS[cfg.name](src_vocab, tgt_vocab, cfg)


__all__ = ["MODELS", "Seq2SeqModel", "State", "build_model", "masked_softmax"]

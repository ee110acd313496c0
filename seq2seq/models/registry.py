"""The model zoo: one explicit name -> model class table, the names those of
``configs.MODEL_CONFIGS``. Adding a model: its config class in ``configs.py``, its module here
(``base.Seq2SeqModel``'s protocol), its entry below, and a toy in ``tests/toys/models.py``."""

from __future__ import annotations

from seq2seq.models.base import Seq2SeqModel
from seq2seq.models.configs import ModelConfigBase
from seq2seq.models.rnn import BahdanauSeq2Seq, LuongSeq2Seq, RNNEncDec, RNNSeq2Seq
from seq2seq.models.transformer import Transformer

MODELS: dict[str, type[Seq2SeqModel]] = {
    "rnn": RNNSeq2Seq,
    "bahdanau": BahdanauSeq2Seq,
    "rnnencdec": RNNEncDec,
    "luong": LuongSeq2Seq,
    "transformer": Transformer,
}


def build_model(
    cfg: ModelConfigBase, src_vocab: int, tgt_vocab: int, joint_vocab: bool
) -> Seq2SeqModel:
    """The model ``cfg.name`` names for vocabularies of ``src_vocab`` and ``tgt_vocab`` pieces;
    ``joint_vocab`` (one set of pieces) lets a model share its embeddings."""
    return MODELS[cfg.name](cfg, src_vocab, tgt_vocab, joint_vocab)

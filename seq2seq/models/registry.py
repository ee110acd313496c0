"""The model zoo: one explicit name -> model class table.

Every model class is its own builder, with one signature, ``cls(cfg, src_vocab, tgt_vocab,
joint_vocab)``, and speaks the protocol in ``base.Seq2SeqModel``. The names are those of the config
classes in ``configs.MODEL_CONFIGS`` (``cfg.name``); a test checks the two tables agree and that
every model has a toy in ``tests/toys/models.py``.

Adding a model: its config class in ``configs.py`` (and in ``MODEL_CONFIGS``), its module here in
``models/`` with ``has_attention``, ``flop_sides`` and ``attention_flops``, its entry below, and a
toy in ``tests/toys/models.py``.
"""

from __future__ import annotations

from seq2seq.models.base import Seq2SeqModel
from seq2seq.models.configs import ModelConfigBase
from seq2seq.models.rnn import BahdanauSeq2Seq, LuongSeq2Seq, RNNSeq2Seq
from seq2seq.models.rnnencdec import RNNEncDec
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
    """Instantiate the model named by ``cfg.name`` for the given vocabulary sizes.

    Args:
        cfg: a validated model section (one of ``configs.MODEL_CONFIGS``).
        src_vocab, tgt_vocab: V of each side.  joint_vocab: one shared sentencepiece model (a model
            may then share its source and target embeddings).

    Raises:
        KeyError: ``cfg.name`` is not registered (a validated config always is).
    """
    return MODELS[cfg.name](cfg, src_vocab, tgt_vocab, joint_vocab)

"""Toy-sized models of every family, for invariant tests."""

from __future__ import annotations

import torch

from seq2seq.models import MODELS, build_model
from seq2seq.models.configs import BahdanauConfig, LuongConfig, RNNConfig, TransformerConfig

# Every registered model (and the variants whose wiring differs) at toy size; tests/test_models.py
# checks that each entry of MODELS has one.
TINY_MODELS = {
    "rnn": RNNConfig(emb_size=16, hidden_size=24, encoder_hidden_size=12, dropout=0.0),
    "rnn_context_lstm": RNNConfig(
        cell="lstm", feed_context=True, num_layers=2, emb_size=16, hidden_size=24, dropout=0.0
    ),
    "bahdanau": BahdanauConfig(
        emb_size=16,
        hidden_size=24,
        encoder_hidden_size=12,
        attention_size=20,
        maxout_size=10,
        dropout=0.0,
    ),
    "bahdanau_lstm_2l": BahdanauConfig(
        cell="lstm",
        num_layers=2,
        emb_size=16,
        hidden_size=24,
        attention_size=20,
        maxout_size=16,
        dropout=0.0,
        tie_embeddings=True,
    ),
    "luong_dot": LuongConfig(
        score="dot", emb_size=16, hidden_size=24, encoder_hidden_size=12, dropout=0.0
    ),
    "luong_general_uni": LuongConfig(
        score="general", bidirectional=False, emb_size=16, hidden_size=24, dropout=0.0
    ),
    "luong_concat_nofeed": LuongConfig(
        score="concat",
        input_feeding=False,
        emb_size=16,
        hidden_size=24,
        attention_size=20,
        dropout=0.0,
    ),
    "transformer": TransformerConfig(
        d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=2, dropout=0.0
    ),
    "transformer_prenorm_learned": TransformerConfig(
        d_model=32,
        n_heads=2,
        d_ff=64,
        n_encoder_layers=1,
        n_decoder_layers=2,
        dropout=0.0,
        pre_norm=True,
        learned_positions=True,
    ),
}
ATTENTION_MODELS = [k for k, cfg in TINY_MODELS.items() if MODELS[cfg.name].has_attention]


def tiny_model(name: str, src_vocab: int = 40, tgt_vocab: int = 45, seed: int = 0):
    """A deterministic toy model in eval mode."""
    torch.manual_seed(seed)
    return build_model(TINY_MODELS[name], src_vocab, tgt_vocab, joint_vocab=False).eval()

"""Toy-sized models of every family (``TINY_MODELS``, ``tiny_model``), batches for them, and a
scripted ``Oracle`` model for the searches."""

from __future__ import annotations

import math

import torch

from seq2seq.data.tokenizer import BOS, EOS, PAD
from seq2seq.models import MODELS, build_model
from seq2seq.models.base import Seq2SeqModel
from seq2seq.models.configs import (
    BahdanauConfig,
    LuongConfig,
    RNNConfig,
    RNNEncDecConfig,
    TransformerConfig,
)

# Every registered model (and the variants whose wiring differs) at toy size; tests/unit/models/
# test_registry.py checks that each entry of MODELS has one.
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
    "rnnencdec": RNNEncDecConfig(
        emb_size=16, hidden_size=24, encoder_hidden_size=12, maxout_size=10, dropout=0.0
    ),
    "rnnencdec_mean": RNNEncDecConfig(
        context="mean",
        emb_size=16,
        hidden_size=24,
        encoder_hidden_size=12,
        maxout_size=10,
        dropout=0.0,
    ),
    "rnnencdec_lstm_2l": RNNEncDecConfig(
        cell="lstm",
        num_layers=2,
        emb_size=16,
        hidden_size=24,
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


def random_batch(n: int, seed: int, max_len: int = 14, vocab: int = 40):
    """(n, S) source ids of random lengths 1..max_len, zero-padded."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, max_len + 1, (n,), generator=g)
    src = torch.zeros(n, int(lengths.max()), dtype=torch.long)
    for i, k in enumerate(lengths.tolist()):
        src[i, :k] = torch.randint(4, vocab, (k,), generator=g)
    return src


def toy_batch(seed: int = 0):
    """3 sources of lengths 7, 4, 2 (right-padded) and 3 targets of length 5."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 40, (3, 7), generator=g)
    src[1, 4:] = PAD
    src[2, 2:] = PAD
    tgt = torch.randint(4, 45, (3, 5), generator=g)
    tgt[:, 0] = 2  # BOS
    return src, src != PAD, tgt


def teacher_forced(model, src_row, tokens):
    """Log-probability of ``tokens`` and the cross-attention (T, S) under teacher forcing."""
    tgt_in = torch.tensor([[BOS, *tokens[:-1]]])
    with torch.no_grad():
        logits, att = model.forward_attention(src_row, src_row != 0, tgt_in)
    logp = torch.log_softmax(logits[0].float(), -1)
    return float(logp[torch.arange(len(tokens)), tokens].sum()), att


class Oracle(Seq2SeqModel):
    """A fake model whose next-token distribution is looked up by (sentence, prefix).

    ``table[(sid, prefix)] = {token: probability}``, where ``sid`` is the source's first id and
    ``prefix`` the tokens generated so far (no BOS). Unlisted tokens get probability 0; an unlisted
    prefix ends the sentence (EOS with probability 1). Records the rows decoded at every step.
    """

    static_state_keys = frozenset({"src_mask", "sid"})

    def __init__(self, table: dict, vocab: int = 8):
        super().__init__()
        self.table = table
        self.src_vocab_size = self.tgt_vocab_size = vocab
        self.rows_per_step: list[int] = []

    def encode(self, src, src_mask):
        return {"sid": src[:, 0], "src_mask": src_mask}

    def init_state(self, enc):
        return {**enc, "prefix": enc["sid"].new_zeros(len(enc["sid"]), 0)}

    def decode_step(self, prev_tokens, state, need_attention=False):
        prefix = torch.cat([state["prefix"], prev_tokens.unsqueeze(1)], 1)
        self.rows_per_step.append(len(prev_tokens))
        logits = torch.full((len(prev_tokens), self.tgt_vocab_size), float("-inf"))
        for r in range(len(prev_tokens)):
            key = (int(state["sid"][r]), tuple(t for t in prefix[r].tolist() if t != BOS))
            for tok, p in self.table.get(key, {EOS: 1.0}).items():
                logits[r, tok] = math.log(p)
        return logits, None, {**state, "prefix": prefix}


# One source sentence for the oracle, and a script for it whose best hypothesis depends on the
# search: [EOS] p=.4 · [A EOS] p=.24 · [A B EOS] p=.324 · [A B C EOS] p=.036
A, B, C = 4, 5, 6  # three ordinary target tokens
SENT = 4  # the source id of a one-sentence oracle
T1 = {
    (): {EOS: 0.4, A: 0.6},
    (A,): {EOS: 0.4, B: 0.6},
    (A, B): {EOS: 0.9, C: 0.1},
    (A, B, C): {EOS: 1.0},
}


def one_sentence(table: dict) -> dict:
    """An oracle table for the one sentence ``[SENT]``, from ``{prefix: distribution}``."""
    return {(SENT, prefix): dist for prefix, dist in table.items()}

"""Toy-sized models of every family, for invariant tests, a scripted oracle for the searches, and
tiny training runs on the synthetic corpus."""

from __future__ import annotations

import math

import torch

from seq2seq.data.tokenizer import BOS, EOS
from seq2seq.models import MODELS, build_model
from seq2seq.models.base import Seq2SeqModel
from seq2seq.models.configs import (
    BahdanauConfig,
    LuongConfig,
    RNNConfig,
    RNNEncDecConfig,
    TransformerConfig,
)

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
    "rnnencdec": RNNEncDecConfig(
        emb_size=16, hidden_size=24, encoder_hidden_size=12, maxout_size=10, dropout=0.0
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


# ---- tiny training runs on the synthetic corpus (tests/conftest.py's synth_corpus) -------------

TINY_RUN_MODELS = {
    "rnn": {"name": "rnn", "emb_size": 16, "hidden_size": 24, "encoder_hidden_size": 12},
    "rnnencdec": {
        "name": "rnnencdec",
        "emb_size": 16,
        "hidden_size": 24,
        "encoder_hidden_size": 12,
        "maxout_size": 16,
    },
    "bahdanau": {
        "name": "bahdanau",
        "emb_size": 16,
        "hidden_size": 24,
        "encoder_hidden_size": 12,
        "attention_size": 16,
        "maxout_size": 16,
    },
    "transformer": {
        "name": "transformer",
        "d_model": 16,
        "n_heads": 2,
        "d_ff": 32,
        "n_encoder_layers": 1,
        "n_decoder_layers": 1,
    },
}


def synth_run_raw(corpus, model: str = "rnn", dropout: float = 0.0, **train) -> dict:
    """The raw config of a tiny run on ``synth_corpus`` (its tokenizer is ``synth_tokenizer``'s
    section): 300-token batches, one log line per update, validation by loss on 10 pairs."""
    return {
        "name": model,
        "data": {
            "train": str(corpus / "train"),
            "valid": str(corpus / "val"),
            "max_len": 40,
            "max_valid_pairs": 10,
        },
        "tokenizer": {"vocab_size": 200},
        "model": {**TINY_RUN_MODELS[model], "dropout": dropout},
        "train": {
            "batch_tokens": 300,
            "valid_every": 1000,
            "log_every": 1,
            "num_threads": 1,
            "valid_bleu": False,
            "best_metric": "loss",
            "seed": 1,
            **train,
        },
        "decode": {"batch_size": 16, "max_len_b": 5},
    }


def synth_run_config(corpus, model: str = "rnn", dropout: float = 0.0, **train):
    from seq2seq.config import validate_config

    return validate_config(synth_run_raw(corpus, model, dropout, **train))


def run_cli(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """``seq2seq ARGS`` in this process: (exit code, stdout, stderr). The ``seq2seq`` logger the
    command sets up is put back afterwards, so later tests' ``caplog`` still sees its records."""
    import logging
    import sys

    from seq2seq.cli import main

    logger = logging.getLogger("seq2seq")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    monkeypatch.setattr(sys, "argv", ["seq2seq", *map(str, args)])
    try:
        try:
            main()
            code = 0
        except SystemExit as e:
            code = e.code or 0
    finally:
        logger.handlers[:] = saved[0]
        logger.setLevel(saved[1])
        logger.propagate = saved[2]
    out = capsys.readouterr()
    return code, out.out, out.err


def run_main(monkeypatch, capsys, *args) -> tuple[int, str]:
    """``run_cli`` without its stdout: (exit code, stderr)."""
    code, _, err = run_cli(monkeypatch, capsys, *args)
    return code, err


def reverse_data(folder, n: int, max_words: int, max_len: int) -> dict:
    """A reversal corpus of ``n`` training pairs (1..``max_words`` of 6 symbols, seed 3) written
    into ``folder/rev``, and the config ``data`` section that reads it."""
    from seq2seq.study.synth import write_corpus

    write_corpus("reverse", n, 1, max_words, 6, folder / "rev", seed=3)
    return {
        "src_lang": "src",
        "tgt_lang": "tgt",
        "train": str(folder / "rev" / "train"),
        "valid": str(folder / "rev" / "val"),
        "test": str(folder / "rev" / "test"),
        "max_len": max_len,
        "max_valid_pairs": 20,
    }

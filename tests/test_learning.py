"""Each model family learns a small reverse task on the CPU within a bounded number of steps."""

from __future__ import annotations

import random

import pytest
import torch

from seq2seq.config import BahdanauConfig, LuongConfig, RNNConfig, TransformerConfig
from seq2seq.data.batch import Batch
from seq2seq.data.tokenizer import EOS
from seq2seq.decoding.search import greedy_search
from seq2seq.models import build_model
from seq2seq.training.loss import token_loss_sum

V = 8  # symbols 4 .. 11 (0-3 are pad, unk, bos, eos)
FAMILIES = {
    # name: (config, learning rate, steps, exact-match accuracy required)
    "rnn": (
        RNNConfig(emb_size=32, hidden_size=64, encoder_hidden_size=32, dropout=0.0),
        3e-3,
        500,
        0.6,
    ),
    "bahdanau": (
        BahdanauConfig(
            emb_size=32,
            hidden_size=64,
            encoder_hidden_size=32,
            attention_size=32,
            maxout_size=32,
            dropout=0.0,
        ),
        3e-3,
        300,
        0.9,
    ),
    "luong": (
        LuongConfig(emb_size=32, hidden_size=64, encoder_hidden_size=32, dropout=0.0),
        3e-3,
        300,
        0.9,
    ),
    "transformer": (
        TransformerConfig(
            d_model=64, n_heads=4, d_ff=128, n_encoder_layers=2, n_decoder_layers=2, dropout=0.0
        ),
        1e-3,
        300,
        0.9,
    ),
}


def reverse_pairs(n: int, rng: random.Random, max_len: int) -> list[tuple[list[int], list[int]]]:
    pairs = []
    for _ in range(n):
        x = [4 + rng.randrange(V) for _ in range(rng.randint(3, max_len))]
        pairs.append((x, x[::-1]))
    return pairs


@pytest.mark.parametrize("name", FAMILIES)
def test_learns_to_reverse(name):
    cfg, lr, steps, required = FAMILIES[name]
    max_len = 5 if name == "rnn" else 7
    torch.manual_seed(0)
    rng = random.Random(0)
    model = build_model(cfg, 4 + V, 4 + V, joint_vocab=True)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        b = Batch.from_ids(*zip(*reverse_pairs(64, rng, max_len), strict=True))
        loss = token_loss_sum(model(b.src, b.src_mask, b.tgt_in), b.tgt_out) / b.n_tokens
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    test = reverse_pairs(200, random.Random(99), max_len)
    tb = Batch.from_ids(*zip(*test, strict=True))
    hyps = greedy_search(model, tb.src, tb.src_mask, max_len_a=1.0, max_len_b=2)
    accuracy = sum(h.tokens == y + [EOS] for h, (_, y) in zip(hyps, test, strict=True)) / len(test)
    assert accuracy >= required, f"{name}: exact match {accuracy:.2f} < {required}"

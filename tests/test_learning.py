"""Each model family learns a small reverse task on the CPU.

Float results differ between CPU kinds (vector width, fused multiply-add, thread count), so one
seed's training path is not the same path everywhere: a seed that passes the target in 150 steps on
one machine may sit on a plateau on another. So a family trains until it reaches the target
(checked every ``CHECK_EVERY`` steps) within a step cap of several times what it needs here, and
gets up to ``len(SEEDS)`` seeds: it fails only when every seed misses the target within the cap.
A model that cannot carry the source to the target (attention cut off, a source it never sees)
misses it with every seed.
"""

from __future__ import annotations

import random

import pytest
import torch

from seq2seq.config import BahdanauConfig, LuongConfig, RNNConfig, TransformerConfig
from seq2seq.data.batch import Batch
from seq2seq.data.tokenizer import EOS
from seq2seq.decoding.search import greedy_search
from seq2seq.models import Seq2SeqModel, build_model
from seq2seq.training.loss import token_loss_sum

pytestmark = pytest.mark.e2e  # training to a target, a few seconds per model

V = 8  # symbols 4 .. 11 (0-3 are pad, unk, bos, eos)
SEEDS = (0, 1, 2)  # tried in turn until one reaches the target
CHECK_EVERY = 25  # steps between two exact-match checks
FAMILIES = {
    # name: (config, learning rate, longest sequence, exact match required, step cap). Each cap is
    # 2-4 times the most steps any of seeds 0-9 took to the target on a Zen 3 CPU (rnn 125,
    # bahdanau 100, luong 175, transformer 200), and low enough that Bahdanau's and Luong's models
    # with the attention context zeroed stay under the target (at most 0.70 after 400 steps and
    # 0.81 after 500).
    "rnn": (
        RNNConfig(emb_size=32, hidden_size=64, encoder_hidden_size=32, dropout=0.0),
        3e-3,
        5,
        0.6,
        400,
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
        7,
        0.9,
        300,
    ),
    "luong": (
        LuongConfig(emb_size=32, hidden_size=64, encoder_hidden_size=32, dropout=0.0),
        3e-3,
        7,
        0.9,
        400,
    ),
    "transformer": (
        TransformerConfig(
            d_model=64, n_heads=4, d_ff=128, n_encoder_layers=2, n_decoder_layers=2, dropout=0.0
        ),
        1e-3,
        7,
        0.9,
        600,
    ),
}


def reverse_pairs(n: int, rng: random.Random, max_len: int) -> list[tuple[list[int], list[int]]]:
    pairs = []
    for _ in range(n):
        x = [4 + rng.randrange(V) for _ in range(rng.randint(3, max_len))]
        pairs.append((x, x[::-1]))
    return pairs


def exact_match(model: Seq2SeqModel, test: list[tuple[list[int], list[int]]]) -> float:
    tb = Batch.from_ids(*zip(*test, strict=True))
    model.eval()
    with torch.no_grad():
        hyps = greedy_search(model, tb.src, tb.src_mask, max_len_a=1.0, max_len_b=2)
    model.train()
    return sum(h.tokens == y + [EOS] for h, (_, y) in zip(hyps, test, strict=True)) / len(test)


def learn(name: str, seed: int) -> tuple[int, float]:
    """Train ``name`` from ``seed`` until it reaches the family's exact match
    on 200 held-out pairs or its step cap; returns (steps, best exact match seen)."""
    cfg, lr, max_len, required, cap = FAMILIES[name]
    torch.manual_seed(seed)
    rng = random.Random(seed)
    model = build_model(cfg, 4 + V, 4 + V, joint_vocab=True)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    test, best = reverse_pairs(200, random.Random(99), max_len), 0.0
    for step in range(1, cap + 1):
        b = Batch.from_ids(*zip(*reverse_pairs(64, rng, max_len), strict=True))
        loss = token_loss_sum(model(b.src, b.src_mask, b.tgt_in), b.tgt_out) / b.n_tokens
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % CHECK_EVERY == 0:
            best = max(best, exact_match(model, test))
            if best >= required:
                return step, best
    return cap, best


@pytest.mark.parametrize("name", FAMILIES)
def test_learns_to_reverse(name):
    required, cap = FAMILIES[name][3:]
    tries = []
    for seed in SEEDS:
        _, best = learn(name, seed)
        if best >= required:
            return
        tries.append(f"seed {seed}: {best:.2f}")
    pytest.fail(f"{name}: exact match under {required} after {cap} steps ({'; '.join(tries)})")

"""What the models learn on the CPU: each family learns a small reverse task, and a fixed-vector
RNN scores captions worse in long inputs.

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

from seq2seq.data.batch import Batch
from seq2seq.data.tokenizer import EOS
from seq2seq.decoding.search import greedy_search
from seq2seq.models import Seq2SeqModel, build_model
from seq2seq.models.configs import BahdanauConfig, LuongConfig, RNNConfig, TransformerConfig
from seq2seq.study.evalsets import EvalSet
from seq2seq.study.rho import caption_nlls
from seq2seq.study.stats import bootstrap_ci
from seq2seq.training.loss import token_loss_sum
from tests.unit.decoding.limits import limits

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
        hyps = greedy_search(model, tb.src, tb.src_mask, limits(max_len_a=1.0, max_len_b=2))
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


CPU = torch.device("cpu")

SYMBOLS = 8  # source symbols 4 .. 11, each translated to itself + SYMBOLS


class SymbolTokenizer:
    """Whitespace-separated ids, as they are."""

    def encode_src(self, sentences):
        return [[int(w) for w in s.split()] for s in sentences]

    encode_tgt = encode_src


def symbol_captions(n: int, rng: random.Random) -> list[tuple[list[int], list[int]]]:
    out = []
    for _ in range(n):
        x = [4 + rng.randrange(SYMBOLS) for _ in range(rng.randint(3, 6))]
        out.append((x, [t + SYMBOLS for t in x]))
    return out


def symbol_evalset(n: int, concat_k: int, seed: int) -> EvalSet:
    caps = symbol_captions(n, random.Random(seed))
    src = [" ".join(map(str, s)) for s, _ in caps]
    ref = [" ".join(map(str, t)) for _, t in caps]
    ev = EvalSet("symbols", list(src), list(ref), [1] * n, "symbols")
    for k in range(2, concat_k + 1):
        for j in range(0, n - k + 1, k):
            ev.src.append(" ".join(src[j : j + k]))
            ev.ref.append(" ".join(ref[j : j + k]))
            ev.k.append(k)
    return ev


def train_joined(cfg, seed: int, steps: int = 300) -> Seq2SeqModel:
    """The study's recipe in small: batches of 32 examples, each 1 to 4 captions joined end to
    end (one EOS at the end, as ``concat_pairs`` joins them)."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    model = build_model(cfg, 4 + 2 * SYMBOLS, 4 + 2 * SYMBOLS, joint_vocab=True)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        examples = []
        for _ in range(32):
            caps = symbol_captions(rng.randint(1, 4), rng)
            examples.append(([x for s, _ in caps for x in s], [x for _, t in caps for x in t]))
        b = Batch.from_ids(*zip(*examples, strict=True))
        loss = token_loss_sum(model(b.src, b.src_mask, b.tgt_in), b.tgt_out) / b.n_tokens
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


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


def caption_gap(c, k: int) -> dict:
    """What the k-join costs the captions (``rho.CaptionNLL``), in nats per caption token: the
    summed C - A over their tokens, with its bootstrap 95% interval over the joined lines."""
    u = c.units[k]
    gaps, tokens = c.ctx[k].sum(1) - c.alone[u].sum(1), c.tokens[u].sum(1)
    d = bootstrap_ci(lambda i: float(gaps[i].sum() / tokens[i].sum()), len(gaps), 200)
    return {"gap": d["value"], "low": d["low"]}


def test_a_trained_fixed_vector_rnn_scores_captions_worse_in_long_inputs():
    """Trained on 1-4 joined captions (about 5 s of CPU), the plain RNN, whose decoder sees the
    source only through one vector, loses 0.4-1.0 nats per caption token at k = 2..4 (seeds 0
    and 1 on a Zen 3 CPU; RNNsearch trained the same way loses under 0.1). The margin, 0.15 nats
    with the interval above 0 and growing with k, leaves room for other CPUs' float paths; a
    second seed runs only if the first misses."""
    cfg = RNNConfig(emb_size=32, hidden_size=64, encoder_hidden_size=32, dropout=0.0)
    ev = symbol_evalset(120, 4, seed=99)
    tries = []
    for seed in (0, 1):
        nll = caption_nlls(train_joined(cfg, seed), SymbolTokenizer(), ev, CPU)
        cis = {k: caption_gap(nll, k) for k in (2, 3, 4)}
        ok = all(c["gap"] > 0.15 and c["low"] > 0 for c in cis.values())
        if ok and cis[2]["gap"] < cis[4]["gap"]:
            return
        tries.append(f"seed {seed}: " + ", ".join(f"k={k} {c['gap']:.3f}" for k, c in cis.items()))
    pytest.fail(f"rnn caption gap not above 0.15 nats per token: {'; '.join(tries)}")

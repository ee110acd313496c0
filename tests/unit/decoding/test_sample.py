"""Sampling: top-k 1 and a vanishing temperature are greedy search; a seed repeats whatever the
global RNG; draw frequencies follow the scripted distribution, reshaped by temperature, top-k and
top-p (a chi-square test); min_len, max_len, log-probabilities and attention as in greedy."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch

from seq2seq.data.tokenizer import EOS
from seq2seq.decoding.sample import sampling_log_probs
from seq2seq.decoding.search import greedy_search, sample_search
from tests.toys import (
    ATTENTION_MODELS,
    TINY_MODELS,
    Oracle,
    random_batch,
    teacher_forced,
    tiny_model,
)
from tests.unit.decoding.limits import limits

A, B, C = 4, 5, 6
SENT = 4
FIRST = {EOS: 0.1, A: 0.2, B: 0.3, C: 0.4}  # the first token; then EOS with probability 1
# 99.9% quantile of the chi-square distribution with 1, 2 and 3 degrees of freedom
CHI2_999 = {1: 10.83, 2: 13.82, 3: 16.27}


def oracle(table: dict) -> Oracle:
    """The oracle that reads ``table[prefix]`` for the source sentence ``[SENT]``."""
    return Oracle({(SENT, prefix): dist for prefix, dist in table.items()})


def draws(table: dict, n: int, **kw):
    """n draws for the one source sentence ``[SENT]``."""
    src = torch.tensor([[SENT]])
    kw = {"seed": 1, "max_len_a": 0.0, "max_len_b": 10, **kw}
    return sample_search(oracle(table), src, src != 0, limits("sample", **kw), n_best=n)[0]


def reshaped(p: dict, temperature=1.0, top_k=None, top_p=1.0) -> dict:
    """The distribution sampling should draw from, computed by hand from the definitions."""
    q = {t: x ** (1 / temperature) for t, x in p.items()}
    q = {t: x / sum(q.values()) for t, x in q.items()}
    order = sorted(q, key=lambda t: -q[t])
    keep = order[:top_k]
    keep = [
        t
        for i, t in enumerate(keep)
        if sum(q[u] for u in keep[:i]) / sum(q[u] for u in keep) < top_p
    ]
    return {t: q[t] / sum(q[u] for u in keep) for t in keep}


@pytest.mark.parametrize(
    ("temperature", "top_k", "top_p"),
    [
        (1.0, None, 1.0),
        (2.0, None, 1.0),
        (0.5, None, 1.0),
        (1.0, 2, 1.0),
        (1.0, None, 0.75),
        (2.0, 3, 0.6),
    ],
)
def test_first_token_frequencies_follow_the_reshaped_distribution(temperature, top_k, top_p):
    expected = reshaped(FIRST, temperature, top_k, top_p)
    n = 4000
    hyps = draws({(): FIRST}, n, temperature=temperature, top_k=top_k, top_p=top_p)
    counts = Counter(h.tokens[0] for h in hyps)
    assert set(counts) <= set(expected)  # filtered tokens are never drawn
    chi2 = sum((counts[t] - n * p) ** 2 / (n * p) for t, p in expected.items())
    assert chi2 < CHI2_999[len(expected) - 1], (counts, expected)
    for h in hyps:  # the model's own log-probability, whatever the reshaping
        assert h.log_prob == pytest.approx(math.log(FIRST[h.tokens[0]]))


def test_the_filters_keep_the_right_tokens_and_renormalise():
    logp = torch.log(torch.tensor([[0.0, 0.0, 0.1, 0.2, 0.3, 0.4]]))  # PAD, UNK blocked
    probs = sampling_log_probs(logp, top_k=2).exp()[0]
    torch.testing.assert_close(probs, torch.tensor([0, 0, 0, 0, 3 / 7, 4 / 7]))
    # top-p 0.75: .4 and .3 hold .7 < .75, so .2 stays too; .1 would come after .9 >= .75
    probs = sampling_log_probs(logp, top_p=0.75).exp()[0]
    torch.testing.assert_close(probs, torch.tensor([0, 0, 0, 2 / 9, 3 / 9, 4 / 9]))
    probs = sampling_log_probs(logp, top_p=0.3).exp()[0]  # the most probable always stays
    torch.testing.assert_close(probs, torch.tensor([0.0, 0, 0, 0, 0, 1]))
    probs = sampling_log_probs(logp, temperature=0.5).exp()[0]
    torch.testing.assert_close(probs, torch.tensor([0, 0, 1, 4, 9, 16]) / 30)


@pytest.mark.parametrize("name", list(TINY_MODELS))
def test_top_k_one_is_greedy(name):
    model, src = tiny_model(name), random_batch(12, seed=3)
    need_att = name in ATTENTION_MODELS
    greedy = greedy_search(model, src, src != 0, limits(max_len_b=6), need_attention=need_att)
    sampled = sample_search(
        model,
        src,
        src != 0,
        limits("sample", top_k=1, max_len_b=6),
        n_best=2,
        need_attention=need_att,
    )
    for g, hyps in zip(greedy, sampled, strict=True):
        for h in hyps:
            assert (h.tokens, h.finished) == (g.tokens, g.finished)
            assert h.log_prob == pytest.approx(g.log_prob, abs=1e-4)  # 2B rows vs B: float sums
            if need_att:
                torch.testing.assert_close(h.attention, g.attention)


def test_a_vanishing_temperature_is_greedy():
    # greedy follows A (.6), B (.55), EOS (.9); every step's runner-up is far behind at T = 1e-3
    table = {(): {EOS: 0.4, A: 0.6}, (A,): {EOS: 0.45, B: 0.55}, (A, B): {EOS: 0.9, C: 0.1}}
    src = torch.tensor([[SENT]])
    (g,) = greedy_search(oracle(table), src, src != 0, limits())
    for h in draws(table, 200, temperature=1e-3):
        assert (h.tokens, h.log_prob) == (g.tokens, pytest.approx(g.log_prob))
    assert len({tuple(h.tokens) for h in draws(table, 200)}) > 1  # at T = 1 they differ


def test_a_seed_repeats_whatever_the_global_rng_and_another_seed_differs():
    broad = {p: {EOS: 0.25, A: 0.25, B: 0.25, C: 0.25} for p in [(), (A,), (B,), (C,)]}
    torch.manual_seed(0)
    first = [h.tokens for h in draws(broad, 30, seed=7)]
    torch.manual_seed(1)
    torch.rand(100)
    assert [h.tokens for h in draws(broad, 30, seed=7)] == first
    assert [h.tokens for h in draws(broad, 30, seed=8)] != first


def test_draws_are_ranked_by_score_and_independent():
    hyps = draws({(): FIRST}, 50, length_penalty=1.0)
    assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
    assert len({tuple(h.tokens) for h in hyps}) == 4  # all four first tokens appear


def test_min_len_and_max_len_are_honoured():
    first_eos = {(): {EOS: 0.5, A: 0.5}, (A,): {EOS: 1.0}}
    assert all(h.tokens == [A, EOS] for h in draws(first_eos, 100, min_len=1))
    never_ends = {p: {A: 0.5, B: 0.5} for p in [(), (A,), (B,), (A, A), (A, B), (B, A), (B, B)]}
    hyps = draws(never_ends, 20, max_len_a=0.0, max_len_b=3)
    assert all(len(h.tokens) == 3 and not h.finished for h in hyps)
    assert all(h.log_prob == pytest.approx(3 * math.log(0.5)) for h in hyps)


@pytest.mark.parametrize("name", ATTENTION_MODELS)
def test_draws_carry_their_log_probability_and_attention(name):
    """Each draw's (T, S_i) attention and log-probability equal teacher forcing on its tokens,
    though it was drawn from a sharpened, filtered distribution."""
    model, src = tiny_model(name), random_batch(4, seed=7, max_len=9)
    out = sample_search(
        model,
        src,
        src != 0,
        limits("sample", temperature=0.7, top_k=10, top_p=0.9, seed=2),
        n_best=3,
        need_attention=True,
    )
    for i, hyps in enumerate(out):
        row = src[i : i + 1, : int((src[i] != 0).sum())]
        for h in hyps:
            assert h.attention.shape == (len(h.tokens), row.shape[1])
            log_prob, att = teacher_forced(model, row, h.tokens)
            assert h.log_prob == pytest.approx(log_prob, abs=1e-4)
            torch.testing.assert_close(h.attention, att[0], atol=1e-5, rtol=1e-4)

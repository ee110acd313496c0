"""``seq2seq/decoding/beam.py``: beam search on a scripted oracle with hand-set step probabilities
(exact hypotheses and scores), exhaustive when wide enough, beam 1 == greedy for every model, and
no empty translation from an undertrained model."""

from __future__ import annotations

import itertools
import math
import random

import pytest
import torch

from seq2seq.data.tokenizer import EOS
from seq2seq.decoding.base import Hypothesis, length_penalty
from seq2seq.decoding.search import beam_search, greedy_search
from seq2seq.decoding.translate import translate_sentences
from tests.corpora import FIVE
from tests.toys import (
    SENT,
    T1,
    TINY_MODELS,
    A,
    B,
    C,
    Oracle,
    one_sentence,
    random_batch,
    tiny_model,
    translate_cli,
)
from tests.unit.decoding.limits import limits


def ends_properly(h: Hypothesis, max_len: int) -> bool:
    """Exactly one EOS, at the end; or no EOS and cut at the maximum length."""
    if h.finished:
        return h.tokens.count(EOS) == 1 and h.tokens[-1] == EOS
    return EOS not in h.tokens and len(h.tokens) == max_len


def search_one(table: dict, beam: int = 2, **kw):
    """Beam search on one source sentence ``[SENT]``; max length 10 unless given."""
    kw.setdefault("max_len_a", 0.0)
    kw.setdefault("max_len_b", 10)
    n_best = kw.pop("n_best", 1)
    model = Oracle(one_sentence(table))
    src = torch.tensor([[SENT]])
    return beam_search(model, src, src != 0, limits("beam", beam_size=beam, **kw), n_best)[0], model


def assert_hyps(hyps, expected):
    """expected: [(tokens, score, log_prob, finished)], best first."""
    got = [(h.tokens, h.score, h.log_prob, h.finished) for h in hyps]
    assert [g[0] for g in got] == [e[0] for e in expected]
    for g, e in zip(got, expected, strict=True):
        assert g[1] == pytest.approx(e[1], abs=1e-5)
        assert g[2] == pytest.approx(e[2], abs=1e-5)
        assert g[3] == e[3]


def brute_force(table: dict, max_len: int, alpha: float, n: int):
    """All finished hypotheses up to ``max_len`` tokens, scored exactly; the n best."""
    hyps = []
    for k in range(max_len):
        for seq in itertools.product((A, B), repeat=k):
            p, prefix = 1.0, ()
            for tok in (*seq, EOS):
                p *= table[prefix].get(tok, 0.0)
                prefix = (*prefix, tok)
            lp = math.log(p)
            hyps.append((lp / length_penalty(k + 1, alpha).item(), lp, [*seq, EOS]))
    return sorted(hyps, key=lambda h: -h[0])[:n]


def test_beam_of_an_undertrained_model_never_returns_an_empty_translation(toy, tmp_path):
    code, out, _ = translate_cli(
        toy["run"], "--beam", 5, "--min-len", 1, lines=FIVE, tmp_path=tmp_path
    )
    assert code == 0
    assert all(out.split("\n")[:5]) and out.count("\n") == 5
    cfg = toy["cfg"].decode.with_method("beam", beam_size=5, min_len=1)
    res = translate_sentences(toy["model"], toy["tok"], FIVE, cfg, n_best=5)
    for r, ids in zip(res, toy["tok"].encode_src(FIVE), strict=True):
        max_len = math.floor(1.5 * len(ids) + 10)
        assert len(r.hypotheses) == 5
        assert all(ends_properly(h, max_len) for h in r.hypotheses)
        assert all(len(h.tokens) >= 2 or not h.finished for h in r.hypotheses)


def test_raw_log_prob_favours_the_shorter_hypothesis():
    hyps, _ = search_one(T1, beam=4, n_best=4)
    assert_hyps(
        hyps,
        [
            ([EOS], -0.916291, -0.916291, True),
            ([A, B, EOS], -1.127012, -1.127012, True),
            ([A, EOS], -1.427116, -1.427116, True),
            ([A, B, C, EOS], -3.324236, -3.324236, True),
        ],
    )


def test_length_penalty_favours_the_longer_hypothesis_at_alpha_1():
    # lp(1) = 1, lp(3) = 8/6: -1.127012 / (8/6) = -0.845259 beats -0.916291
    hyps, _ = search_one(T1, beam=2, length_penalty=1.0)
    assert_hyps(hyps, [([A, B, EOS], -0.845259, -1.127012, True)])


def test_a_mild_length_penalty_still_favours_the_shorter():
    # α = 0.5: -1.127012 / sqrt(8/6) = -0.976021 loses to -0.916291
    hyps, _ = search_one(T1, beam=2, n_best=2, length_penalty=0.5)
    assert_hyps(
        hyps, [([EOS], -0.916291, -0.916291, True), ([A, B, EOS], -0.976021, -1.127012, True)]
    )


def test_eos_on_the_first_step_stops_at_once():
    hyps, model = search_one({(): {EOS: 0.9, A: 0.1}, (A,): {EOS: 1.0}}, beam=3)
    assert_hyps(hyps, [([EOS], math.log(0.9), math.log(0.9), True)])
    # one step, one row (the K beams of a sentence are identical at the first step): decided at
    # once, since the open A (log .1) cannot beat the finished [EOS] (log .9)
    assert model.rows_per_step == [1]


def test_min_len_blocks_eos_without_renormalising():
    hyps, _ = search_one(T1, beam=2, min_len=2)
    assert_hyps(hyps, [([A, B, EOS], -1.127012, -1.127012, True)])
    hyps, _ = search_one(T1, beam=3, n_best=2, min_len=3)
    assert_hyps(hyps, [([A, B, C, EOS], -3.324236, -3.324236, True)])


def test_max_len_cuts_and_flags_hypotheses():
    # No EOS ever: the best open beam at length 3 comes back cut, without EOS.
    never_ends = {p: {A: 0.7, B: 0.3} for p in [(), (A,), (B,), (A, A), (A, B), (B, A), (B, B)]}
    hyps, model = search_one(never_ends, beam=2, max_len_b=3)
    assert_hyps(hyps, [([A, A, A], 3 * math.log(0.7), 3 * math.log(0.7), False)])
    assert len(model.rows_per_step) == 3


def test_cut_hypotheses_only_fill_an_nbest_list_short_of_finished_ones():
    # Max length 2: [A B] is cut with log .36 = -1.021651 (α = 1: -0.875701, above [EOS]) but the
    # two finished hypotheses come first; with n_best 3 the cut one would fill the third slot, but
    # it scores above them (its score lacks EOS's probability): left out, the list stays sorted.
    hyps, _ = search_one(T1, beam=2, n_best=2, max_len_b=2, length_penalty=1.0)
    assert_hyps(
        hyps,
        [
            ([EOS], -0.916291, -0.916291, True),
            ([A, EOS], math.log(0.24) / (7 / 6), math.log(0.24), True),
        ],
    )
    hyps, _ = search_one(T1, beam=3, n_best=3, max_len_b=2, length_penalty=1.0)
    assert [h.tokens for h in hyps] == [[EOS], [A, EOS]]
    # [EOS] .5 · [A EOS] .3 · [A B] cut at .2, below both: it fills the third slot
    table = {(): {EOS: 0.5, A: 0.5}, (A,): {EOS: 0.6, B: 0.4}}
    hyps, _ = search_one(table, beam=3, n_best=3, max_len_b=2)
    assert [h.tokens for h in hyps] == [[EOS], [A, EOS], [A, B]]
    assert hyps[2].finished is False
    assert hyps[2].score == pytest.approx(math.log(0.2), abs=1e-5)


def test_each_sentence_leaves_the_batch_when_decided_and_order_is_kept():
    table = one_sentence(T1) | {(SENT + 1, ()): {EOS: 0.9, A: 0.1}}
    model = Oracle(table)
    src = torch.tensor([[SENT], [SENT + 1]])
    out = beam_search(model, src, src != 0, limits("beam", beam_size=2))
    assert [h[0].tokens for h in out] == [[EOS], [EOS]]
    assert out[0][0].score == pytest.approx(math.log(0.4)) and out[1][0].score == pytest.approx(
        math.log(0.9)
    )
    # step 1: one row per sentence; sentence 2 is decided at once, so step 2 decodes only the
    # K = 2 beams of sentence 1, which is decided then
    assert model.rows_per_step == [2, 2]


def test_n_best_cannot_exceed_the_beam():
    with pytest.raises(ValueError, match="n_best"):
        search_one(T1, beam=2, n_best=3)


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_beam_wide_enough_is_exhaustive_search(alpha, seed):
    """With K >= every live candidate, beam search with early stopping finds the exact n best."""
    rng = random.Random(seed)
    table = {}
    for k in range(4):
        for prefix in itertools.product((A, B), repeat=k):
            w = [rng.random() for _ in range(3)]
            table[prefix] = {t: x / sum(w) for t, x in zip((EOS, A, B), w, strict=True)}
    hyps, _ = search_one(table, beam=24, n_best=3, max_len_b=4, length_penalty=alpha)
    expected = brute_force(table, 4, alpha, 3)
    assert_hyps(hyps, [(toks, s, lp, True) for s, lp, toks in expected])


@pytest.mark.parametrize("name", list(TINY_MODELS))
def test_beam_one_is_greedy(name):
    model, src = tiny_model(name), random_batch(12, seed=3)
    greedy = greedy_search(model, src, src != 0, limits(max_len_b=6))
    beam = beam_search(model, src, src != 0, limits("beam", beam_size=1, max_len_b=6))
    for g, (b,) in zip(greedy, beam, strict=True):
        assert b.tokens == g.tokens and b.finished == g.finished
        assert b.score == pytest.approx(g.score, abs=1e-6)

"""Greedy and beam search: a scripted oracle with hand-set step probabilities (exact hypotheses and
scores), beam 1 == greedy for every model, batch invariance, the returned attention; and the
table of searches that decode.method dispatches through."""

from __future__ import annotations

import itertools
import math
import random
import re
from typing import get_args

import pytest
import torch

from seq2seq.config import SEARCH_SETTINGS, ConfigError, DecodeConfig, SearchMethod, validate_config
from seq2seq.data.tokenizer import EOS
from seq2seq.decoding.search import (
    SEARCHES,
    beam_search,
    check_n_best,
    greedy_search,
    length_penalty,
    search,
)
from tests.toys import (
    ATTENTION_MODELS,
    TINY_MODELS,
    Oracle,
    random_batch,
    teacher_forced,
    tiny_model,
)

A, B, C = 4, 5, 6  # three ordinary target tokens
SENT = 4  # the source id of a one-sentence oracle


def one_sentence(table: dict) -> dict:
    return {(SENT, prefix): dist for prefix, dist in table.items()}


def search_one(table: dict, beam: int = 2, **kw):
    """Beam search on one source sentence ``[SENT]``; max length 10 unless given."""
    kw.setdefault("max_len_a", 0.0)
    kw.setdefault("max_len_b", 10)
    model = Oracle(one_sentence(table))
    src = torch.tensor([[SENT]])
    return beam_search(model, src, src != 0, beam_size=beam, **kw)[0], model


# [EOS] p=.4 · [A EOS] p=.24 · [A B EOS] p=.324 · [A B C EOS] p=.036
T1 = {
    (): {EOS: 0.4, A: 0.6},
    (A,): {EOS: 0.4, B: 0.6},
    (A, B): {EOS: 0.9, C: 0.1},
    (A, B, C): {EOS: 1.0},
}
LN = {
    (EOS,): math.log(0.4),
    (A, EOS): math.log(0.24),
    (A, B, EOS): math.log(0.324),
    (A, B, C, EOS): math.log(0.036),
}


def assert_hyps(hyps, expected):
    """expected: [(tokens, score, log_prob, finished)], best first."""
    got = [(h.tokens, h.score, h.log_prob, h.finished) for h in hyps]
    assert [g[0] for g in got] == [e[0] for e in expected]
    for g, e in zip(got, expected, strict=True):
        assert g[1] == pytest.approx(e[1], abs=1e-5)
        assert g[2] == pytest.approx(e[2], abs=1e-5)
        assert g[3] == e[3]


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
    hyps, _ = search_one(T1, beam=2, length_penalty_alpha=1.0)
    assert_hyps(hyps, [([A, B, EOS], -0.845259, -1.127012, True)])


def test_a_mild_length_penalty_still_favours_the_shorter():
    # α = 0.5: -1.127012 / sqrt(8/6) = -0.976021 loses to -0.916291
    hyps, _ = search_one(T1, beam=2, n_best=2, length_penalty_alpha=0.5)
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
    # two finished hypotheses come first; with n_best 3 the cut one fills the third slot.
    hyps, _ = search_one(T1, beam=2, n_best=2, max_len_b=2, length_penalty_alpha=1.0)
    assert_hyps(
        hyps,
        [
            ([EOS], -0.916291, -0.916291, True),
            ([A, EOS], math.log(0.24) / (7 / 6), math.log(0.24), True),
        ],
    )
    hyps, _ = search_one(T1, beam=3, n_best=3, max_len_b=2, length_penalty_alpha=1.0)
    assert [h.tokens for h in hyps] == [[EOS], [A, EOS], [A, B]]
    assert hyps[2].finished is False
    assert hyps[2].score == pytest.approx(-1.021651 / (7 / 6), abs=1e-5)


def test_max_len_follows_the_source_length():
    never_ends = {p: {A: 1.0} for p in [(A,) * n for n in range(20)]}
    model = Oracle({(s, p): d for s in (SENT, SENT + 1) for p, d in never_ends.items()})
    src = torch.tensor([[SENT, 9, 9, 9], [SENT + 1, 0, 0, 0]])  # 4 and 1 real tokens
    out = beam_search(model, src, src != 0, beam_size=2, max_len_a=1.5, max_len_b=2)
    assert [len(h[0].tokens) for h in out] == [8, 3]  # floor(1.5 * 4 + 2), floor(1.5 * 1 + 2)
    g = greedy_search(model, src, src != 0, max_len_a=1.5, max_len_b=2)
    assert [len(h.tokens) for h in g] == [8, 3] and not any(h.finished for h in g)


def test_each_sentence_leaves_the_batch_when_decided_and_order_is_kept():
    table = one_sentence(T1) | {(SENT + 1, ()): {EOS: 0.9, A: 0.1}}
    model = Oracle(table)
    src = torch.tensor([[SENT], [SENT + 1]])
    out = beam_search(model, src, src != 0, beam_size=2)
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
    hyps, _ = search_one(table, beam=24, n_best=3, max_len_b=4, length_penalty_alpha=alpha)
    expected = brute_force(table, 4, alpha, 3)
    assert_hyps(hyps, [(toks, s, lp, True) for s, lp, toks in expected])


@pytest.mark.parametrize("name", list(TINY_MODELS))
def test_beam_one_is_greedy(name):
    model, src = tiny_model(name), random_batch(12, seed=3)
    greedy = greedy_search(model, src, src != 0, max_len_b=6)
    beam = beam_search(model, src, src != 0, beam_size=1, max_len_b=6)
    for g, (b,) in zip(greedy, beam, strict=True):
        assert b.tokens == g.tokens and b.finished == g.finished
        assert b.score == pytest.approx(g.score, abs=1e-6)


def _best(model, src, beam):
    if beam == 1:
        return [(h.tokens, h.score) for h in greedy_search(model, src, src != 0)]
    return [(h[0].tokens, h[0].score) for h in beam_search(model, src, src != 0, beam_size=beam)]


def _assert_same(a, b):
    assert a[0] == b[0]
    assert a[1] == pytest.approx(b[1], abs=1e-4)


@pytest.mark.parametrize("beam", [1, 4])
@pytest.mark.parametrize("name", list(TINY_MODELS))
def test_batch_invariance(name, beam):
    """Alone, in a batch of 64, and in another order: the same best hypothesis and score."""
    model, src = tiny_model(name), random_batch(64, seed=5)
    batched = _best(model, src, beam)
    perm = torch.randperm(64, generator=torch.Generator().manual_seed(0))
    shuffled = _best(model, src[perm], beam)
    for k, i in enumerate(perm.tolist()):
        _assert_same(shuffled[k], batched[i])
    for i in range(0, 64, 9):
        row = src[i : i + 1, : int((src[i] != 0).sum())]
        _assert_same(_best(model, row, beam)[0], batched[i])


@pytest.mark.parametrize("name", ATTENTION_MODELS)
def test_hypotheses_carry_their_own_attention(name):
    """Each of the n best has (T, S_i) attention equal to teacher forcing on its own tokens: rows
    sum to 1 over the real source positions."""
    model, src = tiny_model(name), random_batch(5, seed=7, max_len=9)
    out = beam_search(model, src, src != 0, beam_size=3, n_best=3, need_attention=True)
    greedy = greedy_search(model, src, src != 0, need_attention=True)
    for i, hyps in enumerate(out):
        row = src[i : i + 1, : int((src[i] != 0).sum())]
        for h in [*hyps, greedy[i]]:
            assert h.attention.shape == (len(h.tokens), row.shape[1])
            torch.testing.assert_close(h.attention.sum(1), torch.ones(len(h.tokens)))
            log_prob, att = teacher_forced(model, row, h.tokens)
            assert h.log_prob == pytest.approx(log_prob, abs=1e-4)
            torch.testing.assert_close(h.attention, att[0], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", ["rnn", "rnn_context_lstm"])
def test_the_bottleneck_model_returns_no_attention(name):
    model, src = tiny_model(name), random_batch(3, seed=7)
    out = beam_search(model, src, src != 0, beam_size=2, need_attention=True)
    assert all(h.attention is None for hyps in out for h in hyps)
    assert all(
        h.attention is None for h in greedy_search(model, src, src != 0, need_attention=True)
    )


def test_the_table_has_one_search_per_method_of_the_config():
    assert set(SEARCHES) == set(get_args(SearchMethod)) == set(SEARCH_SETTINGS)


def decode_t1(decode: dict) -> list[list[int]]:
    """The tokens ``search`` returns on T1 under the config section ``decode``."""
    # alpha 0: the oracle's probabilities are compared raw
    cfg = validate_config({"decode": {"min_len": 0, "length_penalty": 0.0, **decode}}).decode
    src = torch.tensor([[SENT]])
    return [h.tokens for h in search(Oracle(one_sentence(T1)), src, src != 0, cfg)[0]]


def test_a_config_without_method_chooses_by_beam_size_as_before():
    # T1: greedy follows A (.6), B (.6), EOS (.9); any beam of 2 or more finds [EOS] (.4)
    assert decode_t1({}) == [[A, B, EOS]]
    assert decode_t1({"beam_size": 1}) == [[A, B, EOS]]
    assert decode_t1({"beam_size": 5}) == [[EOS]]
    assert validate_config({"decode": {"beam_size": 5}}).decode.method == "beam"
    assert decode_t1({"method": "beam", "beam_size": 2}) == [[EOS]]
    assert decode_t1({"method": "sample", "top_k": 1}) == [[A, B, EOS]]


@pytest.mark.parametrize(
    ("decode", "says"),
    [
        ({"method": "greedy", "beam_size": 5}, "decode.beam_size: 5 is a setting of method beam"),
        ({"method": "sample", "beam_size": 3}, "decode.beam_size: 3 is a setting of method beam"),
        ({"beam_size": 4, "top_p": 0.9}, "decode.top_p: 0.9 is a setting of method sample"),
        ({"method": "greedy", "temperature": 0.5}, "decode.temperature: 0.5 is a setting"),
        ({"seed": 1}, "decode.seed: 1 is a setting of method sample, but method is greedy"),
        ({"method": "sample", "top_p": 0}, "decode.top_p: Input should be greater than 0"),
        ({"method": "sample", "top_p": 1.5}, "decode.top_p: Input should be less than or equal"),
        ({"method": "sample", "temperature": 0}, "decode.temperature: Input should be greater"),
        ({"method": "sample", "top_k": 0}, "decode.top_k: Input should be greater than or equal"),
        ({"method": "nucleus"}, "decode.method: Input should be 'greedy', 'beam'"),
    ],
)
def test_contradictions_and_out_of_bounds_settings_are_one_line_errors(decode, says):
    with pytest.raises(ConfigError, match="^config: " + re.escape(says)) as e:
        validate_config({"decode": decode})
    assert "\n" not in str(e.value)


def test_switching_method_drops_the_old_methods_settings_and_keeps_the_shared_ones():
    sample = DecodeConfig(method="sample", temperature=0.5, top_p=0.9, seed=3, max_len_b=7)
    beam = sample.with_method("beam", beam_size=4)
    assert (beam.method, beam.beam_size, beam.max_len_b) == ("beam", 4, 7)
    assert (beam.temperature, beam.top_p, beam.seed) == (1.0, 1.0, None)
    again = sample.with_method("sample", seed=4)
    assert (again.temperature, again.top_p, again.seed) == (0.5, 0.9, 4)
    with pytest.raises(ValueError, match="setting of method sample"):
        beam.with_method("greedy", top_k=3)
    with pytest.raises(ValueError, match="5 is a setting of method beam, but method is greedy"):
        DecodeConfig().model_copy(update={"beam_size": 5})  # a copy is validated too


def test_n_best_is_checked_against_the_method():
    for cfg, n in ((DecodeConfig(), 2), (DecodeConfig(method="beam", beam_size=3), 4)):
        with pytest.raises(ConfigError, match=f"--n-best {n}: method {cfg.method} returns at most"):
            check_n_best(cfg, n)
    check_n_best(DecodeConfig(method="beam", beam_size=3), 3)
    check_n_best(DecodeConfig(method="sample"), 50)

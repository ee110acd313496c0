"""``seq2seq/decoding/search.py``: the table of searches ``decode.method`` dispatches through,
``--n-best`` checked against the method, batch invariance and attention for every search."""

from __future__ import annotations

from typing import get_args

import pytest
import torch

from seq2seq.config import ConfigError, DecodeConfig, SearchMethod, validate_config
from seq2seq.config.sections import SEARCH_SETTINGS
from seq2seq.data.tokenizer import EOS
from seq2seq.decoding.search import SEARCHES, beam_search, check_n_best, greedy_search, search
from tests.toys import (
    ATTENTION_MODELS,
    SENT,
    T1,
    TINY_MODELS,
    A,
    B,
    Oracle,
    one_sentence,
    random_batch,
    teacher_forced,
    tiny_model,
)
from tests.unit.decoding.limits import limits


def _best(model, src, beam):
    if beam == 1:
        return [(h.tokens, h.score) for h in greedy_search(model, src, src != 0, limits())]
    return [
        (h[0].tokens, h[0].score)
        for h in beam_search(model, src, src != 0, limits("beam", beam_size=beam))
    ]


def _assert_same(a, b):
    assert a[0] == b[0]
    assert a[1] == pytest.approx(b[1], abs=1e-4)


def decode_t1(decode: dict) -> list[list[int]]:
    """The tokens ``search`` returns on T1 under the config section ``decode``."""
    # alpha 0: the oracle's probabilities are compared raw
    cfg = validate_config({"decode": {"min_len": 0, "length_penalty": 0.0, **decode}}).decode
    src = torch.tensor([[SENT]])
    return [h.tokens for h in search(Oracle(one_sentence(T1)), src, src != 0, cfg)[0]]


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
    out = beam_search(
        model, src, src != 0, limits("beam", beam_size=3), n_best=3, need_attention=True
    )
    greedy = greedy_search(model, src, src != 0, limits(), need_attention=True)
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
    out = beam_search(model, src, src != 0, limits("beam", beam_size=2), need_attention=True)
    assert all(h.attention is None for hyps in out for h in hyps)
    assert all(
        h.attention is None
        for h in greedy_search(model, src, src != 0, limits(), need_attention=True)
    )


def test_the_table_has_one_search_per_method_of_the_config():
    assert set(SEARCHES) == set(get_args(SearchMethod)) == set(SEARCH_SETTINGS)


def test_a_config_without_method_chooses_by_beam_size_as_before():
    # T1: greedy follows A (.6), B (.6), EOS (.9); any beam of 2 or more finds [EOS] (.4)
    assert decode_t1({}) == [[A, B, EOS]]
    assert decode_t1({"beam_size": 1}) == [[A, B, EOS]]
    assert decode_t1({"beam_size": 5}) == [[EOS]]
    assert validate_config({"decode": {"beam_size": 5}}).decode.method == "beam"
    assert decode_t1({"method": "beam", "beam_size": 2}) == [[EOS]]
    assert decode_t1({"method": "sample", "top_k": 1}) == [[A, B, EOS]]


def test_n_best_is_checked_against_the_method():
    for cfg, n in ((DecodeConfig(), 2), (DecodeConfig(method="beam", beam_size=3), 4)):
        with pytest.raises(ConfigError, match=f"--n-best {n}: method {cfg.method} returns at most"):
            check_n_best(cfg, n)
    check_n_best(DecodeConfig(method="beam", beam_size=3), 3)
    check_n_best(DecodeConfig(method="sample"), 50)

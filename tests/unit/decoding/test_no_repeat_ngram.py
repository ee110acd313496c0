"""``no_repeat_ngram`` (fairseq's ``--no-repeat-ngram-size``): on a scripted oracle that repeats
("A B A B ..."), N = 2 blocks the repeated bigram and takes the next best token, by hand, in
greedy, beam and sample search; N = 0 changes nothing; beam search equals exhaustive search over
the outputs that repeat no bigram."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from seq2seq.config import DecodeConfig, validate_config
from seq2seq.data.tokenizer import EOS
from seq2seq.decoding.base import NEG_INF, block_repeated_ngrams
from seq2seq.decoding.search import beam_search, greedy_search, sample_search, search
from seq2seq.models.base import Seq2SeqModel
from tests.unit.decoding.limits import limits

A, B, C = 4, 5, 6
# The next token depends on the previous one only; BOS (and B, C) lead to A, A leads to B: left
# alone the model says "A B A B A B ..." and never ends (EOS is never its best).
BIGRAMS = {
    None: {A: 0.7, C: 0.2, EOS: 0.1},  # after BOS
    A: {B: 0.6, C: 0.25, EOS: 0.15},
    B: {A: 0.6, B: 0.1, C: 0.2, EOS: 0.1},
    C: {A: 0.5, EOS: 0.3, B: 0.2},
}


class Repeater(Seq2SeqModel):
    """A scripted model: p(next | previous token) from ``BIGRAMS``, whatever the source."""

    has_attention = False

    def __init__(self, vocab: int = 8):
        super().__init__()
        self.src_vocab_size = self.tgt_vocab_size = vocab

    def encode(self, src, src_mask):
        return {"src_mask": src_mask}

    def init_state(self, enc):
        return {**enc, "prev": enc["src_mask"].new_zeros(len(enc["src_mask"]), dtype=torch.long)}

    def decode_step(self, prev_tokens, state, need_attention=False):
        logits = torch.full((len(prev_tokens), self.tgt_vocab_size), NEG_INF)
        for r, tok in enumerate(prev_tokens.tolist()):
            for nxt, p in BIGRAMS[tok if tok in BIGRAMS else None].items():
                logits[r, nxt] = math.log(p)
        return logits, None, {**state, "prev": prev_tokens}


SRC = torch.tensor([[4, 5, 6]])
LIMIT = {"max_len_a": 0.0, "max_len_b": 6}


def lp(*probs: float) -> float:
    return sum(math.log(p) for p in probs)


def test_unblocked_the_oracle_repeats_a_b_until_the_length_limit():
    (h,) = greedy_search(Repeater(), SRC, SRC != 0, limits(**LIMIT))
    assert h.tokens == [A, B, A, B, A, B] and not h.finished
    (h0,) = greedy_search(Repeater(), SRC, SRC != 0, limits(**LIMIT, no_repeat_ngram=0))
    assert (h0.tokens, h0.log_prob) == (h.tokens, h.log_prob)


def test_greedy_with_bigrams_blocked_takes_the_next_best_token():
    # A B A, then B would repeat "A B": C (.25) instead; A (C -> A is new); after A both B and C
    # would repeat a bigram, so EOS (.15). Scores stay the model's, not renormalised.
    (h,) = greedy_search(Repeater(), SRC, SRC != 0, limits(**LIMIT, no_repeat_ngram=2))
    assert h.tokens == [A, B, A, C, A, EOS] and h.finished
    assert h.log_prob == pytest.approx(lp(0.7, 0.6, 0.6, 0.25, 0.5, 0.15), abs=1e-6)


def test_n_1_blocks_every_token_already_generated():
    (h,) = greedy_search(Repeater(), SRC, SRC != 0, limits(**LIMIT, no_repeat_ngram=1))
    assert h.tokens == [A, B, C, EOS]  # after C: A and B are used, EOS .3 is left


def test_n_3_blocks_only_repeated_trigrams():
    # A B A B would repeat nothing of length 3 yet; A B A B A would repeat "A B A": C instead
    (h,) = greedy_search(Repeater(), SRC, SRC != 0, limits(**LIMIT, no_repeat_ngram=3))
    assert h.tokens == [A, B, A, B, C, A]


def test_beam_one_and_sampling_at_top_k_1_follow_the_greedy_path():
    (beam,) = beam_search(
        Repeater(), SRC, SRC != 0, limits("beam", beam_size=1, **LIMIT, no_repeat_ngram=2)
    )
    assert beam[0].tokens == [A, B, A, C, A, EOS]
    (draws,) = sample_search(
        Repeater(), SRC, SRC != 0, limits("sample", top_k=1, seed=1, **LIMIT, no_repeat_ngram=2)
    )
    assert draws[0].tokens == [A, B, A, C, A, EOS]


def repeats(tokens: list[int], n: int) -> bool:
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return len(grams) != len(set(grams))


def exhaustive(n: int, max_len: int) -> tuple[list[int], float]:
    """The most probable finished output (raw log-probability) that repeats no n-gram."""
    best: tuple[list[int], float] = ([], NEG_INF)
    for k in range(max_len):
        for body in itertools.product((A, B, C), repeat=k):
            toks, prev, total = [*body, EOS], None, 0.0
            for t in toks:
                p = BIGRAMS[prev].get(t, 0.0)
                total, prev = (total + math.log(p), t) if p else (NEG_INF, t)
            if not repeats(toks, n) if n else True:
                if total > best[1]:
                    best = (toks, total)
    return best


@pytest.mark.parametrize("n", [0, 2, 3])
def test_a_wide_beam_finds_the_best_output_that_repeats_no_ngram(n):
    # max length 5: at most 3^4 open prefixes, so a beam of 81 is exhaustive
    (hyps,) = beam_search(
        Repeater(),
        SRC,
        SRC != 0,
        limits("beam", beam_size=81, max_len_a=0.0, max_len_b=5, no_repeat_ngram=n),
    )
    tokens, log_prob = exhaustive(n, 5)
    assert hyps[0].tokens == tokens
    assert hyps[0].log_prob == pytest.approx(log_prob, abs=1e-5)


def test_a_small_beam_never_repeats_a_bigram_and_n_0_changes_nothing():
    kw = {"beam_size": 3, "max_len_a": 0.0, "max_len_b": 8}
    (blocked,) = beam_search(Repeater(), SRC, SRC != 0, limits("beam", **kw, no_repeat_ngram=2), 3)
    assert blocked and not any(repeats(h.tokens, 2) for h in blocked)
    (off,) = beam_search(Repeater(), SRC, SRC != 0, limits("beam", **kw, no_repeat_ngram=0), 3)
    (plain,) = beam_search(Repeater(), SRC, SRC != 0, limits("beam", **kw), 3)
    assert [(h.tokens, h.score) for h in off] == [(h.tokens, h.score) for h in plain]
    assert any(repeats(h.tokens, 2) for h in plain)


def test_block_repeated_ngrams_by_rows():
    logp = torch.zeros(3, 8)
    history = torch.tensor([[A, B, A], [A, B, C], [C, C, C]])
    block_repeated_ngrams(logp, history, 2)
    assert (logp[0] == NEG_INF).nonzero().squeeze(1).tolist() == [B]  # "A B" seen, suffix A
    assert (logp[1] == NEG_INF).sum() == 0  # suffix C never seen before
    assert (logp[2] == NEG_INF).nonzero().squeeze(1).tolist() == [C]
    untouched = torch.zeros(1, 8)
    assert block_repeated_ngrams(untouched, torch.tensor([[A, B]]), 3).eq(0).all()


def test_the_config_field_reaches_every_method():
    for method in ("greedy", "beam", "sample"):
        extra = {"top_k": 1} if method == "sample" else {}
        cfg = DecodeConfig(
            method=method, no_repeat_ngram=2, min_len=0, max_len_a=0.0, max_len_b=6, **extra
        )
        (hyps,) = search(Repeater(), SRC, SRC != 0, cfg)
        assert hyps[0].tokens == [A, B, A, C, A, EOS], method
    assert DecodeConfig().no_repeat_ngram == 0  # off unless asked for
    with pytest.raises(Exception, match="no_repeat_ngram: Input should be greater than or equal"):
        validate_config({"decode": {"no_repeat_ngram": -1}})

"""``seq2seq/decoding/base.py``: what every search shares -- output lengths from the source length,
``min_len`` blocking EOS, and the target vocabulary mask (pieces never seen on the target side)."""

from __future__ import annotations

import math

import pytest
import torch

from seq2seq.config import DecodeConfig
from seq2seq.data.tokenizer import EOS
from seq2seq.decoding.base import step_log_probs
from seq2seq.decoding.search import beam_search, greedy_search, sample_search, search
from seq2seq.decoding.translate import translate_sentences
from seq2seq.models import Seq2SeqModel
from tests.corpora import FIVE
from tests.toys import SENT, A, B, C, Oracle, one_sentence
from tests.unit.decoding.limits import limits


class EagerEOS(Seq2SeqModel):
    """A scripted model that always ranks EOS first and one word second, whatever it has read:
    an undertrained model's worst habit, made certain."""

    def __init__(self, vocab: int, word: int):
        super().__init__()
        self.src_vocab_size = self.tgt_vocab_size = vocab
        self.logits = torch.full((vocab,), -10.0)
        self.logits[EOS], self.logits[word] = 0.0, -1.0

    def encode(self, src, src_mask):
        return {"src_mask": src_mask}

    def init_state(self, enc):
        return dict(enc)

    def decode_step(self, prev_tokens, state, need_attention=False):
        return self.logits.repeat(prev_tokens.shape[0], 1), None, state  # search writes to it


@pytest.mark.parametrize("beam", [1, 5])
def test_min_len_blocks_the_empty_translation_an_eager_eos_prefers(toy, beam):
    tok = toy["tok"]
    word = tok.encode_tgt(["the"])[0][0]
    model = EagerEOS(tok.tgt_vocab_size, word)
    (word_text,) = tok.decode_tgt([[word]])  # the first piece of "the": "the", "th" or "t"
    assert word_text and "the".startswith(word_text)
    for min_len, expected in ((0, ""), (1, word_text)):
        cfg = DecodeConfig(beam_size=beam, min_len=min_len)
        assert [r.text for r in translate_sentences(model, tok, FIVE, cfg)] == [expected] * 5


def test_max_len_follows_the_source_length():
    never_ends = {p: {A: 1.0} for p in [(A,) * n for n in range(20)]}
    model = Oracle({(s, p): d for s in (SENT, SENT + 1) for p, d in never_ends.items()})
    src = torch.tensor([[SENT, 9, 9, 9], [SENT + 1, 0, 0, 0]])  # 4 and 1 real tokens
    out = beam_search(model, src, src != 0, limits("beam", beam_size=2, max_len_a=1.5, max_len_b=2))
    assert [len(h[0].tokens) for h in out] == [8, 3]  # floor(1.5 * 4 + 2), floor(1.5 * 1 + 2)
    g = greedy_search(model, src, src != 0, limits(max_len_a=1.5, max_len_b=2))
    assert [len(h.tokens) for h in g] == [8, 3] and not any(h.finished for h in g)


# ---- the target vocabulary mask (decode.target_vocab_mask) -----------------------------------
# A script whose most probable first token, C, never occurs on the target side: the mask allows
# A, B (and EOS), not C. p: [C EOS] .5 (C's prefix is unlisted: EOS) · [B EOS] .2 ·
# [A B EOS] .3 * .3 * .7 = .063 · [A EOS] .3 * .1 = .03 · [A C ...] blocked · [A B C EOS] blocked
TEMPTED = one_sentence(
    {
        (): {C: 0.5, A: 0.3, B: 0.2},
        (A,): {C: 0.6, B: 0.3, EOS: 0.1},
        (A, B): {EOS: 0.7, C: 0.3},
    }
)
ONE = torch.tensor([[SENT, 9]])
NO_LIMIT = {"max_len_a": 0.0, "max_len_b": 6}


def _allowed(*ids: int, vocab: int = 8) -> torch.Tensor:
    """A (V,) target vocabulary of ``ids`` and EOS."""
    mask = torch.zeros(vocab, dtype=torch.bool)
    mask[[*ids, EOS]] = True
    return mask


def _masked() -> Oracle:
    model = Oracle(TEMPTED)
    model.target_vocab = _allowed(A, B)
    return model


def _lp(*probs: float) -> float:
    return sum(math.log(p) for p in probs)


def test_step_log_probs_blocks_what_the_mask_leaves_out_without_renormalising():
    logits = torch.randn(3, 8)
    allowed = _allowed(A, B)
    out = step_log_probs(logits, 0, 0, allowed)
    assert torch.isinf(out[:, ~allowed]).all()
    assert torch.allclose(out[:, allowed], torch.log_softmax(logits, -1)[:, allowed])
    assert torch.equal(step_log_probs(logits, 0, 0, None), step_log_probs(logits, 0, 0))


def test_greedy_takes_the_best_allowed_token_and_keeps_the_models_log_probs():
    (h,) = greedy_search(Oracle(TEMPTED), ONE, ONE != 0, limits(**NO_LIMIT))
    assert h.tokens == [C, EOS]  # unmasked: the source-side piece first
    (h,) = greedy_search(_masked(), ONE, ONE != 0, limits(**NO_LIMIT))
    assert h.tokens == [A, B, EOS] and h.finished
    assert h.token_log_probs == pytest.approx([math.log(0.3), math.log(0.3), math.log(0.7)])
    assert h.log_prob == pytest.approx(_lp(0.3, 0.3, 0.7), abs=1e-6)


def test_beam_finds_the_best_allowed_outputs_with_the_models_log_probs():
    (plain,) = beam_search(
        Oracle(TEMPTED), ONE, ONE != 0, limits("beam", beam_size=3, **NO_LIMIT), n_best=3
    )
    assert plain[0].tokens == [C, EOS]
    (hyps,) = beam_search(
        _masked(), ONE, ONE != 0, limits("beam", beam_size=3, **NO_LIMIT), n_best=3
    )
    assert [h.tokens for h in hyps] == [[B, EOS], [A, B, EOS], [A, EOS]]
    assert [h.log_prob for h in hyps] == pytest.approx(
        [_lp(0.2), _lp(0.3, 0.3, 0.7), _lp(0.3, 0.1)], abs=1e-6
    )
    assert hyps[1].token_log_probs == pytest.approx([math.log(p) for p in (0.3, 0.3, 0.7)])


def test_sampling_never_draws_a_masked_piece_and_renormalises_over_the_rest():
    (plain,) = sample_search(
        Oracle(TEMPTED), ONE, ONE != 0, limits("sample", seed=0, **NO_LIMIT), n_best=400
    )
    assert sum(C in h.tokens for h in plain) > 100  # p(C first) = .5 unmasked
    draws = [
        h
        for seed in range(5)
        for h in sample_search(
            _masked(), ONE, ONE != 0, limits("sample", seed=seed, **NO_LIMIT), n_best=400
        )[0]
    ]
    assert not any(C in h.tokens for h in draws)
    # A first with .3 / (.3 + .2) = .6 once C is gone; its reported log-probability stays log .3
    share = sum(h.tokens[0] == A for h in draws) / len(draws)
    assert 0.55 < share < 0.65
    first_a = next(h for h in draws if h.tokens[0] == A)
    assert first_a.token_log_probs[0] == pytest.approx(math.log(0.3))


def _outputs(model, **cfg) -> list:
    """Every search's outputs on ``ONE``: tokens, scores and per-token log-probabilities."""
    out = []
    for method, extra in (("greedy", {}), ("beam", {"beam_size": 3}), ("sample", {"seed": 3})):
        dcfg = DecodeConfig(method=method, min_len=0, **NO_LIMIT, **extra, **cfg)
        for hyps in search(model, ONE, ONE != 0, dcfg, n_best=3 if method != "greedy" else 1):
            out += [(h.tokens, h.score, h.log_prob, h.token_log_probs) for h in hyps]
    return out


def test_no_mask_none_or_the_setting_off_decode_as_before():
    before = _outputs(Oracle(TEMPTED))
    none = Oracle(TEMPTED)
    none.target_vocab = None
    everything = Oracle(TEMPTED)
    everything.target_vocab = torch.ones(8, dtype=torch.bool)  # PAD and BOS are blocked anyway
    assert _outputs(none) == _outputs(everything) == before
    assert _outputs(_masked(), target_vocab_mask=False) == before
    masked = _outputs(_masked())
    assert masked != before and not any(C in tokens for tokens, *_ in masked)


def test_the_setting_reaches_every_method_and_is_on_by_default():
    assert DecodeConfig().target_vocab_mask is True
    for method, extra in (("greedy", {}), ("beam", {"beam_size": 2}), ("sample", {"top_k": 1})):
        for on in (True, False):
            dcfg = DecodeConfig(method=method, target_vocab_mask=on, **NO_LIMIT, **extra)
            ((h, *_),) = search(_masked(), ONE, ONE != 0, dcfg)
            assert (C in h.tokens) is not on, (method, on)

"""``seq2seq/study/rho.py``'s NLL: the references' teacher-forced loss -- NLL per k, and each
caption's NLL in its k-join against alone, by hand and against direct forward passes, whatever
the batches."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from seq2seq.data.batch import Batch
from seq2seq.data.tokenizer import UNK
from seq2seq.models import Seq2SeqModel, build_model
from seq2seq.study.rho import CaptionNLL, caption_nlls, nll_lines_by_k
from seq2seq.training.loss import token_loss_sum
from tests.corpora import joined_evalset, lines
from tests.toys import TINY_MODELS, tiny_model

CPU = torch.device("cpu")


def direct_nll(model, tok, srcs: list[str], refs: list[str]) -> tuple[float, int]:
    """Mean token loss, one pair at a time, with token_loss_sum."""
    total, n = 0.0, 0
    for s, t in zip(tok.encode_src(srcs), tok.encode_tgt(refs), strict=True):
        b = Batch.from_ids([s], [t])
        with torch.no_grad():
            total += float(token_loss_sum(model(b.src, b.src_mask, b.tgt_in), b.tgt_out))
        n += len(t) + 1
    return total / n, n


class LengthOracle(Seq2SeqModel):
    """Every target token but UNK costs log(exp(S / 4) + V - 1) nats, S the real source length
    (logits 0 but UNK's, S / 4): a caption's tokens cost more in a longer input."""

    has_attention = False

    def __init__(self, vocab: int):
        super().__init__()
        self.src_vocab_size = self.tgt_vocab_size = vocab

    def forward(self, src, src_mask, tgt_in, src_lengths=None):
        logits = torch.zeros(*tgt_in.shape, self.tgt_vocab_size)  # (B, T, V)
        logits[..., UNK] = src_mask.sum(1, keepdim=True).float() / 4
        return logits

    @staticmethod
    def cost(s: int, vocab: int) -> float:
        return math.log(math.exp(s / 4) + vocab - 1)


def direct_gap(model, tok, srcs: list[str], refs: list[str]) -> float:
    """One join scored by itself: its captions' token losses in the join (log_softmax, one
    example, no padding) minus each caption's alone, EOS excluded."""

    def nats(s: list[int], t: list[int]) -> float:
        b = Batch.from_ids([s], [t])
        with torch.no_grad():
            logp = torch.log_softmax(model(b.src, b.src_mask, b.tgt_in)[0].float(), -1)
        return -float(logp[torch.arange(len(t)), torch.tensor(t)].sum())

    src, tgt = tok.encode_src(srcs), tok.encode_tgt(refs)
    joined = nats([x for s in src for x in s], [x for t in tgt for x in t])
    return joined - sum(nats(s, t) for s, t in zip(src, tgt, strict=True))


def gaps(c: CaptionNLL) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """k -> per joined line the summed C - A of its captions (nats) and their token count."""
    return {
        k: (c.ctx[k].sum(1) - c.alone[u].sum(1), c.tokens[u].sum(1)) for k, u in c.units.items()
    }


def nll_rows(nll: dict) -> list[dict]:
    """Per k: the loss per reference token, the tokens and the lines."""
    return [
        {"k": k, "nll": float(n.sum() / t.sum()), "tokens": int(t.sum()), "sentences": len(n)}
        for k, (n, t) in sorted(nll.items())
    ]


@pytest.mark.parametrize("name", ["rnn", "transformer"])
def test_nll_by_k_is_the_mean_token_loss_whatever_the_batches(name, synth_tokenizer):
    tok = synth_tokenizer
    ev = joined_evalset(12, 3, seed=8)
    model = tiny_model(name, tok.src_vocab_size, tok.tgt_vocab_size).train()
    small = nll_rows(nll_lines_by_k(model, tok, ev, torch.device("cpu"), batch_tokens=50))
    assert model.training  # put back as it was
    large = nll_rows(nll_lines_by_k(model.eval(), tok, ev, torch.device("cpu"), batch_tokens=5000))
    assert not model.training
    assert [r["k"] for r in small] == [1, 2, 3]
    for a, b in zip(small, large, strict=True):
        idx = lines(ev, a["k"])
        want, tokens = direct_nll(model, tok, [ev.src[i] for i in idx], [ev.ref[i] for i in idx])
        assert a["nll"] == pytest.approx(b["nll"], abs=1e-5)
        assert a["nll"] == pytest.approx(want, abs=1e-5)
        assert a["tokens"] == b["tokens"] == tokens
        assert a["sentences"] == len(idx)
        assert 0 < a["nll"] < 2 * math.log(tok.tgt_vocab_size)
    # line by line: each line's own loss, whatever its batch (padding does not count)
    lines_small = nll_lines_by_k(model, tok, ev, torch.device("cpu"), batch_tokens=50)
    lines_large = nll_lines_by_k(model, tok, ev, torch.device("cpu"), batch_tokens=5000)
    assert sorted(lines_small) == [1, 2, 3]
    for k, (nats, tokens) in lines_small.items():
        idx = lines(ev, k)
        assert len(nats) == len(tokens) == len(idx)
        np.testing.assert_allclose(nats, lines_large[k][0], rtol=1e-5)
        for j, i in enumerate(idx):  # the line alone, in order
            want, n = direct_nll(model, tok, [ev.src[i]], [ev.ref[i]])
            assert nats[j] == pytest.approx(want * n, rel=1e-5) and tokens[j] == n


def test_nll_by_k_refuses_lines_beyond_max_positions(synth_tokenizer):
    tok = synth_tokenizer
    ev = joined_evalset(12, 3, seed=8)
    cfg = TINY_MODELS["transformer"].model_copy(update={"max_positions": 30})
    model = build_model(cfg, tok.src_vocab_size, tok.tgt_vocab_size, joint_vocab=False)
    first = None
    for k in sorted(set(ev.k)):
        idx = lines(ev, k)
        srcs = tok.encode_src([ev.src[i] for i in idx])
        tgts = tok.encode_tgt([ev.ref[i] for i in idx])
        over = sum(max(len(s), len(t) + 1) > 30 for s, t in zip(srcs, tgts, strict=True))
        if over and first is None:
            first = (over, len(idx), k)
    assert first is not None and first[0] < first[1]  # some lines fit, some do not
    with pytest.raises(ValueError, match=rf"^{first[0]} of {first[1]} k = {first[2]} lines are"):
        nll_lines_by_k(model, tok, ev, torch.device("cpu"))


def test_nll_by_k_refuses_a_line_with_nothing_to_score(synth_tokenizer):
    ev = joined_evalset(6, 2, seed=8)
    ev.ref[1] = ""
    model = tiny_model("rnn", synth_tokenizer.src_vocab_size, synth_tokenizer.tgt_vocab_size)
    with pytest.raises(ValueError, match="1 of 6 k = 1 lines encode to no token"):
        nll_lines_by_k(model, synth_tokenizer, ev, torch.device("cpu"))


def test_caption_gaps_of_a_scripted_oracle_by_hand(synth_tokenizer):
    tok = synth_tokenizer
    ev = joined_evalset(13, 4, seed=8)  # 13 captions: a k = 3 or 4 join leaves the last out
    src = tok.encode_src(ev.src[:13])
    tgt = tok.encode_tgt(ev.ref[:13])
    assert all(UNK not in t for t in tgt)
    v = tok.tgt_vocab_size
    model = LengthOracle(v)
    by_k = gaps(caption_nlls(model, tok, ev, CPU, batch_tokens=60))
    assert sorted(by_k) == [2, 3, 4]
    for k, (nats, tokens) in by_k.items():
        assert nats.dtype == np.float64 and tokens.dtype == np.int64
        assert len(nats) == len(tokens) == len(lines(ev, k)) == 13 // k
        for j in range(13 // k):
            group = range(k * j, k * j + k)
            s_join = sum(len(src[p]) for p in group)
            want = sum(
                len(tgt[p]) * (LengthOracle.cost(s_join, v) - LengthOracle.cost(len(src[p]), v))
                for p in group
            )  # EOS excluded on both sides
            assert nats[j] == pytest.approx(want, rel=1e-5, abs=1e-4)  # float32 logits
            assert tokens[j] == sum(len(tgt[p]) for p in group)
            assert nats[j] > 0


@pytest.mark.parametrize("name", ["rnn", "bahdanau", "transformer"])
def test_caption_gaps_are_direct_forward_passes_whatever_the_batches(name, synth_tokenizer):
    tok = synth_tokenizer
    ev = joined_evalset(12, 3, seed=8)
    model = tiny_model(name, tok.src_vocab_size, tok.tgt_vocab_size).train()
    small = gaps(caption_nlls(model, tok, ev, CPU, batch_tokens=40))
    assert model.training  # put back as it was
    large = gaps(caption_nlls(model.eval(), tok, ev, CPU, batch_tokens=5000))
    assert not model.training
    assert sorted(small) == sorted(large) == [2, 3]
    for k in (2, 3):
        np.testing.assert_allclose(small[k][0], large[k][0], rtol=1e-5, atol=1e-4)
        np.testing.assert_array_equal(small[k][1], large[k][1])
        for j in range(len(small[k][0])):
            group = range(k * j, k * j + k)
            want = direct_gap(model, tok, [ev.src[p] for p in group], [ev.ref[p] for p in group])
            assert small[k][0][j] == pytest.approx(want, rel=1e-4, abs=1e-4)


def test_caption_gaps_refuse_what_they_cannot_score(synth_tokenizer):
    tok = synth_tokenizer
    model = tiny_model("rnn", tok.src_vocab_size, tok.tgt_vocab_size)
    ev = joined_evalset(6, 2, seed=8)
    ev.ref[1] = ""
    with pytest.raises(ValueError, match="1 of 6 captions .k = 1 lines. encode to no token"):
        caption_nlls(model, tok, ev, CPU)
    ev = joined_evalset(12, 3, seed=8)
    ev.src[lines(ev, 2)[1]] += " und"  # not its captions joined by a space
    with pytest.raises(ValueError, match="k = 2 line 1 is not k = 1 lines 2...3"):
        caption_nlls(model, tok, ev, CPU)
    cfg = TINY_MODELS["transformer"].model_copy(update={"max_positions": 30})
    short = build_model(cfg, tok.src_vocab_size, tok.tgt_vocab_size, joint_vocab=False)
    with pytest.raises(ValueError, match=r"^\d+ of \d+ examples are longer than the model's"):
        caption_nlls(short, tok, joined_evalset(12, 3, seed=8), CPU)

"""The study's cells: per-k scores with sacreBLEU's numbers, the paired retention interval, and
the references' teacher-forced loss per k."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import sacrebleu
import torch

from seq2seq.data.batch import Batch
from seq2seq.models import build_model
from seq2seq.study.cells import (
    cell_scores,
    nll_by_k,
    nll_lines_by_k,
    nll_rise_difference_ci,
    retention,
    retention_difference_ci,
)
from seq2seq.study.evalsets import EvalSet
from seq2seq.study.stats import BleuStats
from seq2seq.training.loss import token_loss_sum

from .conftest import synth_pairs
from .toys import TINY_MODELS, tiny_model


def joined_evalset(n: int, concat_k: int, seed: int = 5, max_words: int = 12) -> EvalSet:
    """``n`` made-up pairs as the k = 1 lines, plus k = 2..concat_k lines joined by
    ``build_eval_set``'s rule (consecutive non-overlapping groups, joined with a space)."""
    pairs = synth_pairs(n, seed, max_words)
    src, ref = [s for s, _ in pairs], [t for _, t in pairs]
    out = EvalSet("toy", list(src), list(ref), [1] * n, "toy")
    for k in range(2, concat_k + 1):
        for j in range(0, n - k + 1, k):
            out.src.append(" ".join(src[j : j + k]))
            out.ref.append(" ".join(ref[j : j + k]))
            out.k.append(k)
    return out


def degrade(line: str, keep: float, rng: random.Random) -> str:
    return " ".join(w for w in line.split() if rng.random() < keep) or "the"


def lines(evalset: EvalSet, k: int) -> list[int]:
    return [i for i, x in enumerate(evalset.k) if x == k]


# ---- cell_scores -------------------------------------------------------------------------------


def test_cell_scores_are_sacrebleus_numbers_and_hand_counted_shares():
    ev = joined_evalset(120, 2)
    rng = random.Random(1)
    hyps, early_lines = [], set()
    for i, (ref, k) in enumerate(zip(ev.ref, ev.k, strict=True)):
        words = ref.split()
        if k == 2 and i % 6 != 0:  # every third word dropped -> too short, not early
            hyps.append(" ".join(w for j, w in enumerate(words) if j % 3 != 2))
        elif i % 10 == 0 or k == 2:  # strictly fewer than half the words: ended early
            hyps.append(" ".join(words[: (len(words) - 1) // 2]))
            early_lines.add(i)
        elif i % 10 == 1:  # at least half the words: not early
            hyps.append(" ".join(words[: (len(words) + 1) // 2]))
        else:  # a word too many, some wrong
            hyps.append(" ".join(["a"] + [w if rng.random() < 0.7 else "the" for w in words]))
    cut_lines = {0, 5, 17, 121, 150, 151, 152}
    cut = [i in cut_lines for i in range(len(hyps))]

    rows = cell_scores(ev, hyps, cut, n_bootstrap=200)
    assert [r["k"] for r in rows] == [1, 2]
    for row in rows:
        idx = lines(ev, row["k"])
        hk, rk = [hyps[i] for i in idx], [ev.ref[i] for i in idx]
        direct = sacrebleu.corpus_bleu(hk, [rk])
        assert row["sentences"] == len(idx)
        assert row["bleu"] == direct.score
        assert row["low"] <= row["bleu"] <= row["high"] and row["low"] < row["high"]
        assert row["ratio"] == direct.sys_len / direct.ref_len
        assert row["bp"] == pytest.approx(direct.bp, abs=1e-12)
        assert row["cut"] == 100 * len(cut_lines & set(idx)) / len(idx)
        assert row["early"] == 100 * len(early_lines & set(idx)) / len(idx)
        assert row["mean_src_words"] == np.mean([len(ev.src[i].split()) for i in idx])
    one, two = rows
    assert (one["cut"], two["cut"]) == (2.5, 100 * 4 / 60)
    assert (one["early"], two["early"]) == (10.0, 100 * 10 / 60)
    assert one["ratio"] >= 0.9 and one["refusal"] is None
    assert two["ratio"] < 0.9 and two["bp"] < one["bp"]
    assert "fewer than 100" in two["refusal"] and "too short" in two["refusal"]


def test_cell_scores_refuses_misaligned_inputs():
    ev = joined_evalset(10, 2)
    n = len(ev.src)
    with pytest.raises(ValueError, match=f"{n - 1} hypotheses and {n} cut flags for {n} lines"):
        cell_scores(ev, ev.ref[:-1], [False] * n)
    with pytest.raises(ValueError, match=f"{n} hypotheses and {n + 1} cut flags"):
        cell_scores(ev, ev.ref, [False] * (n + 1))


# ---- retention ---------------------------------------------------------------------------------


def k_stats(ev: EvalSet, hyps: list[str]) -> dict[int, BleuStats]:
    return {
        k: BleuStats([hyps[i] for i in lines(ev, k)], [ev.ref[i] for i in lines(ev, k)])
        for k in sorted(set(ev.k))
    }


def test_a_system_against_itself_retains_exactly_as_much():
    ev = joined_evalset(80, 4)
    rng = random.Random(2)
    hyps = [degrade(r, 0.7, rng) for r in ev.ref]
    d = retention_difference_ci(hyps, list(hyps), ev, n_bootstrap=100)
    assert (d["difference"], d["low"], d["high"], d["mean"]) == (0.0, 0.0, 0.0, 0.0)
    assert d["units"] == 20
    # the units cover all 80 single lines: the same retention as over the whole k = 1 cell
    assert d["a"] == d["b"] == pytest.approx(retention(k_stats(ev, hyps), 4))
    s = k_stats(ev, hyps)
    assert retention(s, 4) == s[4].score() / s[1].score() and 0 < retention(s, 4) < 2


def test_retention_kept_on_long_lines_beats_retention_lost():
    ev = joined_evalset(80, 4)
    rng = random.Random(3)
    base = [degrade(r, 0.7, rng) for r in ev.ref]
    a = [r if k == 4 else h for h, r, k in zip(base, ev.ref, ev.k, strict=True)]
    b = [degrade(r, 0.3, rng) if k == 4 else h for h, r, k in zip(base, ev.ref, ev.k, strict=True)]
    d = retention_difference_ci(a, b, ev, n_bootstrap=200)
    bleu1 = sacrebleu.corpus_bleu([base[i] for i in lines(ev, 1)], [ev.ref[:80]]).score
    assert d["a"] == pytest.approx(100 / bleu1)
    assert d["b"] == pytest.approx(retention(k_stats(ev, b), 4))
    assert d["difference"] == pytest.approx(d["a"] - d["b"])
    assert 0 < d["low"] < d["difference"] < d["high"]
    flipped = retention_difference_ci(b, a, ev, n_bootstrap=200)
    assert flipped["high"] < 0


def test_retention_without_k1_bleu_is_nan():
    ev = joined_evalset(8, 4)
    hyps = ["zzz" if k == 1 else r for r, k in zip(ev.ref, ev.k, strict=True)]
    assert math.isnan(retention(k_stats(ev, hyps), 4))


def test_a_joined_line_that_is_not_its_sentences_is_refused():
    ev = joined_evalset(80, 4)
    k4 = lines(ev, 4)
    ev.src[k4[3]], ev.src[k4[4]] = ev.src[k4[4]], ev.src[k4[3]]  # two joined lines swapped
    with pytest.raises(ValueError, match=r"k = 4 line 3 is not k = 1 lines 12...15"):
        retention_difference_ci(ev.ref, ev.ref, ev, n_bootstrap=10)
    short = joined_evalset(80, 4)
    short.ref[lines(short, 2)[0]] += " extra"  # only the reference differs: refused too
    with pytest.raises(ValueError, match="k = 2 line 0 is not"):
        retention_difference_ci(short.ref, short.ref, short, k_hi=2, n_bootstrap=10)
    with pytest.raises(ValueError, match="no line joined from k = 5"):
        retention_difference_ci(ev.ref, ev.ref, ev, k_hi=5)


# ---- nll_by_k ----------------------------------------------------------------------------------


def direct_nll(model, tok, srcs: list[str], refs: list[str]) -> tuple[float, int]:
    """Mean token loss, one pair at a time, with token_loss_sum."""
    total, n = 0.0, 0
    for s, t in zip(tok.encode_src(srcs), tok.encode_tgt(refs), strict=True):
        b = Batch.from_ids([s], [t])
        with torch.no_grad():
            total += float(token_loss_sum(model(b.src, b.src_mask, b.tgt_in), b.tgt_out))
        n += len(t) + 1
    return total / n, n


@pytest.mark.parametrize("name", ["rnn", "transformer"])
def test_nll_by_k_is_the_mean_token_loss_whatever_the_batches(name, synth_tokenizer):
    tok = synth_tokenizer
    ev = joined_evalset(12, 3, seed=8)
    model = tiny_model(name, tok.src_vocab_size, tok.tgt_vocab_size).train()
    small = nll_by_k(model, tok, ev, torch.device("cpu"), batch_tokens=50)
    assert model.training  # put back as it was
    large = nll_by_k(model.eval(), tok, ev, torch.device("cpu"), batch_tokens=5000)
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


def scripted_nll(ev: EvalSet, per_token: dict[int, float]) -> dict:
    """k -> (nats, tokens) per line: every token of a k line costs ``per_token[k]`` nats, each
    line holding as many tokens as its reference has words plus EOS."""
    out = {}
    for k in sorted(set(ev.k)):
        tokens = np.array([len(ev.ref[i].split()) + 1 for i in lines(ev, k)], dtype=np.int64)
        out[k] = (tokens * per_token[k], tokens)
    return out


def test_nll_rise_difference_of_a_scripted_oracle():
    ev = joined_evalset(80, 4)
    flat = scripted_nll(ev, {1: 2.0, 2: 2.0, 3: 2.0, 4: 2.0})  # no rise at all
    rising = scripted_nll(ev, {1: 2.0, 2: 2.4, 3: 2.7, 4: 3.0})  # +1 nat per token at k = 4
    d = nll_rise_difference_ci(flat, rising, ev, n_bootstrap=100)
    assert d["units"] == 20
    assert d["a"] == pytest.approx(0.0) and d["b"] == pytest.approx(1.0)
    # every resample gives the same rises: the interval is the point
    for key in ("difference", "low", "high", "mean"):
        assert d[key] == pytest.approx(-1.0)
    same = nll_rise_difference_ci(rising, rising, ev, n_bootstrap=50)
    assert (same["difference"], same["low"], same["high"]) == (0.0, 0.0, 0.0)


def test_nll_rise_interval_spans_what_the_units_disagree_on():
    ev = joined_evalset(80, 4)
    a = scripted_nll(ev, {1: 2.0, 2: 2.0, 3: 2.0, 4: 2.0})
    b = scripted_nll(ev, {1: 2.0, 2: 2.0, 3: 2.0, 4: 2.0})
    rng = np.random.default_rng(0)
    b[4] = (b[4][0] + rng.normal(0.5, 2.0, len(b[4][0])) * b[4][1], b[4][1])  # noisy rise
    d = nll_rise_difference_ci(a, b, ev, n_bootstrap=300)
    nats, tokens = b[4]
    assert d["b"] == pytest.approx(nats.sum() / tokens.sum() - 2.0)
    assert d["difference"] == pytest.approx(-d["b"])
    assert d["low"] < d["difference"] < d["high"]
    flipped = nll_rise_difference_ci(b, a, ev, n_bootstrap=300)
    assert flipped["low"] == pytest.approx(-d["high"])
    assert flipped["high"] == pytest.approx(-d["low"])
    with pytest.raises(ValueError, match="model B: NLL of"):
        nll_rise_difference_ci(a, {1: a[1]}, ev, n_bootstrap=10)


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
        nll_by_k(model, tok, ev, torch.device("cpu"))


def test_nll_by_k_refuses_a_line_with_nothing_to_score(synth_tokenizer):
    ev = joined_evalset(6, 2, seed=8)
    ev.ref[1] = ""
    model = tiny_model("rnn", synth_tokenizer.src_vocab_size, synth_tokenizer.tgt_vocab_size)
    with pytest.raises(ValueError, match="1 of 6 k = 1 lines encode to no token"):
        nll_by_k(model, synth_tokenizer, ev, torch.device("cpu"))

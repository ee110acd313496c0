"""The study's cells: per-k scores with sacreBLEU's numbers, BLEU without its brevity penalty,
and retention with its paired interval and without the brevity penalty, from sentence
statistics as a per-line file keeps them."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import sacrebleu

from seq2seq.study.cells import (
    cell_scores,
    retention_difference_ci,
    retention_nobp,
    retention_units,
)
from seq2seq.study.evalsets import EvalSet
from seq2seq.study.stats import BleuStats
from tests.corpora import joined_evalset, lines


def degrade(line: str, keep: float, rng: random.Random) -> str:
    return " ".join(w for w in line.split() if rng.random() < keep) or "the"


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
        geo = math.exp(sum(math.log(p) for p in direct.precisions) / 4)  # points, no BP
        assert row["bleu_nobp"] == pytest.approx(geo, rel=1e-12)
        assert row["bleu_nobp"] == pytest.approx(direct.score / direct.bp, rel=1e-12)
        assert "refusal" not in row
        assert row["cut"] == 100 * len(cut_lines & set(idx)) / len(idx)
        assert row["early"] == 100 * len(early_lines & set(idx)) / len(idx)
        assert row["mean_src_words"] == np.mean([len(ev.src[i].split()) for i in idx])
    one, two = rows
    assert (one["cut"], two["cut"]) == (2.5, 100 * 4 / 60)
    assert (one["early"], two["early"]) == (10.0, 100 * 10 / 60)
    assert one["ratio"] >= 0.9
    assert two["ratio"] < 0.9 and two["bp"] < one["bp"] and two["bleu_nobp"] > two["bleu"]


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


def retention_ci(a: list[str], b: list[str], ev: EvalSet, k_hi: int = 4, n_bootstrap=1000):
    """``retention_difference_ci`` of two systems' hypotheses, through their statistics."""
    units = retention_units(ev, k_hi)
    stats = (BleuStats(h, ev.ref).stats for h in (a, b))
    return retention_difference_ci(*stats, ev.k, units, k_hi, n_bootstrap=n_bootstrap)


def nobp_difference(a: list[str], b: list[str], ev: EvalSet, k_hi: int) -> dict:
    units = retention_units(ev, k_hi)
    ra, rb = (retention_nobp(BleuStats(h, ev.ref).stats, ev.k, units, k_hi) for h in (a, b))
    return {"a": ra, "b": rb, "difference": ra - rb}


def test_a_system_against_itself_retains_exactly_as_much():
    ev = joined_evalset(80, 4)
    rng = random.Random(2)
    hyps = [degrade(r, 0.7, rng) for r in ev.ref]
    d = retention_ci(hyps, list(hyps), ev, n_bootstrap=100)
    assert (d["difference"], d["low"], d["high"], d["mean"]) == (0.0, 0.0, 0.0, 0.0)
    assert d["units"] == 20
    # the units cover all 80 single lines: the same retention as over the whole k = 1 cell
    s = k_stats(ev, hyps)
    assert d["a"] == d["b"] == pytest.approx(s[4].score() / s[1].score())
    assert 0 < d["a"] < 2


def test_retention_kept_on_long_lines_beats_retention_lost():
    ev = joined_evalset(80, 4)
    rng = random.Random(3)
    base = [degrade(r, 0.7, rng) for r in ev.ref]
    a = [r if k == 4 else h for h, r, k in zip(base, ev.ref, ev.k, strict=True)]
    b = [degrade(r, 0.3, rng) if k == 4 else h for h, r, k in zip(base, ev.ref, ev.k, strict=True)]
    d = retention_ci(a, b, ev, n_bootstrap=200)
    bleu1 = sacrebleu.corpus_bleu([base[i] for i in lines(ev, 1)], [ev.ref[:80]]).score
    assert d["a"] == pytest.approx(100 / bleu1)
    s = k_stats(ev, b)
    assert d["b"] == pytest.approx(s[4].score() / s[1].score())
    assert d["difference"] == pytest.approx(d["a"] - d["b"])
    assert 0 < d["low"] < d["difference"] < d["high"]
    flipped = retention_ci(b, a, ev, n_bootstrap=200)
    assert flipped["high"] < 0


def test_retention_without_k1_bleu_is_nan():
    ev = joined_evalset(8, 4)
    hyps = ["zzz" if k == 1 else r for r, k in zip(ev.ref, ev.k, strict=True)]
    assert k_stats(ev, hyps)[1].score() == 0
    assert math.isnan(retention_ci(hyps, hyps, ev, n_bootstrap=10)["a"])


def test_a_joined_line_that_is_not_its_sentences_is_refused():
    ev = joined_evalset(80, 4)
    k4 = lines(ev, 4)
    ev.src[k4[3]], ev.src[k4[4]] = ev.src[k4[4]], ev.src[k4[3]]  # two joined lines swapped
    with pytest.raises(ValueError, match=r"k = 4 line 3 is not k = 1 lines 12...15"):
        retention_ci(ev.ref, ev.ref, ev, n_bootstrap=10)
    short = joined_evalset(80, 4)
    short.ref[lines(short, 2)[0]] += " extra"  # only the reference differs: refused too
    with pytest.raises(ValueError, match="k = 2 line 0 is not"):
        retention_ci(short.ref, short.ref, short, k_hi=2, n_bootstrap=10)
    with pytest.raises(ValueError, match="no line joined from k = 5"):
        retention_ci(ev.ref, ev.ref, ev, k_hi=5)


# ---- retention without the brevity penalty -----------------------------------------------------


def test_no_bp_retention_ignores_outputs_that_are_only_shorter():
    """Three systems alike on the k = 1 lines; on the k = 4 lines ``full`` outputs the
    references, ``cut`` their first 60% (every n-gram right, too short), ``wrong`` the full
    length with every fifth word wrong. Truncation lowers BLEU through its brevity penalty
    only: without it ``cut`` retains exactly what ``full`` does, and more than ``wrong``."""
    ev = joined_evalset(80, 4)
    rng = random.Random(4)
    base = [degrade(r, 0.9, rng) for r in ev.ref]

    def on_k4(change):
        return [change(r) if k == 4 else h for h, r, k in zip(base, ev.ref, ev.k, strict=True)]

    full = on_k4(lambda r: r)
    cut = on_k4(lambda r: " ".join(r.split()[: max(1, int(0.6 * len(r.split())))]))
    wrong = on_k4(lambda r: " ".join("zzz" if j % 5 == 4 else w for j, w in enumerate(r.split())))
    k4 = lines(ev, 4)
    s4 = BleuStats([cut[i] for i in k4], [ev.ref[i] for i in k4])
    assert s4.score() < 70 and s4.score_nobp() == pytest.approx(100.0)

    d = nobp_difference(full, cut, ev, 4)
    nobp1 = BleuStats([base[i] for i in lines(ev, 1)], ev.ref[:80]).score_nobp()
    assert d["a"] == pytest.approx(100 / nobp1) and d["b"] == pytest.approx(d["a"])
    assert d["difference"] == pytest.approx(0.0, abs=1e-12)
    with_bp = retention_ci(full, cut, ev, 4, n_bootstrap=20)
    assert with_bp["difference"] > 0.3  # with BP, the short outputs lose retention
    worse = nobp_difference(cut, wrong, ev, 4)
    assert worse["difference"] == pytest.approx(worse["a"] - worse["b"])
    assert worse["difference"] > 0.1
    same = nobp_difference(wrong, list(wrong), ev, 2)
    assert same["difference"] == 0.0 and same["a"] == same["b"]


def test_retention_refuses_statistics_not_one_row_per_line():
    ev = joined_evalset(16, 4)
    n = len(ev.src)
    st, units = BleuStats(ev.ref, ev.ref).stats, retention_units(ev, 4)
    with pytest.raises(ValueError, match=f"system B: {n - 1} statistics rows for {n} lines"):
        retention_difference_ci(st, st[:-1], ev.k, units, 4, n_bootstrap=10)
    with pytest.raises(ValueError, match="no line joined from k = 5"):
        nobp_difference(ev.ref, ev.ref, ev, 5)

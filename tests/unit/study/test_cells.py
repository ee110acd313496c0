"""The study's retention with its paired interval, from sentence statistics as a per-line file
keeps them, and the length cap."""

from __future__ import annotations

import math
import random

import pytest
import sacrebleu

from seq2seq.study.cells import retention_difference_ci, retention_units
from seq2seq.study.evalsets import EvalSet
from seq2seq.study.stats import BleuStats
from tests.corpora import joined_evalset, lines


def degrade(line: str, keep: float, rng: random.Random) -> str:
    return " ".join(w for w in line.split() if rng.random() < keep) or "the"


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


def test_retention_refuses_statistics_not_one_row_per_line():
    ev = joined_evalset(16, 4)
    n = len(ev.src)
    st, units = BleuStats(ev.ref, ev.ref).stats, retention_units(ev, 4)
    with pytest.raises(ValueError, match=f"system B: {n - 1} statistics rows for {n} lines"):
        retention_difference_ci(st, st[:-1], ev.k, units, 4, n_bootstrap=10)
    with pytest.raises(ValueError, match="no line joined from k = 5"):
        retention_units(ev, 5)

"""The study's statistics: BLEU of sentence subsets equal to sacreBLEU's, one-sample and paired
bootstrap intervals drawn as sacreBLEU draws them, and the seeds' t-interval."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from sacrebleu.metrics import BLEU

from seq2seq.evaluation.metrics import corpus_score, sacrebleu_seed
from seq2seq.study.stats import (
    SACREBLEU_SEED,
    T_975,
    BleuStats,
    bootstrap_ci,
    paired_difference_ci,
    seed_interval,
)
from tests.corpora import synth_pairs


def fixture_pairs(n: int = 30, seed: int = 5) -> tuple[list[str], list[str]]:
    """``n`` made-up references and hypotheses that get about half of each sentence right."""
    rng = random.Random(seed)
    refs = [tgt for _, tgt in synth_pairs(n, seed, max_words=12)]
    hyps = []
    for ref in refs:
        words = ref.split()
        hyps.append(" ".join(w if rng.random() < 0.6 else "the" for w in words))
    return hyps, refs


def degrade(lines: list[str], keep: float, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(w for w in x.split() if rng.random() < keep) or "the" for x in lines]


def test_bleu_stats_score_equals_corpus_bleu():
    hyps, refs = fixture_pairs()
    s = BleuStats(hyps, refs)
    assert s.stats.shape == (30, 10)
    assert s.score() == corpus_score("bleu", hyps, [refs]).score
    sub = [3, 3, 7, 20]
    assert s.score(np.array(sub)) == pytest.approx(
        corpus_score("bleu", [hyps[i] for i in sub], [[refs[i] for i in sub]]).score, abs=1e-9
    )
    whole = BLEU().corpus_score(hyps, [refs])
    assert s.length_ratio() == whole.sys_len / whole.ref_len


# ---- paired_difference_ci and bootstrap_ci ------------------------------------------------------


def test_a_system_against_itself_differs_by_exactly_zero():
    hyps, refs = fixture_pairs()
    a, b = BleuStats(hyps, refs), BleuStats(list(hyps), list(refs))
    d = paired_difference_ci(a.score, b.score, n=len(a.stats), n_bootstrap=100)
    assert (d["difference"], d["low"], d["high"], d["mean"]) == (0.0, 0.0, 0.0, 0.0)


def test_a_clearly_better_system_gets_an_interval_above_zero():
    _, refs = fixture_pairs(60)
    good, bad = BleuStats(degrade(refs, 0.95, 1), refs), BleuStats(degrade(refs, 0.5, 2), refs)
    d = paired_difference_ci(good.score, bad.score, n=len(good.stats), n_bootstrap=200)
    assert d["difference"] == pytest.approx(good.score() - bad.score())
    assert 0 < d["low"] < d["difference"] < d["high"]
    flipped = paired_difference_ci(bad.score, good.score, n=len(good.stats), n_bootstrap=200)
    assert flipped["high"] < 0
    assert (flipped["low"], flipped["high"]) == pytest.approx((-d["high"], -d["low"]))


def test_paired_resamples_are_the_ones_sacrebleu_draws():
    """Against a constant 0, the resampled differences are the resampled scores: their mean is
    the bootstrap mean sacreBLEU reports for the same seed."""
    hyps, refs = fixture_pairs()
    s = BleuStats(hyps, refs)
    d = paired_difference_ci(s.score, lambda i: 0.0, n=len(s.stats), n_bootstrap=200)
    with sacrebleu_seed(str(SACREBLEU_SEED)):
        direct = BLEU().corpus_score(hyps, [refs], n_bootstrap=200)
    assert d["mean"] == pytest.approx(direct._mean, abs=1e-6)


def test_retention_over_joined_lines_as_in_the_docstring():
    """Unit j = joined line j and the 4 lines it was built from: model A keeps its quality on
    long lines, model B loses it; A's retention exceeds B's."""
    _, refs = fixture_pairs(80)
    joined = [" ".join(refs[j : j + 4]) for j in range(0, 80, 4)]
    a1, b1 = BleuStats(degrade(refs, 0.8, 3), refs), BleuStats(degrade(refs, 0.8, 4), refs)
    a4 = BleuStats(degrade(joined, 0.8, 5), joined)
    b4 = BleuStats(degrade(joined, 0.3, 6), joined)

    def retention(s4, s1):
        return lambda i: s4.score(i) / s1.score((4 * i[:, None] + np.arange(4)).ravel())

    d = paired_difference_ci(retention(a4, a1), retention(b4, b1), n=len(a4.stats), n_bootstrap=200)
    want = a4.score() / a1.score() - b4.score() / b1.score()
    assert d["difference"] == pytest.approx(want) and d["low"] > 0


def test_one_sample_bootstrap_draws_the_paired_resamples():
    """bootstrap_ci of one statistic is paired_difference_ci against a constant 0: the same
    resamples, the same percentile rule."""
    rng = np.random.default_rng(3)
    x = rng.normal(1.0, 2.0, 50)
    d = bootstrap_ci(lambda i: float(x[i].mean()), 50, n_bootstrap=400, seed=9)
    p = paired_difference_ci(lambda i: float(x[i].mean()), lambda i: 0.0, 50, 400, seed=9)
    assert d == {"value": p["difference"], "low": p["low"], "high": p["high"], "mean": p["mean"]}
    assert d["value"] == pytest.approx(x.mean())
    means = np.sort([x[i].mean() for i in np.random.default_rng(9).choice(50, (400, 50))])
    assert (d["low"], d["high"]) == (means[10], means[389])  # 400 // 40 = 10
    with pytest.raises(ValueError, match="at least one unit"):
        bootstrap_ci(lambda i: 0.0, n=0)
    with pytest.raises(ValueError, match="at least 2"):
        bootstrap_ci(lambda i: 0.0, n=3, n_bootstrap=1)


def test_paired_difference_refuses_empty_or_single_resamples():
    with pytest.raises(ValueError, match="at least one unit"):
        paired_difference_ci(lambda i: 0.0, lambda i: 0.0, n=0)
    with pytest.raises(ValueError, match="at least 2"):
        paired_difference_ci(lambda i: 0.0, lambda i: 0.0, n=3, n_bootstrap=1)


# ---- seed_interval: the seeds' t-interval ------------------------------------------------------


def test_the_t_table_is_student_s():
    assert T_975[2] == pytest.approx(4.302652729749464, abs=1e-12)
    assert T_975[1] == pytest.approx(math.tan(0.475 * math.pi), rel=1e-12)  # Cauchy at df = 1
    # df = 2 has a closed form: (2p - 1) / sqrt(2 p (1 - p))
    assert T_975[2] == pytest.approx(0.95 / math.sqrt(2 * 0.975 * 0.025), rel=1e-12)
    assert all(T_975[d] > T_975[d + 1] > 1.96 for d in range(1, 10))


def test_seed_interval_by_hand():
    s = seed_interval([0.1, 0.2, 0.3])
    half = 4.3027 * 0.1 / math.sqrt(3)
    assert s["n"] == 3
    assert s["mean"] == pytest.approx(0.2) and s["sd"] == pytest.approx(0.1)
    assert s["low"] == pytest.approx(0.2 - half, abs=1e-5)
    assert s["high"] == pytest.approx(0.2 + half, abs=1e-5)
    two = seed_interval([0.1, 0.3])  # df = 1: 12.706 * sd / sqrt(2)
    assert two["high"] - two["mean"] == pytest.approx(T_975[1] * math.sqrt(0.02) / math.sqrt(2))


def test_seed_interval_without_enough_seeds():
    assert seed_interval([0.2]) == {"n": 1, "mean": 0.2, "low": None, "high": None, "sd": None}
    assert seed_interval([]) == {"n": 0, "mean": None, "low": None, "high": None, "sd": None}
    nan = seed_interval([0.1, math.nan, 0.3])
    assert nan["n"] == 3 and nan["mean"] is None and nan["low"] is None
    assert seed_interval([0.1] * 11)["sd"] == 0.0
    with pytest.raises(ValueError, match="12 differences, the t table stops at df = 10"):
        seed_interval([0.1] * 12)

"""How sure a score is: bootstrap confidence intervals of any statistic of resampled units, and
paired intervals of a difference; BLEU of any subset of sentences from their statistics.

Bootstrap resampling of test sentences (Koehn 2004, "Statistical Significance Tests for Machine
Translation Evaluation") as sacreBLEU does it (Post 2018; ``sacrebleu/significance.py``): the
resamples are the rows of ``numpy.random.default_rng(seed).choice(n, size=(n_bootstrap, n))``, so
with equal seeds every interval here is drawn from the resamples sacreBLEU would draw. Sentences
are scored as ``evaluation.metrics.corpus_score`` scores them (right-stripped, sacreBLEU's
tokenizer for the target language).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from seq2seq.evaluation.metrics import sacrebleu_metric

SACREBLEU_SEED = 12345
"""sacreBLEU's default bootstrap seed (its environment variable ``SACREBLEU_SEED``)."""


class BleuStats:
    """Per-sentence sufficient statistics of corpus BLEU, so that BLEU of any subset or resample
    of the sentences is a sum and a formula (sacreBLEU's ``_extract_corpus_statistics`` and
    ``_compute_score_from_stats``). ``idx`` below selects sentences, repeats counted; None: all.

    Attributes:
        stats: (N, 2 + 2·4) int64: per sentence, the hypothesis and (closest) reference lengths in
            tokens, the matching n-grams for n = 1..4, the hypothesis n-grams for n = 1..4.

    Raises:
        ValueError: no hypothesis, or as many references as hypotheses missing.
    """

    def __init__(self, hyps: Sequence[str], refs: Sequence[str], tgt_lang: str | None = None):
        if not hyps:
            raise ValueError("bleu: no segments to score")
        if len(refs) != len(hyps):
            raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
        self.metric = sacrebleu_metric("bleu", tgt_lang)
        rows = self.metric._extract_corpus_statistics(
            [h.rstrip() for h in hyps], [[r.rstrip() for r in refs]]
        )
        self.stats = np.asarray(rows, dtype=np.int64)

    @classmethod
    def from_stats(cls, stats, tgt_lang: str | None = None) -> BleuStats:
        """Statistics kept earlier (the (N, 10) attribute), or ValueError."""
        arr = np.asarray(stats, dtype=np.int64)
        if arr.ndim != 2 or arr.shape[1] != 10 or (arr < 0).any():
            raise ValueError(f"BLEU statistics: want (N, 10) counts, got shape {arr.shape}")
        out = cls.__new__(cls)
        out.metric, out.stats = sacrebleu_metric("bleu", tgt_lang), arr
        return out

    def _rows(self, idx) -> np.ndarray:
        return self.stats if idx is None else self.stats[np.asarray(idx)]

    def score(self, idx: np.ndarray | Sequence[int] | None = None) -> float:
        """Corpus BLEU (0-100) of the sentences ``idx`` (all: equals ``corpus_score``'s)."""
        return float(self.metric._compute_score_from_stats(self._rows(idx).sum(0).tolist()).score)

    def length_ratio(self, idx: np.ndarray | Sequence[int] | None = None) -> float:
        """Hypothesis over reference length in tokens, as BLEU's brevity penalty sees it (inf
        for an empty reference side)."""
        rows = self._rows(idx)
        hyp, ref = int(rows[:, 0].sum()), int(rows[:, 1].sum())
        return hyp / ref if ref else float("inf")


def paired_difference_ci(
    stat_a: Callable[[np.ndarray], float],
    stat_b: Callable[[np.ndarray], float],
    n: int,
    n_bootstrap: int = 1000,
    seed: int | None = SACREBLEU_SEED,
    level: float = 0.95,
) -> dict[str, float]:
    """Paired bootstrap interval of ``stat_a - stat_b``, both computed on the same resampled
    units in every resample (Koehn 2004), so what the two systems share cancels out. Arguments
    as ``bootstrap_ci``.

    Returns:
        ``{"a", "b", "difference", "low", "high", "mean"}``: both statistics and their
        difference on the units themselves, the interval, and the resampled differences' mean.
    """
    d = bootstrap_ci(lambda i: stat_a(i) - stat_b(i), n, n_bootstrap, seed, level)
    everything = np.arange(n)
    return {
        "a": stat_a(everything),
        "b": stat_b(everything),
        "difference": d["value"],
        "low": d["low"],
        "high": d["high"],
        "mean": d["mean"],
    }


def bootstrap_ci(
    stat: Callable[[np.ndarray], float],
    n: int,
    n_bootstrap: int = 1000,
    seed: int | None = SACREBLEU_SEED,
    level: float = 0.95,
) -> dict[str, float]:
    """Bootstrap interval of one statistic of ``n`` units (module docstring): the bounds are the
    sorted resampled values at ``c`` and ``n_bootstrap - c - 1``, ``c = floor(n_bootstrap · (1 -
    level) / 2)`` (at 0.95: sacreBLEU's ``n_bootstrap // 40``).

    Args:
        stat: maps an (n,) int array of unit indices (with repeats) to a float.
        seed: the numpy seed; None draws fresh entropy.  level: the coverage (0.90 for an
            equivalence test's two one-sided tests at 5% each).

    Returns:
        ``{"value", "low", "high", "mean"}``: ``stat`` on the units themselves, the interval,
        and the resampled values' mean.

    Raises:
        ValueError: ``n`` < 1, ``n_bootstrap`` < 2 or ``level`` outside (0, 1).
    """
    if not 0 < level < 1:
        raise ValueError(f"level {level}: an interval's coverage lies between 0 and 1")
    if n < 1:
        raise ValueError(f"n {n}: a bootstrap needs at least one unit")
    if n_bootstrap < 2:
        raise ValueError(f"n_bootstrap {n_bootstrap}: a bootstrap interval needs at least 2")
    rng = np.random.default_rng(seed)
    idxs = rng.choice(n, size=(n_bootstrap, n), replace=True)
    values = np.sort(np.array([stat(i) for i in idxs], dtype=np.float64))
    cut = math.floor(round(n_bootstrap * (1 - level) / 2, 9))  # 0.95: n_bootstrap // 40
    return {
        "value": float(stat(np.arange(n))),
        "low": float(values[cut]),
        "high": float(values[n_bootstrap - cut - 1]),
        "mean": float(values.mean()),
    }


T_975 = {
    1: 12.706204736174694,
    2: 4.302652729749462,
    3: 3.1824463052837078,
    4: 2.7764451051977934,
    5: 2.5705818356363146,
    6: 2.4469118511449786,
    7: 2.364624251592784,
    8: 2.306004135204166,
    9: 2.262157162798205,
    10: 2.228138851986274,
}
"""Student's t 97.5% quantile by degrees of freedom (scipy.stats.t.ppf(0.975, df))."""


def seed_interval(differences: Sequence[float | None]) -> dict:
    """Mean over seeds of a difference and its 95% t-interval (df = n - 1, ``T_975``):
    ``{"n", "mean", "low", "high", "sd"}``, sd the sample standard deviation (n - 1 denominator);
    low, high and sd None for n < 2; every statistic None when a difference is None or NaN.
    ValueError: more than 11 differences (the t table stops at df = 10)."""
    n = len(differences)
    out = {"n": n, "mean": None, "low": None, "high": None, "sd": None}
    if n == 0 or any(d is None or math.isnan(d) for d in differences):
        return out
    if n - 1 > max(T_975):
        raise ValueError(f"seed_interval: {n} differences, the t table stops at df = {max(T_975)}")
    mean = math.fsum(differences) / n
    out["mean"] = mean
    if n < 2:
        return out
    sd = math.sqrt(math.fsum((d - mean) ** 2 for d in differences) / (n - 1))
    half = T_975[n - 1] * sd / math.sqrt(n)
    out.update(low=mean - half, high=mean + half, sd=sd)
    return out

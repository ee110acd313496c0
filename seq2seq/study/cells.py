"""The study's retention: the paired interval of a difference in retention (BLEU on joined lines
over BLEU on the single lines they were joined from), and the length cap its hypotheses are cut
at. The references' teacher-forced loss, which involves no search at all, is in ``study.rho``.

Shape notation: U units of the paired bootstrap, K sentences joined into one line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from seq2seq.study.evalsets import EvalSet, lines_of
from seq2seq.study.stats import BleuStats, paired_difference_ci


def retention_units(evalset: EvalSet, k_hi: int) -> np.ndarray:
    """The paired bootstrap's units for retention at ``k_hi``: unit j is the joined ``k_hi``
    line j with the k = 1 lines it was joined from, k_hi·j .. k_hi·j + k_hi - 1 among the k = 1
    lines (``build_eval_set`` joins consecutive non-overlapping groups of the first lines).
    Returns (U, K) int64: per unit, the positions among the k = 1 lines of its single lines.

    Raises:
        ValueError: ``k_hi`` < 2, no ``k_hi`` line, or a joined line whose source or reference is
            not the space-join of those single lines (the evalset was not built that way).
    """
    if k_hi < 2:
        raise ValueError(f"k_hi {k_hi}: retention compares joined lines (k >= 2) with k = 1")
    single, joined = lines_of(evalset.k, 1), lines_of(evalset.k, k_hi)
    if not joined:
        raise ValueError(f"{evalset.name}: no line joined from k = {k_hi} sentences")
    units = np.arange(len(joined) * k_hi, dtype=np.int64).reshape(len(joined), k_hi)
    for j, line in enumerate(joined):
        members = [single[p] for p in units[j] if p < len(single)]
        ok = len(members) == k_hi and all(
            getattr(evalset, side)[line] == " ".join(getattr(evalset, side)[m] for m in members)
            for side in ("src", "ref")
        )
        if not ok:
            raise ValueError(
                f"{evalset.name}: k = {k_hi} line {j} is not k = 1 lines {k_hi * j}..."
                f"{k_hi * j + k_hi - 1} joined by a space; cannot pair it with its sentences"
            )
    return units


def retention_difference_ci(
    stats_a: np.ndarray,
    stats_b: np.ndarray,
    k_of_line: Sequence[int],
    units: np.ndarray,
    k_hi: int,
    tgt_lang: str | None = None,
    n_bootstrap: int = 1000,
    level: float = 0.95,
) -> dict:
    """Paired bootstrap interval of retention(A) - retention(B) at ``k_hi``, retention being BLEU
    of the ``k_hi`` lines over BLEU of the k = 1 lines they were joined from; a resample keeps
    each joined line with its own single lines, for both systems.

    Args:
        stats_a, stats_b: (N, 10) sentence statistics (``BleuStats.stats``) of every line.
        k_of_line: k of each line.  units: (U, K) as ``retention_units`` returns for ``k_hi``.

    Returns:
        ``stats.paired_difference_ci``'s dict (retentions as fractions, nan where the k = 1
        BLEU is 0) with ``"units"`` and ``"level"``.

    Raises:
        ValueError: statistics not one row per line, or as ``paired_difference_ci``.
    """
    single, joined = lines_of(k_of_line, 1), lines_of(k_of_line, k_hi)
    for name, st in (("A", stats_a), ("B", stats_b)):
        if len(st) != len(k_of_line):
            raise ValueError(f"system {name}: {len(st)} statistics rows for {len(k_of_line)} lines")

    def stat(stats: np.ndarray):
        s1 = BleuStats.from_stats(np.asarray(stats)[single], tgt_lang)
        hi = BleuStats.from_stats(np.asarray(stats)[joined], tgt_lang)

        def ret(idx: np.ndarray) -> float:
            base = s1.score(units[idx].ravel())
            return hi.score(idx) / base if base else math.nan

        return ret

    d = paired_difference_ci(stat(stats_a), stat(stats_b), len(units), n_bootstrap, level=level)
    return {**d, "units": len(units), "level": level}


CAP_SLACK = 1.1  # the secondary statistic's length cap's slack (``length_caps``)


def length_caps(srcs: Sequence[str], ratio: float, slack: float = CAP_SLACK) -> list[int]:
    """Per source, the most words its hypothesis may keep before scoring: ceil(slack x its
    whitespace words x ``ratio``). Reference-free: ``ratio`` is the training split's target
    over source words (``evalsets.train_length_ratio``). ValueError: ``ratio`` or ``slack`` not
    positive."""
    if not ratio > 0 or not slack > 0:
        raise ValueError(f"length caps: ratio {ratio} and slack {slack} must be positive")
    return [math.ceil(round(slack * len(s.split()) * ratio, 9)) for s in srcs]


def cap_hypotheses(hyps: Sequence[str], caps: Sequence[int]) -> tuple[list[str], list[bool]]:
    """Each hypothesis cut to its cap in whitespace words (``length_caps``), and whether the
    cap shortened it, so a runaway output's extra words cannot cost it n-gram precision past the
    length a competent translation would have. ValueError: not one cap per hypothesis."""

    if len(caps) != len(hyps):
        raise ValueError(f"{len(caps)} length caps for {len(hyps)} hypotheses")
    out, cut = [], []
    for h, c in zip(hyps, caps, strict=True):
        words = h.split()
        cut.append(len(words) > c)
        out.append(" ".join(words[:c]) if len(words) > c else h)
    return out, cut

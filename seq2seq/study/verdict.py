"""What rule v3 (``verdict_v3``) keeps of the study's earlier rules: the competence window of the
k = 1 greedy length ratio, and the single-pair stage's plateau gain (reported, not a gate).

Rules v1 and v2 (a plateau gate, sign tests, then an equivalence margin between two different
fixed-vector designs) were replaced by v3 and their code removed; their frozen reports stay in
docs/results/study/multi30k/report.md and results.json, and ``git show aabe875:seq2seq/study/``
holds the code that wrote them.
"""

from __future__ import annotations

RATIO_LOW = 0.9  # shortest competent k = 1 greedy hypothesis over reference length (tokens)
RATIO_HIGH = 1.1  # longest competent k = 1 greedy length ratio
PLATEAU_FROM = 0.75  # the plateau gain is read from this share of the stage's last validated step


def plateau_gain(curve) -> float | None:
    """Validation BLEU at the last point of ``curve`` ([[step, BLEU], ...], any order) minus that
    at the last point at or before ``PLATEAU_FROM`` of its step, in BLEU points; None without
    two such points."""
    curve = sorted(curve or [])
    if not curve:
        return None
    last_step, last_bleu = curve[-1]
    earlier = [p for p in curve[:-1] if p[0] <= PLATEAU_FROM * last_step]
    return float(last_bleu - earlier[-1][1]) if earlier else None

"""Every statistic the study's verdicts read, recomputed from the per-line files alone
(``study.lines``): per model and test set rho and capped retention by k, per pair the paired
intervals of rules v2 and v1, and the rows ``verdict`` and ``verdict_v1`` rate.

Which pairs (``rated_cells``): on each scored test set, per seed, the headline and the negative
control against the ablation of the same seed, and the null control, every pair of the
ablation's seeds. The exploratory cells (``verdict.EXPLORATORY``) choose the margins; the
confirmation cells (``verdict.CONFIRMATION``) are the ones the frozen rule judges.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np

from seq2seq.study import verdict, verdict_v1
from seq2seq.study.cells import retention_difference_ci, retention_nobp
from seq2seq.study.evalsets import lines_of
from seq2seq.study.lines import LineData
from seq2seq.study.rho import rho_ci, rho_difference_ci
from seq2seq.study.stats import BleuStats

Lines = Mapping[tuple[str, str], LineData]
"""(test set name, model name) -> that model's per-line file on that set."""


def model_summary(d: LineData, n_bootstrap: int = 1000) -> dict:
    """One model on one set: ``{"by_k": [{"k", "rho", "rho_low", "rho_high", "capped_bleu",
    "capped_retention", "shortened"}, ...]}``, rho with its bootstrap 95% interval (k >= 2, a
    fraction), greedy BLEU of the length-capped hypotheses, capped retention (capped BLEU at k
    over capped BLEU at k = 1 of the same captions) and the percentage of lines the cap
    shortened; None where undefined."""
    stats, short = d.stats("greedy", capped=True), d.flags("greedy", "capped")
    single = lines_of(d.k, 1)
    s1 = BleuStats.from_stats(stats[single], d.tgt_lang)
    rows = []
    for k in sorted(set(d.k)):
        idx = lines_of(d.k, k)
        bleu = BleuStats.from_stats(stats[idx], d.tgt_lang).score()
        row = {"k": k, "rho": None, "rho_low": None, "rho_high": None}
        if k == 1:
            ret = 1.0 if s1.score() else None
        else:
            ci = rho_ci(d.captions, k, n_bootstrap)
            row.update(rho=ci["rho"], rho_low=ci["low"], rho_high=ci["high"])
            base = s1.score(d.captions.units[k].ravel())
            ret = bleu / base if base else None
        row.update(capped_bleu=bleu, capped_retention=ret)
        row["shortened"] = 100.0 * float(short[idx].mean())
        rows.append(row)
    return {"by_k": rows}


def pair_v2(a: LineData, b: LineData, k: int, n_bootstrap: int = 1000) -> dict:
    """Rule v2's statistics of A against B at k: the rho difference's paired 95% and 90%
    intervals and the capped greedy retention difference's 95% interval (fractions)."""
    units = a.captions.units[k]
    capped = retention_difference_ci(
        a.stats("greedy", True), b.stats("greedy", True), a.k, units, k, a.tgt_lang, n_bootstrap
    )
    return {
        "rho": rho_difference_ci(a.captions, b.captions, k, n_bootstrap),
        "equivalence": rho_difference_ci(
            a.captions, b.captions, k, n_bootstrap, level=verdict.EQUIVALENCE_LEVEL
        ),
        "capped": capped,
    }


def pair_v1(a: LineData, b: LineData, k: int, n_bootstrap: int = 1000) -> dict:
    """Rule v1's statistics of A against B at k, from the same files: the greedy retention
    difference with its paired 95% interval, and the difference without the brevity penalty."""
    units = a.captions.units[k]
    ret = retention_difference_ci(
        a.stats("greedy"), b.stats("greedy"), a.k, units, k, a.tgt_lang, n_bootstrap
    )
    ra, rb = (retention_nobp(d.stats("greedy"), d.k, units, k, d.tgt_lang) for d in (a, b))
    return {"retention": ret, "retention_nobp": {"a": ra, "b": rb, "difference": ra - rb}}


def rated_cells(models: Sequence[dict], lines: Lines, sets: Mapping[str, Sequence[int]]):
    """(set, seed, role, attention entry, ablation entry) of every headline and negative cell
    and every null pair of ``sets``' seeds that has both per-line files."""
    roles: dict[str, dict[int, list[dict]]] = {}  # role -> seed -> entries (two negatives)
    for m in models:
        roles.setdefault(m["role"], {}).setdefault(m["seed"], []).append(m)
    abl = {s: found[0] for s, found in roles.get("ablation", {}).items()}
    for name, seeds in sets.items():
        for s in seeds:
            for role in ("headline", "negative"):
                b = abl.get(s)
                for m in roles.get(role, {}).get(s, []):
                    if b and (name, m["name"]) in lines and (name, b["name"]) in lines:
                        yield name, s, role, m, b
        for s1, s2 in itertools.combinations(sorted(x for x in seeds if x in abl), 2):
            b1, b2 = abl[s2], abl[s1]
            if (name, b1["name"]) in lines and (name, b2["name"]) in lines:
                yield name, (s1, s2), "null", b1, b2


def rule_k(lines: Lines) -> int:
    """The k the rule reads: ``verdict.K_RULE``, or the largest k scored when the study joined
    fewer captions (a tiny test run)."""
    top = min((max(d.k) for d in lines.values()), default=verdict.K_RULE)
    return min(verdict.K_RULE, top)


def _rows(models, lines: Lines, sets, n_bootstrap: int, delta, margin) -> tuple[list, list]:
    heads, controls = [], []
    k = rule_k(lines)
    for name, seed, role, a, b in rated_cells(models, lines, sets):
        stats = pair_v2(lines[name, a["name"]], lines[name, b["name"]], k, n_bootstrap)
        row = {"set": name, "seed": seed, "role": role, "attention": a["name"]}
        row.update(ablation=b["name"], **stats)
        if role == "headline":
            row.update(verdict.rate_seed(a, b, stats, delta))
            heads.append(row)
        else:
            row.update(verdict.rate_control(stats["equivalence"], margin))
            controls.append(row)
    return heads, controls


def rate_sets(models: Sequence[dict], lines: Lines, n_bootstrap: int = 1000) -> dict:
    """Rule v2 on the confirmation cells and, apart, on the exploratory ones (with the margins
    ``verdict.choose_margins`` proposes from them and rule v1's rows on the same seeds), from
    results.json's model entries and every per-line file read.

    Returns:
        ``{"rule", "k", "delta", "margin", "why", "frozen", "confirmation": {"heads",
        "controls", "overall"}, "exploratory": {"heads", "controls", "proposal", "v1": {"rows",
        "seed_interval", "overall"}}}``.
    """
    delta, margin = verdict.DELTA, verdict.MARGIN
    heads, controls = _rows(models, lines, verdict.CONFIRMATION, n_bootstrap, delta, margin)
    x_heads, x_controls = _rows(models, lines, verdict.EXPLORATORY, n_bootstrap, delta, margin)
    nulls = [(c["equivalence"]["low"], c["equivalence"]["high"]) for c in x_controls]
    nulls = [iv for iv, c in zip(nulls, x_controls, strict=True) if c["role"] == "null"]
    proposal = verdict.choose_margins(nulls) if nulls and all(np.isfinite(nulls).ravel()) else None
    return {
        "rule": verdict.RULE,
        "k": rule_k(lines),
        "delta": delta,
        "margin": margin,
        "why": verdict.MARGINS_WHY,
        "frozen": verdict.FROZEN_COMMIT,
        "confirmation": {
            "heads": heads,
            "controls": controls,
            "overall": verdict.overall(heads, controls, delta),
        },
        "exploratory": {
            "heads": x_heads,
            "controls": x_controls,
            "proposal": proposal,
            "v1": _v1(models, lines, n_bootstrap),
        },
    }


def _v1(models, lines: Lines, n_bootstrap: int) -> dict:
    """Rule v1 on the exploratory cells, from the per-line files: its rows and its verdict."""
    by_name = {m["name"]: m for m in models}
    rows = []
    for name, _, role, a, b in rated_cells(models, lines, verdict.EXPLORATORY):
        stats = pair_v1(lines[name, a["name"]], lines[name, b["name"]], rule_k(lines), n_bootstrap)
        rows.append(verdict_v1.rate_pair(by_name[a["name"]], by_name[b["name"]], stats, role))
    diffs = [r["retention"]["difference"] for r in rows if r["role"] == "headline"]
    seeds = verdict.seed_interval(diffs)
    return {"rows": rows, "seed_interval": seeds, "overall": verdict_v1.overall(rows, seeds)}

"""Rule v1, the study's first verdict rule, kept to show it beside rule v2 on the exploratory
seeds (``report.sections.exploratory_section``): a pair reproduces Figure 2 when (a) both models
are competent (``verdict.competence``), (b) the paired bootstrap 95% interval of the greedy
retention difference (attention minus ablation, ``cells.retention_difference_ci``) lies above 0,
and (c) the same difference without the brevity penalty is not below 0. It could not tell
attention from a decoder that runs away (a runaway output's extra tokens cut precision, which (c)
cannot see), and its controls were sign tests: ``verdict`` holds rule v2, which replaced it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from seq2seq.study.verdict import CONTROLS, ROLES, _model_flags, _name, competence_pair


def _num(x) -> float:
    return math.nan if x is None else float(x)


def rate_pair(attention: dict, ablation: dict, pair_stats: dict, role: str) -> dict:
    """One pair under rule v1 (module docstring), from the two models' results entries and
    ``pair_stats``: ``{"retention": {"difference", "low", "high", "a", "b"}`` (greedy, paired
    bootstrap, fractions) ``, "retention_nobp": {"a", "b", "difference"}}``.

    Returns:
        ``{"role", "attention", "ablation", "kind", "why", "competent", "retention",
        "retention_nobp", "flags"}``: the two names; kind "reproduces" (a, b and c), "opposite"
        (a, and the interval below 0), "not competent" (not a) or "no difference shown";
        ``why`` one line; ``competent`` each model's ``competence``; ``flags`` each model's
        greedy ``length_flags`` at k = 1 and the largest k.

    Raises:
        ValueError: an unknown role.
    """
    if role not in ROLES:
        raise ValueError(f"role {role!r}: one of {', '.join(ROLES)}")
    names = {"attention": _name(attention, "attention"), "ablation": _name(ablation, "ablation")}
    comp, failed = competence_pair(attention, ablation)
    ret, nobp = pair_stats["retention"], pair_stats["retention_nobp"]
    low, high, diff = _num(ret["low"]), _num(ret["high"]), _num(ret["difference"])
    nobp_diff = _num(nobp["difference"])
    interval = f"greedy retention difference {diff:+.3f} (95% CI {low:+.3f} to {high:+.3f})"
    b_ok, c_ok = low > 0, nobp_diff >= 0
    if failed:
        kind, why = "not competent", "; ".join(failed)
    elif b_ok and c_ok:
        kind = "reproduces"
        why = f"{interval} above 0, and {nobp_diff:+.3f} without the brevity penalty"
    elif high < 0:
        kind, why = "opposite", f"{interval} below 0: the ablation retains more"
    else:
        kind = "no difference shown"
        parts = []
        if not b_ok:
            parts.append(f"{interval} does not lie above 0")
        if not c_ok:
            parts.append(f"without the brevity penalty the difference is {nobp_diff:+.3f}")
        why = "; ".join(parts)
    return {
        "role": role,
        **names,
        "kind": kind,
        "why": why,
        "competent": comp,
        "retention": ret,
        "retention_nobp": nobp,
        "flags": {"attention": _model_flags(attention), "ablation": _model_flags(ablation)},
    }


def overall(rows: Sequence[dict], seed_stats: dict | None, seeds_wanted: int = 3) -> dict:
    """The study's verdict from every pair's row (``rate_pair``) and the seed interval of the
    headline's greedy retention difference (``seed_interval``).

    kind, first that applies: "rule invalid" (a negative or null control reproduces: no
    conclusion is drawn), "not competent" (a headline model failed the gate), "incomplete"
    (fewer than ``seeds_wanted`` headline rows, or no seed interval where ``seeds_wanted`` >= 2),
    "reproduces" (every headline row reproduces and the seed interval lies above 0), "opposite"
    (every headline row is opposite and the seed interval lies below 0), else "no difference
    shown". Family rows are reported, never decisive.

    Returns:
        ``{"kind", "words"}``: words one plain sentence.
    """
    heads = [r for r in rows if r["role"] == "headline"]
    passed = [r for r in rows if r["role"] in CONTROLS and r["kind"] == "reproduces"]
    seeds = seed_stats or {}
    low, high = seeds.get("low"), seeds.get("high")
    where = (
        f"mean greedy retention difference {seeds['mean']:+.3f} over {seeds['n']} seeds, 95% "
        f"t-interval {low:+.3f} to {high:+.3f}"
        if low is not None and high is not None
        else "no seed interval"
    )
    weak = [r for r in heads if r["kind"] == "not competent"]
    need_interval = seeds_wanted >= 2 and (low is None or high is None)
    if passed:
        names = ", ".join(f"{r['attention']} vs {r['ablation']} ({r['role']})" for r in passed)
        kind = "rule invalid"
        words = f"The rule is invalid, so no conclusion is drawn: control {names} passed it."
    elif weak:
        kind = "not competent"
        words = f"No claim: a headline model is not competent ({weak[0]['why']})."
    elif len(heads) < seeds_wanted or need_interval:
        missing = "" if len(heads) < seeds_wanted else ", and no seed interval"
        kind = "incomplete"
        words = f"No claim yet: {len(heads)} of {seeds_wanted} headline seeds rated{missing}."
    elif all(r["kind"] == "reproduces" for r in heads) and (low is None or low > 0):
        kind = "reproduces"
        words = (
            f"Reproduced: in all {len(heads)} seeds attention kept more of its BLEU on long "
            f"inputs than its fixed-vector ablation ({where}), and no control passed the rule."
        )
    elif all(r["kind"] == "opposite" for r in heads) and (high is None or high < 0):
        kind = "opposite"
        words = (
            f"The opposite holds: in all {len(heads)} seeds the fixed-vector ablation kept "
            f"more of its BLEU on long inputs than attention ({where})."
        )
    else:
        shown = sum(r["kind"] == "reproduces" for r in heads)
        kind = "no difference shown"
        words = (
            f"No claim: no difference shown, {shown} of {len(heads)} headline seeds pass the "
            f"rule ({where})."
        )
    return {"kind": kind, "words": words}

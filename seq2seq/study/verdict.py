"""The study's one verdict rule, as data: when a pair of models reproduces Bahdanau et al. (2015,
Figure 2) -- attention keeps more of its BLEU on long inputs than its fixed-vector ablation --
and what the study as a whole concludes. Every threshold is defined once, here.

The rule for a pair (``rate_pair``), the same for every role:

(a) both models are competent (``competence``): k = 1 greedy length ratio within
    [``RATIO_LOW``, ``RATIO_HIGH``] and validation BLEU on a plateau over the single-pair
    stage's last quarter (gained less than ``PLATEAU_GAIN`` points);
(b) the paired bootstrap 95% interval of the greedy retention difference (attention minus
    ablation, ``cells.retention_difference_ci``) lies above 0;
(c) the retention difference on BLEU without the brevity penalty
    (``cells.retention_nobp_difference``) is not below 0, so shorter outputs alone cannot make it.

Length flags (``length_flags``) are reported and never refuse a cell. The study's verdict
(``overall``) needs every headline seed to reproduce, the t-interval over seeds above 0, and no
control passing the rule: a negative or null control that passes makes the rule invalid.

Inputs are plain dicts, the entries of results.json: a model has ``name``,
``decodes["greedy"]["by_k"]`` (cells of ``cells.cell_scores``) and
``stages["single"]["valid_curve"]`` ([[step, validation BLEU], ...]).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

RATIO_LOW = 0.9
"""Shortest competent k = 1 greedy hypothesis over reference length (sacreBLEU tokens)."""
RATIO_HIGH = 1.1
"""Longest competent k = 1 greedy length ratio."""
CUT_MAX = 5.0
"""Percentage of lines cut at the maximum length above which a cell is flagged "cut"."""
PLATEAU_GAIN = 1.0
"""Validation BLEU points the single-pair stage may still gain over its last quarter."""
PLATEAU_FROM = 0.75
"""Where the last quarter starts, as a share of the single-pair stage's last validated step."""

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
T_975_DF2 = T_975[2]

ROLES = ("headline", "negative", "null", "family")
CONTROLS = ("negative", "null")
KINDS = (
    "reproduces",
    "rule invalid",
    "not competent",
    "incomplete",
    "opposite",
    "no difference shown",
)

__all__ = [
    "CUT_MAX",
    "PLATEAU_FROM",
    "PLATEAU_GAIN",
    "RATIO_HIGH",
    "RATIO_LOW",
    "T_975",
    "T_975_DF2",
    "competence",
    "length_flags",
    "overall",
    "rate_pair",
    "seed_interval",
]


def _cells(model: dict) -> list[dict]:
    return sorted(model.get("decodes", {}).get("greedy", {}).get("by_k", []), key=lambda c: c["k"])


def _name(model: dict, fallback: str) -> str:
    return model.get("name", fallback)


def competence(model: dict) -> dict:
    """Whether a model is trained well enough to be rated (rule (a)).

    Competent iff its k = 1 greedy length ratio is within [``RATIO_LOW``, ``RATIO_HIGH``] and
    its single-pair stage plateaued: the validation BLEU at the last point minus that at the
    last point at or before ``PLATEAU_FROM`` of the last point's step is below
    ``PLATEAU_GAIN``. No such earlier point: not competent ("too few validations").

    Returns:
        ``{"competent", "k1_ratio", "plateau_gain", "reasons"}``: the ratio (None without a
        greedy k = 1 cell), the gain in BLEU points (None without two usable points), and one
        line per reason it is not competent (empty when it is).
    """
    reasons = []
    k1 = next((c for c in _cells(model) if c["k"] == 1), None)
    ratio = None if k1 is None else k1.get("ratio")
    if ratio is None:
        reasons.append("no greedy k = 1 cell with a length ratio")
    elif not RATIO_LOW <= ratio <= RATIO_HIGH:
        reasons.append(
            f"k = 1 greedy length ratio {ratio:.3f} outside [{RATIO_LOW:g}, {RATIO_HIGH:g}]"
        )
    curve = sorted(model.get("stages", {}).get("single", {}).get("valid_curve") or [])
    gain = None
    if not curve:
        reasons.append("too few validations: the single-pair stage has no validation BLEU")
    else:
        last_step, last_bleu = curve[-1]
        cutoff = PLATEAU_FROM * last_step
        earlier = [p for p in curve[:-1] if p[0] <= cutoff]
        if not earlier:
            reasons.append(
                f"too few validations: none at or before step {cutoff:g} "
                f"({PLATEAU_FROM:.0%} of {last_step:g})"
            )
        else:
            step, bleu = earlier[-1]
            gain = float(last_bleu - bleu)
            if not gain < PLATEAU_GAIN:
                reasons.append(
                    f"validation BLEU still rising: {gain:+.2f} from step {step:g} to "
                    f"{last_step:g} (a plateau gains under {PLATEAU_GAIN:g})"
                )
    return {"competent": not reasons, "k1_ratio": ratio, "plateau_gain": gain, "reasons": reasons}


def length_flags(cell: dict) -> list[str]:
    """A cell's length flags, reported and never refusing it: "short" (length ratio below
    ``RATIO_LOW``), "long" (above ``RATIO_HIGH``), "cut" (over ``CUT_MAX`` percent of lines cut
    at the maximum length)."""
    flags = []
    ratio, cut = cell.get("ratio"), cell.get("cut")
    if ratio is not None and ratio < RATIO_LOW:
        flags.append("short")
    if ratio is not None and ratio > RATIO_HIGH:
        flags.append("long")
    if cut is not None and cut > CUT_MAX:
        flags.append("cut")
    return flags


def _model_flags(model: dict) -> dict[str, list[str]]:
    """Greedy flags at k = 1 and at the largest k, keyed "k1" and "k<K>"."""
    cells = _cells(model)
    picked = {c["k"]: c for c in (cells[:1] + cells[-1:])}
    return {f"k{k}": length_flags(c) for k, c in picked.items()}


def _num(x) -> float:
    return math.nan if x is None else float(x)


def rate_pair(attention: dict, ablation: dict, pair_stats: dict, role: str) -> dict:
    """One pair under the rule (module docstring: (a) both competent, (b) greedy retention
    difference interval above 0, (c) no-BP retention difference at least 0).

    Args:
        attention, ablation: the two models' results entries (A and B).
        pair_stats: ``{"retention": {"difference", "low", "high", "a", "b"}`` (greedy, paired
            bootstrap, fractions) ``, "retention_nobp": {"a", "b", "difference"}}``.
        role: "headline", "negative", "null" or "family".

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
    comp = {"attention": competence(attention), "ablation": competence(ablation)}
    ret, nobp = pair_stats["retention"], pair_stats["retention_nobp"]
    low, high, diff = _num(ret["low"]), _num(ret["high"]), _num(ret["difference"])
    nobp_diff = _num(nobp["difference"])
    interval = f"greedy retention difference {diff:+.3f} (95% CI {low:+.3f} to {high:+.3f})"
    failed = [
        f"{side} model {names[side]} not competent: {'; '.join(comp[side]['reasons'])}"
        for side in ("attention", "ablation")
        if not comp[side]["competent"]
    ]
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


def seed_interval(differences: Sequence[float | None]) -> dict:
    """Mean over seeds of a difference and its 95% t-interval (df = n - 1, ``T_975``).

    Returns:
        ``{"n", "mean", "low", "high", "sd"}``: sd the sample standard deviation (n - 1
        denominator); low, high and sd None for n < 2; every statistic None when a difference is
        None or NaN (a retention over a k = 1 BLEU of 0).

    Raises:
        ValueError: more than 11 differences (the t table stops at df = 10).
    """
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
    if passed:
        names = ", ".join(f"{r['attention']} vs {r['ablation']} ({r['role']})" for r in passed)
        return {
            "kind": "rule invalid",
            "words": f"The rule is invalid, so no conclusion is drawn: control {names} passed it.",
        }
    weak = [r for r in heads if r["kind"] == "not competent"]
    if weak:
        return {
            "kind": "not competent",
            "words": f"No claim: a headline model is not competent ({weak[0]['why']}).",
        }
    need_interval = seeds_wanted >= 2 and (low is None or high is None)
    if len(heads) < seeds_wanted or need_interval:
        missing = "" if len(heads) < seeds_wanted else ", and no seed interval"
        return {
            "kind": "incomplete",
            "words": f"No claim yet: {len(heads)} of {seeds_wanted} headline seeds rated{missing}.",
        }
    if all(r["kind"] == "reproduces" for r in heads) and (low is None or low > 0):
        return {
            "kind": "reproduces",
            "words": (
                f"Reproduced: in all {len(heads)} seeds attention kept more of its BLEU on long "
                f"inputs than its fixed-vector ablation ({where}), and no control passed the rule."
            ),
        }
    if all(r["kind"] == "opposite" for r in heads) and (high is None or high < 0):
        return {
            "kind": "opposite",
            "words": (
                f"The opposite holds: in all {len(heads)} seeds the fixed-vector ablation kept "
                f"more of its BLEU on long inputs than attention ({where})."
            ),
        }
    shown = sum(r["kind"] == "reproduces" for r in heads)
    return {
        "kind": "no difference shown",
        "words": (
            f"No claim: no difference shown, {shown} of {len(heads)} headline seeds pass the "
            f"rule ({where})."
        ),
    }

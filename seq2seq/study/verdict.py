"""The study's verdict rule, as data: when does attention keep more of what the source tells it
on long inputs than its own fixed-vector ablation (Bahdanau et al. 2015, Figure 2)? Every
threshold is defined once, here; the report states the rule from these constants
(``report.sections.rule_section``).

Rule v2 (it replaced ``verdict_v1``, whose statistic could not tell attention from a decoder that
runs away and whose controls were sign tests): a model must pass the competence gate
(``competence``); a headline seed (``rate_seed``) is read on rho at k = ``K_RULE`` (``study.rho``)
and greedy retention on length-capped hypotheses (``cells.length_caps``); a control
(``rate_control``) is an equivalence test of the rho difference against ``MARGIN``; the study
(``overall``) is judged on the ``CONFIRMATION`` cells. ``DELTA`` and ``MARGIN`` are chosen once,
by ``choose_margins``, from the ``EXPLORATORY`` seeds, then written here and committed before any
confirmation run is trained or scored.

Inputs are plain dicts, the entries of results.json: a model has ``name``,
``decodes["greedy"]["by_k"]`` (cells of ``cells.cell_scores``) and
``stages["single"]["valid_curve"]`` ([[step, validation BLEU], ...]).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from seq2seq.study.stats import seed_interval

RATIO_LOW = 0.9  # shortest competent k = 1 greedy hypothesis over reference length (tokens)
RATIO_HIGH = 1.1  # longest competent k = 1 greedy length ratio
CUT_MAX = 5.0  # percentage of lines cut at the maximum length above which a cell is "cut"
PLATEAU_GAIN = 1.0  # validation BLEU the single-pair stage may still gain over its last quarter
PLATEAU_FROM = 0.75  # where that quarter starts, a share of the stage's last validated step

ROLES = ("headline", "negative", "null", "family")
CONTROLS = ("negative", "null")

RULE = "v2"
K_RULE = 4  # the k of the joined lines every rule-v2 statistic is read at
EQUIVALENCE_LEVEL = 0.90  # a control's interval: two one-sided tests at 5% each
EXPLORATORY = {"test_2016_flickr": (1, 2, 3)}
"""Test set -> the seeds whose scores chose ``DELTA`` and ``MARGIN`` (reported, never judged)."""
CONFIRMATION = {"test_2016_flickr": (4, 5, 6), "test_2017_flickr": (1, 2, 3, 4, 5, 6)}
"""Test set -> the seeds the frozen rule judges: seeds and a test set the study never scored."""
NEGATIVE_SEEDS = (1, 4, 5, 6)  # the seeds the negative control (plain rnn) is trained at

DELTA: float | None = 0.04
"""The smallest rho difference that counts as attention keeping more (fraction); None until
``choose_margins`` has run on the exploratory seeds."""
MARGIN: float | None = 0.02  # the controls' equivalence margin (fraction); <= DELTA / 2
FROZEN_COMMIT: str | None = "9ae2e13"  # the commit that set DELTA and MARGIN
MARGINS_WHY = (
    "chosen once by choose_margins (committed at 01c21df, before the data) from seeds 1-3 on "
    "test_2016_flickr, rescored at 01c21df: the widest bound of the 3 exploratory null pairs'"
    " 90% intervals was 0.0090; MARGIN = max(0.02, 2 x that) rounded up to 0.01 = 0.02, DELTA"
    " = 2 x MARGIN = 0.04"
)
"""How DELTA and MARGIN were chosen, in words (the report quotes it)."""

MARGIN_HEADROOM = 2.0  # choose_margins: MARGIN is this many times the widest null bound
MARGIN_FLOOR = 0.02  # choose_margins: the smallest MARGIN, whatever the seeds' agreement


def _cells(model: dict) -> list[dict]:
    return sorted(model.get("decodes", {}).get("greedy", {}).get("by_k", []), key=lambda c: c["k"])


def _name(model: dict, fallback: str) -> str:
    return model.get("name", fallback)


def competence(model: dict) -> dict:
    """Whether a model is trained well enough to be rated (rule (a)): its k = 1 greedy length
    ratio within [``RATIO_LOW``, ``RATIO_HIGH``], and the validation BLEU at the last point minus
    that at the last point at or before ``PLATEAU_FROM`` of its step below ``PLATEAU_GAIN``.

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


def competence_pair(attention: dict, ablation: dict) -> tuple[dict, list[str]]:
    """Both models' ``competence`` by side, and one line per model that is not competent."""
    sides = {"attention": attention, "ablation": ablation}
    comp = {side: competence(m) for side, m in sides.items()}
    weak = [
        f"{side} model {_name(m, side)} not competent: {'; '.join(comp[side]['reasons'])}"
        for side, m in sides.items()
        if not comp[side]["competent"]
    ]
    return comp, weak


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


# ---- rule v2 ---------------------------------------------------------------------------------


def choose_margins(null_intervals: Sequence[tuple[float, float]]) -> dict:
    """``MARGIN`` and ``DELTA`` from the exploratory null controls, by a rule written before
    their data was seen: MARGIN is ``MARGIN_HEADROOM`` times the widest bound of the ablation's
    seed pairs' 90% rho-difference intervals (how far two seeds of one model stray, with room
    for the confirmation's many more pairs), at least ``MARGIN_FLOOR``, rounded up to 0.01; DELTA
    is twice MARGIN, so an effect that counts can never sit inside the band a control must hold.

    ``null_intervals``: (low, high) of each exploratory null pair's 90% interval (fractions).
    Returns ``{"margin", "delta", "why"}``; ValueError: no interval, or a bound not finite.
    """
    bounds = [abs(float(x)) for pair in null_intervals for x in pair]
    if not bounds or not all(math.isfinite(b) for b in bounds):
        raise ValueError("choose_margins: give the exploratory null pairs' finite intervals")
    widest = max(bounds)
    margin = math.ceil(round(max(MARGIN_FLOOR, MARGIN_HEADROOM * widest) * 100, 9)) / 100
    why = (
        f"the widest bound of the {len(null_intervals)} exploratory null pairs' 90% intervals "
        f"was {widest:.4f}; MARGIN = max({MARGIN_FLOOR:g}, {MARGIN_HEADROOM:g} x that) rounded "
        f"up to 0.01 = {margin:.2f}, DELTA = 2 x MARGIN = {2 * margin:.2f}"
    )
    return {"margin": margin, "delta": round(2 * margin, 2), "why": why}


def rate_seed(attention: dict, ablation: dict, stats: dict, delta: float | None = None) -> dict:
    """One headline cell (a seed on a test set) under rule v2 (``delta`` default ``DELTA``),
    from the two models' results entries and ``stats``: ``{"rho": {"difference", "low", "high",
    ...}, "capped": {...}}``, the paired bootstrap 95% intervals of the rho and the capped
    retention differences (fractions).

    Returns:
        ``{"kind", "why", "competent"}``: kind "passes", "fails", "no claim" (the two statistics
        disagree), "not competent" or "not frozen" (no ``DELTA`` yet).
    """
    delta = DELTA if delta is None else delta
    comp, weak = competence_pair(attention, ablation)
    rho, capped = stats["rho"], stats["capped"]
    rho_text = (
        f"rho difference {rho['difference']:+.3f} (95% CI {rho['low']:+.3f} to {rho['high']:+.3f})"
    )
    cap_text = (
        f"capped retention difference {capped['difference']:+.3f} (95% CI "
        f"{capped['low']:+.3f} to {capped['high']:+.3f})"
    )
    primary = delta is not None and _above(rho["low"], delta)
    secondary = _above(capped["low"], 0.0)
    if weak:
        kind, why = "not competent", "; ".join(weak)
    elif delta is None:
        kind, why = "not frozen", f"{rho_text}; {cap_text}"
    elif primary and secondary:
        kind, why = "passes", f"{rho_text}: lower bound above {delta:g}; {cap_text} above 0"
    elif not primary and not secondary:
        kind, why = "fails", f"{rho_text}: lower bound not above {delta:g}; {cap_text} not above 0"
    else:
        kind = "no claim"
        why = (
            f"the statistics disagree: {rho_text} ({'above' if primary else 'not above'} "
            f"{delta:g}); {cap_text} ({'above' if secondary else 'not above'} 0)"
        )
    return {"kind": kind, "why": why, "competent": comp}


def _above(x, bound: float) -> bool:
    return x is not None and not math.isnan(x) and x > bound


def rate_control(equivalence: dict, margin: float | None = None) -> dict:
    """One control under rule v2: it holds when ``equivalence``, the 90% interval of the rho
    difference (``{"difference", "low", "high"}``), lies inside +/-``margin`` (default
    ``MARGIN``). Returns ``{"kind", "why"}``: kind "holds", "breaks" or "not frozen"."""
    margin = MARGIN if margin is None else margin
    low, high = equivalence["low"], equivalence["high"]
    text = f"rho difference {equivalence['difference']:+.3f}, 90% CI {low:+.3f} to {high:+.3f}"
    if margin is None:
        return {"kind": "not frozen", "why": text}
    inside = _above(low, -margin) and _above(margin, high)
    return {
        "kind": "holds" if inside else "breaks",
        "why": f"{text} {'inside' if inside else 'not inside'} +/-{margin:g}",
    }


def overall(heads: Sequence[dict], controls: Sequence[dict], delta: float | None = None) -> dict:
    """The study's verdict under rule v2 (``delta`` default ``DELTA``): ``heads``, one row per
    scored headline cell (``{"set", "seed", "kind", "rho": {"difference"}}``), and ``controls``,
    one row per control on the confirmation sets (``{"kind", ...}``).

    Returns:
        ``{"kind", "words", "seeds"}``: kind "reproduces", "does not reproduce", "no conclusion"
        (also: a cell missing, a control broken, a headline model not competent) or "not
        frozen"; words one sentence with its numbers; seeds the t-interval over seeds
        (``seed_interval`` of each seed's rho difference averaged over its confirmation sets).
    """
    delta = DELTA if delta is None else delta
    by_seed: dict[int, list[float]] = {}
    for r in heads:
        by_seed.setdefault(r["seed"], []).append(r["rho"]["difference"])
    seeds = seed_interval([math.fsum(v) / len(v) for _, v in sorted(by_seed.items())])
    seeds["seeds"] = sorted(by_seed)
    want = sum(len(s) for s in CONFIRMATION.values())
    where, low = _seed_words(seeds), seeds.get("low")
    broken = [c for c in controls if c["kind"] != "holds"]
    weak = [r for r in heads if r["kind"] == "not competent"]
    passed = sum(r["kind"] == "passes" for r in heads)
    kind = "no conclusion"
    if delta is None:
        kind, words = "not frozen", "No verdict: rule v2 is not frozen."
    elif len(heads) < want:
        words = f"No conclusion yet: {len(heads)} of {want} confirmation cells scored."
    elif broken:
        names = ", ".join(
            f"{c['role']} {c['attention']} vs {c['ablation']} on {c['set']}" for c in broken
        )
        words = (
            f"No conclusion: {len(broken)} of {len(controls)} controls fall outside the "
            f"equivalence margin ({names}), so rule v2 is invalid here; {where}."
        )
    elif weak:
        words = (
            f"No conclusion: {len(weak)} of {len(heads)} confirmation cells have a model that "
            f"is not competent ({weak[0]['why']})."
        )
    elif passed == len(heads) and _above(low, delta):
        kind = "reproduces"
        words = (
            f"Reproduced: attention keeps more of what the source tells it on joined captions "
            f"than its fixed-vector ablation in all {len(heads)} confirmation cells ({where}, "
            f"above {delta:g}), and all {len(controls)} controls hold."
        )
    elif low is not None and low < delta:
        kind = "does not reproduce"
        words = (
            f"Not reproduced: {where}, whose lower bound is below {delta:g}, with all "
            f"{len(controls)} controls holding ({passed} of {len(heads)} cells pass)."
        )
    else:
        words = f"No conclusion: {passed} of {len(heads)} confirmation cells pass ({where})."
    return {"kind": kind, "words": words, "seeds": seeds}


def _seed_words(s: dict) -> str:
    if s.get("mean") is None:
        return "no rho difference over seeds"
    if s.get("low") is None:
        return f"rho difference {s['mean']:+.3f} over {s['n']} seed"
    return (
        f"rho difference {s['mean']:+.3f} over {s['n']} seeds, 95% t-interval "
        f"{s['low']:+.3f} to {s['high']:+.3f}"
    )

"""Reading the Multi30k study's results dict (``multi30k_report``): runs by role, a decoding's
cell at k, a cell's refusal, and the verdict's wording rule for an attention run against the
reference run.

A cell is refused when compare recorded a reason, or when ``stats.claim_refusal`` gives one for its
lines and length ratio. The verdict rests on one decoding: greedy (the headline), or, where one of
the k = 1 and k = K greedy cells of either run is refused, the beam whose length penalty was
chosen on validation, provided none of its k = 1 and k = K cells is refused. It is "Reproduces
Figure 2" only when that decoding's interval of the retention difference lies above 0; "the
opposite of Figure 2" only when it lies below 0; no difference is shown when it includes 0. When
both decodings have a refused cell, an interval that excludes 0 makes no claim.
"""

from __future__ import annotations

import inspect

from seq2seq.study.report import WEAK_FRACTION, _num
from seq2seq.study.stats import claim_refusal

_DEFAULTS = inspect.signature(claim_refusal).parameters
MIN_N, MIN_RATIO = _DEFAULTS["min_n"].default, _DEFAULTS["min_ratio"].default


SHORT = {  # a verdict kind, in a table cell
    "reproduces": "reproduces",
    "opposite": "opposite",
    "none": "no difference",
    "refused": "no claim (refused cell)",
    "missing": "not recorded",
}


def ks(results: dict) -> list[int]:
    """The k of the eval set, ascending."""
    return sorted(int(k) for k in results["eval_set"]["sentences_per_k"])


def runs(results: dict, role: str) -> list[dict]:
    return [m for m in results["models"] if m["role"] == role]


def by_name(results: dict, name: str) -> dict | None:
    return next((m for m in results["models"] if m["name"] == name), None)


def cell(m: dict, label: str, k: int) -> dict:
    return next(c for c in m["decodes"][label]["by_k"] if c["k"] == k)


def refusal(c: dict) -> str | None:
    """Why the cell cannot carry a claim: the reason compare recorded, or (when it recorded none)
    the one ``claim_refusal`` gives for its lines and length ratio."""
    return c.get("refusal") or claim_refusal(c["sentences"], c["ratio"])


def ci_text(c: dict) -> str:
    """``31.2 [29.9, 32.5]``: BLEU and its 95% bootstrap interval."""
    if c.get("low") is None or c.get("high") is None:
        return _num(c["bleu"])
    return f"{c['bleu']:.1f} [{c['low']:.1f}, {c['high']:.1f}]"


def pct(x: float | None, digits: int = 0) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def best_k1(results: dict) -> float:
    """The best main model's k = 1 greedy BLEU."""
    k1 = ks(results)[0]
    return max((cell(m, "greedy", k1)["bleu"] or 0.0 for m in runs(results, "main")), default=0.0)


def unrated_reason(results: dict, m: dict) -> str:
    x = cell(m, "greedy", ks(results)[0])["bleu"]
    return (
        f"not rated: its k = 1 BLEU {_num(x)} is below {100 * WEAK_FRACTION:.0f}% of the best "
        f"({best_k1(results):.1f})"
    )


def name_cell(m: dict) -> str:
    return m["name"] if m["learned"] else f"{m['name']} (not rated)"


DECODINGS = ("greedy", "beam")  # the order the verdict tries them in


def blockers(results: dict, a: dict, b: dict, label: str = "greedy") -> list[str]:
    """The refused k = 1 and k = K cells of decoding ``label`` of runs ``a`` and ``b``."""
    ends = (ks(results)[0], ks(results)[-1])
    return [
        f"{m['name']} k = {k} ({why})"
        for m in (a, b)
        for k in ends
        if (why := refusal(cell(m, label, k)))
    ]


def deciding(results: dict, m: dict, ref: dict) -> str | None:
    """The decoding the verdict of run ``m`` against ``ref`` rests on: greedy, else the tuned
    beam, the first whose interval was recorded and whose k = 1 and k = K cells of both runs
    are not refused; None when there is none."""
    vs = m.get("vs_reference") or {}
    for label in DECODINGS:
        v = vs.get(label)
        if v and v.get("low") is not None and not blockers(results, m, ref, label):
            return label
    return None


def verdict(results: dict, m: dict, ref: dict) -> tuple[str, str]:
    """(kind, words) for attention run ``m`` against reference run ``ref``, from the interval of
    the decoding ``deciding`` names: kind is reproduces, opposite, none, refused or missing."""
    vs = m.get("vs_reference") or {}
    v = vs.get("greedy")
    if not v:
        return "missing", "no paired comparison with the reference was recorded"
    if v.get("low") is None:  # a k = 1 BLEU of 0 leaves no retention to compare
        return "missing", "no retention to compare (a k = 1 BLEU of 0)"
    label = deciding(results, m, ref)
    if label is None:
        why = "; ".join(
            f"{lab}: " + "; ".join(blockers(results, m, ref, lab))
            for lab in DECODINGS
            if vs.get(lab)
        )
        if v["low"] > 0 or v["high"] < 0:
            return (
                "refused",
                "no claim: the greedy interval excludes 0, but a cell it rests on is refused, "
                f"and so is one of the tuned beam's ({why})",
            )
        return "none", "no difference shown (the greedy interval includes 0)"
    v = vs[label]
    via = (
        ""
        if label == "greedy"
        else " with the tuned beam (a greedy cell is refused: "
        + "; ".join(blockers(results, m, ref))
        + ")"
    )
    if v["low"] > 0:
        return "reproduces", "Reproduces Figure 2" + via
    if v["high"] < 0:
        return (
            "opposite",
            f"the opposite of Figure 2{via}: {m['name']} keeps less than {ref['name']}",
        )
    return "none", f"no difference shown{via} (the interval includes 0)"


def diff_text(v: dict | None) -> str:
    """``+43.0 [+30.0, +55.0]``: a retention difference in percentage points with its interval."""
    if not v or v.get("low") is None:
        return "-"
    return f"{100 * v['difference']:+.1f} [{100 * v['low']:+.1f}, {100 * v['high']:+.1f}]"


def side(v: dict | None) -> str:
    if not v or v.get("low") is None:
        return "not recorded"
    if v["low"] > 0:
        return "the interval lies above 0"
    return "the interval lies below 0" if v["high"] < 0 else "the interval includes 0"

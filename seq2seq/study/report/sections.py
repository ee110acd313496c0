"""The Multi30k report's sections after the verdict (``report.multi30k``): per-cell diagnostics
of greedy decoding, the tuned beam by k, the per-caption NLL and NLL by k, the zero-shot control and
the synthetic reversal. None of them decides the verdict; every one is generated from results.json.
"""

from __future__ import annotations

from seq2seq.study import verdict
from seq2seq.study.report.common import cell_at, ci_text, interval, ks, missing, num, table
from seq2seq.study.report.reverse import plateau_finding
from seq2seq.study.report.reverse import reverse_section as reverse_body


def by_k(m: dict, label: str = "greedy") -> list[dict]:
    """A model entry's cells of decoding ``label`` ("greedy", "beam"), or of the single-pair
    checkpoint's greedy decoding for ``label`` "zero_shot"; [] when it has none."""
    if label == "zero_shot":
        return ((m.get("zero_shot") or {}).get("greedy") or {}).get("by_k") or []
    return ((m.get("decodes") or {}).get(label) or {}).get("by_k") or []


def _k_heads(results: dict) -> list[str]:
    n = results["eval_set"]["sentences_per_k"]
    return [f"k={k} (n={n[str(k)]:,})" for k in ks(results)]


def diagnostics_section(results: dict) -> list[str]:
    """Per model and k, greedy: BLEU with its interval, BLEU without the brevity penalty, the
    length ratio, cut and early shares and ``verdict.length_flags``."""
    rows = []
    for m in results["models"]:
        for c in sorted(by_k(m), key=lambda c: c["k"]):
            flags = ", ".join(verdict.length_flags(c)) or "-"
            rows.append(
                [m["name"], str(c["k"]), f"{c['sentences']:,}", ci_text(c)]
                + [num(c.get("bleu_nobp")), num(c.get("ratio"), 3), num(c.get("cut"))]
                + [num(c.get("early")), flags]
            )
    head = ["model", "k", "lines", "BLEU [95%]", "BLEU without BP", "hyp/ref ratio", "cut %"]
    return [
        "## Per-cell diagnostics (greedy)",
        "",
        "Per model and k: BLEU with its 95% bootstrap interval, BLEU without its brevity penalty, "
        "hypothesis over reference length (sacreBLEU tokens), the share of lines cut at the "
        "maximum length and of outputs under half their reference's words (ended early), and the "
        f"length flags: short (ratio below {verdict.RATIO_LOW:g}), long (above "
        f"{verdict.RATIO_HIGH:g}), cut (over {verdict.CUT_MAX:g}% of lines cut). A flag is "
        "reported; it never takes a cell out of the verdict.",
        "",
        *table(head + ["early %", "flags"], rows),
        "",
    ]


def beam_section(results: dict) -> list[str]:
    """The tuned beam's BLEU by k with its alpha, per model (not part of the verdict)."""
    beam = results.get("beam") or {}
    alphas = ", ".join(f"{a:g}" for a in beam.get("alphas") or [])
    rows = []
    for m in results["models"]:
        alpha = ((m.get("decodes") or {}).get("beam") or {}).get("alpha")
        cells = by_k(m, "beam")
        rows.append(
            [m["name"], "-" if missing(alpha) else f"{alpha:g}"]
            + [ci_text(cell_at(cells, k)) for k in ks(results)]
        )
    return [
        f"## Tuned beam by k (beam {beam.get('size', '-')})",
        "",
        f"The length penalty alpha is chosen per model on the joined validation lines (from "
        f"{alphas or '-'}); BLEU [95% bootstrap interval] by k. Beam search is reported beside "
        "greedy decoding and is not part of the verdict.",
        "",
        *table(["model", "alpha"] + _k_heads(results), rows),
        "",
    ]


def _gap_text(g: dict) -> str:
    return interval(g.get("gap"), g.get("low"), g.get("high"), lambda x: f"{x:+.3f}")


def nll_sections(results: dict) -> list[str]:
    """The per-caption NLL gap by k (with intervals) and the NLL by k table."""
    joined = [k for k in ks(results) if k > 1]
    gaps, units = [], {}
    for m in results["models"]:
        cg = m.get("caption_gap") or {}
        for k in joined:
            if (cg.get(str(k)) or {}).get("units") is not None:
                units.setdefault(k, cg[str(k)]["units"])
        gaps.append([m["name"]] + [_gap_text(cg.get(str(k)) or {}) for k in joined])
    gap_heads = [
        f"gap k={k} [95%]" + (f" ({units[k]:,} units)" if k in units else "") for k in joined
    ]
    k1, kk = ks(results)[0], ks(results)[-1]
    nll = []
    for m in results["models"]:
        by = {r["k"]: r["nll"] for r in m.get("nll_by_k") or []}
        rise = None if k1 not in by or kk not in by else by[kk] - by[k1]
        nll.append(
            [m["name"]]
            + [num(by.get(k), 3) for k in ks(results)]
            + ["-" if rise is None else f"{rise:+.3f}"]
        )
    return [
        "## Per-caption NLL in context",
        "",
        "Teacher-forced, with no search: each caption's NLL per target token inside a line that "
        "joins k captions minus its NLL alone, in nats, with the 95% bootstrap interval over "
        "the joined lines (units). Above 0 the model predicts a caption worse when other "
        "captions share its input.",
        "",
        *table(["model"] + gap_heads, gaps),
        "",
        "## NLL by k",
        "",
        "NLL per target token (nats) of the reference translations of the lines joined from k "
        f"captions, and its rise from k = {k1} to k = {kk}.",
        "",
        *table(["model"] + [f"k={k}" for k in ks(results)] + [f"rise k={kk} - k={k1}"], nll),
        "",
    ]


def zero_shot_section(results: dict) -> list[str]:
    """The single-pair checkpoint's greedy BLEU by k: the length-generalisation control."""
    kk = ks(results)[-1]
    rows = []
    for m in results["models"]:
        cells = by_k(m, "zero_shot")
        last = cell_at(cells, kk) or {}
        rows.append(
            [m["name"]]
            + [ci_text(cell_at(cells, k)) for k in ks(results)]
            + [num(last.get("ratio"), 2), num(last.get("early"))]
        )
    return [
        "## Zero-shot control: the single-pair checkpoint on joined lines",
        "",
        "Each model's single-pair checkpoint, before it saw any joined line, decoded greedily on "
        "the same test lines: a length-generalisation control, reported apart from the verdict. "
        "A model never trained on long inputs tends to end early, which is a failure to "
        "generalise in length, not the fixed-vector bottleneck.",
        "",
        *table(
            ["model"] + _k_heads(results) + [f"ratio k={kk}", f"early % k={kk}"],
            rows,
        ),
        "",
    ]


def reverse_section(results: dict) -> list[str]:
    """The synthetic reversal (``make study-quick``), rendered by ``report.reverse`` one heading
    level down, or not run."""
    lines = ["## Synthetic reversal", ""]
    rev = results.get("reverse")
    if not rev:
        return lines + ["Not run (make study-quick).", ""]
    rev = {**rev, "findings": {**(rev.get("findings") or {})}}
    rev["findings"].setdefault("plateau", plateau_finding(rev))
    body = reverse_body(rev)
    return lines + ["#" + x if x.startswith("## ") else x for x in body] + [""]

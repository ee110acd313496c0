"""The Multi30k report's sections (``report.multi30k`` orders them): rule v2 as ``study.verdict``
states it, the confirmation cells and controls, rho and capped retention per model and set, the
exploratory seeds that chose the margins; then per-cell diagnostics of greedy decoding, the tuned
beam by k, the per-caption NLL and NLL by k, the zero-shot control and the synthetic reversal.
Read from results.json (``results["verdict"]`` is ``pairs.rate_sets``'); nothing is re-derived.
"""

from __future__ import annotations

from seq2seq.study import verdict
from seq2seq.study.report.common import (
    cell_at,
    ci_text,
    interval,
    ks,
    missing,
    num,
    pct,
    pct_pair,
    points,
    table,
)
from seq2seq.study.report.synthetic import plateau_finding
from seq2seq.study.report.synthetic import reverse_section as reverse_body


def _v(results: dict) -> dict:
    return results.get("verdict") or {}


def verdict_words(results: dict) -> dict:
    """``{"kind", "words"}`` of rule v2 on the confirmation cells."""
    return ((_v(results).get("confirmation") or {}).get("overall")) or {
        "kind": "no conclusion",
        "words": "No conclusion: results.json holds no rule-v2 verdict.",
    }


def _frozen(v: dict) -> str:
    if v.get("delta") is None:
        return "not frozen yet: DELTA and MARGIN are chosen from the exploratory seeds first"
    return f"frozen in commit {v['frozen']}" if v.get("frozen") else "frozen"


def _sets(spec: dict) -> str:
    return "; ".join(
        f"{name}: seeds {', '.join(str(s) for s in seeds)}" for name, seeds in spec.items()
    )


def rule_section(results: dict) -> list[str]:
    """Rule v2 in words, from ``verdict``'s constants, with its margins and where they came
    from."""
    v = _v(results)
    k = v.get("k", verdict.K_RULE)
    delta = "DELTA (not chosen yet)" if v.get("delta") is None else f"DELTA = {v['delta']:g}"
    margin = "+/-MARGIN (not chosen yet)" if v.get("margin") is None else f"+/-{v['margin']:g}"
    text = (
        f"**Rule v2** ({_frozen(v)}; `seq2seq/study/verdict.py`). Primary statistic: rho at k = "
        f"{k}, the share of what a caption's own source tells the model that survives joining "
        "captions into one input, from teacher-forced NLL alone (N_alone), inside the join "
        "(N_ctx) and alone with a wrong source (N_free: caption i gets caption (i + N/2) mod N's "
        "source): rho = sum(N_free - N_ctx) / sum(N_free - N_alone) over the captions of the "
        f"k-joined lines. No search, so no runaway output, and each model's k = 1 level divides "
        f"out. Secondary: greedy retention (BLEU at k = {k} over k = 1) with each hypothesis cut "
        f"before scoring at ceil(1.1 x source words x r), r = {num(results.get('length_ratio'), 3)}"
        " the training split's target over source words. Competence gate as in v1. A headline "
        f"seed passes when the paired-bootstrap 95% lower bound of rho(attention) - rho(ablation) "
        f"exceeds {delta} and the capped-retention difference's own 95% lower bound is above 0; "
        "it fails when neither holds; when they disagree it makes no claim. Controls are "
        f"equivalence tests: the 90% interval of the rho difference lies inside {margin} "
        "(two one-sided tests at 5%): the plain rnn against the ablation at every seed it is "
        "trained for (negative), every pair of ablation seeds (null); one outside makes the rule "
        "invalid. The study reproduces Figure 2 when every confirmation cell passes, the 95% "
        f"t-interval over seeds (each seed's rho difference averaged over its sets) has its lower "
        "bound above DELTA and every control holds; it does not reproduce when the controls hold "
        "and that lower bound is below DELTA; otherwise no conclusion. Confirmation cells: "
        f"{_sets(verdict.CONFIRMATION)}. Exploratory (chose the margins, never judged): "
        f"{_sets(verdict.EXPLORATORY)}. Margins: {v.get('why') or verdict.MARGINS_WHY}."
    )
    return ["## Rule v2", "", text, ""]


def _ci(d: dict | None) -> str:
    if not d or missing(d.get("difference")):
        return "-"
    return f"{points(d['difference'])} [{points(d.get('low'))}, {points(d.get('high'))}]"


def _seed(s) -> str:
    return f"{s[0]} vs {s[1]}" if isinstance(s, (list, tuple)) else str(s)


def _cell_tables(cells: dict) -> list[str]:
    """The headline cells' table, then the controls' (confirmation or exploratory)."""
    heads, controls = cells.get("heads") or [], cells.get("controls") or []
    head = ["set", "seed", "rho attention / ablation", "rho difference, points [95%]"]
    head += ["capped retention attention / ablation", "capped difference, points [95%]", "kind"]
    body = [
        [r["set"], _seed(r["seed"]), pct_pair(r["rho"]), _ci(r["rho"])]
        + [pct_pair(r["capped"]), _ci(r["capped"]), r["kind"]]
        for r in heads
    ]
    lines = [*(table(head, body) if heads else ["No headline cell was scored."]), ""]
    head = ["set", "control", "seeds", "pair", "rho difference, points [90%]", "kind"]
    body = [
        [c["set"], c["role"], _seed(c["seed"]), f"{c['attention']} vs {c['ablation']}"]
        + [_ci(c["equivalence"]), c["kind"]]
        for c in controls
    ]
    return lines + [*(table(head, body) if controls else ["No control was scored."]), ""]


def confirmation_section(results: dict) -> list[str]:
    """The confirmation cells under the frozen rule, the controls, the seed interval."""
    conf = _v(results).get("confirmation") or {}
    s = verdict_words(results).get("seeds") or {}
    seeds = (
        f"Over seeds {', '.join(str(x) for x in s.get('seeds', []))}: mean rho difference "
        f"{points(s.get('mean'))} points, 95% t-interval [{points(s.get('low'))}, "
        f"{points(s.get('high'))}] (n = {s.get('n', 0)})."
        if not missing(s.get("mean"))
        else "No seed was scored on a confirmation set yet."
    )
    return [
        "## Confirmation",
        "",
        *_cell_tables(conf),
        seeds,
        "",
        f"Overall: {verdict_words(results)['words']}",
        "",
    ]


def models_section(results: dict) -> list[str]:
    """Per set and model: rho and capped retention by k, and the share the cap shortened."""
    lines = [
        "## Rho and capped retention by k",
        "",
        "Per model and test set (`pairs.model_summary`, from the per-line files in `lines/`): "
        "rho with its 95% bootstrap interval, capped greedy retention, and the percentage of "
        "lines the length cap shortened.",
        "",
    ]
    for set_name, data in (results.get("sets") or {}).items():
        summaries = data.get("models") or {}
        if not summaries:
            continue
        ks = [r["k"] for r in next(iter(summaries.values()))["by_k"]]
        joined = [k for k in ks if k > 1]
        head = ["model"] + [f"rho k={k}" for k in joined]
        head += [f"capped ret. k={k}" for k in joined] + [f"shortened k={k}" for k in ks]
        body = []
        for name, s in summaries.items():
            by = {r["k"]: r for r in s["by_k"]}
            cells = [name]
            rho = [(by[k]["rho"], by[k]["rho_low"], by[k]["rho_high"]) for k in joined]
            cells += [f"{pct(r)} [{pct(low)}, {pct(high)}]" for r, low, high in rho]
            cells += [pct(by[k]["capped_retention"]) for k in joined]
            cells += [f"{num(by[k]['shortened'])}%" for k in ks]
            body.append(cells)
        lines += [f"### {set_name}", "", *table(head, body), ""]
    return lines


def exploratory_section(results: dict, v1_lines: list[str]) -> list[str]:
    """The exploratory seeds: rule v2's rows, the margins ``choose_margins`` proposes from
    them, then rule v1 on the same seeds (``v1_lines``, rendered by the caller)."""
    x = _v(results).get("exploratory") or {}
    p = x.get("proposal")
    proposal = (
        f"`choose_margins` on these null pairs: MARGIN {p['margin']:g}, DELTA {p['delta']:g} "
        f"({p['why']})."
        if p
        else "`choose_margins` needs the exploratory null pairs (ablation seeds 1-3)."
    )
    return [
        "## Exploratory: the seeds that chose the margins",
        "",
        f"Reported, never judged: {_sets(verdict.EXPLORATORY)}. Rule v2's statistics on them:",
        "",
        *_cell_tables(x),
        proposal,
        "",
        "### Rule v1 on the same seeds",
        "",
        *v1_lines,
    ]


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
        *table(["model"] + _k_heads(results) + [f"ratio k={kk}", f"early % k={kk}"], rows),
        "",
    ]


def reverse_section(results: dict) -> list[str]:
    """The synthetic reversal (``make study-quick``), rendered by ``report.synthetic`` one heading
    level down, or not run."""
    lines = ["## Synthetic reversal", ""]
    rev = results.get("reverse")
    if not rev:
        return lines + ["Not run (make study-quick).", ""]
    rev = {**rev, "findings": {**(rev.get("findings") or {})}}
    rev["findings"].setdefault("plateau", plateau_finding(rev))
    body = reverse_body(rev)
    return lines + ["#" + x if x.startswith("## ") else x for x in body] + [""]

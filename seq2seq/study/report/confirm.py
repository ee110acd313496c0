"""report.md's rule-v2 sections: the verdict sentence, the rule as ``study.verdict`` states it,
the confirmation cells and controls, rho and capped retention per model and set, and the
exploratory seeds that chose the margins, with rule v1 beside rule v2 on them. Read from
``results["verdict"]`` (``pairs.rate_sets``) and ``results["sets"]``; nothing is re-derived."""

from __future__ import annotations

from seq2seq.study import verdict
from seq2seq.study.report.common import missing, num, pct, points, table


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


def _head_rows(heads: list[dict]) -> list[str]:
    head = ["set", "seed", "rho attention / ablation", "rho difference, points [95%]"]
    head += ["capped retention attention / ablation", "capped difference, points [95%]", "kind"]
    body = [
        [
            r["set"],
            _seed(r["seed"]),
            f"{pct(r['rho'].get('a'))} / {pct(r['rho'].get('b'))}",
            _ci(r["rho"]),
            f"{pct(r['capped'].get('a'))} / {pct(r['capped'].get('b'))}",
            _ci(r["capped"]),
            r["kind"],
        ]
        for r in heads
    ]
    return table(head, body) if heads else ["No headline cell was scored."]


def _control_rows(controls: list[dict]) -> list[str]:
    head = ["set", "control", "seeds", "pair", "rho difference, points [90%]", "kind"]
    body = [
        [
            c["set"],
            c["role"],
            _seed(c["seed"]),
            f"{c['attention']} vs {c['ablation']}",
            _ci(c["equivalence"]),
            c["kind"],
        ]
        for c in controls
    ]
    return table(head, body) if controls else ["No control was scored."]


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
        *_head_rows(conf.get("heads") or []),
        "",
        *_control_rows(conf.get("controls") or []),
        "",
        seeds,
        "",
        f"Overall: {verdict_words(results)['words']}",
        "",
    ]


def models_section(results: dict) -> list[str]:
    """Per set and model: rho and capped retention by k, and the share the cap shortened."""
    lines = ["## Rho and capped retention by k", ""]
    lines += [
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
        head = ["model"] + [f"rho k={k}" for k in ks if k > 1]
        head += [f"capped ret. k={k}" for k in ks if k > 1] + [f"shortened k={k}" for k in ks]
        body = []
        for name, s in summaries.items():
            by = {r["k"]: r for r in s["by_k"]}
            cells = [name]
            cells += [
                f"{pct(by[k]['rho'])} [{pct(by[k]['rho_low'])}, {pct(by[k]['rho_high'])}]"
                for k in ks
                if k > 1
            ]
            cells += [pct(by[k]["capped_retention"]) for k in ks if k > 1]
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
        *_head_rows(x.get("heads") or []),
        "",
        *_control_rows(x.get("controls") or []),
        "",
        proposal,
        "",
        "### Rule v1 on the same seeds",
        "",
        *v1_lines,
    ]

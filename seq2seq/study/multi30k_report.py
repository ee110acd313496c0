"""report.md of the Multi30k study (``results["study"] == "multi30k"``): does a fixed-vector
encoder-decoder lose more BLEU on long inputs than attention models (Bahdanau et al. 2015,
Figure 2)? Every sentence is generated from the numbers in results.json.

Long inputs are test captions joined k = 1..K at a time, each k over the same sentences. A model's
retention is BLEU(k = K) / BLEU(k = 1); the verdict compares an attention model's retention with
the reference's (the bottleneck baseline) by its 95% paired-bootstrap interval, and is withheld
when a cell it rests on is refused (``stats.claim_refusal``: too few lines or too short outputs).
A cell's ``cut`` and ``early`` are read as percentages of its lines (0-100).

Reading the results and the verdict's wording rule are ``multi30k_cells``; the sections after
the verdict (seeds, NLL, the zero-shot control, the synthetic reversal, by length) are
``multi30k_sections``; the figure is ``plot_by_k``.
"""

from __future__ import annotations

from pathlib import Path

from seq2seq.study import multi30k_sections as more
from seq2seq.study.multi30k_cells import (
    MIN_N,
    MIN_RATIO,
    SHORT,
    best_k1,
    by_name,
    cell,
    ci_text,
    deciding,
    diff_text,
    ks,
    name_cell,
    pct,
    refusal,
    runs,
    side,
    unrated_reason,
    verdict,
)
from seq2seq.study.report import WEAK_FRACTION, _num, _row


def setup(results: dict) -> list[str]:
    ev, n = results["eval_set"], results["eval_set"]["sentences_per_k"]
    per_k = "; ".join(f"k = {k}: {n[str(k)]:,} lines" for k in ks(results))
    k1 = ks(results)[0]
    tk = results.get("tokenizer") or {}
    if results.get("budget_tokens"):
        budget = f"{results['budget_tokens']:,} target tokens, the same for every model"
    else:
        budget = f"{results['budget']} (not an equal number of target tokens)"
    text = f"Budget: {budget}. Machine: {results['machine']}. {results['design']}"
    if tk.get("type"):
        text += f" Tokenizer: {tk['type']}, vocabulary {tk.get('vocab_size')}, shared by all."
    if results.get("wall_seconds") is not None:
        text += (
            f" This compare run (training whatever was not reused, then scoring) took "
            f"{results['wall_seconds'] / 60:.0f} minutes."
        )
    text += (
        f" Test set: {ev['origin']}; long inputs are its captions joined k = "
        f"{k1}..{ks(results)[-1]} at a time ({per_k}), each k over the same "
        f"{n[str(k1)] * k1:,} sentences."
    )
    return ["# Bottleneck versus attention on Multi30k (Bahdanau et al. 2015, Figure 2)", "", text]


def rated_section(results: dict) -> list[str]:
    k1 = ks(results)[0]
    lines = [
        "## Rated models",
        "",
        f"A main model is rated when its k = 1 greedy BLEU is at least "
        f"{100 * WEAK_FRACTION:.0f}% of the best main model's ({best_k1(results):.1f}); below "
        "that it has not learnt the task, and how much of its score it keeps on long inputs "
        "says nothing about length.",
        "",
    ]
    head = ["model", "family", "parameters", "target tokens", "updates (best)", "train min"]
    head += ["k=1 greedy BLEU", "rated"]
    lines += [_row(head), _row(["---"] * len(head))]
    for m in runs(results, "main"):
        cells = [m["name"], m["family"], f"{m['parameters']:,}", f"{m['target_tokens']:,}"]
        cells += [f"{m['steps']} ({m['best_step']})", _num((m["train_seconds"] or 0) / 60)]
        cells += [_num(cell(m, "greedy", k1)["bleu"]), "yes" if m["learned"] else "no"]
        lines.append(_row(cells))
    rated = [m["name"] for m in runs(results, "main") if m["learned"]]
    unrated = [m for m in runs(results, "main") if not m["learned"]]
    lines += ["", tokens_line(results), "", f"Rated: {', '.join(rated) or 'none'}."]
    lines += [f"- {m['name']}: {unrated_reason(results, m)}." for m in unrated]
    return lines + ([] if unrated else ["Every main model is rated."]) + [""]


def tokens_line(results: dict) -> str:
    """How far apart the runs' target-token counts are (every run, controls and seeds too)."""
    counts = [m["target_tokens"] for m in results["models"] if m.get("target_tokens")]
    if not counts:
        return "No run recorded the target tokens it trained on."
    lo, hi = min(counts), max(counts)
    return (
        f"Target tokens trained on: {lo:,} to {hi:,} over {len(counts)} runs "
        f"({100 * (hi - lo) / lo:.1f}% apart; a run stops at the first update that reaches "
        "the budget)."
    )


def by_k_table(results: dict, label: str, models: list[dict]) -> list[str]:
    """Rows: models; columns: BLEU [95%] per k, then retention (k = K over k = 1)."""
    n, first = results["eval_set"]["sentences_per_k"], results["models"][0]
    head = ["model"] + [
        f"k={k} (n={n[str(k)]}, {cell(first, label, k)['mean_src_words']:.0f} words)"
        for k in ks(results)
    ]
    head.append(f"kept k={ks(results)[-1]}/k={ks(results)[0]}")
    lines = [_row(head), _row(["---"] * len(head))]
    for m in models:
        row = [name_cell(m)] + [ci_text(cell(m, label, k)) for k in ks(results)]
        lines.append(_row(row + [pct((m.get("retention") or {}).get(label))]))
    return lines


def diagnostics(results: dict, label: str, models: list[dict]) -> list[str]:
    """Per model per k: brevity penalty, length ratio, shares cut at the length limit and ended
    early, and the refusal; then the refused cells listed with their reasons."""
    head = ["model", "k", "lines", "BP", "hyp/ref ratio", "cut %", "early %", "refused"]
    lines = [_row(head), _row(["---"] * len(head))]
    refused = []
    for m in models:
        for k in ks(results):
            c = cell(m, label, k)
            why = refusal(c)
            row = [m["name"], str(k), str(c["sentences"]), f"{c['bp']:.2f}", f"{c['ratio']:.3f}"]
            lines.append(_row(row + [_num(c["cut"]), _num(c["early"]), "yes" if why else "no"]))
            if why:
                refused.append(f"- {m['name']}, k = {k}: {why}")
    rule = f"fewer than {MIN_N} lines, or a hyp/ref length ratio below {MIN_RATIO:g}"
    lines += ["", f"Refused cells ({rule}):" if refused else f"No cell is refused ({rule})."]
    return lines + refused


def by_k_section(results: dict) -> list[str]:
    mains = runs(results, "main")
    beam = results.get("beam") or {}
    size = beam.get("size", mains[0]["decodes"]["beam"].get("beam"))
    lines = [
        "## BLEU by k (greedy, the headline)",
        "",
        "BLEU [95% bootstrap interval] of the lines that join k test captions; the last column "
        "is the share of its k = 1 BLEU a model keeps at the largest k.",
        "",
        *by_k_table(results, "greedy", mains),
        "",
        *diagnostics(results, "greedy", mains),
        "",
        f"## BLEU by k (beam {size}, length penalty alpha chosen on validation)",
        "",
        *alpha_lines(results, mains),
        "",
        *by_k_table(results, "beam", mains),
        "",
        *diagnostics(results, "beam", mains),
        "",
    ]
    return lines


def alpha_lines(results: dict, mains: list[dict]) -> list[str]:
    """Each model's alpha and the sweep it was chosen by (BLEU and length ratio on the joined
    validation lines)."""
    alphas = (results.get("beam") or {}).get("alphas") or [
        r["alpha"] for r in mains[0].get("alpha_sweep") or []
    ]
    head = ["model", "alpha chosen"] + [f"alpha {a:g}: BLEU (ratio)" for a in alphas]
    lines = [
        "The length penalty alpha is chosen per model on the joined validation lines:",
        "",
        _row(head),
        _row(["---"] * len(head)),
    ]
    for m in mains:
        sweep = {r["alpha"]: r for r in m.get("alpha_sweep") or []}
        row = [m["name"], f"{m['decodes']['beam']['alpha']:g}"]
        row += [
            f"{sweep[a]['bleu']:.1f} ({sweep[a]['ratio']:.2f})" if a in sweep else "-"
            for a in alphas
        ]
        lines.append(_row(row))
    return lines


def verdict_section(results: dict, searchfree: str = "") -> tuple[list[str], str]:
    """The verdict lines and the overall sentence (also stored as results' finding), with the
    search-free finding (``multi30k_sections.nll_section``'s) pointed to when there is one."""
    ref = by_name(results, results["reference"])
    lines = ["## Verdict", ""]
    if ref is None or not ref["learned"]:
        why = "not among the models" if ref is None else unrated_reason(results, ref)
        overall = f"No verdict can be drawn: the reference {results['reference']} is {why}."
        return lines + [overall, ""], overall
    attend = [m for m in runs(results, "main") if m["attention"] and m["name"] != ref["name"]]
    rated = [m for m in attend if m["learned"]]
    units = next(
        (
            u
            for m in rated
            if (u := ((m.get("vs_reference") or {}).get("greedy") or {}).get("units"))
        ),
        None,
    )
    k1, kk = ks(results)[0], ks(results)[-1]
    lines += [
        f"The reference is {ref['name']} ({ref['family']}), the fixed-vector baseline. For each "
        f"rated attention model: its retention (BLEU at k = {kk} over BLEU at k = {k1}) minus the "
        f"reference's, in percentage points, with the 95% paired-bootstrap interval"
        + (f" over {units} joined k = {kk} lines" if units else "")
        + f" (each resample takes the same lines for both). The verdict rests on greedy "
        f"decoding unless one of the k = {k1} and k = {kk} greedy cells of either model is "
        "refused; then on the beam whose length penalty was chosen on validation, if none of its "
        f"k = {k1} and k = {kk} cells is refused (a length penalty is the lever beam search has "
        "on length; greedy has none). Figure 2 is reproduced when that decoding's interval lies "
        "above 0; when both decodings have a refused cell no claim is made.",
        "",
    ]
    head = ["model", "kept greedy (model / ref)", "difference greedy [95%]"]
    head += ["kept beam (model / ref)", "difference beam [95%]", "verdict"]
    lines += [_row(head), _row(["---"] * len(head))]
    kinds, words = {}, {}
    for m in rated:
        kinds[m["name"]], words[m["name"]] = verdict(results, m, ref)
        v = m.get("vs_reference") or {}
        row = [m["name"]]
        for label in ("greedy", "beam"):
            x = v.get(label)
            row += [f"{pct(x and x['a'])} / {pct(x and x['b'])}" if x else "-", diff_text(x)]
        on = deciding(results, m, ref)
        lines.append(_row(row + [SHORT[kinds[m["name"]]] + (f" ({on})" if on else "")]))
    lines.append("")
    for m in rated:
        v = m.get("vs_reference") or {}
        lines.append(
            f"- {m['name']}: {words[m['name']]}; greedy {diff_text(v.get('greedy'))}, beam: "
            f"{side(v.get('beam'))}."
        )
    for m in attend:
        if not m["learned"]:
            lines.append(f"- {m['name']}: left out of the verdict, {unrated_reason(results, m)}.")
    yes = [n for n, k in kinds.items() if k == "reproduces"]
    if not rated:
        overall = "No attention model is rated, so no verdict can be drawn."
    else:
        overall = (
            f"{len(yes)} of {len(rated)} rated attention models reproduce Figure 2 against "
            f"{ref['name']}" + (f" ({', '.join(yes)})" if yes else "") + "."
        )
        against = [n for n, k in kinds.items() if k in ("none", "opposite")]
        unclaimed = [n for n, k in kinds.items() if k in ("refused", "missing")]
        if against:
            overall += (
                f" For {', '.join(against)} the verdict does not come out as Bahdanau et al. found."
            )
        if unclaimed:
            overall += (
                f" For {', '.join(unclaimed)} no claim can be made either way: a cell the "
                "comparison rests on is refused or the comparison is missing."
            )
    if searchfree:
        lines += [
            "",
            f"{searchfree} (Teacher-forced, in the search-free section below, where "
            "output length plays no part.)",
        ]
    return lines + ["", overall, ""], overall


def report_markdown(results: dict) -> tuple[str, dict]:
    """report.md and the findings stored into results.json."""
    nll_lines, nll_finding = more.nll_section(results)
    verdict_lines, overall = verdict_section(results, nll_finding)
    seeds_lines, seeds_finding = more.seeds_section(results)
    lines = [
        *setup(results),
        "",
        *rated_section(results),
        *by_k_section(results),
        *verdict_lines,
        *seeds_lines,
        *nll_lines,
        *more.control_section(results),
        *more.reverse_section(results),
        *more.by_length_section(results),
        "![greedy and beam BLEU against k, 95% intervals shaded](bleu_by_k.png)",
        "",
    ]
    return "\n".join(lines), {"verdict": overall, "seeds": seeds_finding, "nll": nll_finding}


def plot_by_k(results: dict, out: Path) -> Path:
    """``bleu_by_k.png``: BLEU against k with shaded 95% intervals, greedy and beam panels; rated
    main models drawn solid, unrated ones dashed and marked in the legend."""
    from seq2seq.evaluation.plots import save_by_k_png

    first = results["models"][0]
    xlabels = [
        f"k={k}\n{cell(first, 'greedy', k)['mean_src_words']:.0f} words" for k in ks(results)
    ]
    panels = {}
    size = (results.get("beam") or {}).get("size", "")
    for label, title in (("greedy", "greedy"), ("beam", f"beam {size}, alpha per model")):
        panels[title] = {
            name_cell(m): tuple(
                [cell(m, label, k)[key] for k in ks(results)] for key in ("bleu", "low", "high")
            )
            for m in runs(results, "main")
        }
    dashed = [name_cell(m) for m in runs(results, "main") if not m["learned"]]
    return save_by_k_png(out / "bleu_by_k.png", xlabels, panels, "BLEU", dashed)

"""The synthetic half's report (``compare --exact-match`` / ``--alignment``): report.md and the
by-length plots, from the numbers only. The sentence under each by-length table says which model
keeps the most and the least of its score from the shortest to the longest well-filled bucket,
and whether every fixed-vector model falls faster than every attention model (Bahdanau et al.
2015, Figure 2), or not. Under ``--alignment``, the reverse table (``reverse_section``): exact
match by length, alignment accuracy and the plateau check.
"""

from __future__ import annotations

from pathlib import Path

from seq2seq.evaluation.plots import save_by_length_png
from seq2seq.study.report.common import filled_buckets, main_label, num, series, table
from seq2seq.study.reverse import PLATEAU_POINTS, PLATEAU_SPAN, PLATEAU_TARGET

MIN_SENTENCES = 10  # buckets with fewer lines are shown but never drive the generated sentence
WEAK_FRACTION = 0.25  # models under this share of the best short-input score are not rated


def _ends(results: dict) -> tuple[int, int] | None:
    """Indices (into the filled buckets) of the shortest and longest buckets with at least
    MIN_SENTENCES lines, or None when fewer than two qualify."""
    full = [i for i, b in enumerate(filled_buckets(results)) if b["sentences"] >= MIN_SENTENCES]
    return (full[0], full[-1]) if len(full) >= 2 else None


def length_finding(results: dict, metric: str = "bleu") -> str:
    """One sentence on how each model's score changes from short to long sources."""
    label, ends, buckets = main_label(results), _ends(results), filled_buckets(results)
    what = "BLEU" if metric == "bleu" else "exact-match accuracy"
    if ends is None:
        return (
            f"Too few length buckets hold {MIN_SENTENCES} or more lines to say how {what} "
            "changes with source length."
        )
    lo, hi = ends
    span = f"{buckets[lo]['bucket']} to {buckets[hi]['bucket']} source words ({label})"
    ys_of = series(results, label, metric)
    if metric == "exact":
        return _exact_finding(ys_of, span, lo, hi)
    ends_of = {name: (ys[lo], ys[hi]) for name, ys in ys_of.items()}
    # A model under a quarter of the best short-input score has not learnt the task: how much of its
    # score it keeps says nothing about length, so it is named but not rated.
    top = max((a for a, _ in ends_of.values() if a is not None), default=0.0)
    weak = [n for n, (a, _) in ends_of.items() if not a or a < WEAK_FRACTION * top]
    kept = {n: (a, b, None if n in weak else b / a) for n, (a, b) in ends_of.items()}
    rated = sorted((k for k in kept if kept[k][2] is not None), key=lambda k: kept[k][2])
    if not rated:
        return f"No model scores above 0 {what} on the shortest inputs (from {span})."
    worst, best = rated[0], rated[-1]
    text = f"From {span}, {worst} keeps the least of its {what} ({_fmt(kept[worst])})"
    if best != worst:
        text += f" and {best} the most ({_fmt(kept[best])})"
    text += _claim(results, kept)
    if weak:
        text += (
            f"; not rated, as they score under a quarter of the best {what} on the shortest "
            "inputs: " + ", ".join(f"{n} ({num(kept[n][0])})" for n in weak)
        )
    return text + "."


def _fmt(triple: tuple) -> str:
    a, b, r = triple
    return f"{a:.1f} -> {b:.1f}, {100 * r:.0f}% kept" if r is not None else f"{a:.1f} -> {b:.1f}"


def _claim(results: dict, kept: dict) -> str:
    """Per training-data group holding both kinds: does every fixed-vector model keep less of its
    score than every attention model?"""
    groups: dict[str, list[dict]] = {}
    for m in results["models"]:
        if kept[m["name"]][2] is not None:
            groups.setdefault(_data_label(m), []).append(m)
    parts = []
    for group, ms in groups.items():
        bottle = [m["name"] for m in ms if not m["attention"]]
        attend = [m["name"] for m in ms if m["attention"]]
        if not bottle or not attend:
            continue
        b = max(bottle, key=lambda n: kept[n][2])
        a = min(attend, key=lambda n: kept[n][2])
        rb, ra = 100 * kept[b][2], 100 * kept[a][2]
        if rb < ra:
            parts.append(
                f"trained on {group}, the fixed-vector {b} keeps {rb:.0f}% against at "
                f"least {ra:.0f}% for every attention model ({a}), as in Bahdanau et al. "
                "(2015, Figure 2)"
            )
        else:
            parts.append(
                f"trained on {group}, unlike Bahdanau et al. (2015, Figure 2), the "
                f"fixed-vector {b} keeps {rb:.0f}%, no less than the attention model {a} "
                f"({ra:.0f}%)"
            )
    return "".join(f"; {p}" for p in parts)


def _exact_finding(ys_of: dict, span: str, lo: int, hi: int) -> str:
    """Exact match: who stays at or above 90% in every well-filled bucket (``lo``..``hi``), who
    falls, and how far."""
    parts = []
    for name, ys in ys_of.items():
        window = [y for y in ys[lo : hi + 1] if y is not None]
        if window and min(window) >= 90:
            low = min(window)
            parts.append(f"{name} stays at or above 90% in every bucket (lowest {low:.0f}%)")
        else:
            parts.append(f"{name} goes from {num(ys[lo], 0)}% to {num(ys[hi], 0)}%")
    return f"Exact-match accuracy from {span}: " + "; ".join(parts) + "."


def _data_label(m: dict) -> str:
    parts = ["single pairs" if m["concat_k"] == 1 else f"pairs + joined k<={m['concat_k']}"]
    if m["max_src_words"]:
        parts.append(f"<={m['max_src_words']} src words")
    return ", ".join(parts)


def models_table(results: dict) -> list[str]:
    """One row per model: size, training cost, test scores per decoding."""
    labels = list(results["models"][0]["decodes"])
    metrics = ["bleu", "chrf"] + (["exact"] if results["exact_match"] else [])
    names = {"bleu": "BLEU", "chrf": "chrF", "exact": "exact %"}
    head = ["model", "family", "training data", "parameters", "train min", "target tok/s", "steps"]
    head += [f"{names[mt]} {lab}" for mt in metrics for lab in labels]
    rows = []
    for m in results["models"]:
        cells = [m["name"], m["family"], _data_label(m), f"{m['parameters']:,}"]
        cells += [num((m["train_seconds"] or 0) / 60), f"{m['target_tokens_per_s'] or 0:,.0f}"]
        cells += [str(m["steps"])]
        cells += [num(m["decodes"][lab][mt]) for mt in metrics for lab in labels]
        rows.append(cells)
    return table(head, rows)


def by_length_table(results: dict, label: str, metric: str) -> list[str]:
    """Rows: models; columns: filled source-length buckets, headed with their line counts."""
    buckets = filled_buckets(results)
    head = ["model"] + [f"{b['bucket']} (n={b['sentences']})" for b in buckets]
    rows = [[name] + [num(y) for y in ys] for name, ys in series(results, label, metric).items()]
    return table(head, rows)


def by_k_table(results: dict, label: str) -> list[str]:
    """BLEU per number of joined test sentences k, with line counts and mean source words."""
    rows0 = results["models"][0]["decodes"][label]["by_k"]
    head = ["model"] + [
        f"k={r['k']} (n={r['sentences']}, {r['mean_src_words']:.0f} words)" for r in rows0
    ]
    rows = [
        [m["name"]] + [num(r["bleu"]) for r in m["decodes"][label]["by_k"]]
        for m in results["models"]
    ]
    return table(head, rows)


def plot(results: dict, out: Path, metric: str) -> Path:
    """``bleu_by_length.png`` (or ``exact_by_length.png``): one panel per decoding."""
    labels = list(results["models"][0]["decodes"])
    panels = {lab: series(results, lab, metric) for lab in labels}
    dashed = [m["name"] for m in results["models"] if not m["attention"]]
    name, ylabel = ("bleu", "BLEU") if metric == "bleu" else ("exact", "exact match (%)")
    buckets = [f"{b['bucket']}\n(n={b['sentences']})" for b in filled_buckets(results)]
    return save_by_length_png(out / f"{name}_by_length.png", buckets, panels, ylabel, dashed)


def report_markdown(results: dict) -> str:
    """report.md: setup, the models table, by-length tables with their findings, plots, maps."""
    label, ev = main_label(results), results["eval_set"]
    tk = results["tokenizer"]
    intro = [
        "# Bottleneck versus attention",
        "",
        f"Machine: {results['machine']}. Budget: {results['budget']}. Tokenizer: {tk['type']}, "
        f"vocabulary {tk['vocab_size']}, trained once and shared by every model.",
        "",
        f"Test set: {ev['origin']}, {ev['test_sentences']} lines (the main table's scores). Long "
        f"inputs: its lines joined k = 1..{ev['concat_k']} at a time, {ev['sentences']} lines in "
        "all (the by-length tables). Dashed lines in the plots are fixed-vector models.",
        "",
        "## Models (test set)",
        "",
        *models_table(results),
        "",
        f"## BLEU by source length ({label}, all lines)",
        "",
        *by_length_table(results, label, "bleu"),
        "",
        length_finding(results, "bleu"),
        "",
    ]
    if results["exact_match"]:
        rows = by_length_table(results, label, "exact")
        intro += [f"## Exact match (%) by source length ({label})", "", *rows, ""]
        intro += [length_finding(results, "exact"), ""]
        intro += ["![exact match against source length](exact_by_length.png)", ""]
    if results.get("alignment"):
        intro += reverse_section(results)
    intro += ["![BLEU against source length](bleu_by_length.png)", ""]
    for other in results["models"][0]["decodes"]:
        if other != label:
            rows = by_length_table(results, other, "bleu")
            intro += [f"## BLEU by source length ({other})", "", *rows, ""]
    if ev["concat_k"] > 1:
        intro += [f"## BLEU by sentences joined ({label})", "", *by_k_table(results, label), ""]
    if results["attention_maps"]:
        intro += ["## Attention (greedy), the same lines for every attention model", ""]
        intro += [f"![{p}]({p})" for p in results["attention_maps"]] + [""]
    return "\n".join(intro)


def _head(m: dict) -> str:
    a = m.get("alignment")
    if not a:
        return "-"
    if a["best_head"] is None:
        return "(one map)"
    return f"layer {a['best_head']['layer']}, head {a['best_head']['head']}"


def _offset(a: dict | None) -> str:
    """``+1 (95.1%)``: the argmax - gold offset most often seen, with its share of positions."""
    if not a:
        return "-"
    d = a["commonest_offset"]
    return f"{d:+d} ({a['offsets'][f'{d:+d}']:.1f}%)"


def _curve(p: dict) -> str:
    return ", ".join(f"{num(c['exact'])} @{c['step']}" for c in p["curve"]) or "-"


def reverse_table(results: dict) -> list[str]:
    """The reverse table: size, updates, exact match per filled bucket, alignment accuracy of
    the chosen head, and the plateau check on the shortest validation lines."""
    label, buckets = main_label(results), filled_buckets(results)
    head = ["model", "parameters", "updates (stop)"]
    head += [f"exact % {b['bucket']}" for b in buckets]
    head += ["alignment %", "best head", "commonest offset", "valid exact % @step", "training"]
    rows, exact = [], series(results, label, "exact")
    for m in results["models"]:
        a, p = m.get("alignment"), m["plateau"]
        cells = [m["name"], f"{m['parameters']:,}", f"{m['steps']} ({m['stopped']})"]
        cells += [num(y) for y in exact[m["name"]]]
        cells += [num(a["accuracy"]) if a else "-", _head(m), _offset(a), _curve(p), p["verdict"]]
        rows.append(cells)
    return table(head, rows)


def alignment_by_length_table(results: dict) -> list[str]:
    """Alignment accuracy (%) of each attention model's chosen head per source-length bucket."""
    ms = [m for m in results["models"] if m.get("alignment")]
    rows = [r for r in ms[0]["alignment"]["by_length"] if r["positions"]] if ms else []
    head = ["model"] + [f"{r['bucket']} (n={r['positions']})" for r in rows]
    body = []
    for m in ms:
        by = {r["bucket"]: r["accuracy"] for r in m["alignment"]["by_length"]}
        body.append([m["name"]] + [num(by[r["bucket"]]) for r in rows])
    return table(head, body)


def per_head_tables(results: dict) -> list[str]:
    """Alignment accuracy (%) per layer and head of each multi-head model."""
    lines = []
    for m in results["models"]:
        a = m.get("alignment")
        if not a or a["best_head"] is None:
            continue
        head = ["layer"] + [f"head {h}" for h in range(a["heads"])]
        body = [[str(i)] + [num(x) for x in r] for i, r in enumerate(a["per_head"])]
        lines += [f"{m['name']}, per layer and head (test set):", "", *table(head, body), ""]
    return lines


def plateau_finding(results: dict) -> str:
    """Which models were trained, flat or still rising on the shortest validation lines, and
    whether the fixed-vector models' fall with length can be read as the bottleneck."""
    parts, unrated = [], []
    for m in results["models"]:
        p = m["plateau"]
        what = f"{m['name']} {num(p['best_exact'])}% (best.pt, step {p['best_step']})"
        if p["verdict"] == "trained":
            parts.append(what + f", at or above {PLATEAU_TARGET:g}%")
        elif p["verdict"] == "flat":
            parts.append(
                what + f", flat within {PLATEAU_SPAN:g} points over its last {PLATEAU_POINTS} "
                "checkpoints (the most it learns here)"
            )
        else:
            why = (
                "still rising or unsettled"
                if p["verdict"] == "rising"
                else f"too few step checkpoints to tell ({len(p['curve'])} kept; keep "
                f"train.keep_last {PLATEAU_POINTS} or more)"
            )
            parts.append(f"{what}, {why}: not shown to have reached a plateau")
            if not m["attention"]:
                unrated.append(m["name"])
    text = (
        f"Exact match on the validation lines of {results['models'][0]['plateau']['bucket']} "
        "symbols: " + "; ".join(parts) + "."
    )
    if unrated:
        text += (
            " The fall with length of " + ", ".join(unrated) + " is therefore not evidence of "
            "the fixed-vector bottleneck: it may only be undertrained."
        )
    return text


def reverse_section(results: dict) -> list[str]:
    """report.md's reverse section: the table, the plateau finding, alignment by length and per
    layer and head."""
    label = main_label(results)
    sizes = [m["parameters"] for m in results["models"]]
    apart = 100 * (max(sizes) / max(1, min(sizes)) - 1)
    return [
        f"## Reverse table ({label}; alignment under teacher forcing, test set)",
        "",
        "Every model reverses the same symbols with the same tokenizer; their parameters "
        f"run from {min(sizes):,} to {max(sizes):,} ({apart:.1f}% apart), so a fall with "
        "length is not a matter of size. A fall is read as the fixed-vector bottleneck "
        "only for a model trained to a plateau (last column).",
        "",
        *reverse_table(results),
        "",
        results["findings"]["plateau"],
        "",
        "Alignment accuracy: the share of target symbols whose strongest attention falls on "
        f"the source symbol they {'reverse' if results['alignment'] == 'reverse' else 'copy'} "
        "(EOS not counted); the commonest offset is where the argmax most often lies relative "
        "to that symbol (+1: one position to its right, i.e. on the source of the previous "
        "output). The Transformer's head is chosen on the validation set.",
        "",
        "## Alignment accuracy (%) by source length",
        "",
        *alignment_by_length_table(results),
        "",
        *per_head_tables(results),
    ]

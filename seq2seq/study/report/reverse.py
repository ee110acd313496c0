"""The reverse table of ``compare --alignment`` (``make study-quick``): exact match by length,
alignment accuracy and the plateau check of every model, and the sentence that says whether the
fixed-vector models' fall with length can be read as the bottleneck. The synthetic report and the
Multi30k report's "Synthetic reversal" section both render it."""

from __future__ import annotations

from seq2seq.study.report.common import filled_buckets, main_label, num, series, table
from seq2seq.study.reverse import PLATEAU_POINTS, PLATEAU_SPAN, PLATEAU_TARGET


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
            parts.append(what + ", still rising or unsettled: not trained to a plateau")
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

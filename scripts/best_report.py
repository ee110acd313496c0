"""The tables `make best` (scripts/best.py) prints and writes to RUNS/README.md: the Converged
table, the checkpoint choice on validation and every family's search sweep.

The Converged table and the BLEU-by-length table of docs/results/best/README.md are rendered from
that folder's results.json by the same functions (``TABLES``), each between its two ``markers``;
to redo them after a run:

    python scripts/best_report.py docs/results/best/results.json --write docs/results/best/README.md

(without ``--write`` the tables are printed). tests/unit/test_results_docs.py checks that the
doc's tables are this rendering.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from seq2seq.atomic import atomic_write_text

TESTS = ["test_2016_flickr", "test_2017_flickr"]
BUCKETS = "10,20"  # eval --buckets: source words 1-10, 11-20, 21+
STOPPED = {"early_stopping": "converged: early stopping", "max_time": "time cap"}


def _checkpoint(name: str) -> str:
    """``avg_best5.pt`` -> "average of the 5 best", ``avg_last5.pt`` -> "average of the last 5";
    any other file by its name."""
    for prefix, words in (
        ("avg_best", "average of the {} best"),
        ("avg_last", "average of the last {}"),
    ):
        if name.startswith(prefix) and name.endswith(".pt") and name[len(prefix) : -3].isdigit():
            return words.format(name[len(prefix) : -3])
    return name


def _search(best: dict) -> str:
    """The search tune-decode chose: "beam 40, α 1" or "greedy"."""
    if best["method"] != "beam":
        return best["method"]
    return f"beam {best['beam_size']}, α {best['length_penalty']:g}"


def _row(r: dict) -> str:
    t, tr = r["tests"], r["train"]
    cells = []
    for test in TESTS:
        for search in ("greedy", "tuned"):
            s = t[f"{test}_{search}"]
            bleu = f"{s['bleu']['score']:.2f}"
            if test == TESTS[0] and search == "tuned":
                bleu = f"**{bleu}**"
            cell = f"{bleu} / {s['chrf']['score']:.2f}"
            if test == TESTS[0] and search == "tuned":
                cell += f" ({_search(r['tune']['best'])})"
            cells.append(cell)
    stopped = STOPPED.get(tr["stopped"], tr["stopped"])
    if tr.get("best_step") is not None:
        stopped += f"; best at update {tr['best_step']:,}"
    minutes = tr["train_seconds"] / 60
    return (
        f"| {r['family']} | {tr['epochs']:.1f} | {tr['steps']:,} | {minutes:.0f} | "
        f"{stopped} | {r['parameters']:,} | {_checkpoint(r['chosen'])} | "
        + " | ".join(cells)
        + " |"
    )


def _ranked(results: list[dict]) -> list[dict]:
    """Best first, by test_2016 BLEU with the tuned search."""
    return sorted(results, key=lambda r: -r["tests"][f"{TESTS[0]}_tuned"]["bleu"]["score"])


def converged_table(results: list[dict]) -> str:
    """The Converged table: one row per family, best first (by test_2016 BLEU with the tuned
    search): training (epochs, updates, minutes, why it stopped and the best validation's update),
    parameters, the tested checkpoint, and BLEU / chrF on both test sets, greedy and tuned (the
    tuned search named)."""
    lines = [
        "| family | epochs | updates | train min | stopped | parameters | tested checkpoint | "
        "test_2016 greedy BLEU / chrF | test_2016 tuned | test_2017 greedy | test_2017 tuned |",
        "|" + " --- |" * 11,
        *[_row(r) for r in _ranked(results)],
    ]
    return "\n".join(lines) + "\n"


def by_length_table(results: list[dict]) -> str:
    """BLEU by source length on test_2016_flickr, greedy and tuned: one row per family and search,
    best first; a column per length bucket that holds sentences, their count in brackets."""
    first = results[0]["tests"][f"{TESTS[0]}_greedy"]["by_length"]["buckets"]
    head = [f"{b['bucket']} ({b['sentences']})" for b in first if b["sentences"]]
    lines = ["| family, search | " + " | ".join(head) + " |", "|" + " --- |" * (len(head) + 1)]
    for r in _ranked(results):
        for search in ("greedy", "tuned"):
            buckets = r["tests"][f"{TESTS[0]}_{search}"]["by_length"]["buckets"]
            cells = [f"{b['bleu']:.2f}" for b in buckets if b["sentences"]]
            lines.append(f"| {r['family']} {search} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


TABLES = {"converged table": converged_table, "by-length table": by_length_table}


BY = "results.json by scripts/best_report.py"


def markers(name: str, by: str = BY) -> tuple[str, str]:
    """The two comment lines that hold the table ``name`` (of ``TABLES``, or of another script
    that renders ``by``) in a doc."""
    return (
        f"<!-- {name}: rendered from {by}; do not edit -->",
        f"<!-- end of the {name} -->",
    )


def with_table(doc: str, name: str, table: str, by: str = BY) -> str:
    """``doc`` with the text between the ``markers(name)`` lines replaced by ``table`` (a blank
    line either side, so Markdown sees a table and not part of the comments' HTML block).

    Raises:
        ValueError: ``doc`` lacks either marker, or has them out of order.
    """
    first, last = markers(name, by)
    begin, end = doc.find(first), doc.find(last)
    if begin < 0 or end < begin:
        raise ValueError(f"the doc needs the lines {first!r} and then {last!r}")
    return doc[: begin + len(first)] + "\n\n" + table + "\n" + doc[end:]


def table_in(doc: str, name: str, by: str = BY) -> str:
    """The text between ``doc``'s ``markers(name, by)`` lines ("" when it has none)."""
    first, last = markers(name, by)
    begin, end = doc.find(first), doc.find(last)
    if begin < 0 or end < begin:
        return ""
    return doc[begin + len(first) : end].strip("\n") + "\n"


def report(results: list[dict], runs: Path, wall: float) -> str:
    b = results[0]["tests"][f"{TESTS[0]}_greedy"]["bleu"]["signature"]
    lines = [
        "# Converged models on Multi30k de->en (`make best`)",
        "",
        f"Wall time of this invocation: {wall / 60:.1f} minutes. BLEU signature: `{b}`.",
        "",
        converged_table(results).rstrip("\n"),
        "",
        f"## BLEU by source length ({TESTS[0]}, source words; sentences in brackets)",
        "",
        by_length_table(results),
        "## Translate with a tested model",
        "",
        "The checkpoint tested above, with the search tuned on validation (decode.yaml beside it); "
        "`-c` with the run folder alone loads best.pt instead.",
        "",
        *[f"- `seq2seq translate -c {runs / r['family'] / r['chosen']}`" for r in results],
        "",
        "## Checkpoint choice on validation (greedy BLEU)",
        "",
        "| family | " + " | ".join(["candidate: BLEU"] * 3) + " |",
        "| --- | --- | --- | --- |",
    ]
    for r in results:
        cells = [f"{n}: {s:.2f}" for n, s in r["val_bleu"].items()]
        cells += [""] * (3 - len(cells))
        lines.append(f"| {r['family']} | " + " | ".join(cells) + " |")
    lines += ["", "## Search tuned on validation (`seq2seq tune-decode`)", ""]
    for r in results:
        sweep = r["tune"]["sweep"]
        best = r["tune"]["best"]
        lines += [
            f"**{r['family']}**: chosen {best['method']}"
            + (
                f" K={best['beam_size']}, alpha={best['length_penalty']:g}"
                if best["method"] == "beam"
                else ""
            )
            + f": {best['bleu']:.2f} (greedy {r['tune']['greedy_bleu']:.2f})",
            "",
            "| search | BLEU | BP | length ratio | seconds |",
            "| --- | --- | --- | --- | --- |",
        ]
        for s in sweep:
            name = (
                "greedy"
                if s["method"] == "greedy"
                else (f"beam {s['beam_size']}, alpha {s['length_penalty']:g}")
            )
            lines.append(
                f"| {name} | {s['bleu']:.2f} | {s['bp']:.3f} | {s['ratio']:.3f} | "
                f"{s['seconds']:.0f} |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Render the results tables from a results.json.")
    ap.add_argument("results", type=Path, help="results.json of `make best`")
    ap.add_argument(
        "--write", type=Path, help="put each table between its markers in this doc (all of them)"
    )
    args = ap.parse_args(argv)
    try:
        results = json.loads(args.results.read_text())
        tables = {name: render(results) for name, render in TABLES.items()}
        if args.write is None:
            print("\n".join(tables.values()), end="")
            return 0
        doc = args.write.read_text()
        for name, table in tables.items():
            doc = with_table(doc, name, table)
        atomic_write_text(args.write, doc)
    except OSError as e:
        print(f"error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    except (ValueError, KeyError) as e:
        print(f"error: {args.write or args.results}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

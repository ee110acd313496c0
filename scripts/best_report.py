"""The tables `make best` (scripts/best.py) prints and writes to RUNS/README.md: the Converged
table, the checkpoint choice on validation and every family's search sweep."""

from __future__ import annotations

from pathlib import Path

TESTS = ["test_2016_flickr", "test_2017_flickr"]
BUCKETS = "10,20"  # eval --buckets: source words 1-10, 11-20, 21+
STOPPED = {"early_stopping": "converged (early stopping)", "max_time": "time cap"}


def _row(r: dict) -> str:
    t, tr = r["tests"], r["train"]
    cells = []
    for test in TESTS:
        for search in ("greedy", "tuned"):
            s = t[f"{test}_{search}"]
            cells.append(f"{s['bleu']['score']:.2f} / {s['chrf']['score']:.2f}")
    stopped = STOPPED.get(tr["stopped"], tr["stopped"])
    return (
        f"| {r['family']} | {tr['epochs']} | {tr['steps']} | {tr['train_seconds'] / 60:.0f} | "
        f"{stopped} | {r['parameters']:,} | {r['chosen']} | " + " | ".join(cells) + " |"
    )


def _by_length(results: list[dict]) -> list[str]:
    """BLEU by source length on test_2016_flickr, greedy and tuned: one row per family."""
    first = results[0]["tests"][f"{TESTS[0]}_greedy"]["by_length"]["buckets"]
    head = [f"{b['bucket']} ({b['sentences']})" for b in first if b["sentences"]]
    lines = [
        f"## BLEU by source length ({TESTS[0]}, source words; sentences in brackets)",
        "",
        "| family, search | " + " | ".join(head) + " |",
        "|" + " --- |" * (len(head) + 1),
    ]
    for r in results:
        for search in ("greedy", "tuned"):
            buckets = r["tests"][f"{TESTS[0]}_{search}"]["by_length"]["buckets"]
            cells = [f"{b['bleu']:.2f}" for b in buckets if b["sentences"]]
            lines.append(f"| {r['family']} {search} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def report(results: list[dict], runs: Path, wall: float) -> str:
    b = results[0]["tests"][f"{TESTS[0]}_greedy"]["bleu"]["signature"]
    lines = [
        "# Converged models on Multi30k de->en (`make best`)",
        "",
        f"Wall time of this invocation: {wall / 60:.1f} minutes. BLEU signature: `{b}`.",
        "",
        "| family | epochs done | updates | train min | stopped | parameters | checkpoint | "
        "2016 greedy BLEU / chrF | 2016 tuned | 2017 greedy | 2017 tuned |",
        "|" + " --- |" * 11,
        *[_row(r) for r in results],
        "",
        *_by_length(results),
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

"""report.md of ``compare`` on real text (``results["study"] == "multi30k"``): what every run
measured, from results.json alone, and no verdict. The study's verdict is rule v3's
(``study.verdict_v3``), judged from the same per-line files on seeds and a test set fixed before
they were trained (``python -m seq2seq.study.judge verdict``, make study-verdict).
"""

from __future__ import annotations

from seq2seq.study.report.common import interval, num, pct, table
from seq2seq.study.report.v3 import rho_tables
from seq2seq.study.verdict import plateau_gain

TITLE = "# Bottleneck versus attention on real text: the runs (Bahdanau et al. 2015, Figure 2)"
FIGURE = "rho_by_k.png"
NOT_A_VERDICT = (
    "Measurements, not a verdict: the study's verdict is rule v3's, on seeds and a test set fixed "
    "before they were trained (make study-verdict)."
)


def finding(results: dict) -> str:
    """One line (the CLI prints it): each headline pair's rho difference on each set."""
    heads = [
        f"{p['run']} minus {p['against']} on {name}, k = {p['k']}: {interval(p)}"
        for name, s in results["sets"].items()
        for p in s["pairs"]
        if p["role"] == "headline"
    ]
    if not heads:
        return f"No headline pair (attention and the ablation at one seed) scored. {NOT_A_VERDICT}"
    return f"rho difference, points [95%]: {'; '.join(heads)}. {NOT_A_VERDICT}"


def _minutes(stage: dict) -> str:
    return num(stage["train_seconds"] / 60) if stage.get("train_seconds") else "-"


def runs_table(results: dict) -> list[str]:
    rows = []
    for m in results["models"]:
        greedy, beam, st = m["decodes"]["greedy"], m["decodes"]["beam"], m["stages"]
        rows.append(
            [
                m["name"],
                m["role"],
                str(m["seed"]),
                f"{_minutes(st['single'])} / {_minutes(st['joined'])}",
                num(plateau_gain(st["single"].get("valid_curve")), 2),
                num(m["k1_ratio"], 3),
                f"{num(greedy['bleu'])} / {num(greedy['chrf'])}",
                f"{num(beam['bleu'])} / {num(beam['chrf'])} ({beam['alpha']:g})",
            ]
        )
    head = ["run", "role", "seed", "minutes: single / joined", "plateau gain, BLEU"]
    head += ["k = 1 length ratio", "greedy BLEU / chrF", "beam BLEU / chrF (length penalty)"]
    return table(head, rows)


def pairs_table(pairs: list[dict]) -> list[str]:
    body = [
        [p["role"], f"{p['run']} vs {p['against']}", str(p["k"]), f"{pct(p['a'])} / {pct(p['b'])}"]
        + [interval(p), str(p["units"])]
        for p in pairs
    ]
    head = ["pair", "run vs against", "k", "rho run / against", "difference, points [95%]"]
    head.append("joined lines")
    return table(head, body)


def report_markdown(results: dict) -> tuple[str, dict]:
    """report.md and the findings (``{"rho": finding}``) of ``results``."""
    words = finding(results)
    first = next(iter(results["sets"]))
    lines = [TITLE, "", f"**Finding.** {words}", "", f"![rho by k]({FIGURE})", ""]
    lines += [
        "rho at k is the share of what a caption's own source tells the model (teacher-forced "
        "loss with a wrong source minus with its own) left when it sits among k joined captions "
        "(seq2seq/study/rho.py): 100% at k = 1, lower the more the long input costs; far outside "
        "0-100%, the source tells the model little at all. The rho tables give each config's mean "
        "over its seeds [lowest, highest seed]; the pairs their paired bootstrap 95% interval over "
        "the joined lines. Every number is recomputed from lines/<set>/<run>.json.gz. This report "
        "covers the runs of the command that wrote it (with --only: those runs alone).",
        "",
        "## Setup",
        "",
        f"- Recipe: {results['recipe']['words']}.",
        f"- Machine of this command: {results['machine']}; its wall time "
        f"{num(results['wall_seconds'] / 60)} min (finished runs reused: no training time).",
        f"- Tokenizer: shared, sha256 {results['tokenizer']['sha256'][:12]}; length ratio r "
        f"{num(results['length_ratio'], 3)} (training targets over sources, in words).",
        f"- Beam {results['beam']['size']}, its length penalty chosen on "
        f"{results['valid_lines']} joined validation lines from "
        f"{', '.join(f'{a:g}' for a in results['beam']['alphas'])}.",
    ]
    for name, s in results["sets"].items():
        by_k = ", ".join(f"{n} of k = {k}" for k, n in s["lines_by_k"].items())
        lines.append(f"- {name}: {s['origin']}; lines: {by_k}.")
    lines += ["", f"## Runs (scores on {first})", "", *runs_table(results), "", "## rho"]
    lines += rho_tables(results["tables"])
    for name, s in results["sets"].items():
        lines += ["", f"**Pairs, {name}**: each run against the ablation of its seed, and seeds of"]
        lines[-1] += " one config against each other."
        lines += ["", *pairs_table(s["pairs"])]
    return "\n".join(lines) + "\n", {"rho": words}

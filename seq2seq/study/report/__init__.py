"""The ``compare`` report: results.json, report.md and the plots, from the numbers only (no
module here imports a runner: they read results dicts)."""

from __future__ import annotations

import json
from pathlib import Path

from seq2seq.atomic import atomic_write_text
from seq2seq.study.report import multi30k
from seq2seq.study.report.common import finite
from seq2seq.study.report.synthetic import length_finding, plateau_finding, plot, report_markdown
from seq2seq.study.report.v3 import plot_by_k


def write_report(results: dict, out: str | Path) -> None:
    """Write ``results.json``, ``report.md`` and the plots into ``out`` and store the findings in
    ``results["findings"]`` (the CLI prints them): the Multi30k study's report (``report.multi30k``,
    its figure ``report.v3.plot_by_k``) when ``results["study"] == "multi30k"``, else the
    synthetic half's. NaN is written as null, and the report rendered from those same values
    (rendering again: the same)."""
    out = Path(out)
    if results.get("study") == "multi30k":
        clean = finite(results)
        text, results["findings"] = multi30k.report_markdown(clean)
        ablation = next((m["base"] for m in clean["models"] if m["role"] == "ablation"), None)
        plot_by_k(clean["tables"], out / multi30k.FIGURE, None, ablation)
        clean["findings"] = results["findings"]
    else:
        results["findings"] = {"bleu": length_finding(results, "bleu")}
        if results["exact_match"]:
            results["findings"]["exact"] = length_finding(results, "exact")
            plot(results, out, "exact")
        if results.get("alignment"):
            results["findings"]["plateau"] = plateau_finding(results)
        plot(results, out, "bleu")
        clean, text = finite(results), report_markdown(results)
    atomic_write_text(out / "results.json", json.dumps(clean, indent=2))
    atomic_write_text(out / "report.md", text)

"""A results folder of the Multi30k study (``docs/results/study/multi30k``): finished runs'
per-line files copied in from a ``compare --out`` folder (``collect``, scripts/study_runs.sh)
with their training records, and the table of those records (``run_table``)."""

from __future__ import annotations

import json
from pathlib import Path

from seq2seq.atomic import atomic_write_bytes
from seq2seq.study.lines import lines_path, read_lines


def run_table(folder: str | Path, runs) -> list[dict]:
    """Per (design, seed): minutes of training per stage and the single stage's plateau gain
    (``verdict.plateau_gain``: reported, not a gate), from the run's ``training/<run>.json``
    (``collect``) or the folder's results.json; None where neither has it."""
    from seq2seq.study.verdict import plateau_gain

    folder, entries = Path(folder), {}
    old = folder / "results.json"
    if old.is_file():
        entries = {m["name"]: m for m in json.loads(old.read_text("utf-8"))["models"]}
    rows = []
    for design, seed in runs:
        name = f"study-{design}" + (f"-seed{seed}" if seed != 1 else "")  # judge.parse_run's
        path = folder / "training" / f"{name}.json"
        entry = json.loads(path.read_text("utf-8")) if path.is_file() else entries.get(name, {})
        stages = entry.get("stages", {})
        minutes = {k: stages[k]["train_seconds"] / 60 for k in stages if k in ("single", "joined")}
        gain = plateau_gain(stages.get("single", {}).get("valid_curve"))
        rows.append({"design": design, "seed": seed, "minutes": minutes, "plateau_gain": gain})
    return rows


def collect(out: str | Path, results: str | Path, runs) -> list[str]:
    """Copy the per-line files of ``runs`` that the study folder ``out`` holds (readable ones)
    into ``results``, with each run's training record, ``training/<run>.json``: per stage its steps,
    target tokens, seconds of training and validation curve. Returns the files copied."""
    from seq2seq.atomic import atomic_write_text
    from seq2seq.study.multi30k import valid_curve

    out, results, copied = Path(out), Path(results), []
    for run in runs:
        for src in sorted(out.glob(f"lines/*/{run}.json.gz")):
            read_lines(src)  # a damaged file stays behind (ValueError names it)
            dest = lines_path(results, src.parent.name, run)
            if not dest.is_file() or dest.read_bytes() != src.read_bytes():
                atomic_write_bytes(dest, src.read_bytes())
                copied.append(str(dest))
        stages = {}
        for stage, name in (("single", f"{run}-single"), ("joined", run)):
            marker = out / "runs" / name / "compare.json"
            if marker.is_file():
                s = json.loads(marker.read_text(encoding="utf-8"))["summary"]
                keep = ("steps", "target_tokens", "train_seconds", "target_tokens_per_s")
                stages[stage] = {k: s.get(k) for k in keep}
                stages[stage]["valid_curve"] = valid_curve(out / "runs" / name)
        if len(stages) == 2:
            record = json.dumps({"name": run, "stages": stages}, indent=2)
            atomic_write_text(results / "training" / f"{run}.json", record)
    return copied

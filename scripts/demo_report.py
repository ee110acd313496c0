"""What `make demo` gives, by CPU kind, from committed runs: `make demo-record`, run on the machine
that trained the demo right after `make demo`, keeps its run's numbers in
docs/results/demo/<kind>.json (one record per CPU kind: bf16 with AMX, bf16 with avx512_bf16,
fp32 without native bf16; a later record of a kind replaces the earlier one) and renders every
record there as the demo table of docs/results/README.md, between its markers:

    python scripts/demo_report.py record runs/multi30k/bahdanau --write docs/results/README.md
    python scripts/demo_report.py table --write docs/results/README.md   # the table alone

(without ``--write`` the table is printed). tests/unit/test_results_docs.py checks that the doc's
table is this rendering of the committed records.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from best_report import table_in, with_table

from seq2seq.atomic import atomic_write_text
from seq2seq.cpu_features import cpu_flags, cpu_line, cpu_report

RECORDS = Path(__file__).resolve().parents[1] / "docs" / "results" / "demo"
NAME, BY = "demo table", "docs/results/demo/*.json by scripts/demo_report.py"
# CPU kind: (record file stem, words), the first whose flag the CPU has; else fp32-only.
KINDS = {
    "amx_bf16": ("amx", "with AMX (`amx_bf16`), e.g. Xeon Sapphire Rapids"),
    "avx512_bf16": ("avx512-bf16", "with `avx512_bf16`, e.g. Zen 4"),
}
NO_BF16 = ("no-bf16", "without native bf16, e.g. Zen 3")
FILES = {"greedy": "test_greedy.json", "beam5": "test_beam5.json"}


def cpu_kind(flags: frozenset[str]) -> tuple[str, str]:
    """(record file stem, words) of the CPU kind that ``flags`` make (``KINDS``)."""
    return next((v for f, v in KINDS.items() if f in flags), NO_BF16)


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path}: not found; run `make demo` to the end first") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e}); run `make demo` again") from None


def record(run_dir: Path, flags: frozenset[str] | None = None) -> tuple[str, dict]:
    """(file stem, record) of a finished `make demo` run: its code, precision, updates, training
    minutes and test_2016_flickr greedy and beam-5 scores, and this machine's CPU (``flags``
    default: this CPU's), which must be the one that trained it.

    Raises:
        ValueError: a file of the run missing or unreadable (one line naming it).
    """
    info, summary = _read(run_dir / "run_info.json"), _read(run_dir / "train_summary.json")
    stem, words = cpu_kind(cpu_flags() if flags is None else flags)
    tests = {}
    for search, name in FILES.items():
        t = _read(run_dir / name)
        tests[search] = {m: round(t[m]["score"], 2) for m in ("bleu", "chrf")}
        tests[search]["signature"] = t["bleu"]["signature"]
    return stem, {
        "cpu_kind": words,
        "cpu": cpu_line(),
        "cpu_report": cpu_report(),
        "code": (info.get("git_commit") or info["versions"]["seq2seq"])[:7],
        "torch": info["versions"]["torch"],
        "precision": info["runtime"]["precision"],
        "updates": summary["steps"],
        "train_minutes": round(summary["train_seconds"] / 60, 1),
        "stopped": summary["stopped"],
        "tests": tests,
    }


def table(records: list[dict]) -> str:
    """The demo table: a row per record, bf16 kinds first."""
    rows = [
        "| CPU kind | precision | code | updates (training minutes) | test greedy BLEU / chrF "
        "| test beam 5 BLEU / chrF |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in sorted(records, key=lambda r: (r["precision"] == "fp32", r["cpu_kind"])):
        g, b = r["tests"]["greedy"], r["tests"]["beam5"]
        rows.append(
            f"| {r['cpu_kind']} | {r['precision']} | {r['code']} | {r['updates']:,} "
            f"({r['train_minutes']:g}) | {g['bleu']:.2f} / {g['chrf']:.2f} "
            f"| {b['bleu']:.2f} / {b['chrf']:.2f} |"
        )
    return "\n".join(rows) + "\n"


def committed(folder: Path = RECORDS) -> list[dict]:
    """Every record in ``folder``."""
    return [_read(p) for p in sorted(folder.glob("*.json"))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Record a `make demo` run; render the demo table.")
    sub = ap.add_subparsers(dest="what", required=True)
    rec = sub.add_parser("record", help="keep RUN's numbers in docs/results/demo/<kind>.json")
    rec.add_argument("run", type=Path, help="the demo's run folder (runs/multi30k/bahdanau)")
    sub.add_parser("table", help="render the table from docs/results/demo/*.json")
    for p in sub.choices.values():
        p.add_argument("--write", type=Path, help="put the table between its markers in this doc")
    args = ap.parse_args(argv)
    try:
        if args.what == "record":
            stem, r = record(args.run)
            atomic_write_text(RECORDS / f"{stem}.json", json.dumps(r, indent=2) + "\n")
            print(f"recorded {RECORDS / stem}.json: {r['cpu']}")
        text = table(committed())
        if args.write is None:
            print(text, end="")
            return 0
        doc = args.write.read_text(encoding="utf-8")
        atomic_write_text(args.write, with_table(doc, NAME, text, BY))
    except OSError as e:
        print(f"error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyError as e:
        where = args.run if args.what == "record" else RECORDS
        print(f"error: {where}: no field {e} in its JSON; run `make demo` again", file=sys.stderr)
        return 2
    return 0


__all__ = ["BY", "NAME", "committed", "cpu_kind", "record", "table", "table_in"]

if __name__ == "__main__":
    sys.exit(main())

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

from best_report import markers, table_in, with_table

from seq2seq.atomic import atomic_write_text
from seq2seq.cpu_features import cpu_flags, cpu_line, cpu_report

RECORDS = Path(__file__).resolve().parents[1] / "docs" / "results" / "demo"
NAME, BY = "demo table", "docs/results/demo/*.json by scripts/demo_report.py"
CONFIG_NAME, TEST_SET = "multi30k-bahdanau", "test_2016_flickr"  # what make demo trains, scores
# CPU kind (what decides the demo's precision): (record file stem, words), the first whose flag
# the CPU has; else fp32-only.
KINDS = {
    "amx_bf16": ("amx", "bf16 with AMX (`amx_bf16`)"),
    "avx512_bf16": ("avx512-bf16", "bf16 with `avx512_bf16`"),
}
NO_BF16 = ("no-bf16", "no native bf16")
SEARCHES = {"greedy": ("test_greedy.json", "greedy", 1), "beam5": ("test_beam5.json", "beam", 5)}
FIX = "restore it (git checkout docs/results/demo) or delete it"
BUSY = (
    "while the load average"  # train.log's warning of a speed dip while other work held the cores
)


def cpu_kind(flags: frozenset[str]) -> tuple[str, str]:
    """(record file stem, words) of the CPU kind that ``flags`` make (``KINDS``)."""
    return next((v for f, v in KINDS.items() if f in flags), NO_BF16)


def _read(path: Path, what: str = "run `make demo` to the end first"):
    """``path``'s JSON, or ValueError naming it, with ``what`` to do."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path}: not found; {what}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not JSON ({e}); {what}") from None


def _refuse(path: Path, why: str) -> ValueError:
    return ValueError(f"{path}: {why}")


def _fields(path: Path, d, get, what: str = "run `make demo` again"):
    """``get(d)``, or ValueError naming ``path`` when ``d`` lacks a field or has another type."""
    try:
        return get(d)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as e:
        why = f"not what `make demo` writes ({type(e).__name__}: {e}); {what}"
        raise _refuse(path, why) from None


def _test(run_dir: Path, search: str, best_step) -> dict:
    """One test file's scores, checked to be ``make demo``'s search on its test set at the run's
    last best.pt."""
    name, method, beam = SEARCHES[search]
    path = run_dir / name
    t = _read(path)
    hyp, used, step = _fields(
        path,
        t,
        lambda t: (
            str(t["hyp"]),
            [t["decode"][k] for k in ("method", "beam_size")],
            t["checkpoint"]["step"],
        ),
    )
    if TEST_SET not in hyp or used != [method, beam]:
        raise _refuse(path, f"not {method} search (beam {beam}) on {TEST_SET}; run `make demo`")
    if step != best_step:
        raise _refuse(
            path,
            f"scored at step {step}, the run's best.pt is from step {best_step}; "
            "run `make demo` again to score it anew",
        )
    return _fields(
        path,
        t,
        lambda t: {
            "bleu": round(float(t["bleu"]["score"]), 2),
            "chrf": round(float(t["chrf"]["score"]), 2),
            "bleu_signature": str(t["bleu"]["signature"]),
            "length_penalty": t["decode"].get("length_penalty"),
        },
    )


def record(run_dir: Path, flags: frozenset[str] | None = None) -> tuple[str, dict]:
    """(file stem, record) of a finished `make demo` run: its code, precision, updates, training
    minutes, busy-CPU warnings and test_2016_flickr greedy and beam-5 scores, and this machine's
    CPU (``flags`` default: this CPU's), which must be the one that trained it.

    Raises:
        ValueError: one line naming the file: not a folder, a file missing or unreadable, not
            the demo's config, a run stopped before its 20 minutes or trained off the CPU, a test
            file of another search, set or checkpoint, or a bf16 run on a CPU without bf16.
    """
    if not run_dir.is_dir():
        raise _refuse(
            run_dir, "no such folder; give the demo's run folder (runs/multi30k/bahdanau)"
        )
    config = run_dir / "config.yaml"
    if f"name: {CONFIG_NAME}\n" not in (
        config.read_text(errors="replace") if config.is_file() else ""
    ):
        raise _refuse(config, f"not {CONFIG_NAME}'s run (`make demo` trains it)")
    info_path, summary_path = run_dir / "run_info.json", run_dir / "train_summary.json"
    info, summary = _read(info_path), _read(summary_path)
    device, precision, code, torch = _fields(
        info_path,
        info,
        lambda i: (
            i["runtime"]["device"],
            i["runtime"]["precision"],
            (i.get("git_commit") or i["versions"]["seq2seq"])[:7],
            i["versions"]["torch"],
        ),
    )
    steps, seconds, stopped, best = _fields(
        summary_path,
        summary,
        lambda s: (
            int(s["steps"]),
            float(s["train_seconds"]),
            s["stopped"],
            s["best_step"],
        ),
    )
    if stopped != "max_time":
        raise _refuse(
            summary_path,
            f"the run stopped ({stopped}) before its 20 minutes; `make demo` resumes it",
        )
    if device != "cpu":
        raise _refuse(info_path, f"trained on {device}: the demo table is of CPUs")
    flags = cpu_flags() if flags is None else flags
    stem, words = cpu_kind(flags)
    if precision == "bf16" and stem == NO_BF16[0]:
        raise _refuse(
            info_path,
            "trained in bf16, and this CPU has no native bf16: run "
            "`make demo-record` on the machine that trained it",
        )
    log = run_dir / "train.log"
    busy = log.read_text(errors="replace").count(BUSY) if log.is_file() else 0
    return stem, {
        "cpu_kind": words,
        "cpu": cpu_line(),
        "cpu_report": cpu_report(),
        "code": code,
        "torch": torch,
        "precision": precision,
        "updates": steps,
        "train_minutes": round(seconds / 60, 1),
        "busy_warnings": busy,
        "tests": {search: _test(run_dir, search, best) for search in SEARCHES},
    }


def _row(r: dict) -> str:
    g, b, cpu = r["tests"]["greedy"], r["tests"]["beam5"], r["cpu_report"]
    return (
        f"| {r['cpu_kind']} | {cpu['cpu_model']}, {cpu['cores']} cores | {r['precision']} "
        f"| {r['code']} | {r['updates']:,} ({r['train_minutes']:g}) | {r['busy_warnings']} "
        f"| {g['bleu']:.2f} / {g['chrf']:.2f} | {b['bleu']:.2f} / {b['chrf']:.2f} |"
    )


def table(records: dict[str, dict]) -> str:
    """The demo table: a row per record (by file stem), bf16 kinds first.

    Raises:
        ValueError: no record, a file of no CPU kind, or one that is not a record (named).
    """
    if not records:
        raise ValueError(f"{RECORDS}: no record; run `make demo`, then `make demo-record`")
    rows = [
        "| CPU kind | CPU | precision | code | updates (training minutes) | busy-CPU warnings "
        "| test greedy BLEU / chrF | test beam 5 BLEU / chrF |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    stems = [v[0] for v in (*KINDS.values(), NO_BF16)]
    for stem in sorted(records, key=lambda x: stems.index(x) if x in stems else -1):
        path = RECORDS / f"{stem}.json"
        if stem not in stems:
            raise _refuse(path, f"no CPU kind is named so ({', '.join(stems)}); delete it")
        rows.append(_fields(path, records[stem], _row, FIX))
    return "\n".join(rows) + "\n"


def committed() -> dict[str, dict]:
    """Every record in ``RECORDS``, by file stem."""
    return {p.stem: _read(p, FIX) for p in sorted(RECORDS.glob("*.json"))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True, metavar="{record,table}")
    rec = sub.add_parser(
        "record",
        help="keep a finished demo's numbers as this CPU kind's record",
        description="Check RUN is a finished `make demo` of this machine and keep its numbers "
        "in docs/results/demo/<CPU kind>.json (replacing that kind's record: review and commit "
        "it); then render the table.",
    )
    rec.add_argument("run", type=Path, metavar="RUN", help="the demo's run folder")
    sub.add_parser(
        "table",
        help="render the table from docs/results/demo/*.json",
        description="Render the demo table from the committed records.",
    )
    for p in sub.choices.values():
        p.add_argument(
            "--write",
            type=Path,
            metavar="DOC",
            help="put the table between its markers in DOC (docs/results/README.md)",
        )
    args = ap.parse_args(argv)
    try:
        records = committed()
        if args.what == "record":
            stem, r = record(args.run)
            records[stem] = r
        text = table(records)  # every check before anything is written
        doc = None
        if args.write is not None:
            if not args.write.is_file():
                raise _refuse(args.write, "not a file; give the doc that holds the demo table")
            try:
                doc = with_table(args.write.read_text(encoding="utf-8"), NAME, text, BY)
            except UnicodeDecodeError:
                raise _refuse(args.write, "not UTF-8 text") from None
            except ValueError as e:
                raise _refuse(args.write, str(e)) from None
        if args.what == "record":
            atomic_write_text(RECORDS / f"{stem}.json", json.dumps(r, indent=2) + "\n")
            print(f"recorded {RECORDS / stem}.json ({r['cpu']}); review it and commit it")
        if doc is None:
            print(text, end="")
        else:
            atomic_write_text(args.write, doc)
    except OSError as e:
        print(f"error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


__all__ = ["BY", "NAME", "committed", "cpu_kind", "markers", "record", "table", "table_in"]

if __name__ == "__main__":
    sys.exit(main())

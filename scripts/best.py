#!/usr/bin/env python
"""`make best`: train model families to convergence on Multi30k de->en and score them once.

For every family named (configs/multi30k/best/<family>.yaml), in RUNS/<family>/:
  1. train, or resume: early stopping on validation BLEU, at most 60 minutes (train.max_time);
  2. choose the checkpoint on validation (greedy BLEU): best.pt, the average of the best 5
     (best-step<N>.pt) and the average of the last 5 (step<N>.pt) checkpoints;
  3. `seq2seq tune-decode` on validation with that checkpoint: greedy, and beam sizes x length
     penalties; the best is written to RUN/decode.yaml;
  4. score test_2016_flickr and test_2017_flickr once, greedy and with the tuned search: BLEU with
     its signature, chrF, BLEU by source length;
then write RUNS/results.json and RUNS/README.md (the Converged table, the averaging and the
sweep). Every step is skipped when its output exists, so a rerun continues where it stopped.

usage: scripts/best.py [FAMILY ...] [--runs DIR] [--jobs N] [--beams 5,10] [--alphas 0,0.6,1]
       (env: SEQ2SEQ_DATA_DIR; families default to transformer and luong_concat)
--jobs N trains N families side by side with cores/N torch threads each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs" / "multi30k" / "best"
DEFAULT = ["transformer", "luong_concat"]
TESTS = ["test_2016_flickr", "test_2017_flickr"]
AVERAGE_K = 5


class Failed(Exception):
    """A step failed; its one-line reason."""


def say(family: str, msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {family}: {msg}", flush=True)


def seq2seq(args: list, log: Path, threads: int | None) -> None:
    """Run the seq2seq CLI; its stderr goes to ``log`` (its stdout is dropped: every command
    used here writes its results into the run folder); a failure raises ``Failed`` with its last
    stderr line."""
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    cmd = [sys.executable, "-m", "seq2seq", *map(str, args)]
    with open(log, "a", encoding="utf-8") as err:
        err.write(f"$ {' '.join(cmd[2:])}\n")
        err.flush()
        proc = subprocess.run(
            cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, text=True, check=False
        )
    if proc.returncode == 130:  # train saved last.pt and said how to resume
        raise Failed(f"{cmd[2]} interrupted; run the same command again to resume it (see {log})")
    if proc.returncode != 0:
        lines = log.read_text(encoding="utf-8").strip().splitlines()
        raise Failed(f"{cmd[2]} exited {proc.returncode}: {lines[-1] if lines else ''} (see {log})")


def corpus(prefix: str, lang: str) -> Path:
    from seq2seq.data.text import resolve_corpus_file

    return resolve_corpus_file(prefix, lang)


def train(family: str, cfg: Path, run: Path, log: Path, threads: int | None) -> dict:
    summary = run / "train_summary.json"
    if (run / "last.pt").is_file():
        say(family, f"training: resuming {run} (a finished run stops at once)")
        args = ["train", cfg, "--resume", run]
    else:
        say(family, f"training {cfg} into {run}")
        args = ["train", cfg, "--run-dir", run]
    if threads:
        args += ["--set", f"train.num_threads={threads}"]
    seq2seq(args, log, threads)  # train writes RUN/train_summary.json itself
    return json.loads(summary.read_text())


def _count(run: Path, prefix: str) -> int:
    return sum(1 for p in run.glob(f"{prefix}*.pt") if p.stem[len(prefix) :].isdigit())


def choose_checkpoint(family: str, run: Path, log: Path, threads: int | None) -> dict:
    """Greedy validation BLEU of best.pt and of the averages; the highest is used for testing."""
    from seq2seq.config import load_config

    cfg = load_config(run / "config.yaml")
    val_src, val_ref = (
        corpus(cfg.data.valid, cfg.data.src_lang),
        corpus(cfg.data.valid, cfg.data.tgt_lang),
    )
    cands = {"best.pt": None}
    for kind, prefix in (("best", "best-step"), ("last", "step")):
        k = min(AVERAGE_K, _count(run, prefix))
        if k >= 2:
            cands[f"avg_{kind}{k}.pt"] = ["average", "-c", run, f"--{kind}", k]
    scores = {}
    for name, avg in cands.items():
        out = run / f"val_{Path(name).stem}.json"
        if not out.is_file():
            if avg is not None:
                say(family, f"averaging: {' '.join(map(str, avg[3:]))} -> {name}")
                seq2seq([*avg, "-o", run / name], log, threads)
            say(family, f"validation BLEU (greedy) of {name}")
            seq2seq(
                [
                    "eval",
                    "-c",
                    run / name,
                    "--src",
                    val_src,
                    "--ref",
                    val_ref,
                    "--method",
                    "greedy",
                    "--bleu",
                    "--json",
                    out,
                ],
                log,
                threads,
            )
        scores[name] = json.loads(out.read_text())["bleu"]["score"]
    chosen = max(scores, key=lambda n: (scores[n], n == "best.pt"))
    say(
        family,
        "validation BLEU "
        + ", ".join(f"{n} {s:.2f}" for n, s in scores.items())
        + f": testing {chosen}",
    )
    return {"val_bleu": scores, "chosen": chosen}


def tune(family: str, run: Path, chosen: str, log: Path, threads: int | None, grid: list) -> dict:
    out = run / "tune_decode.json"
    if not (out.is_file() and (run / "decode.yaml").is_file()):
        say(family, f"tune-decode on validation with {chosen}")
        seq2seq(["tune-decode", "-c", run / chosen, *grid], log, threads)
    result = json.loads(out.read_text())
    b = result["best"]
    say(
        family,
        f"tuned search: {b['method']} K={b['beam_size']} alpha={b['length_penalty']:g} "
        f"BLEU {b['bleu']:.2f} (greedy {result['greedy_bleu']:.2f})",
    )
    return result


def score(family: str, run: Path, chosen: str, log: Path, threads: int | None) -> dict:
    from seq2seq.config import load_config

    cfg = load_config(run / "config.yaml")
    scores = {}
    for test in TESTS:
        src = corpus(f"multi30k/{test}", cfg.data.src_lang)
        ref = corpus(f"multi30k/{test}", cfg.data.tgt_lang)
        for search in ("greedy", "tuned"):
            out = run / f"{test}_{search}.json"
            if not out.is_file():
                say(family, f"scoring {test}, {search}")
                extra = ["--method", "greedy"] if search == "greedy" else []
                seq2seq(
                    [
                        "eval",
                        "-c",
                        run / chosen,
                        "--src",
                        src,
                        "--ref",
                        ref,
                        *extra,
                        "--bleu",
                        "--chrf",
                        "--by-length",
                        "--output",
                        run / f"{test}_{search}.hyp.en",
                        "--json",
                        out,
                    ],
                    log,
                    threads,
                )
            scores[f"{test}_{search}"] = json.loads(out.read_text())
    return scores


def pipeline(family: str, args: argparse.Namespace, threads: int | None) -> dict:
    runs = args.runs
    run = runs / family
    log = runs / f"{family}.log"
    runs.mkdir(parents=True, exist_ok=True)
    summary = train(family, args.configs / f"{family}.yaml", run, log, threads)
    choice = choose_checkpoint(family, run, log, threads)
    grid = [
        *(["--beams", args.beams] if args.beams else []),
        *(["--alphas", args.alphas] if args.alphas else []),
    ]
    tuned = tune(family, run, choice["chosen"], log, threads, grid)
    tests = score(family, run, choice["chosen"], log, threads)
    say(family, "done")
    info = json.loads((run / "run_info.json").read_text())
    return {
        "family": family,
        "parameters": info["parameters"],
        "train": summary,
        **choice,
        "tune": tuned,
        "tests": tests,
    }


def _row(r: dict) -> str:
    t, tr = r["tests"], r["train"]
    cells = []
    for test in TESTS:
        for search in ("greedy", "tuned"):
            s = t[f"{test}_{search}"]
            cells.append(f"{s['bleu']['score']:.2f} / {s['chrf']['score']:.2f}")
    return (
        f"| {r['family']} | {tr['epochs']} | {tr['steps']} | {tr['train_seconds'] / 60:.0f} | "
        f"{r['parameters']:,} | {r['chosen']} | " + " | ".join(cells) + " |"
    )


def report(results: list[dict], runs: Path, wall: float) -> str:
    b = results[0]["tests"][f"{TESTS[0]}_greedy"]["bleu"]["signature"]
    lines = [
        "# Converged models on Multi30k de->en (`make best`)",
        "",
        f"Wall time of this invocation: {wall / 60:.1f} minutes. BLEU signature: `{b}`.",
        "",
        "| family | epochs done | updates | train min | parameters | checkpoint | "
        "2016 greedy BLEU / chrF | 2016 tuned | 2017 greedy | 2017 tuned |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *[_row(r) for r in results],
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
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "families", nargs="*", help="config names in --configs [default: " + " ".join(DEFAULT) + "]"
    )
    ap.add_argument("--runs", type=Path, default=Path("runs/best"))
    ap.add_argument("--configs", type=Path, default=CONFIGS, help="one <family>.yaml each")
    ap.add_argument("--jobs", type=int, default=1, help="families trained side by side")
    ap.add_argument("--beams", default="5,10", help="tune-decode --beams [default: 5,10]")
    ap.add_argument(
        "--alphas",
        default="0,0.5,1,1.5",
        help="tune-decode --alphas [default: 0,0.5,1,1.5: a coarser grid than tune-decode's own, "
        "as every setting decodes the validation set once]",
    )
    args = ap.parse_args(argv)
    families_known = sorted(p.stem for p in args.configs.glob("*.yaml"))
    families = args.families or DEFAULT
    unknown = [f for f in families if f not in families_known]
    if unknown:
        known = ", ".join(families_known)
        print(f"error: unknown family {unknown[0]!r} in BEST: choose from {known}", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print("error: --jobs must be at least 1", file=sys.stderr)
        return 2
    threads = max(1, (os.cpu_count() or 1) // args.jobs) if args.jobs > 1 else None
    t0 = time.time()
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(lambda f: pipeline(f, args, threads), families))
    except Failed as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: run the same command again to continue", file=sys.stderr)
        return 130
    text = report(results, args.runs, time.time() - t0)
    (args.runs / "results.json").write_text(json.dumps(results, indent=2))
    (args.runs / "README.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

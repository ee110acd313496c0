#!/usr/bin/env python
"""`make best`: train model families to convergence on Multi30k de->en and score them once.

For every family named (configs/multi30k/best/<family>.yaml), in RUNS/<family>/:
  1. train, or resume: early stopping on validation BLEU, up to the config's train.max_time;
  2. choose the checkpoint on validation (greedy BLEU): best.pt, the average of the best 5
     (best-step<N>.pt) and the average of the last 5 (step<N>.pt) checkpoints;
  3. `seq2seq tune-decode` on validation with that checkpoint: greedy, and beam sizes x length
     penalties; the best is written to RUN/decode.yaml;
  4. score test_2016_flickr and test_2017_flickr once, greedy and with the tuned search: BLEU with
     its signature, chrF, BLEU by source length;
then write RUNS/results.json and RUNS/README.md (the Converged table, the averaging and the
sweep). Every step is skipped when its output exists, so a rerun continues where it stopped.

Families default to transformer and luong_concat. The test sets are always
$SEQ2SEQ_DATA_DIR/multi30k/test_2016_flickr and test_2017_flickr, in the config's language pair;
scoring takes about 10 minutes a family after its training. --jobs N trains N families side by
side with cores/N torch threads each. A run trained further since it was scored, or a new
--beams/--alphas grid, makes the steps after training run again (RUN/best_inputs.json records
what they used). Ctrl-C or SIGTERM stops every step in progress (training saves last.pt); a
family that fails is reported at once, the others go on.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from best_report import BUCKETS, TESTS, report

from seq2seq.atomic import atomic_write_text
from seq2seq.decoding.tune import parse_beams, parse_floats

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs" / "multi30k" / "best"
DEFAULT = ["transformer", "luong_concat"]
AVERAGE_K = 5
INPUTS = "best_inputs.json"


class Failed(Exception):
    """A step failed; its one-line reason."""


class Interrupted(Exception):
    """Ctrl-C or SIGTERM reached this script: no step is started after it."""


STOP = threading.Event()
CHILDREN: set[subprocess.Popen] = set()
CHILDREN_LOCK = threading.Lock()


def on_signal(signum, frame) -> None:
    """Pass Ctrl-C (SIGINT) or SIGTERM on to every running step, once per signal: the steps run
    in their own sessions, so a terminal's Ctrl-C reaches them only this way, once (a second
    Ctrl-C aborts a training step at once, as it does for `seq2seq train`)."""
    STOP.set()
    with CHILDREN_LOCK:
        for proc in CHILDREN:
            proc.send_signal(signum)


def say(family: str, msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {family}: {msg}", flush=True)


def seq2seq(args: list, log: Path, threads: int | None) -> None:
    """Run the seq2seq CLI; its stderr goes to ``log`` (its stdout is dropped: every command
    used here writes its results into the run folder).

    Raises:
        Interrupted: a signal came before or during the step.
        Failed: the step exited non-zero, with its last stderr line.
    """
    # PYTHONSAFEPATH: -m must not import a seq2seq/ folder in the current directory (Python 3.11+)
    env = {**os.environ, "PYTHONSAFEPATH": "1"}
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    cmd = [sys.executable, "-m", "seq2seq", *map(str, args)]
    name = f"seq2seq {args[0]}"
    with open(log, "a", encoding="utf-8") as err:
        err.write(f"$ {' '.join(cmd[2:])}\n")
        err.flush()
        with CHILDREN_LOCK:  # a signal handled before this point stops the step unstarted
            if STOP.is_set():
                raise Interrupted
            proc = subprocess.Popen(
                cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, start_new_session=True
            )
            CHILDREN.add(proc)
        try:
            code = proc.wait()
        finally:
            with CHILDREN_LOCK:
                CHILDREN.discard(proc)
    if code == 130 or STOP.is_set():  # train saved last.pt and said how to resume
        raise Interrupted
    if code != 0:
        lines = log.read_text(encoding="utf-8").strip().splitlines()
        raise Failed(f"{name} exited {code}: {lines[-1] if lines else ''} (see {log})")


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
                # --overwrite: an interrupted run of this script may have written it already
                seq2seq([*avg, "-o", run / name, "--overwrite"], log, threads)
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
                        "--buckets",
                        BUCKETS,
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


def invalidate(family: str, run: Path, summary: dict, grid: dict) -> None:
    """Delete what the steps after training wrote when their inputs changed since: the run was
    trained further (every later step again), or the search grid is new (tuning and the tuned
    scores again). RUN/best_inputs.json records the inputs of the files that stay."""
    path = run / INPUTS
    now = {"trained_steps": summary["steps"], **grid}
    before = json.loads(path.read_text()) if path.is_file() else None
    if before == now:
        return
    stale: list[Path] = []
    if before is not None and before["trained_steps"] != now["trained_steps"]:
        say(
            family,
            f"trained further since it was scored (update {before['trained_steps']} -> "
            f"{now['trained_steps']}): choosing, tuning and scoring again",
        )
        stale += [*run.glob("val_*.json"), *run.glob("avg_*.pt"), *run.glob("test_*")]
        stale.append(run / "tune_decode.json")
    elif before is not None:
        say(family, f"the search grid changed ({_grid(before)} -> {_grid(now)}): tuning again")
        stale += [*run.glob("test_*_tuned*"), run / "tune_decode.json"]
    for f in stale:
        f.unlink(missing_ok=True)
    atomic_write_text(path, json.dumps(now, indent=2) + "\n")


def _grid(inputs: dict) -> str:
    return f"beams {inputs['beams']}, alphas {inputs['alphas']}"


def pipeline(family: str, args: argparse.Namespace, threads: int | None) -> dict:
    runs = args.runs
    run = runs / family
    log = runs / f"{family}.log"
    summary = train(family, args.configs / f"{family}.yaml", run, log, threads)
    invalidate(family, run, summary, {"beams": args.beams, "alphas": args.alphas})
    choice = choose_checkpoint(family, run, log, threads)
    grid = ["--beams", args.beams, "--alphas", args.alphas]
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


def check_args(args: argparse.Namespace) -> str:
    """The reason the command line cannot run, checked before any training ('' when it can)."""
    known = sorted(p.stem for p in args.configs.glob("*.yaml"))
    if not known:
        return f"--configs {args.configs}: no <family>.yaml there"
    unknown = [f for f in args.families or DEFAULT if f not in known]
    if unknown:
        return f"unknown family {unknown[0]!r} (BEST): choose from {', '.join(known)}"
    if args.jobs < 1:
        return "--jobs must be at least 1"
    if args.runs.exists() and not args.runs.is_dir():
        return f"--runs {args.runs}: a file, not a folder; give a folder for the runs"
    try:
        args.beams = ",".join(map(str, parse_beams(args.beams)))
        args.alphas = ",".join(f"{a:g}" for a in parse_floats(args.alphas, "--alphas"))
    except ValueError as e:
        return str(e)
    return ""


def run_all(families: list[str], args: argparse.Namespace) -> tuple[list[dict], list[str]]:
    """Every family's pipeline, ``args.jobs`` at a time: the results in the order asked for, and
    the families that failed (each reported as it fails)."""
    threads = max(1, (os.cpu_count() or 1) // args.jobs) if args.jobs > 1 else None
    done: dict[str, dict] = {}
    failed: list[str] = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(pipeline, f, args, threads): f for f in families}
        for fut in as_completed(futures):
            family = futures[fut]
            try:
                done[family] = fut.result()
            except Interrupted:
                say(family, "interrupted")
            except Failed as e:
                failed.append(family)
                print(f"error: {family}: {e}", file=sys.stderr, flush=True)
    return [done[f] for f in families if f in done], failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Each step is a seq2seq command, logged to RUNS/<family>.log.",
    )
    ap.add_argument(
        "families", nargs="*", help="config names in --configs [default: " + " ".join(DEFAULT) + "]"
    )
    ap.add_argument(
        "--runs",
        type=Path,
        default=Path("runs/best"),
        help="folder of the runs (RUNS/<family>/), results.json and README.md [default: runs/best]",
    )
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
    problem = check_args(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    families = args.families or DEFAULT
    try:
        args.runs.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"error: --runs {args.runs}: cannot create it ({e.strerror})", file=sys.stderr)
        return 2
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    t0 = time.time()
    results, failed = run_all(families, args)
    if STOP.is_set():
        print("interrupted: run the same command again to continue", file=sys.stderr)
        return 130
    if results:
        text = report(results, args.runs, time.time() - t0)
        atomic_write_text(args.runs / "results.json", json.dumps(results, indent=2))
        atomic_write_text(args.runs / "README.md", text)
        print(text)
    if failed:
        print(f"error: failed: {', '.join(failed)} (see {args.runs}/<family>.log)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

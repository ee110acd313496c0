"""``torch.compile`` of the training step's model at one static batch shape, against eager: target
tokens/s of the training loop's own update (``bench_train.step_setup``) on one batch of a Multi30k
epoch, repeated; each (batch, mode) in a fresh process, its warm-up (compiling) timed apart.

Usage:
    python scripts/bench_compile.py [CONFIG] [--precision bf16] [--batches 7 25]
        [--modes eager default max-autotune-no-cudagraphs] [--updates 15] [--rounds 3]

An upper bound for a compiled step: one shape never recompiles, where an epoch of a run brings
about 150 (``dynamic=True`` compiles once for all, and was slower still: docs/results/README.md).
Default config: configs/multi30k/transformer.yaml. Needs the quiet machine (waits while
/tmp/seq2seq.measuring exists). Data from $SEQ2SEQ_DATA_DIR (default ../shared/data).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from bench_train import LOCK, REPO, step_setup, tokenizer_for

from seq2seq.config import load_config
from seq2seq.cpu_features import cpu_line
from seq2seq.data.tokenizer import Tokenizer


def worker(a) -> dict:
    """``a.rounds`` x ``a.updates`` updates on batch ``a.batch`` after 3 warm-up updates."""
    cfg = load_config(a.config)
    tok = Tokenizer.load(tokenizer_for(cfg, Path(a.work)))
    model, step, batches = step_setup(cfg, tok, torch.device("cpu"), a.precision, a.batch + 1)
    b = batches[a.batch]
    t0 = time.perf_counter()
    if a.mode != "eager":
        model.compile(dynamic=False, **({} if a.mode == "default" else {"mode": a.mode}))
    for _ in range(3):
        step(b)
    warmup, rates = time.perf_counter() - t0, []
    for _ in range(a.rounds):
        t0 = time.perf_counter()
        for _ in range(a.updates):
            step(b)
        rates.append(a.updates * b.n_tokens / (time.perf_counter() - t0))
    shape = f"src {tuple(b.src.shape)}, tgt {tuple(b.tgt_out.shape)}"
    return {"batch": a.batch, "shape": shape, "mode": a.mode, "warmup_s": warmup, "tok_s": rates}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("config", nargs="?", default=str(REPO / "configs/multi30k/transformer.yaml"))
    p.add_argument("--precision", default="bf16", choices=["fp32", "bf16"])
    p.add_argument("--batches", type=int, nargs="+", default=[7, 25])
    p.add_argument("--modes", nargs="+", default=["eager", "default"])
    p.add_argument("--updates", type=int, default=15)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--mode", default=None, help=argparse.SUPPRESS)
    p.add_argument("--work", default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker is not None:
        a.batch = a.worker
        print(json.dumps(worker(a)))
        return
    while LOCK.exists():
        print(f"waiting: {LOCK} exists (another measurement is running)", file=sys.stderr)
        time.sleep(20)
    print(
        f"{cpu_line()}\ntorch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{a.precision}, {Path(a.config).stem}: target tokens/s per round of {a.updates} updates"
    )
    with tempfile.TemporaryDirectory(prefix="seq2seq-compile-") as work:
        LOCK.write_text(f"bench_compile.py pid {os.getpid()}\n")
        try:
            for batch in a.batches:
                for mode in a.modes:
                    cmd = [sys.executable, __file__, a.config, "--worker", str(batch), "--work"]
                    cmd += [work, "--mode", mode, "--precision", a.precision]
                    cmd += ["--updates", str(a.updates), "--rounds", str(a.rounds)]
                    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
                    r = json.loads(out.stdout.splitlines()[-1])
                    rates = " / ".join(f"{x:,.0f}" for x in r["tok_s"])
                    print(
                        f"batch {batch} ({r['shape']}), {mode}: {rates} "
                        f"(warm-up {r['warmup_s']:.1f} s)",
                        flush=True,
                    )
        finally:
            LOCK.unlink(missing_ok=True)


if __name__ == "__main__":
    main()

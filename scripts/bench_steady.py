"""Training throughput over a run, not its first steps: target tokens/s per window of updates and
the resident high-water mark, for each oneDNN primitive cache capacity asked for.

Usage:
    python scripts/bench_steady.py [CONFIG ...] [--precision bf16] [--steps 400] [--window 50]
        [--onednn-cache 1024 16384] [--json bench_steady.json]

Default configs: configs/multi30k/transformer.yaml and bahdanau.yaml. Each (config, capacity) runs
in a fresh process with ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` set (1024 is oneDNN's default;
``import seq2seq`` sets 16384 when the environment sets nothing), the training loop's own update
(``bench_train.step_setup``) over a Multi30k epoch's batches in order (seed 1), repeated when
``--steps`` is longer than an epoch. ``bench_train.py`` measures 10 updates and cannot see what
this shows: with bf16 on the CPU every new batch shape builds oneDNN primitives, and a cache that
cannot hold an epoch's keeps building them. Needs the quiet machine (waits while
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
from bench_train import LOCK, REPO, kb, step_setup, tokenizer_for

from seq2seq.config import load_config
from seq2seq.cpu_features import cpu_line
from seq2seq.data.tokenizer import Tokenizer


def worker(a) -> dict:
    """``a.steps`` updates of ``a.config``; target tokens/s and VmHWM (MB) per ``a.window``."""
    cfg = load_config(a.config)
    tok = Tokenizer.load(tokenizer_for(cfg, Path(a.work)))
    _, step, batches = step_setup(cfg, tok, torch.device("cpu"), a.precision, 10**9)
    windows, tokens, t0 = [], 0, time.perf_counter()
    for i in range(a.steps):
        b = batches[i % len(batches)]
        step(b)
        tokens += b.n_tokens
        if (i + 1) % a.window == 0:
            now = time.perf_counter()
            windows.append(
                {"updates": i + 1, "tok_s": tokens / (now - t0), "hwm_mb": kb("VmHWM") // 1024}
            )
            tokens, t0 = 0, now
    return {"epoch_batches": len(batches), "windows": windows}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("configs", nargs="*")
    p.add_argument("--precision", default="bf16", choices=["fp32", "bf16"])
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--window", type=int, default=50)
    p.add_argument("--onednn-cache", type=int, nargs="+", default=[1024, 16384])
    p.add_argument("--json", default=None, help="also write the windows here")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--work", default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        a.config = a.worker
        print(json.dumps(worker(a)))
        return
    configs = a.configs or [
        str(REPO / f"configs/multi30k/{n}.yaml") for n in ("transformer", "bahdanau")
    ]
    while LOCK.exists():
        print(f"waiting: {LOCK} exists (another measurement is running)", file=sys.stderr)
        time.sleep(20)
    runs = []
    with tempfile.TemporaryDirectory(prefix="seq2seq-steady-") as work:
        LOCK.write_text(f"bench_steady.py pid {os.getpid()}\n")
        try:
            for config in configs:
                for cache in a.onednn_cache:
                    env = {**os.environ, "ONEDNN_PRIMITIVE_CACHE_CAPACITY": str(cache)}
                    cmd = [sys.executable, __file__, "--worker", config, "--work", work]
                    cmd += [
                        "--precision",
                        a.precision,
                        "--steps",
                        str(a.steps),
                        "--window",
                        str(a.window),
                    ]
                    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
                    runs.append({"config": config, "onednn_cache": cache, **json.loads(out.stdout)})
        finally:
            LOCK.unlink(missing_ok=True)
    print(
        f"{cpu_line()}\ntorch {torch.__version__}, {torch.get_num_threads()} threads, {a.precision}"
    )
    for r in runs:
        name = Path(r["config"]).stem
        print(
            f"\n{name}, oneDNN cache {r['onednn_cache']} (an epoch: {r['epoch_batches']} batches)"
        )
        for w in r["windows"]:
            print(
                f"  updates to {w['updates']:>5}: {w['tok_s']:>7,.0f} target tokens/s, "
                f"VmHWM {w['hwm_mb']:,} MB"
            )
    if a.json:
        report = {
            "cpu": cpu_line(),
            "torch": torch.__version__,
            "precision": a.precision,
            "runs": runs,
        }
        Path(a.json).write_text(json.dumps(report, indent=2))
        print(f"\nwrote {a.json}")


if __name__ == "__main__":
    main()

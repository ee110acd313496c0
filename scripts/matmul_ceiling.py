"""The ceiling the matmul peak sets for a model's step: the rate of the model's own matmul shapes,
each timed alone, against the peak of ``bench_train.py`` (2048-square products).

Usage:
    python scripts/matmul_ceiling.py [--rows 3000] [--d-model 256] [--d-ff 1024] [--vocab 8000]
        [--precisions fp32 bf16] [--seconds 1.0]

Defaults: the zoo Transformer (configs/multi30k/transformer.yaml) on a 3,000-token batch. Each
``nn.Linear`` of its step as three products: the forward ``x @ W^T`` (rows x in -> rows x out),
the input gradient (rows x out -> rows x in) and the weight gradient (in x rows by rows x out),
each with ``F.linear``, as autograd runs them; best of ``--seconds`` of repeats. Needs the quiet
machine (waits while /tmp/seq2seq.measuring exists).
"""

from __future__ import annotations

import argparse
import time

import torch
from bench_train import DTYPES, LOCK, linear_rate, matmul_peak

from seq2seq.cpu_features import cpu_line


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=3000, help="tokens in a batch (B x T)")
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--d-ff", type=int, default=1024)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"])
    p.add_argument("--seconds", type=float, default=1.0)
    a = p.parse_args()
    while LOCK.exists():
        time.sleep(20)
    d, n, cpu = a.d_model, a.rows, torch.device("cpu")
    layers = {  # name -> (in, out)
        "attention projection": (d, d),
        "feed-forward in": (d, a.d_ff),
        "feed-forward out": (a.d_ff, d),
        "output projection": (d, a.vocab),
    }
    print(f"{cpu_line()}\ntorch {torch.__version__}, {torch.get_num_threads()} threads, {n} rows")
    for prec in a.precisions:
        dt = DTYPES[prec]
        peak = matmul_peak(cpu, prec)
        print(f"\n{prec}: peak (2048-square) {peak / 1e9:,.1f} GFLOP/s")
        print(f"{'layer (in -> out)':<36}{'forward':>16}{'input grad':>16}{'weight grad':>16}")
        for name, (i, o) in layers.items():
            x, w = torch.randn(n, i, dtype=dt), torch.randn(o, i, dtype=dt)
            g = torch.randn(n, o, dtype=dt)
            products = ((x, w), (g, w.t().contiguous()), (g.t().contiguous(), x.t().contiguous()))
            cells = [linear_rate(*ab, cpu, a.seconds) for ab in products]
            text = "".join(f"{r / 1e9:>9,.0f} ({100 * r / peak:>3.0f}%)" for r in cells)
            print(f"{f'{name} ({i} -> {o})':<36}{text}")


if __name__ == "__main__":
    main()

"""Attention with varying shapes: ``scaled_dot_product_attention`` forward + backward, ms a call,
for one shape repeated against a new shape every call, with the cuDNN backend on and off.

Why: length batching gives almost every step a new (B, S, T). A backend that builds a plan per
shape (cuDNN's SDPA on Hopper GPUs, for bf16 with d_k 64) pays that build on every new shape; a
repeated shape hides it. ``train.cudnn_sdp`` (default false) is the switch this measures.

Usage:
    python scripts/sdpa_bench.py [--device cuda] [--shapes 20] [--json out.json]

Prints one line per (backend setting, shape pattern) and, with --json, writes them. On the CPU the
cuDNN switch has no effect (both rows measure the same kernels); the script still runs, so it can
be checked without a GPU.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.nn.functional as F


def shapes(n: int, seed: int = 0) -> list[tuple[int, int, int]]:
    """``n`` distinct (B, S, T) shapes like length-batched Multi30k batches (3k-25k tokens)."""
    g = torch.Generator().manual_seed(seed)
    out: set[tuple[int, int, int]] = set()
    while len(out) < n:
        s = int(torch.randint(8, 64, (1,), generator=g))
        t = int(torch.randint(8, 64, (1,), generator=g))
        out.add((max(1, 6000 // max(s, t)), s, t))
    return sorted(out)


def one_call(b: int, s: int, t: int, heads: int, d_k: int, dtype, device) -> None:
    """Self- and cross-attention of a decoder layer, forward and backward, with a padding mask."""
    q = torch.randn(b, heads, t, d_k, device=device, dtype=dtype, requires_grad=True)
    k = torch.randn(b, heads, s, d_k, device=device, dtype=dtype, requires_grad=True)
    v = torch.randn(b, heads, s, d_k, device=device, dtype=dtype, requires_grad=True)
    mask = torch.ones(b, 1, 1, s, dtype=torch.bool, device=device)
    mask[0, ..., s // 2 :] = False  # one padded sentence: the boolean-mask path training uses
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out.float().sum().backward()


def measure(pattern: list[tuple[int, int, int]], heads, d_k, dtype, device) -> float:
    """Milliseconds a call over ``pattern`` (device time included: synchronised at the end)."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for b, s, t in pattern:
        one_call(b, s, t, heads, d_k, dtype, device)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / len(pattern) * 1000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--shapes", type=int, default=20)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--d-k", type=int, default=64)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    device = torch.device(a.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    new = shapes(a.shapes)
    rows = []
    for cudnn in (True, False):
        if device.type == "cuda":
            torch.backends.cuda.enable_cudnn_sdp(cudnn)
        repeated = [new[0]] * a.shapes
        measure(repeated[:3], a.heads, a.d_k, dtype, device)  # warm up this setting
        for name, pattern in (("repeated shape", repeated), ("new shape each call", new)):
            ms = measure(pattern, a.heads, a.d_k, dtype, device)
            rows.append({"cudnn_sdp": cudnn, "pattern": name, "calls": len(pattern), "ms": ms})
            on = "on " if cudnn else "off"
            print(f"sdpa_bench: cudnn_sdp {on}  {name:20s} {ms:8.2f} ms/call")
    info = {"device": str(device), "dtype": str(dtype), "torch": torch.__version__, "rows": rows}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
        info["cudnn"] = torch.backends.cudnn.version()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(info, f, indent=2)


if __name__ == "__main__":
    main()

"""Where a training step's time goes: torch.profiler over the training loop's own ``train_step``
(the zoo config's model, batches, optimizer and precision), each op's self time summed into a few
kinds, and the time between ops (Python, autograd and dispatch) as the rest of the wall time.

Usage:
    python scripts/profile_train.py [CONFIG ...] [--precision bf16] [--steps 6] [--warmup 2]
        [--top 15] [--json profile.json]

Default configs: configs/multi30k/transformer.yaml and bahdanau.yaml. The batches are the first of
a Multi30k epoch (seed 1), as ``scripts/bench_train.py`` takes them. Kinds, by op name (first
match): matmul (mm, addmm, bmm, linear, the fused RNN cells' gemms), attention (scaled dot-product
kernels), softmax and loss (log_softmax, nll_loss, cross_entropy, softmax), norms (layer_norm),
optimizer (fused Adam/AdamW, clipping's norms), embedding and indexing, dropout, casts and
copies (to, copy_, the autocast weight casts), elementwise (the rest of aten). "between ops" is the
step's wall time minus every op's self time. Needs the quiet machine (waits while
/tmp/seq2seq.measuring exists). Data from $SEQ2SEQ_DATA_DIR (default ../shared/data).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path

import torch
from bench_train import LOCK, REPO, step_setup, tokenizer_for
from torch.profiler import ProfilerActivity, profile

from seq2seq.config import load_config
from seq2seq.cpu_features import cpu_line
from seq2seq.data.tokenizer import Tokenizer

KINDS = [  # (kind, regex on the op name), first match wins
    ("attention", r"scaled_dot_product|flash_attention|_efficient_attention"),
    (
        "matmul",
        r"aten::(mm|addmm|bmm|matmul|linear|baddbmm|_addmm_activation)$|gru|lstm|mkldnn_rnn",
    ),
    ("softmax and loss", r"softmax|nll_loss|cross_entropy"),
    ("norms", r"layer_norm"),  # before optimizer, whose "norm$" would take native_layer_norm
    ("optimizer", r"_fused_adam|_foreach|adam|clip_grad|linalg_vector_norm|norm$"),
    ("embedding and indexing", r"embedding|index|gather|scatter|masked_fill|where"),
    ("dropout", r"dropout|bernoulli|random_"),
    ("casts and copies", r"aten::(to|_to_copy|copy_|clone|contiguous|cat|stack)$"),
    ("elementwise", r"aten::"),
]


def kind_of(name: str) -> str:
    return next((k for k, pat in KINDS if re.search(pat, name)), "other")


def profile_config(path: str, precision: str, steps: int, warmup: int, work: Path) -> dict:
    cfg = load_config(path)
    _, step, batches = step_setup(
        cfg,
        Tokenizer.load(tokenizer_for(cfg, work)),
        torch.device("cpu"),
        precision,
        warmup + steps,
    )
    for b in batches[:warmup]:
        step(b)
    tokens = sum(b.n_tokens for b in batches[warmup:])
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        for b in batches[warmup:]:
            out = step(b)
        float(out["loss"])
        wall = time.perf_counter() - t0
    ops: dict[str, float] = {}
    for e in prof.key_averages():
        if e.key.startswith("aten::") or e.key.startswith("mkldnn") or "Optimizer" in e.key:
            ops[e.key] = ops.get(e.key, 0.0) + e.self_cpu_time_total / 1e6
    by_kind: dict[str, float] = {}
    for name, s in ops.items():
        by_kind[kind_of(name)] = by_kind.get(kind_of(name), 0.0) + s
    by_kind["between ops"] = max(0.0, wall - sum(ops.values()))
    return {
        "config": path,
        "precision": precision,
        "steps": steps,
        "threads": torch.get_num_threads(),
        "wall_s": wall,
        "tokens_per_s": tokens / wall,
        "kinds": dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
        "top_ops": dict(sorted(ops.items(), key=lambda kv: -kv[1])[:40]),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("configs", nargs="*")
    p.add_argument("--precision", default="bf16", choices=["fp32", "bf16"])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--top", type=int, default=15, help="ops listed per config")
    p.add_argument("--json", default=None)
    a = p.parse_args()
    configs = a.configs or [
        str(REPO / "configs/multi30k/transformer.yaml"),
        str(REPO / "configs/multi30k/bahdanau.yaml"),
    ]
    while LOCK.exists():
        time.sleep(20)
    reports = []
    with tempfile.TemporaryDirectory(prefix="seq2seq-profile-") as tmp:
        LOCK.write_text("profile_train.py\n")
        try:
            for path in configs:
                reports.append(profile_config(path, a.precision, a.steps, a.warmup, Path(tmp)))
        finally:
            LOCK.unlink(missing_ok=True)
    print(f"{cpu_line()}\ntorch {torch.__version__}, {torch.get_num_threads()} threads")
    for r in reports:
        print(
            f"\n{Path(r['config']).stem}, {r['precision']}, {r['steps']} steps: "
            f"{r['wall_s']:.2f} s, {r['tokens_per_s']:,.0f} target tokens/s"
        )
        print(f"{'kind':<26}{'seconds':>9}{'share':>8}")
        for k, s in r["kinds"].items():
            print(f"{k:<26}{s:>9.2f}{100 * s / r['wall_s']:>7.1f}%")
        print(f"top {a.top} ops by self time:")
        for name, s in list(r["top_ops"].items())[: a.top]:
            print(f"  {name:<58}{s:>8.2f} s  {kind_of(name)}")
    if a.json:
        Path(a.json).write_text(json.dumps(reports, indent=2))


if __name__ == "__main__":
    main()

"""Training throughput per model config: target tokens/s, peak memory, and model FLOP/s against a
matmul peak measured in the same run; plus peak memory as the training corpus grows x1 -> x10.

Usage:
    python scripts/bench_train.py [CONFIG ...] [--steps 10] [--warmup 1] [--precisions fp32 bf16]
        [--device cpu|cuda] [--scales 1 10] [--json bench_train.json]

``make bench-train`` runs it on configs/multi30k/*.yaml. Each (config, precision) trains ``steps``
updates after ``warmup`` on the first batches of a Multi30k epoch with the training loop's own
``train_step`` and optimizer (``step.build_optimizer``: fused, the config's Adam or AdamW; batches
padded as the run would pad them, nothing read from the device until the end), in a fresh process,
so its peak
memory is its own (CPU: VmHWM, the resident high-water mark; CUDA: torch's peak allocation). Model
FLOPs are counted by seq2seq/models/flops.py (6 x weights used per token on each side, output
projection included, embedding lookups excluded, plus the attention matmuls; the formula is printed
with each figure). The matmul peak is the best rate of large square matmuls in each precision,
measured first. Every (config, precision) in ``--precisions`` (default fp32 and bf16) is measured,
and a last table puts each config's fp32 and bf16 tokens/s side by side with their ratio (what
``train.precision: auto``'s probe decides on, in miniature). The CPU's model name and its bf16,
VNNI and AMX flags head every table and go into the JSON (``cpu``).

The corpus rows open Multi30k x1 and x10 (the training files repeated, in a temporary folder) with
``data.backend`` arrow and memory, make every batch of one epoch, and report the peak anonymous
resident memory (RssAnon sampled every 2 ms; the Arrow files' mapped pages are page cache, counted
in VmHWM, which is reported too). The arrow row must stay flat; the memory row shows why.

Needs the quiet machine: runs nothing while /tmp/seq2seq.measuring exists, and holds it while it
measures. Data from $SEQ2SEQ_DATA_DIR (default ../shared/data). Imports the installed package
(``make install``) or the one on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from seq2seq.config import load_config
from seq2seq.cpu_features import cpu_line, cpu_model, cpu_report
from seq2seq.data.arrow import open_arrow
from seq2seq.data.text import load_split, tokenize_pairs
from seq2seq.data.tokenizer import PAD, Tokenizer
from seq2seq.models import build_model
from seq2seq.models.flops import formula, step_flops
from seq2seq.runtime import configure_device, resolve_pad_multiple, seed_everything
from seq2seq.training.distributed import DistInfo
from seq2seq.training.step import TeacherForcing, build_optimizer, train_step

REPO = Path(__file__).resolve().parents[1]

LOCK = Path("/tmp/seq2seq.measuring")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def kb(key: str) -> int:
    """A /proc/self/status field in kB (VmHWM, RssAnon)."""
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith(key))


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak(device: torch.device, precision: str, seconds: float = 2.0) -> float:
    """Best FLOP/s of one n x n by n x n product (n 2048 on CPU, 8192 on CUDA) within ``seconds``.

    Measured with ``F.linear``, the op ``nn.Linear`` runs: on a CPU without bf16 instructions its
    bf16 path (oneDNN) is ten times faster than ``torch.mm``'s, so ``mm`` would understate the peak.
    """
    n = 8192 if device.type == "cuda" else 2048
    a, b = (torch.randn(n, n, device=device).to(DTYPES[precision]) for _ in range(2))
    return linear_rate(a, b, device, seconds)


def linear_rate(a: torch.Tensor, b: torch.Tensor, device: torch.device, seconds: float) -> float:
    """Best FLOP/s of ``F.linear(a, b)`` (a: M x K, b: N x K) within ``seconds``, after one call."""
    F.linear(a, b)
    sync(device)
    best, end = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        F.linear(a, b)
        sync(device)
        best = max(best, 2 * a.shape[0] * a.shape[1] * b.shape[0] / (time.perf_counter() - t0))
    return best


def tokenizer_for(cfg, work: Path) -> Path:
    """Train the config's tokenizer on its training split once; cached in ``work`` by settings."""
    key = hashlib.sha256((cfg.tokenizer.model_dump_json() + str(cfg.data.train)).encode())
    folder = work / f"tok-{key.hexdigest()[:12]}"
    if not folder.is_dir():
        text = load_split(cfg.data, "train")
        Tokenizer.train(text.src, text.tgt, cfg.tokenizer).save(folder)
    return folder


def step_setup(cfg, tok: Tokenizer, device: torch.device, precision: str, n_batches: int):
    """The training loop's own update for ``cfg`` (``train_step``: autocast forward,
    label-smoothed loss, backward, clipping, the fused optimizer, non-finite skip on the device)
    and the first ``n_batches`` batches of a Multi30k epoch (seed 1), padded as a run pads them.

    Returns:
        (model, step) where ``step(batch)`` runs one update and returns train_step's dict; and
        the batches, on the host.
    """
    pairs = tokenize_pairs(
        load_split(cfg.data, "train"), tok.encode_src, tok.encode_tgt, cfg.data.max_len, "train"
    )
    order = pairs.epoch_batches(cfg.train.batch_tokens, seed=1, epoch=0)[:n_batches]
    pad, cap = resolve_pad_multiple(cfg.data.pad_multiple, device), cfg.model.position_limit
    batches = [pairs.batch(idx, pad, cap, device.type == "cuda") for idx in order]
    seed_everything(0)
    configure_device(device, cfg.train.cudnn_sdp)
    model = build_model(cfg.model, tok.src_vocab_size, tok.tgt_vocab_size, tok.joint).to(device)
    model.train()
    opt = build_optimizer(model, cfg.train)
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    train_cfg = cfg.train.model_copy(update={"precision": precision, "update_freq": 1})
    wrapper = TeacherForcing(model)

    def step(b):
        return train_step(wrapper, opt, scaler, [b], train_cfg, 1e-4, device, DistInfo())

    return model, step, batches


def run_worker(a) -> dict:
    """One (config, precision): ``warmup`` + ``steps`` updates; tokens/s, FLOP/s, peak memory."""
    cfg = load_config(a.config)
    device = torch.device(a.device)
    model, step, batches = step_setup(
        cfg, Tokenizer.load(a.tok), device, a.precision, a.warmup + a.steps
    )
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    tokens = flops = 0.0
    done = 0
    for i, b in enumerate(batches):
        if i == a.warmup:
            sync(device)
            t0 = time.perf_counter()
        lens = b.src_mask.sum(1), (b.tgt_out != PAD).sum(1)  # real lengths, read on the CPU
        b = b.to(device)
        out = step(b)
        if i >= a.warmup:
            done += 1
            tokens += b.n_tokens
            flops += step_flops(model, *lens)
            if time.perf_counter() - t0 > a.budget:  # a slow path, e.g. bf16 without hardware
                break
    sync(device)
    seconds = time.perf_counter() - t0
    cuda = device.type == "cuda"
    peak = torch.cuda.max_memory_allocated(device) / 2**20 if cuda else kb("VmHWM:") / 1024
    return dict(
        config=a.config,
        model=cfg.model.name,
        precision=a.precision,
        device=str(device),
        threads=torch.get_num_threads(),
        steps=done,
        params=model.num_parameters(),
        tokens_per_s=tokens / seconds,
        model_flops_per_s=flops / seconds,
        peak_mem_mb=peak,
        last_loss=float(out["loss"]),
        mean_batch_tgt_tokens=tokens / done,
        formula=formula(model),
    )


def corpus_worker(a) -> dict:
    """Open the x``scale`` corpus with one backend and make every batch of one epoch."""
    peak = [kb("RssAnon:")]

    def sample():
        while True:
            peak[0] = max(peak[0], kb("RssAnon:"))
            time.sleep(0.002)

    threading.Thread(target=sample, daemon=True).start()
    cfg = load_config(a.config)
    d = cfg.data.model_copy(
        update={
            "train": a.corpus,
            "backend": a.backend,
            "cache_dir": str(Path(a.corpus).parent.parent / "cache"),
        }
    )
    tok = Tokenizer.load(a.tok)
    n_batches = 0
    if a.backend == "memory":
        corpus = tokenize_pairs(
            load_split(d, "train"), tok.encode_src, tok.encode_tgt, d.max_len, "train"
        )
    else:
        corpus = open_arrow(d, tok)
    for item in corpus.epoch_batches(cfg.train.batch_tokens, 1, 0):  # every backend a Corpus
        corpus.batch(item)
        n_batches += 1
    n_pairs = len(corpus)
    peak[0] = max(peak[0], kb("RssAnon:"))
    return {
        "backend": a.backend,
        "scale": int(a.scale),
        "pairs": n_pairs,
        "batches": n_batches,
        "peak_anon_mb": peak[0] / 1024,
        "vm_hwm_mb": kb("VmHWM:") / 1024,
    }


def child(args: list[str]) -> dict:
    """Run this script as a worker in a fresh process; its last stdout line is JSON."""
    path = os.environ.get("PYTHONPATH")  # keep the caller's (packages installed with --target)
    env = {**os.environ, "PYTHONPATH": str(REPO) + (os.pathsep + path if path else "")}
    r = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        tail = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
        raise SystemExit(f"bench_train: worker {' '.join(args[:4])} failed: {tail}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def repeated_corpus(cfg, work: Path, scale: int) -> str:
    """The config's training files, repeated ``scale`` times, as plain text under ``work``."""
    from seq2seq.data.text import iter_lines, resolve_corpus_file

    folder = work / f"corpus-x{scale}"
    if not folder.is_dir():
        folder.mkdir(parents=True)
        for lang in (cfg.data.src_lang, cfg.data.tgt_lang):
            text = "".join(
                ln + "\n" for ln in iter_lines(resolve_corpus_file(cfg.data.train, lang))
            )
            with open(folder / f"train.{lang}", "w", encoding="utf-8") as f:
                for _ in range(scale):
                    f.write(text)
    return str(folder / "train")


def print_tables(report: dict) -> None:
    peaks = report["matmul_peak_flops"]
    print(f"\n{report['cpu_line']}\ntorch {report['torch']}, {report['threads']} threads")
    print(
        f"matmul peak ({report['device']}, {report['threads']} threads): "
        + ", ".join(f"{k} {v / 1e9:,.1f} GFLOP/s" for k, v in peaks.items())
    )
    head = (
        f"{'config':<22}{'prec':<6}{'params':>11}{'tgt tok/s':>11}{'peak MB':>9}"
        f"{'GFLOP/s':>10}{'% fp32 pk':>10}{'% own pk':>9}"
    )
    print(head + "\n" + "-" * len(head))
    for r in report["runs"]:
        print(
            f"{Path(r['config']).stem:<22}{r['precision']:<6}{r['params']:>11,}"
            f"{r['tokens_per_s']:>11,.0f}{r['peak_mem_mb']:>9,.0f}"
            f"{r['model_flops_per_s'] / 1e9:>10,.1f}{100 * r['fraction_of_fp32_peak']:>9.1f}%"
            f"{100 * r['fraction_of_own_peak']:>8.1f}%"
        )
    print("\nmodel FLOPs per step (S, T: real source / target lengths per sentence):")
    for cfg in dict.fromkeys(r["config"] for r in report["runs"]):
        f = next(r["formula"] for r in report["runs"] if r["config"] == cfg)
        print(f"  {Path(cfg).stem}: {f}")
    print_side_by_side(report)
    if report["corpus"]:
        print(
            f"\n{'corpus':<10}{'backend':<9}{'pairs':>9}{'batches':>9}{'peak anon MB':>14}"
            f"{'VmHWM MB':>10}"
        )
        for c in report["corpus"]:
            print(
                f"{'x' + str(c['scale']):<10}{c['backend']:<9}{c['pairs']:>9,}{c['batches']:>9,}"
                f"{c['peak_anon_mb']:>14,.0f}{c['vm_hwm_mb']:>10,.0f}"
            )


def print_side_by_side(report: dict) -> None:
    """Per config: fp32 and bf16 target tokens/s and bf16's speed as a multiple of fp32's."""
    by = {(r["config"], r["precision"]): r["tokens_per_s"] for r in report["runs"]}
    configs = list(dict.fromkeys(r["config"] for r in report["runs"]))
    if not any((c, "bf16") in by and (c, "fp32") in by for c in configs):
        return
    print(f"\nfp32 vs bf16 autocast, target tokens/s ({report['cpu_line']})")
    print(f"{'config':<22}{'fp32':>10}{'bf16':>10}{'bf16/fp32':>11}")
    for c in configs:
        fp32, bf16 = by.get((c, "fp32")), by.get((c, "bf16"))
        ratio = f"{bf16 / fp32:>10.2f}x" if fp32 and bf16 else f"{'-':>11}"
        cells = "".join(f"{v:>10,.0f}" if v else f"{'-':>10}" for v in (fp32, bf16))
        print(f"{Path(c).stem:<22}{cells}{ratio}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("configs", nargs="*", help="default: configs/multi30k/*.yaml")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument(
        "--budget",
        type=float,
        default=60.0,
        help="seconds of timed steps per run; past it, fewer steps are measured",
    )
    p.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=list(DTYPES))
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument(
        "--scales",
        nargs="*",
        type=int,
        default=[1, 10],
        help="corpus sizes for the memory rows (none: skip them)",
    )
    p.add_argument("--json", default="bench_train.json")
    p.add_argument("--work-dir", default=None, help="default: a temporary folder, removed after")
    p.add_argument("--worker", choices=["run", "corpus"], help=argparse.SUPPRESS)
    for hidden in ("--config", "--precision", "--tok", "--corpus", "--backend", "--scale"):
        p.add_argument(hidden, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        print(json.dumps(run_worker(a) if a.worker == "run" else corpus_worker(a)))
        return
    configs = a.configs or sorted(glob.glob(str(REPO / "configs/multi30k/*.yaml")))
    if not configs:
        raise SystemExit("bench_train: no config given and none in configs/multi30k/")
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("bench_train: --device cuda, but torch sees no CUDA device")
    while LOCK.exists():
        print(f"waiting: {LOCK} exists (another measurement is running)", file=sys.stderr)
        time.sleep(20)
    with tempfile.TemporaryDirectory(prefix="seq2seq-bench-") as tmp:
        work = Path(a.work_dir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        LOCK.write_text(f"bench_train.py pid {os.getpid()}\n")
        try:
            report = measure(a, configs, work)
        finally:
            LOCK.unlink(missing_ok=True)
    print_tables(report)
    Path(a.json).write_text(json.dumps(report, indent=2))
    print(f"\nwrote {a.json}")


def flags(**kw) -> list[str]:
    """``flags(worker="run", steps=2)`` -> ["--worker", "run", "--steps", "2"]."""
    return [x for k, v in kw.items() for x in (f"--{k}", str(v))]


def measure(a, configs: list[str], work: Path) -> dict:
    device = torch.device(a.device)
    precisions = list(dict.fromkeys(["fp32", *a.precisions]))
    peaks = {prec: matmul_peak(device, prec) for prec in precisions}
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_model()
    report = {
        "device": name,
        "cpu": cpu_report(),
        "cpu_line": cpu_line(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "steps": a.steps,
        "warmup": a.warmup,
        "matmul_peak_flops": peaks,
        "runs": [],
        "corpus": [],
    }
    for path in configs:
        tok = tokenizer_for(load_config(path), work)
        for prec in a.precisions:
            print(f"{Path(path).stem} {prec} ...", file=sys.stderr)
            r = child(
                flags(
                    worker="run",
                    config=path,
                    precision=prec,
                    tok=tok,
                    device=a.device,
                    steps=a.steps,
                    warmup=a.warmup,
                    budget=a.budget,
                )
            )
            report["runs"].append(r)
    # Measured again at the end, the best of both: a busy moment lowers a peak, never raises it.
    for prec in precisions:
        peaks[prec] = max(peaks[prec], matmul_peak(device, prec))
    for r in report["runs"]:
        r["fraction_of_fp32_peak"] = r["model_flops_per_s"] / peaks["fp32"]
        r["fraction_of_own_peak"] = r["model_flops_per_s"] / peaks[r["precision"]]
    if a.scales:
        # the corpus rows use the Transformer's config when it is among those measured
        path = next((c for c in configs if "transformer" in Path(c).stem), configs[0])
        cfg = load_config(path)
        tok = tokenizer_for(cfg, work)
        for backend in ("arrow", "memory"):
            for scale in a.scales:
                print(f"corpus x{scale} {backend} ...", file=sys.stderr)
                corpus = repeated_corpus(cfg, work, scale)
                args = flags(
                    worker="corpus",
                    config=path,
                    tok=tok,
                    corpus=corpus,
                    backend=backend,
                    scale=scale,
                )
                report["corpus"].append(child(args))
    return report


if __name__ == "__main__":
    main()

"""Decode benchmark: sentences/s and target tokens/s, greedy vs beam search, on test_2016_flickr.

For each run directory (or each run inside a folder of runs) this loads ``best.pt``, translates
``multi30k/test_2016_flickr.<src>`` from $SEQ2SEQ_DATA_DIR end to end (tokenise, batch, search,
detokenise) greedily and with beam K at a stated batch size, scores BLEU and chrF against the
reference, prints a table and writes JSON. Wall times include everything but model loading; one
small warm-up batch runs first.

``--random CONFIG`` times the search alone on the config's model (e.g. the Transformer of
configs/multi30k/transformer.yaml: d_model 256, 3+3 layers, 8,000 pieces) with random weights and
random sources shaped like the test set. Random weights (almost) never emit EOS, so every sentence
runs to its maximum length in both modes: a worst case. ``--profile`` adds a torch.profiler table
of the beam-search run. ``--quantize int8`` measures every row twice, with the float weights
and with dynamic int8 ones (``decoding.quantize``, CPU only), and prints int8 against fp32:
sentences/s and BLEU side by side. ``--ctranslate2`` adds rows for each Transformer run's
CTranslate2 export (``seq2seq export --format ctranslate2``, into a temporary folder), decoded by
CTranslate2 in fp32 (``ct2-fp32``) and int8 (``ct2-int8``) with the same batches, tokenizer and
scoring. The CPU's model name and bf16/VNNI/AMX flags head the output
and go into the JSON (``settings.cpu``).

Usage:
    python scripts/bench_decode.py runs/a runs/b --batch-size 64 --beam 5 --json bench.json
    python scripts/bench_decode.py --random configs/multi30k/transformer.yaml --profile
    python scripts/bench_decode.py runs/multi30k --quantize int8 --json bench.json
    python scripts/bench_decode.py runs/multi30k/transformer --quantize int8 --ctranslate2
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import torch

from seq2seq.config import DecodeConfig, data_root, load_config
from seq2seq.cpu_features import cpu_line, cpu_report
from seq2seq.data.batch import pad_sequences
from seq2seq.data.text import read_lines, resolve_corpus_file
from seq2seq.decoding.quantize import quantize_model
from seq2seq.decoding.runs import load
from seq2seq.decoding.search import search
from seq2seq.decoding.translate import translate_sentences
from seq2seq.evaluation.metrics import corpus_score
from seq2seq.models import build_model
from seq2seq.runtime import seed_everything

TEST_SET = "multi30k/test_2016_flickr"


def run_dirs(paths: list[str]) -> list[Path]:
    """Run directories holding best.pt; a folder without one contributes each run inside it."""
    out = []
    for p in map(Path, paths):
        if (p / "best.pt").is_file():
            out.append(p)
        else:
            found = sorted(d for d in p.glob("*") if (d / "best.pt").is_file())
            if not found:
                raise SystemExit(f"{p}: no best.pt in it or in any folder inside it")
            out += found
    return out


def timed(fn, repeat: int = 1):
    """(seconds, result) of fn(): the fastest of ``repeat`` wall-clock runs, since other load on
    the machine only ever adds time."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def weights(model, args) -> list[tuple[str, torch.nn.Module]]:
    """The float model, and under ``--quantize`` its int8 copy: (label, model) pairs."""
    out = [("fp32", model)]
    return out + [(args.quantize, quantize_model(model, args.quantize))] if args.quantize else out


def engines(float_model, run_dir: Path, cfg, args) -> list[tuple[str, object]]:
    """(label, model) pairs to decode with: ``weights``, then under ``--ctranslate2`` (a
    Transformer run) its CTranslate2 export decoded in fp32 and in int8 (``compute_type`` int8
    on the fp32 export), exported into a temporary folder."""
    out: list[tuple[str, object]] = list(weights(float_model, args))
    if not args.ctranslate2:
        return out
    if cfg.model.name != "transformer":
        print(f"{run_dir}: --ctranslate2 skipped, a {cfg.model.name} run (Transformers only)")
        return out
    from seq2seq.decoding.ctranslate2 import CTranslate2Model
    from seq2seq.export.ctranslate2 import export_ctranslate2

    tmp = tempfile.mkdtemp(prefix="bench_ct2_")
    atexit.register(shutil.rmtree, tmp, True)
    folder = Path(tmp) / "ct2"
    done = export_ctranslate2(run_dir, folder)
    print(f"{run_dir}: CTranslate2 export {done.out_bytes / 1e6:.1f} MB in {folder}")
    for label, quantize in (("ct2-fp32", None), ("ct2-int8", "int8")):
        out.append(
            (label, CTranslate2Model(folder, args.device, quantize, cfg.model.max_positions))
        )
    return out


def bench_run(run_dir: Path, args) -> list[dict]:
    """Greedy and beam rows for one trained run (each engine and weights variant, ``engines``)."""
    run = load(run_dir, args.device)
    float_model, tok, cfg = run.model, run.tok, run.cfg
    src_path = resolve_corpus_file(TEST_SET, cfg.data.src_lang)
    ref_path = resolve_corpus_file(TEST_SET, cfg.data.tgt_lang)
    sources, refs = read_lines(src_path), read_lines(ref_path)
    if args.limit:
        sources, refs = sources[: args.limit], refs[: args.limit]
    rows = []
    for (label, model), (method, beam) in (
        (w, m)
        for w in engines(float_model, run_dir, cfg, args)
        for m in (("greedy", 1), ("beam", args.beam))
    ):
        dcfg = cfg.decode.with_method(method, beam_size=beam, batch_size=args.batch_size)
        translate_sentences(model, tok, sources[: args.batch_size // 4 or 1], dcfg, args.device)
        seconds, res = timed(
            lambda d=dcfg, m=model: translate_sentences(m, tok, sources, d, args.device),
            args.repeat,
        )
        hyps = [r.text for r in res]
        n_tok = sum(len(r.hypotheses[0].tokens) for r in res if r.hypotheses)
        rows.append(
            {
                "run": str(run_dir),
                "model": cfg.model.name,
                "weights": label,
                "params": float_model.num_parameters(),
                "mode": "greedy" if method == "greedy" else f"beam{beam}",
                "beam": beam,
                "batch_size": args.batch_size,
                "sentences": len(sources),
                "seconds": seconds,
                "sentences_per_s": len(sources) / seconds,
                "tgt_tokens_per_s": n_tok / seconds,
                "bleu": corpus_score("bleu", hyps, [refs], cfg.data.tgt_lang).score,
                "chrf": corpus_score("chrf", hyps, [refs]).score,
                "length_penalty": dcfg.length_penalty,
            }
        )
    return rows


def random_sources(n: int, vocab: int, seed: int = 0) -> list[list[int]]:
    """n random id sequences whose lengths follow test_2016_flickr's source word counts x 1.3
    (about the sentencepiece pieces per word on Multi30k), or 8-24 tokens without the data."""
    g = torch.Generator().manual_seed(seed)
    try:
        words = [len(s.split()) for s in read_lines(resolve_corpus_file(TEST_SET, "de"))][:n]
    except Exception:
        words = torch.randint(6, 19, (n,), generator=g).tolist()
    lengths = [max(1, round(1.3 * w)) for w in words]
    return [torch.randint(4, vocab, (k,), generator=g).tolist() for k in lengths]


def bench_random(config: Path, args) -> list[dict]:
    """Search-only timing of the config's model with random weights and random sources."""
    seed_everything(0)
    cfg = load_config(config, [])
    vocab = cfg.tokenizer.vocab_size
    float_model = build_model(cfg.model, vocab, vocab, joint_vocab=True).to(args.device).eval()
    ids = sorted(random_sources(args.limit or 1000, vocab), key=len)
    batches = [
        pad_sequences(ids[k : k + args.batch_size]).to(args.device)
        for k in range(0, len(ids), args.batch_size)
    ]
    rows = []
    for (label, model), (method, beam) in (
        (w, m) for w in weights(float_model, args) for m in (("greedy", 1), ("beam", args.beam))
    ):
        dcfg = DecodeConfig(method=method, beam_size=beam, batch_size=args.batch_size)

        def decode(d=dcfg, model=model):
            with torch.inference_mode():
                return [h for src in batches for h in search(model, src, src != 0, d)]

        with torch.inference_mode():
            search(model, batches[0][:8], batches[0][:8] != 0, dcfg)  # warm-up
        seconds, hyps = timed(decode, args.repeat)
        if args.profile and method == "beam":
            profile(model, batches, dcfg)
        n_tok = sum(len(h[0].tokens) for h in hyps)
        rows.append(
            {
                "run": f"random {config}",
                "model": cfg.model.name,
                "weights": label,
                "params": float_model.num_parameters(),
                "mode": "greedy" if method == "greedy" else f"beam{beam}",
                "beam": beam,
                "batch_size": args.batch_size,
                "sentences": len(ids),
                "seconds": seconds,
                "sentences_per_s": len(ids) / seconds,
                "tgt_tokens_per_s": n_tok / seconds,
                "bleu": None,
                "chrf": None,
                "length_penalty": dcfg.length_penalty,
            }
        )
    return rows


def profile(model, batches, dcfg: DecodeConfig) -> None:
    """torch.profiler's top operators (by self CPU time) over two batches of the beam run."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as prof, torch.inference_mode():
        for src in batches[:2]:
            search(model, src, src != 0, dcfg)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))


def _ct2_version() -> str:
    import ctranslate2

    return ctranslate2.__version__


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def print_table(rows: list[dict]) -> None:
    head = (
        f"{'run':<28} {'model':<12} {'weights':<8} {'mode':<7} {'batch':>5} {'sent/s':>8} "
        f"{'tok/s':>8} {'BLEU':>6} {'chrF':>6} {'x greedy':>8}"
    )
    print(head)
    print("-" * len(head))
    greedy = {(r["run"], r["weights"]): r["seconds"] for r in rows if r["mode"] == "greedy"}
    for r in rows:
        ratio = r["seconds"] / greedy[r["run"], r["weights"]]
        print(
            f"{r['run'][-28:]:<28} {r['model']:<12} {r['weights']:<8} {r['mode']:<7} "
            f"{r['batch_size']:>5} {r['sentences_per_s']:>8.1f} {r['tgt_tokens_per_s']:>8.0f} "
            f"{_score(r['bleu']):>6} {_score(r['chrf']):>6} {ratio:>8.2f}"
        )


def print_quantized(rows: list[dict], quantize: str) -> None:
    """Per run and mode: fp32 against ``quantize`` weights, sentences/s and BLEU side by side."""
    fp32 = {(r["run"], r["mode"]): r for r in rows if r["weights"] == "fp32"}
    print(f"\nfp32 vs {quantize} weights")
    head = (
        f"{'run':<28} {'mode':<7} {'fp32 s/s':>9} {quantize + ' s/s':>9} {'speedup':>8} "
        f"{'fp32 BLEU':>10} {quantize + ' BLEU':>10}"
    )
    print(head + "\n" + "-" * len(head))
    for r in rows:
        if r["weights"] != quantize:
            continue
        f = fp32[r["run"], r["mode"]]
        print(
            f"{r['run'][-28:]:<28} {r['mode']:<7} {f['sentences_per_s']:>9.1f} "
            f"{r['sentences_per_s']:>9.1f} {r['sentences_per_s'] / f['sentences_per_s']:>7.2f}x "
            f"{_score(f['bleu']):>10} {_score(r['bleu']):>10}"
        )


def print_ctranslate2(rows: list[dict]) -> None:
    """Per run and mode: ours (fp32) against CTranslate2 fp32 and int8, sentences/s and BLEU."""
    by = {(r["run"], r["mode"], r["weights"]): r for r in rows}
    runs = sorted({(r["run"], r["mode"]) for r in rows if r["weights"] == "ct2-fp32"})
    print("\nours (fp32) vs CTranslate2 fp32 and int8")
    head = (
        f"{'run':<28} {'mode':<7} {'ours s/s':>9} {'ct2 s/s':>8} {'int8 s/s':>9} "
        f"{'ours BLEU':>10} {'ct2 BLEU':>9} {'int8 BLEU':>10}"
    )
    print(head + "\n" + "-" * len(head))
    for run, mode in runs:
        o, c, q = (by[run, mode, w] for w in ("fp32", "ct2-fp32", "ct2-int8"))
        print(
            f"{run[-28:]:<28} {mode:<7} {o['sentences_per_s']:>9.1f} {c['sentences_per_s']:>8.1f} "
            f"{q['sentences_per_s']:>9.1f} {_score(o['bleu']):>10} {_score(c['bleu']):>9} "
            f"{_score(q['bleu']):>10}"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="*", help="run directories, or folders of runs")
    p.add_argument("--batch-size", type=int, default=64, help="sentences per batch (default 64)")
    p.add_argument("--beam", type=int, default=5, help="beam size compared with greedy")
    p.add_argument("--device", default="cpu")
    p.add_argument("--limit", type=int, default=0, help="only the first N test sentences")
    p.add_argument("--json", type=Path, help="also write the rows and settings here")
    p.add_argument("--repeat", type=int, default=3, help="report the fastest of N runs (default 3)")
    p.add_argument("--threads", type=int, help="torch CPU threads [default: torch's]")
    p.add_argument(
        "--random",
        type=Path,
        action="append",
        default=[],
        metavar="CONFIG",
        help="also time this config's model with random weights and sources (repeatable)",
    )
    p.add_argument("--profile", action="store_true", help="torch.profiler table of beam search")
    p.add_argument(
        "--quantize",
        choices=["int8"],
        help="also decode with dynamic int8 weights (CPU only) and compare with fp32",
    )
    p.add_argument(
        "--ctranslate2",
        action="store_true",
        help="also decode each Transformer run's CTranslate2 export, fp32 and int8 "
        '(pip install -e ".[export]")',
    )
    args = p.parse_args()
    if args.quantize and args.device != "cpu":
        p.error(f"--quantize {args.quantize} decodes on the CPU: give --device cpu")
    if args.threads:
        torch.set_num_threads(args.threads)
    if not args.runs and not args.random:
        p.error("give run directories, or --random CONFIG")
    rows = [row for config in args.random for row in bench_random(config, args)]
    for run_dir in run_dirs(args.runs):
        rows += bench_run(run_dir, args)
    settings = {
        "device": args.device,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "cpu": cpu_report(),
        "quantize": args.quantize,
        "ctranslate2": _ct2_version() if args.ctranslate2 else None,
        "batch_size": args.batch_size,
        "beam": args.beam,
        "data": str(data_root()),
        "test_set": TEST_SET,
        "repeat": args.repeat,
        "load_average": list(os.getloadavg()),
    }
    print(
        f"decode benchmark, {TEST_SET}, batch size {args.batch_size} sentences, "
        f"{settings['threads']} threads, {args.device}, fastest of {args.repeat}\n{cpu_line()}"
    )
    print_table(rows)
    if args.quantize:
        print_quantized(rows, args.quantize)
    if args.ctranslate2 and any(r["weights"] == "ct2-fp32" for r in rows):
        print_ctranslate2(rows)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"settings": settings, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()

"""The synthetic half of the study (``compare --exact-match`` / ``--alignment``): every config
trained under one budget (or its own stop rule) with the shared tokenizer, decoded with each of
``--beams`` on the test set and its lines joined k = 2..K, scored by source length (BLEU and exact
match), with the attention maps of the same few lines for every attention model and, for a
reversal or copy corpus, ``reverse.SyntheticChecks`` (alignment accuracy, plateau check).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from seq2seq.config import Config
from seq2seq.data.text import clean_line
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decoding.runs import load
from seq2seq.decoding.translate import translate_sentences
from seq2seq.models import Seq2SeqModel
from seq2seq.study.evalsets import EvalSet, attention_sentences, build_eval_set, score_decode
from seq2seq.study.plan import Budget, StudyOptions
from seq2seq.study.pool import machine_line, run_pool, worker_setup
from seq2seq.study.reverse import SyntheticChecks
from seq2seq.study.runs import ModelRun, decode_with, run_result, train_or_reuse


def _train_job(path: str, cfg: Config, run_dir: Path, tok_dir: Path, overwrite: bool) -> ModelRun:
    """One ``train_or_reuse`` as a ``run_pool`` job, the shared tokenizer loaded from
    ``tok_dir`` (in a worker process: one torch thread, log lines prefixed with the run's name)."""
    worker_setup(cfg.name)
    return train_or_reuse(path, cfg, run_dir, Tokenizer.load(tok_dir), overwrite=overwrite)


def attention_panel(
    run: ModelRun, model: Seq2SeqModel, tok: Tokenizer, source: str, device: str
) -> tuple[str, torch.Tensor, list[str], list[str]]:
    """(title, (T, S) greedy cross-attention, S source pieces, T output pieces) of one line."""
    dcfg = run.cfg.decode.with_method("greedy")
    r = translate_sentences(model, tok, [source], dcfg, device, need_attention=True)[0]
    h = r.hypotheses[0]
    att = h.attention.cpu()
    src_pieces = tok.src_pieces(clean_line(source))[: att.shape[1]]
    return run.cfg.name, att, src_pieces, tok.tgt_pieces(h.tokens)


def evaluate_runs(
    runs: list[ModelRun], tok: Tokenizer, evalset: EvalSet, opts: StudyOptions, out: Path
) -> list[Path]:
    """Decode and score every run (filling ``run.decodes``) and draw the attention maps of the
    same few lines for every attention model, side by side; returns the map files."""
    from seq2seq.evaluation.plots import save_attention_panels_png

    lines = attention_sentences(evalset, opts.n_attention)
    panels: dict[int, list] = {i: [] for i in lines}
    for run in runs:
        model = load(run.run_dir, opts.device).model
        run.parameters = model.num_parameters()
        for beam in opts.beams:  # 1 means greedy search; decodings cached in runs/<name>/decode/
            dcfg = run.cfg.decode.with_method("greedy" if beam == 1 else "beam", beam_size=beam)
            label = "greedy" if beam == 1 else f"beam{beam}"
            hyps, _, seconds = decode_with(run, model, tok, evalset, dcfg, label, opts.device)
            scores = score_decode(evalset, hyps, opts.edges, run.cfg.data.tgt_lang)
            run.decodes[label] = {"seconds": round(seconds, 1), **scores}
        if run.attention:
            for i in lines:
                panels[i].append(attention_panel(run, model, tok, evalset.src[i], opts.device))
    paths = []
    for n, i in enumerate(lines, start=1):
        if panels[i]:
            name = f"sentence{n}_k{evalset.k[i]}_{len(evalset.src[i].split())}words.png"
            paths.append(save_attention_panels_png(out / "attention" / name, panels[i]))
    return paths


def run_synthetic(
    paths: Sequence[str | Path],
    cfgs: list[Config],
    out: Path,
    tok: Tokenizer,
    budget: Budget,
    opts: StudyOptions,
) -> dict:
    """Train (or reuse), decode, score and check every config; returns the results."""
    checks = None
    if opts.alignment:  # the test and validation sets are checked before any training
        checks = SyntheticChecks(cfgs[0], tok, opts.edges, opts.alignment, opts.device)
    calls = [  # every config into out/runs/<name>, opts.jobs at a time
        (str(p), cfg, out / "runs" / cfg.name, out / "tokenizer", opts.overwrite)
        for p, cfg in zip(paths, cfgs, strict=True)
    ]
    runs = run_pool(_train_job, calls, opts.jobs, "training")
    evalset = build_eval_set(cfgs[0], opts.concat_k, opts.concat_n)
    maps = evaluate_runs(runs, tok, evalset, opts, out)
    if checks is not None:
        checks.run(runs)
    return {
        "budget": budget.describe(),
        "machine": machine_line(opts.jobs),
        "tokenizer": {**cfgs[0].tokenizer.model_dump(mode="json"), "sha256": tok.digest()},
        "eval_set": {
            "origin": evalset.origin,
            "sentences": len(evalset.src),
            "test_sentences": evalset.k.count(1),
            "concat_k": opts.concat_k,
            "concat_n": opts.concat_n,
        },
        "buckets": list(opts.edges),
        "exact_match": opts.exact_match,
        "alignment": opts.alignment,
        "attention_maps": [str(p.relative_to(out)) for p in maps],
        "models": [run_result(r) for r in runs],
    }

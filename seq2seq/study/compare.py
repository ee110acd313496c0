"""``seq2seq compare``: the bottleneck-versus-attention study (Bahdanau et al. 2015, Figure 2).

Every config is trained under the same budget with one shared tokenizer, then decoded greedily and
with beam search on the same test sets, and scored by source length. The output folder holds:

- ``tokenizer/``: the sentencepiece model(s), trained once on the training split and given to
  every run (so vocabulary differences cannot explain a score difference);
- ``runs/<name>/``: one run per config. A run whose ``compare.json`` records the same resolved
  config (budget included) and tokenizer, next to the ``best.pt`` it describes, is reused; its
  decodings are cached in ``runs/<name>/decode/``;
- ``report.md``, ``results.json``, ``bleu_by_length.png`` and ``attention/`` (``study_report``).

The test lines are the test split plus long inputs joined from its lines (``study_eval``): the
main table's scores are on the test split, the by-length tables on everything.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from seq2seq.atomic import atomic_write_text
from seq2seq.checkpoint import load_for_inference
from seq2seq.config import Config, ConfigError, DecodeConfig, load_config, validate_config
from seq2seq.data.text import clean_line, load_split, resolve_corpus_file, sha256_file
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decoding.translate import translate_sentences
from seq2seq.models import MODELS, Seq2SeqModel
from seq2seq.runtime import describe_machine
from seq2seq.study.evalsets import (
    EvalSet,
    attention_sentences,
    beam_label,
    build_eval_set,
    score_decode,
)

if TYPE_CHECKING:
    from seq2seq.study.multi30k import Multi30kPlan

log = logging.getLogger("seq2seq")

# Data keys every compared config must share; concat_k and max_src_words are the study's axes.
SHARED_DATA_KEYS = (
    "src_lang",
    "tgt_lang",
    "train",
    "valid",
    "test",
    "hf",
    "max_len",
    "max_train_pairs",
    "max_valid_pairs",
)


@dataclass
class Budget:
    """The one stopping rule every run gets: minutes of training, updates, or target tokens
    (EOS included, padding not: ``train.max_tokens``, the same data for every model whatever its
    speed); all None keeps each config's own.

    Raises:
        ValueError: more than one budget (one line naming the options).
    """

    minutes: float | None = None
    steps: int | None = None
    tokens: int | None = None

    def __post_init__(self):
        given = [
            f"--budget-{name}"
            for name in ("minutes", "steps", "tokens")
            if getattr(self, name) is not None
        ]
        if len(given) == 2:
            raise ValueError(f"give {given[0]} or {given[1]}, not both")
        if len(given) > 2:
            raise ValueError(f"give one of {', '.join(given)}, not all three")

    def describe(self) -> str:
        if self.minutes is not None:
            return f"{self.minutes:g} minutes of training per model"
        if self.steps is not None:
            return f"{self.steps} updates per model"
        if self.tokens is not None:
            return f"{self.tokens} target tokens per model"
        return "each config's own train.max_time / max_steps / max_epochs / max_tokens"


@dataclass
class StudyOptions:
    """What ``compare`` decodes and how it buckets the scores."""

    beams: tuple[int, ...] = (1, 5)
    concat_k: int = 4
    concat_n: int | None = None
    edges: tuple[int, ...] = (10, 20, 30, 40, 50, 60)
    n_attention: int = 3
    exact_match: bool = False
    device: str = "cpu"
    alignment: str | None = None  # a synthetic task ("reverse", "copy"): study/reverse.py checks
    jobs: int = 1  # trainings at a time (worker processes, one torch thread each)


@dataclass
class ModelRun:
    """One config's run: where it lives, its training summary, and (later) its scores."""

    path: str
    cfg: Config
    run_dir: Path
    summary: dict
    reused: bool
    parameters: int = 0
    decodes: dict[str, dict] = field(default_factory=dict)
    alignment: dict | None = None  # alignment accuracy (attention models, --alignment)
    plateau: dict | None = None  # exact match on short validation lines per checkpoint

    @property
    def attention(self) -> bool:
        """Whether the model returns attention weights (the fixed-vector ``rnn`` does not)."""
        return MODELS[self.cfg.model.name].has_attention


def load_study_configs(paths: Sequence[str | Path], budget: Budget, device: str) -> list[Config]:
    """Load each config with the budget applied and check that they can be compared.

    Raises:
        ConfigError: a bad config, two configs with one ``name``, or configs that differ in data
            (other than ``concat_k`` / ``max_src_words``) or in the tokenizer section.
    """
    if not paths:
        raise ConfigError("compare: give at least one config")
    cfgs = [_with_budget(load_config(p), budget, device, str(p)) for p in paths]
    first, names = cfgs[0], {}
    for p, cfg in zip(paths, cfgs, strict=True):
        if cfg.name in names:
            raise ConfigError(
                f"{p}: name {cfg.name!r} is also the name of {names[cfg.name]}; "
                "each compared config needs its own name (it names the run)"
            )
        names[cfg.name] = p
        for key in SHARED_DATA_KEYS:
            if getattr(cfg.data, key) != getattr(first.data, key):
                raise ConfigError(
                    f"{p}: data.{key} differs from {paths[0]}'s; compared models "
                    "must train and test on the same data"
                )
        if cfg.tokenizer != first.tokenizer:
            raise ConfigError(
                f"{p}: the tokenizer section differs from {paths[0]}'s; compared "
                "models share one tokenizer"
            )
    return cfgs


def _with_budget(cfg: Config, budget: Budget, device: str, source: str) -> Config:
    raw = cfg.model_dump(mode="json")
    stops = {"max_time": None, "max_steps": None, "max_epochs": None, "max_tokens": None}
    if budget.minutes is not None:
        raw["train"].update(stops, max_time=budget.minutes)
    elif budget.steps is not None:
        raw["train"].update(stops, max_steps=budget.steps)
    elif budget.tokens is not None:
        raw["train"].update(stops, max_tokens=budget.tokens)
    raw["train"]["device"] = device
    kind = "--budget-minutes" if budget.minutes is not None else "--budget-tokens"
    if raw["train"].get("schedule") == "cosine" and (budget.minutes or budget.tokens) is not None:
        raise ConfigError(
            f"{source}: {kind} replaces its max_steps, which its cosine schedule decays over; "
            "use --budget-steps for it, or a schedule without a fixed length"
        )
    return validate_config(raw, source)


def data_digest(cfg: Config) -> str:
    """sha256 over the shared data settings and the training and validation files' bytes (a
    Hugging Face dataset is named, not hashed), so a changed corpus is never mistaken for the
    one a tokenizer or a run was trained on."""
    h = hashlib.sha256()
    shared = {k: cfg.data.model_dump(mode="json")[k] for k in SHARED_DATA_KEYS}
    h.update(json.dumps(shared, sort_keys=True).encode())
    if cfg.data.hf is None:
        prefixes = [p for p in (cfg.data.train, cfg.data.valid) if p]
        for prefix in prefixes:
            for lang in (cfg.data.src_lang, cfg.data.tgt_lang):
                h.update(sha256_file(resolve_corpus_file(prefix, lang)).encode())
    return h.hexdigest()


def shared_tokenizer(cfg: Config, out: Path) -> Tokenizer:
    """The tokenizer in ``out/tokenizer`` when it was trained with this tokenizer section and
    data, else one trained now on the training split (every pair, before any max_src_words)."""
    folder = out / "tokenizer"
    spec = json.dumps(
        {"tokenizer": cfg.tokenizer.model_dump(mode="json"), "data_sha256": data_digest(cfg)},
        sort_keys=True,
    )
    if (folder / "spec.json").is_file() and (folder / "spec.json").read_text() == spec:
        log.info("compare: reusing the tokenizer in %s", folder)
        return Tokenizer.load(folder)
    text = load_split(cfg.data, "train")
    n = cfg.data.max_train_pairs or len(text)
    log.info(
        "compare: training one %s tokenizer (vocab %d) on %d pairs",
        cfg.tokenizer.type,
        cfg.tokenizer.vocab_size,
        min(n, len(text)),
    )
    tok = Tokenizer.train(text.src[:n], text.tgt[:n], cfg.tokenizer)
    tok.save(folder)
    atomic_write_text(folder / "spec.json", spec)
    return tok


def tokenizer_digest(tok: Tokenizer) -> str:
    return tok.digest()


def _best_stamp(run_dir: Path) -> list[int] | None:
    best = run_dir / "best.pt"
    if not best.is_file():
        return None
    st = best.stat()
    return [st.st_size, st.st_mtime_ns]


def train_or_reuse(path: str, cfg: Config, run_dir: Path, tok: Tokenizer) -> ModelRun:
    """Train ``cfg`` into ``run_dir`` with ``tok``, or reuse the finished run already there.

    Raises:
        KeyboardInterrupt: training was interrupted (its last.pt is kept, nothing is recorded).
    """
    from seq2seq.training.loop import train

    marker = run_dir / "compare.json"
    want = {
        "config": cfg.model_dump(mode="json"),
        "tokenizer_sha256": tokenizer_digest(tok),
        "data_sha256": data_digest(cfg),
    }
    if marker.is_file():
        old = json.loads(marker.read_text())
        same = all(old.get(k) == v for k, v in want.items())
        if same and old.get("best_pt") == _best_stamp(run_dir):
            log.info("compare: reusing the finished run in %s", run_dir)
            return ModelRun(path, cfg, run_dir, old["summary"], reused=True)
    resume = _interrupted_same_run(run_dir, cfg, tok)
    if resume:
        log.info("compare: resuming the interrupted run in %s from its last.pt", run_dir)
    else:
        if (run_dir / "last.pt").exists():
            log.warning("compare: %s holds a different run; training afresh", run_dir)
        log.info("compare: training %s (%s) into %s", cfg.name, cfg.model.name, run_dir)
    summary = train(cfg, run_dir, resume=resume, overwrite=not resume, tokenizer=tok)
    if summary["stopped"] == "interrupted":
        raise KeyboardInterrupt
    atomic_write_text(
        marker, json.dumps({**want, "best_pt": _best_stamp(run_dir), "summary": summary}, indent=2)
    )
    return ModelRun(path, cfg, run_dir, summary, reused=False)


def _interrupted_same_run(run_dir: Path, cfg: Config, tok: Tokenizer) -> bool:
    """Whether ``run_dir/last.pt`` is an unfinished run of exactly ``cfg`` (budget included) with
    the tokenizer ``tok``: one a Ctrl-C, ``kill`` or crash stopped, which ``--resume`` continues
    as if never stopped. Anything else (another config, another tokenizer, an unreadable file)
    is trained afresh."""
    from seq2seq.checkpoint import load_checkpoint

    last = run_dir / "last.pt"
    if not last.is_file():
        return False
    try:
        ckpt = load_checkpoint(last)
        want, got = cfg.model_dump(mode="json"), ckpt["config"]
        if want["train"]["precision"] == "auto":  # a run records the precision "auto" became
            got = {**got, "train": {**got["train"], "precision": "auto"}}
        same = got == want
        return same and Tokenizer.from_state_dict(ckpt["tokenizer"]).digest() == tok.digest()
    except Exception as e:  # any unreadable checkpoint: train afresh, and say why
        log.warning(
            "compare: %s cannot be resumed (%s)",
            last,
            str(e).splitlines()[0] if str(e) else type(e).__name__,
        )
        return False


def _train_job(path: str, cfg: Config, run_dir: Path, tok_dir: Path) -> ModelRun:
    """One ``train_or_reuse`` as a ``run_pool`` job, the shared tokenizer loaded from
    ``tok_dir`` (in a worker process: one torch thread, log lines prefixed with the run's name)."""
    worker_setup(cfg.name)
    return train_or_reuse(path, cfg, run_dir, Tokenizer.load(tok_dir))


def machine_line(jobs: int) -> str:
    """The machine, and how the runs shared it: ``jobs`` > 1 worker processes of one torch
    thread each (the main process's own thread count says nothing about them then)."""
    if jobs <= 1:
        return describe_machine()
    return f"{describe_machine()}; {jobs} runs at a time, one torch thread each"


def worker_setup(name: str) -> None:
    """Set up a worker process of ``run_pool``: one torch thread (two one-thread workers share
    the CPU's cores), logging to stderr with every line prefixed by the run's ``name``. Does
    nothing in the main process (``jobs`` = 1 runs the jobs there, as configured)."""
    import multiprocessing

    from seq2seq.console import setup_logging

    if multiprocessing.parent_process() is None:
        return
    torch.set_num_threads(1)
    setup_logging()
    prefix = logging.Formatter(f"%(asctime)s %(levelname)s [{name}] %(message)s", "%H:%M:%S")
    for handler in log.handlers:
        handler.setFormatter(prefix)


def run_pool(fn: Callable, calls: Sequence[tuple], jobs: int, what: str) -> list:
    """``fn(*args)`` for every ``args`` in ``calls``, results in order: in this process one
    after the other when ``jobs`` <= 1, else ``jobs`` at a time in spawned worker processes (no
    forked torch thread pools; ``fn`` must be a module-level function that calls
    ``worker_setup``). On a CPU two one-thread jobs side by side finish sooner than the two one
    after the other with two threads.

    Raises:
        Whatever a job raises (KeyboardInterrupt: finished jobs' runs stay reusable).
    """
    if jobs <= 1 or len(calls) <= 1:
        return [fn(*args) for args in calls]
    import multiprocessing
    import os
    import signal
    from concurrent.futures import CancelledError, ProcessPoolExecutor

    log.info("compare: %s %d runs, %d at a time (one thread each)", what, len(calls), jobs)
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)
    futures = []

    def forward(signum, frame):  # kill / timeout signal this process only: pass it on
        for f in futures:
            f.cancel()  # the jobs not started yet
        workers = list(getattr(pool, "_processes", None) or {})  # the workers' pids
        log.warning("compare: SIGTERM: the running jobs save their runs and stop")
        for pid in workers:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    try:
        previous = signal.signal(signal.SIGTERM, forward)
    except ValueError:  # not the main thread: signals keep their usual effect
        previous = None
    try:
        futures += [pool.submit(fn, *args) for args in calls]
        return [f.result() for f in futures]
    except CancelledError:  # a job SIGTERM cancelled before it started
        raise KeyboardInterrupt from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # no worker outlives this process
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def train_all(
    paths: Sequence[str | Path], cfgs: list[Config], out: Path, jobs: int = 1
) -> list[ModelRun]:
    """Train (or reuse) every config into ``out/runs/<name>`` with the shared tokenizer in
    ``out/tokenizer``, ``jobs`` at a time (``run_pool``).

    Raises:
        KeyboardInterrupt: a training was interrupted (finished runs stay reusable).
    """
    calls = [
        (str(p), cfg, out / "runs" / cfg.name, out / "tokenizer")
        for p, cfg in zip(paths, cfgs, strict=True)
    ]
    return run_pool(_train_job, calls, jobs, "training")


def decode_cached(
    run: ModelRun, model: Seq2SeqModel, tok: Tokenizer, evalset: EvalSet, beam: int, device: str
) -> tuple[list[str], float]:
    """Translate ``evalset`` with the run's decode settings and beam ``beam`` (1 = greedy);
    returns the hypotheses and the decoding seconds (both cached in ``runs/<name>/decode/``)."""
    method = "greedy" if beam == 1 else "beam"  # compare's --beams: 1 means greedy search
    dcfg = run.cfg.decode.with_method(method, beam_size=beam)
    hyps, _, seconds = decode_with(run, model, tok, evalset, dcfg, beam_label(beam), device)
    return hyps, seconds


def decode_with(
    run: ModelRun,
    model: Seq2SeqModel,
    tok: Tokenizer,
    evalset: EvalSet,
    dcfg: DecodeConfig,
    label: str,
    device: str,
) -> tuple[list[str], list[bool], float]:
    """Translate ``evalset`` with ``dcfg``; returns the hypotheses, whether each stopped at the
    maximum length without EOS (``Translation.cut``), and the decoding seconds, all cached in
    ``runs/<name>/decode/<set>.<label>.{txt,json}`` (kept while the set, best.pt and ``dcfg``
    are the same)."""
    key = {
        "set": evalset.digest(),
        "best_pt": _best_stamp(run.run_dir),
        "decode": dcfg.model_dump(mode="json"),
    }
    stem = f"{evalset.name}.{label}"
    meta, hyp_file = run.run_dir / "decode" / f"{stem}.json", run.run_dir / "decode" / f"{stem}.txt"
    if meta.is_file() and hyp_file.is_file():
        cached = json.loads(meta.read_text())
        hyps = hyp_file.read_text(encoding="utf-8").split("\n")[:-1]
        if cached["key"] == key and len(hyps) == len(evalset.src) and "cut" in cached:
            cut = [False] * len(hyps)
            for i in cached["cut"]:
                cut[i] = True
            return hyps, cut, cached["seconds"]
    log.info(
        "compare: decoding %d %s lines with %s (%s)",
        len(evalset.src),
        evalset.name,
        run.cfg.name,
        label,
    )
    tick = time.perf_counter()
    out = translate_sentences(model, tok, evalset.src, dcfg, device)
    seconds = time.perf_counter() - tick
    hyps, cut = [t.text for t in out], [t.cut for t in out]
    atomic_write_text(hyp_file, "".join(h + "\n" for h in hyps))
    record = {"key": key, "seconds": seconds, "cut": [i for i, c in enumerate(cut) if c]}
    atomic_write_text(meta, json.dumps(record, indent=2))
    return hyps, cut, seconds


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
        model, _, _ = load_for_inference(run.run_dir, opts.device)
        run.parameters = model.num_parameters()
        for beam in opts.beams:
            hyps, seconds = decode_cached(run, model, tok, evalset, beam, opts.device)
            scores = score_decode(evalset, hyps, opts.edges, run.cfg.data.tgt_lang)
            run.decodes[beam_label(beam)] = {"seconds": round(seconds, 1), **scores}
        if run.attention:
            for i in lines:
                panels[i].append(attention_panel(run, model, tok, evalset.src[i], opts.device))
    paths = []
    for n, i in enumerate(lines, start=1):
        if panels[i]:
            name = f"sentence{n}_k{evalset.k[i]}_{len(evalset.src[i].split())}words.png"
            paths.append(save_attention_panels_png(out / "attention" / name, panels[i]))
    return paths


def compare(
    paths: Sequence[str | Path],
    out: str | Path,
    budget: Budget,
    opts: StudyOptions,
    plan: Multi30kPlan | None = None,
) -> dict:
    """Train (or reuse) every config, decode, score, draw and write the report into ``out``.
    Real text (no ``opts.alignment`` / ``opts.exact_match``) is rated as ``study.multi30k``
    does it, with ``plan`` (default ``Multi30kPlan()``); a synthetic task as before.

    Returns:
        The results (also written to ``out/results.json``).

    Raises:
        ConfigError, DataError, CheckpointError, TrainingError: one-line, user-facing problems.
    """
    from seq2seq.study.report import write_report

    out = Path(out)
    cfgs = load_study_configs(paths, budget, opts.device)
    if not (opts.alignment or opts.exact_match):  # what the plan names, before any training
        from seq2seq.study.multi30k import Multi30kPlan, check_plan

        plan = plan or Multi30kPlan()
        check_plan(cfgs, plan)
    out.mkdir(parents=True, exist_ok=True)
    tok = shared_tokenizer(cfgs[0], out)
    if not (opts.alignment or opts.exact_match):  # real text: the Multi30k half
        from seq2seq.study.multi30k import run_multi30k

        results = run_multi30k(paths, cfgs, out, tok, budget, opts, plan)
        write_report(results, out)
        return results
    checks = None
    if opts.alignment:  # the test and validation sets are checked before any training
        from seq2seq.study.reverse import SyntheticChecks

        checks = SyntheticChecks(cfgs[0], tok, opts.edges, opts.alignment, opts.device)
    runs = train_all(paths, cfgs, out, opts.jobs)
    evalset = build_eval_set(cfgs[0], opts.concat_k, opts.concat_n)
    maps = evaluate_runs(runs, tok, evalset, opts, out)
    if checks is not None:
        checks.run(runs)
    results = {
        "budget": budget.describe(),
        "machine": machine_line(opts.jobs),
        "tokenizer": {**cfgs[0].tokenizer.model_dump(mode="json"), "sha256": tokenizer_digest(tok)},
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
        "models": [_run_result(r) for r in runs],
    }
    write_report(results, out)
    return results


def _run_result(run: ModelRun) -> dict:
    s, d = run.summary, run.cfg.data
    return {
        "name": run.cfg.name,
        "config": run.path,
        "model": run.cfg.model.name,
        "family": run.cfg.model.family,
        "attention": run.attention,
        "concat_k": d.concat_k,
        "max_src_words": d.max_src_words,
        "parameters": run.parameters,
        "train_seconds": s.get("train_seconds"),
        "target_tokens": s.get("target_tokens"),
        "target_tokens_per_s": s.get("target_tokens_per_s"),
        "steps": s.get("steps"),
        "stopped": s.get("stopped"),
        "best_step": s.get("best_step"),
        "reused": run.reused,
        "run_dir": str(run.run_dir),
        "resolved_config": run.cfg.model_dump(mode="json"),
        "decodes": run.decodes,
        **({"alignment": run.alignment, "plateau": run.plateau} if run.plateau else {}),
    }

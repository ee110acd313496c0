"""The Multi30k half of the study: every model decoded on test lines joined k = 1..4 at a time,
greedily and with beam search whose length penalty is chosen on validation joined the same way;
per cell BLEU with its bootstrap interval and the length diagnostics (``study.cells``); the
retention (BLEU at the largest k over BLEU at k = 1) of every attention model against the
bottleneck baseline with a paired bootstrap interval; the references' teacher-forced NLL by k.

Bahdanau et al. 2015 (Figure 2) compare RNNsearch with RNNencdec, Cho et al. 2014: the encoder's
last state fed to every decoder step, here ``rnn`` with ``feed_context: true`` (``rnn_context``),
the default reference. Roles: ``main`` (trained on joined pairs like the reference), ``control``
(trained on single pairs only: the zero-shot length-generalisation control, kept out of the
verdict) and ``seed`` (a main config again with another ``train.seed``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from seq2seq.checkpoint import load_for_inference
from seq2seq.config import Config, ConfigError, validate_config
from seq2seq.decoding.tune import corpus_bleu
from seq2seq.study.cells import (
    cell_scores,
    nll_lines_by_k,
    nll_rise_difference_ci,
    nll_rows,
    retention_difference_ci,
)
from seq2seq.study.evalsets import EvalSet, score_decode

log = logging.getLogger("seq2seq")

LEARNED_SHARE = 0.25  # a model is rated when its k = 1 greedy BLEU is at least this share of the
# best main model's (below it the recipe, not the architecture, would be compared)

DESIGN = (
    "From scratch at equal target tokens: every model trains with the one shared tokenizer on "
    "the same data, the training pairs plus pairs joined k = 2..4 at a time, until it has seen "
    "the same number of target tokens (EOS included, padding not), and its best.pt is chosen on "
    "validation BLEU over validation lines joined the same way. Chosen over a warm start from zoo "
    "runs (train.init_from) because a clean clone has no zoo runs to start from, so make study "
    "would have to train them first, and because a warm start would give each model two "
    "training histories to untangle."
)

DESIGN_OTHER = (
    "Every model trains from scratch with the one shared tokenizer on its config's data under the "
    "budget above; with a budget in minutes or updates the models see different numbers of "
    "target tokens (each run's count is in the table)."
)


@dataclass
class Multi30kPlan:
    """How the Multi30k half decodes and rates: beam size, the length penalties tried on
    validation (the chosen one decodes the test lines), bootstrap resamples, the reference."""

    beam: int = 5
    alphas: tuple[float, ...] = (0.6, 0.8, 1.0, 1.2, 1.4)
    n_bootstrap: int = 1000
    reference: str | None = None  # a run name; None: the main rnn with feed_context
    seeds: tuple[int, ...] = ()
    seed_models: str = "decisive"  # or comma-separated run names
    reverse: dict | None = None  # the synthetic half's results, shown in the report
    hyps: dict = field(default_factory=dict)  # run name -> label -> test hypotheses
    nll: dict = field(default_factory=dict)  # run name -> k -> (nats, tokens) per test line


def parse_seeds(spec: str) -> tuple[int, ...]:
    """``"1,2,3"`` -> (1, 2, 3).

    Raises:
        ValueError: not a comma-separated list of integers >= 0.
    """
    try:
        seeds = tuple(int(s) for s in spec.split(","))
    except ValueError:
        seeds = ()
    if not seeds or min(seeds) < 0 or max(seeds) > 2**32 - 1:
        raise ValueError(f"--seeds {spec!r}: give training seeds from 0 to 2^32 - 1, such as 1,2,3")
    return seeds


def check_plan(cfgs: Sequence[Config], plan: Multi30kPlan) -> None:
    """What ``plan`` names, checked before any training: ``--reference`` a main run,
    ``--seed-models`` compared configs, and no seed copy (``<name>-seed<s>``) named like a config.

    Raises:
        ConfigError: one line naming the option and what to do.
    """
    max_k = max(c.data.concat_k for c in cfgs)
    names = [c.name for c in cfgs]
    if plan.reference is not None:
        mains = [c.name for c in cfgs if role_of(c, max_k, None) == "main"]
        if plan.reference not in mains:
            raise ConfigError(
                f"--reference {plan.reference!r} is not a main run ({', '.join(mains)})"
            )
    if not plan.seeds:
        return
    wanted = names if plan.seed_models == "decisive" else plan.seed_models.split(",")
    wanted = [n.strip() for n in wanted if n.strip()]
    copies = {c.name for c in seed_configs(cfgs, wanted, plan.seeds)}  # refuses unknown names
    clash = sorted(copies & set(names))
    if clash:
        raise ConfigError(
            f"--seeds: the seed copy {clash[0]!r} would share its name and run folder with the "
            "config of that name; rename that config"
        )


def seed_configs(cfgs: Sequence[Config], names: Sequence[str], seeds: Sequence[int]) -> list:
    """Copies of the configs named ``names`` with ``train.seed`` = s for each s in ``seeds``
    (the config's own seed is its main run and is skipped), named ``<name>-seed<s>``.

    Raises:
        ConfigError: a name that is none of the configs'.
    """
    by_name = {c.name: c for c in cfgs}
    out = []
    for name in names:
        if name not in by_name:
            raise ConfigError(
                f"--seed-models: {name!r} is not one of the compared configs ({', '.join(by_name)})"
            )
        cfg = by_name[name]
        for s in seeds:
            if s == cfg.train.seed:
                continue
            raw = cfg.model_dump(mode="json")
            raw["name"] = f"{name}-seed{s}"
            raw["train"]["seed"] = s
            out.append(validate_config(raw, f"{name} with train.seed {s}"))
    return out


def role_of(cfg: Config, max_k: int, seed_of: str | None) -> str:
    if seed_of is not None:
        return "seed"
    return "control" if cfg.data.concat_k < max_k else "main"


def reference_name(models: Sequence[dict], runs_cfg: dict[str, Config], wanted: str | None) -> str:
    """The bottleneck baseline's run name: ``wanted``, else the main ``rnn`` with
    ``feed_context`` (Cho et al. 2014, RNNencdec), else the main fixed-vector ``rnn``.

    Raises:
        ConfigError: ``wanted`` names no main run, or there is no main rnn.
    """
    mains = [m["name"] for m in models if m["role"] == "main"]
    if wanted is not None:
        if wanted not in mains:
            raise ConfigError(f"--reference {wanted!r} is not a main run ({', '.join(mains)})")
        return wanted
    rnns = [n for n in mains if runs_cfg[n].model.name == "rnn"]
    context = [n for n in rnns if getattr(runs_cfg[n].model, "feed_context", False)]
    if not rnns:
        raise ConfigError("compare: no fixed-vector rnn among the main runs to rate against")
    return (context or rnns)[0]


def evaluate_model(
    run, tok, testset: EvalSet, validset: EvalSet, plan: Multi30kPlan, device, edges=(10, 20, 30)
):
    """Decode and score one run: greedy and tuned beam on ``testset`` (cells by k), the length
    penalty sweep on ``validset``, NLL by k. Returns the run's entry fields; keeps the test
    hypotheses in ``plan.hyps[name]`` and the per-line NLL in ``plan.nll[name]``."""
    from seq2seq.study.compare import decode_with

    lang = run.cfg.data.tgt_lang
    model, _, _ = load_for_inference(run.run_dir, device)
    run.parameters = model.num_parameters()
    decodes, hyps = {}, {}

    def scored(dcfg, label: str, extra: dict) -> None:
        h, cut, seconds = decode_with(run, model, tok, testset, dcfg, label, device)
        base = score_decode(testset, h, edges, lang)
        cells = cell_scores(testset, h, cut, lang, plan.n_bootstrap)
        key = "greedy" if dcfg.method == "greedy" else "beam"
        decodes[key] = {
            "seconds": round(seconds, 1),
            **extra,
            "bleu": base["bleu"],
            "chrf": base["chrf"],
            "by_k": cells,
            "by_length": base["by_length"],
        }
        hyps[key] = h

    scored(run.cfg.decode.with_method("greedy"), "greedy", {})
    sweep = []
    for a in plan.alphas:
        dcfg = run.cfg.decode.with_method("beam", beam_size=plan.beam, length_penalty=a)
        h, _, _ = decode_with(run, model, tok, validset, dcfg, f"beam{plan.beam}-a{a:g}", device)
        b = corpus_bleu(h, validset.ref, lang)
        sweep.append(
            {"alpha": a, "bleu": round(b.score, 2), "ratio": round(b.sys_len / b.ref_len, 3)}
        )
    alpha = max(sweep, key=lambda r: r["bleu"])["alpha"]  # first of equals: the smallest alpha
    best = run.cfg.decode.with_method("beam", beam_size=plan.beam, length_penalty=alpha)
    scored(best, f"beam{plan.beam}-a{alpha:g}", {"beam": plan.beam, "alpha": alpha})
    plan.hyps[run.cfg.name] = hyps
    plan.nll[run.cfg.name] = nll_lines_by_k(model, tok, testset, device, run.cfg.train.batch_tokens)
    return {
        "decodes": decodes,
        "alpha_sweep": sweep,
        "nll_by_k": nll_rows(plan.nll[run.cfg.name]),
        "retention": {key: _retention(d["by_k"]) for key, d in decodes.items()},
    }


def _retention(cells: Sequence[dict]) -> float | None:
    first, last = cells[0], cells[-1]
    if last["k"] == first["k"] or not first["bleu"]:
        return None
    return last["bleu"] / first["bleu"]


def rate(models: list[dict], runs_cfg: dict[str, Config], testset: EvalSet, plan: Multi30kPlan):
    """Fill ``learned`` for every model and ``vs_reference`` (retention difference against the
    reference run of the same seed, paired bootstrap) and ``nll_vs_reference`` (the same for the
    rise of teacher-forced NLL from k = 1 to K) for every attention model that is not a
    control. Returns the reference's name."""
    ref = reference_name(models, runs_cfg, plan.reference)
    best = max(m["decodes"]["greedy"]["by_k"][0]["bleu"] for m in models if m["role"] == "main")
    by_name = {m["name"]: m for m in models}
    k_hi = max(testset.k)
    for m in models:
        m["learned"] = m["decodes"]["greedy"]["by_k"][0]["bleu"] >= LEARNED_SHARE * best
        m["vs_reference"] = m["nll_vs_reference"] = None
        if not m["attention"] or m["role"] == "control" or k_hi < 2:
            continue
        partner = ref if m["role"] == "main" else f"{ref}-seed{m['seed']}"
        if partner not in by_name:
            continue
        m["vs_reference"] = {
            key: _no_nan(
                retention_difference_ci(
                    plan.hyps[m["name"]][key],
                    plan.hyps[partner][key],
                    testset,
                    k_hi,
                    runs_cfg[m["name"]].data.tgt_lang,
                    plan.n_bootstrap,
                )
            )
            for key in ("greedy", "beam")
        }
        if m["name"] in plan.nll and partner in plan.nll:
            m["nll_vs_reference"] = _no_nan(
                nll_rise_difference_ci(
                    plan.nll[m["name"]], plan.nll[partner], testset, k_hi, plan.n_bootstrap
                )
            )
    return ref


def decisive_pair(models: Sequence[dict], ref: str) -> list[str]:
    """The reference and the rated attention main model whose greedy retention is closest to
    the reference's (the smallest difference): the pair the verdict hangs on."""
    rated = [
        m
        for m in models
        if m["role"] == "main" and m["attention"] and m["learned"] and m["vs_reference"]
    ]
    if not rated:
        return [ref]
    weakest = min(rated, key=lambda m: _finite(m["vs_reference"]["greedy"]["difference"]))
    return [ref, weakest["name"]]


def _no_nan(d: dict) -> dict:
    """NaN (a retention over a k = 1 BLEU of 0) as None: results.json stays valid JSON."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in d.items()}


def _finite(x: float) -> float:
    return x if x is not None and math.isfinite(x) else -math.inf


def run_multi30k(paths, cfgs: list[Config], out, tok, budget, opts, plan: Multi30kPlan) -> dict:
    """Train (or reuse) every config, the seed copies that ``plan`` asks for too, then decode,
    score and rate them all; returns the results (``study.multi30k_report`` renders them)."""
    import time

    from seq2seq.study.compare import machine_line, tokenizer_digest
    from seq2seq.study.evalsets import build_eval_set

    tick = time.perf_counter()
    max_k = max(c.data.concat_k for c in cfgs)
    testset = build_eval_set(cfgs[0], opts.concat_k, opts.concat_n)
    validset = build_eval_set(cfgs[0], opts.concat_k, opts.concat_n, split="valid")
    todo = (testset, validset, plan, opts, max_k, Path(out))
    runs, models = _train_and_score(paths, cfgs, [None] * len(cfgs), *todo)
    runs_cfg = {r.cfg.name: r.cfg for r in runs}
    ref = rate(models, runs_cfg, testset, plan)
    if plan.seeds:
        names = (
            decisive_pair(models, ref)
            if plan.seed_models == "decisive"
            else [n.strip() for n in plan.seed_models.split(",") if n.strip()]
        )
        extra = seed_configs(cfgs, names, plan.seeds)
        log.info("compare: seeds %s for %s: %d more runs", plan.seeds, ", ".join(names), len(extra))
        seed_of = [c.name.rsplit("-seed", 1)[0] for c in extra]
        paths = [f"{c.name} (seed copy)" for c in extra]
        seed_runs, seed_models = _train_and_score(paths, extra, seed_of, *todo)
        models += seed_models
        runs_cfg.update({r.cfg.name: r.cfg for r in seed_runs})
        ref = rate(models, runs_cfg, testset, plan)
    for m in models:
        m.pop("resolved_config", None)
    return {
        "study": "multi30k",
        "budget": budget.describe(),
        "budget_tokens": budget.tokens,
        "machine": machine_line(opts.jobs),
        "wall_seconds": round(time.perf_counter() - tick, 1),
        "design": DESIGN if budget.tokens else DESIGN_OTHER,
        "tokenizer": {**cfgs[0].tokenizer.model_dump(mode="json"), "sha256": tokenizer_digest(tok)},
        "eval_set": {
            "origin": testset.origin,
            "sentences_per_k": {str(k): testset.k.count(k) for k in sorted(set(testset.k))},
            "valid_lines": len(validset.src),
        },
        "buckets": list(opts.edges),
        "reference": ref,
        "beam": {"size": plan.beam, "alphas": list(plan.alphas)},
        "models": models,
        "reverse": plan.reverse,
    }


def _train_and_score(
    paths, cfgs, seed_of, testset, validset, plan, opts, max_k: int, out: Path
) -> tuple[list, list[dict]]:
    """Train (or reuse) every config into ``out/runs/<name>`` and score it (``evaluate_model``)
    as soon as it is trained, ``opts.jobs`` at a time (``compare.run_pool``: one torch thread per
    worker, the shared tokenizer from ``out/tokenizer``), so no core waits for the slowest
    training before scoring starts. Returns the runs and their result entries, in order; the test
    hypotheses land in ``plan.hyps``, the per-line NLL in ``plan.nll``."""
    from seq2seq.study.compare import _run_result, run_pool

    bare = Multi30kPlan(**{**plan.__dict__, "hyps": {}, "nll": {}})  # each job fills its own
    n, tok_dir = len(cfgs), out / "tokenizer"
    calls = [
        (str(p), cfg, out / "runs" / cfg.name, tok_dir, testset, validset, bare, opts, i, n)
        for i, (p, cfg) in enumerate(zip(paths, cfgs, strict=True), start=1)
    ]
    done = run_pool(_study_job, calls, opts.jobs, "training and scoring")
    runs, models = [], []
    for (run, scores, hyps, nll), base in zip(done, seed_of, strict=True):
        plan.hyps[run.cfg.name], plan.nll[run.cfg.name] = hyps, nll
        entry = _run_result(run)
        entry.update(scores)
        entry.update(
            role=role_of(run.cfg, max_k, base),
            base=base or run.cfg.name,
            seed=run.cfg.train.seed,
            train_concat_k=run.cfg.data.concat_k,
        )
        runs.append(run)
        models.append(entry)
    return runs, models


def _study_job(path, cfg, run_dir, tok_dir, testset, validset, plan, opts, i: int, n: int):
    """One job of ``_train_and_score``: ``train_or_reuse`` then ``evaluate_model``, in a worker
    process (one torch thread, log lines prefixed with the run's name) or in this one. Returns
    the run (its parameter count filled in), its scores, its test hypotheses and per-line NLL."""
    from seq2seq.data.tokenizer import Tokenizer
    from seq2seq.study.compare import train_or_reuse, worker_setup

    worker_setup(cfg.name)
    tok = Tokenizer.load(tok_dir)
    run = train_or_reuse(path, cfg, run_dir, tok)
    log.info("compare: [%d/%d] scoring %s", i, n, cfg.name)
    scores = evaluate_model(run, tok, testset, validset, plan, opts.device, opts.edges)
    return run, scores, plan.hyps[cfg.name], plan.nll[cfg.name]

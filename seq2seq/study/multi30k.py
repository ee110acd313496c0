"""The Multi30k half of the study: RNNsearch against its own fixed-context ablation (Bahdanau et
al. 2015, Figure 2), with the controls, seeds and other families measured alike.

Every config trains with the two-stage recipe (``plan.Recipe``) and is scored in its worker as
soon as it is trained, per test set into a per-line file (``score_set``, ``study.lines``); then
rho by k of every design and every pair's rho difference are read from those files alone
(``rho_pairs``). The verdict is rule v3's (``study.judge``), never this module's.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from pathlib import Path

from seq2seq.config import Config
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decoding.runs import load
from seq2seq.evaluation.metrics import corpus_bleu
from seq2seq.study.cells import length_caps
from seq2seq.study.evalsets import EvalSet, build_eval_set, score_decode, train_length_ratio
from seq2seq.study.lines import line_record, lines_path, read_lines, write_lines
from seq2seq.study.plan import Multi30kPlan, StudyOptions, check_plan, roles
from seq2seq.study.pool import machine_line, run_pool, worker_setup
from seq2seq.study.rho import caption_nlls, nll_lines_by_k, rho_difference_ci, rho_spread
from seq2seq.study.runs import (
    ModelRun,
    checkpoint_stamp,
    decode_with,
    run_result,
    train_or_reuse,
)

log = logging.getLogger("seq2seq")

SCORED = "last.pt"  # both stages are scored at their budget step, not at a best validation


def valid_curve(run_dir: Path) -> list[list[float]]:
    """[[step, validation BLEU], ...] from a run's train_log.jsonl (empty when none)."""
    path = run_dir / "train_log.jsonl"
    if not path.is_file():
        return []
    curve = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "valid" in rec and rec["valid"].get("bleu") is not None:
            curve.append([rec["step"], rec["valid"]["bleu"]])
    return curve


def _stage(run: ModelRun) -> dict:
    s = run.summary
    return {
        **{k: s.get(k) for k in ("steps", "target_tokens", "train_seconds", "target_tokens_per_s")},
        "lr": run.cfg.train.lr,
        "schedule": run.cfg.train.schedule,
        "reused": run.reused,
        "valid_curve": valid_curve(run.run_dir),
    }


def tune_alpha(run: ModelRun, model, tok, validset: EvalSet, plan, device) -> tuple[float, list]:
    """The beam's length penalty best on the joined validation lines (the first of equals: the
    smallest), and the sweep: ``[{"alpha", "bleu", "ratio"}, ...]``."""
    sweep = []
    for a in plan.alphas:
        dcfg = run.cfg.decode.with_method("beam", beam_size=plan.beam, length_penalty=a)
        h, _, _ = decode_with(run, model, tok, validset, dcfg, f"beam{plan.beam}-a{a:g}", device)
        b = corpus_bleu(h, validset.ref, run.cfg.data.tgt_lang)
        ratio = round(b.sys_len / b.ref_len, 3)
        sweep.append({"alpha": a, "bleu": round(b.score, 2), "ratio": ratio})
    return max(sweep, key=lambda r: r["bleu"])["alpha"], sweep


def score_set(
    runs: dict,
    models: dict,
    tok,
    evalset: EvalSet,
    alpha: float,
    ratio: float,
    plan,
    device,
    path: Path,
) -> dict:
    """The per-line record (``study.lines``) of one fine-tuned run on one set, from ``path``
    when it was written for the same checkpoints, set, alpha and length ratio, else scored now
    and written there: greedy and beam decodings of the fine-tuned checkpoint, the single-pair
    checkpoint's greedy (zero-shot) one, every line's teacher-forced loss and every caption's
    NLL alone, with a wrong source and in context (``rho.caption_nlls``)."""
    run, single = runs["joined"], runs["single"]
    key = {
        "checkpoints": [checkpoint_stamp(r.run_dir, r.checkpoint) for r in (single, run)],
        "set": evalset.digest(),
        "alpha": alpha,
        "ratio": ratio,
        "beam": plan.beam,
    }
    if path.is_file():
        try:
            old = read_lines(path)
            if old.record.get("key") == key:
                return old.record
        except ValueError as e:
            log.warning("compare: scoring again: %s", e)
    model, lang = models["joined"], run.cfg.data.tgt_lang
    greedy = run.cfg.decode.with_method("greedy")
    beam = run.cfg.decode.with_method("beam", beam_size=plan.beam, length_penalty=alpha)
    how = {
        "greedy": (run, model, greedy, "greedy"),
        "beam": (run, model, beam, f"beam{plan.beam}-a{alpha:g}"),
        "zero_shot": (single, models["single"], greedy, "greedy"),
    }
    decodes = {
        label: decode_with(r, m, tok, evalset, dcfg, name, device)[:2]
        for label, (r, m, dcfg, name) in how.items()
    }
    caps, batch = length_caps(evalset.src, ratio), run.cfg.train.batch_tokens
    captions = caption_nlls(model, tok, evalset, device, batch)
    nll = nll_lines_by_k(model, tok, evalset, device, batch)
    record = line_record(run.cfg.name, evalset, decodes, caps, ratio, captions, nll, lang)
    record["key"] = key
    write_lines(path, record)
    return record


def entry_fields(record: dict, evalset: EvalSet, edges, alpha: float, plan) -> dict:
    """The main test set's fields of a model's results entry, from its per-line record: greedy
    and beam BLEU and chrF, by k and by source length."""
    lang, decodes = record["tgt_lang"], {}
    for label in ("greedy", "beam"):
        base = score_decode(evalset, record["decodes"][label]["hyp"], edges, lang)
        extra = {"beam": plan.beam, "alpha": alpha} if label == "beam" else {}
        decodes[label] = extra | {k: base[k] for k in ("bleu", "chrf", "by_k", "by_length")}
    return {"decodes": decodes}


def _study_job(path, cfg: Config, out: Path, sets, validset, ratio, plan, opts, i: int, n: int):
    """One model through the recipe, in a worker process (one torch thread, log lines prefixed
    with the run's name) or in this one: the single-pair stage and the joined stage from its
    last.pt (trained, reused or resumed; with ``plan.score_only`` reused only), then every set
    in ``sets`` scored into its per-line file (``score_set``); the first set's results fields."""
    worker_setup(cfg.name)
    tok = Tokenizer.load(out / "tokenizer")
    recipe, train = plan.recipe, not plan.score_only
    single_cfg = recipe.single(cfg)
    single_dir = out / "runs" / single_cfg.name
    keep = {"may_train": train, "overwrite": opts.overwrite}
    single = train_or_reuse(path, single_cfg, single_dir, tok, SCORED, **keep)
    joined_cfg = recipe.joined(cfg, single_dir / SCORED)
    run = train_or_reuse(path, joined_cfg, out / "runs" / cfg.name, tok, SCORED, **keep)
    log.info("compare: [%d/%d] scoring %s", i, n, cfg.name)
    tick = time.perf_counter()
    runs = {"single": single, "joined": run}
    models = {k: load(r.run_dir / r.checkpoint, opts.device).model for k, r in runs.items()}
    run.parameters = models["joined"].num_parameters()
    alpha, sweep = tune_alpha(run, models["joined"], tok, validset, plan, opts.device)
    entry = run_result(run)
    entry.pop("resolved_config", None)
    for j, evalset in enumerate(sets):
        where = lines_path(out, evalset.name, cfg.name)
        record = score_set(runs, models, tok, evalset, alpha, ratio, plan, opts.device, where)
        if j == 0:
            entry.update(entry_fields(record, evalset, opts.edges, alpha, plan))
    entry.update(
        alpha_sweep=sweep,
        seed=cfg.train.seed,
        stages={"single": _stage(single), "joined": _stage(run)},
        score_seconds=round(time.perf_counter() - tick, 1),  # every set, both checkpoints
    )
    return entry


def pair_names(models: list[dict]) -> list[tuple[str, str, str]]:
    """(role, run, against) of every model (results entries: ``name``, ``role``, ``seed``,
    ``base``) against the ablation of its seed, then of every two seeds of one config (role
    "seed", the later seed first)."""
    ablation = {m["seed"]: m["name"] for m in models if m["role"] == "ablation"}
    pairs = [
        (m["role"], m["name"], ablation[m["seed"]])
        for m in models
        if m["role"] != "ablation" and m["seed"] in ablation
    ]
    for base in dict.fromkeys(m["base"] for m in models):
        runs = sorted((m["seed"], m["name"]) for m in models if m["base"] == base)
        pairs += [("seed", b, a) for (_, a), (_, b) in itertools.combinations(runs, 2)]
    return pairs


def rho_pairs(models: list[dict], lines: dict, set_name: str, n_bootstrap: int) -> list[dict]:
    """Every pair of ``pair_names`` on ``set_name``: rho at the widest join, run minus against,
    with the paired 95% interval (``rho.rho_difference_ci``; fractions). ``lines``: (set, run
    name) -> that run's per-line file."""
    rows = []
    for role, a, b in pair_names(models):
        ca, cb = lines[set_name, a].captions, lines[set_name, b].captions
        k = max(ca.units)
        ci = rho_difference_ci(ca, cb, k, n_bootstrap)
        rows.append({"role": role, "run": a, "against": b, "k": k, **ci})
    return rows


def run_multi30k(paths, cfgs: list[Config], out, tok, opts: StudyOptions, plan: Multi30kPlan):
    """Train (or reuse) every config and the seed copies ``plan`` asks for through the recipe,
    score each on every test set as it is trained (per-line files), then read rho by k of each
    config over its seeds and every pair's rho difference from those files (``rho_pairs``);
    returns the results (``study.report`` renders them)."""
    tick = time.perf_counter()
    out = Path(out)
    role_of = roles(cfgs, plan)
    k = plan.recipe.concat_k
    sets = [build_eval_set(cfgs[0], k, opts.concat_n, "test", p) for p in plan.tests or [None]]
    validset = build_eval_set(cfgs[0], k, opts.concat_n, split="valid")
    ratio = train_length_ratio(cfgs[0])
    extra = check_plan(cfgs, plan)
    every = list(cfgs) + extra
    labels = [str(p) for p in paths] + [f"{c.name} (seed copy)" for c in extra]
    if plan.only:  # --only: these runs alone, in its order (check_plan: each one is a run)
        at = {c.name: i for i, c in enumerate(every)}
        keep = [at[n] for n in dict.fromkeys(plan.only)]
        every, labels = [every[i] for i in keep], [labels[i] for i in keep]
    calls = [
        (label, cfg, out, sets, validset, ratio, plan, opts, i, len(every))
        for i, (label, cfg) in enumerate(zip(labels, every, strict=True), start=1)
    ]
    what = "scoring" if plan.score_only else "training and scoring"
    models = run_pool(_study_job, calls, opts.jobs, what)
    for cfg, entry in zip(every, models, strict=True):
        copy = cfg in extra
        base = cfg.name.rsplit("-seed", 1)[0] if copy else cfg.name
        entry.update(role=role_of[base], base=base, copy=copy)
    lines = {
        (s.name, m["name"]): read_lines(lines_path(out, s.name, m["name"]))
        for s in sets
        for m in models
    }
    for m in models:
        m["k1_ratio"] = lines[sets[0].name, m["name"]].k1_ratio()
    groups: dict[str, list[dict]] = {}  # config -> its runs, one per seed
    for m in models:
        groups.setdefault(m["base"], []).append(m)
    return {
        "study": "multi30k",
        "recipe": {**plan.recipe.__dict__, "words": plan.recipe.describe()},
        "machine": machine_line(opts.jobs),
        "wall_seconds": round(time.perf_counter() - tick, 1),
        "tokenizer": {**cfgs[0].tokenizer.model_dump(mode="json"), "sha256": tok.digest()},
        "length_ratio": ratio,
        "valid_lines": len(validset.src),
        "sets": {
            s.name: {
                "origin": s.origin,
                "digest": s.digest(),
                "lines": f"lines/{s.name}/",
                "lines_by_k": {str(x): s.k.count(x) for x in sorted(set(s.k))},
                "pairs": rho_pairs(models, lines, s.name, plan.n_bootstrap),
            }
            for s in sets
        },
        "tables": {
            s.name: {
                base: {
                    "seeds": [m["seed"] for m in runs],
                    **rho_spread([lines[s.name, m["name"]].captions for m in runs]),
                }
                for base, runs in groups.items()
            }
            for s in sets
        },
        "buckets": list(opts.edges),
        "beam": {"size": plan.beam, "alphas": list(plan.alphas)},
        "seeds": list(plan.seeds),
        "models": models,
    }

"""The Multi30k half of the study: RNNsearch against its own fixed-context ablation (Bahdanau et
al. 2015, Figure 2), with the controls, seeds and other families rated by the same rule.

Every config trains with the two-stage recipe (``plan.Recipe``): single pairs, then single plus
joined pairs from that checkpoint, the same updates for every model. Each run is scored in its
worker as soon as it is trained (``pool.run_pool``, one torch thread a worker):

- the single-pair checkpoint, greedy, on the test lines joined k = 1..K (the zero-shot
  length-generalisation control, reported apart from the verdict), and its validation curve (the
  plateau the competence gate reads);
- the fine-tuned checkpoint at the budget step, greedy and with beam search at the length penalty
  best on validation joined the same way: per cell BLEU with its bootstrap interval, BLEU without
  its brevity penalty and the length diagnostics (``cells``); teacher-forced NLL by k and the
  per-caption NLL gap (``nll``).

Then every pair (``pairs``) gets its paired statistics and ``verdict`` rates it: the headline
pair per seed, the negative control (plain ``rnn`` against the ablation), the null control (the
ablation's seed 2 against its seed 1) and every other family against the ablation.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path

from seq2seq.checkpoint import load_for_inference
from seq2seq.config import Config
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decoding.tune import corpus_bleu
from seq2seq.study import verdict
from seq2seq.study.cells import cell_scores, retention_difference_ci, retention_nobp_difference
from seq2seq.study.evalsets import EvalSet, build_eval_set, score_decode
from seq2seq.study.nll import caption_gap_ci, caption_nll_gaps, nll_lines_by_k, nll_rows
from seq2seq.study.plan import Multi30kPlan, StudyOptions, check_plan, roles
from seq2seq.study.pool import machine_line, run_pool, worker_setup
from seq2seq.study.runs import ModelRun, decode_with, run_result, tokenizer_digest, train_or_reuse

log = logging.getLogger("seq2seq")

SCORED = "last.pt"  # both stages are scored at their budget step, not at a best validation


def valid_curve(run_dir: Path) -> list[list[float]]:
    """[[step, validation BLEU], ...] from a run's train_log.jsonl (empty when none)."""
    path = run_dir / "train_log.jsonl"
    if not path.is_file():
        return []
    curve = []
    for line in path.read_text().splitlines():
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
        "steps": s.get("steps"),
        "target_tokens": s.get("target_tokens"),
        "train_seconds": s.get("train_seconds"),
        "target_tokens_per_s": s.get("target_tokens_per_s"),
        "lr": run.cfg.train.lr,
        "schedule": run.cfg.train.schedule,
        "reused": run.reused,
        "valid_curve": valid_curve(run.run_dir),
    }


def zero_shot(run: ModelRun, tok, testset: EvalSet, device, n_bootstrap: int) -> list[dict]:
    """The single-pair checkpoint decoded greedily on every test line: cells by k."""
    model, _, _ = load_for_inference(run.run_dir / run.checkpoint, device)
    h, cut, _ = decode_with(
        run, model, tok, testset, run.cfg.decode.with_method("greedy"), "greedy", device
    )
    return cell_scores(testset, h, cut, run.cfg.data.tgt_lang, n_bootstrap)


def evaluate_model(run: ModelRun, tok, testset: EvalSet, validset: EvalSet, plan, device, edges):
    """Decode and score one fine-tuned run: greedy and tuned beam on ``testset`` (cells by k),
    the length-penalty sweep on ``validset``, NLL by k and the per-caption NLL gap. Returns the
    run's entry fields and, apart, its test hypotheses by decoding."""
    lang = run.cfg.data.tgt_lang
    model, _, _ = load_for_inference(run.run_dir / run.checkpoint, device)
    run.parameters = model.num_parameters()
    decodes, hyps = {}, {}

    def scored(dcfg, label: str, extra: dict) -> None:
        h, cut, seconds = decode_with(run, model, tok, testset, dcfg, label, device)
        base = score_decode(testset, h, edges, lang)
        key = "greedy" if dcfg.method == "greedy" else "beam"
        decodes[key] = {
            "seconds": round(seconds, 1),
            **extra,
            "bleu": base["bleu"],
            "chrf": base["chrf"],
            "by_k": cell_scores(testset, h, cut, lang, plan.n_bootstrap),
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
    batch = run.cfg.train.batch_tokens
    nll = nll_lines_by_k(model, tok, testset, device, batch)
    gaps = caption_nll_gaps(model, tok, testset, device, batch)
    fields = {
        "decodes": decodes,
        "alpha_sweep": sweep,
        "nll_by_k": nll_rows(nll),
        "caption_gap": {str(k): caption_gap_ci(gaps, k, plan.n_bootstrap) for k in sorted(gaps)},
    }
    return fields, hyps


def _study_job(path, cfg: Config, out: Path, testset, validset, plan, opts, i: int, n: int):
    """One model through the recipe, in a worker process (one torch thread, log lines prefixed
    with the run's name) or in this one: the single-pair stage (trained or reused) and its
    zero-shot cells, the joined stage from its last.pt, then ``evaluate_model``."""
    worker_setup(cfg.name)
    tok = Tokenizer.load(out / "tokenizer")
    recipe = plan.recipe
    single_cfg = recipe.single(cfg)
    single_dir = out / "runs" / single_cfg.name
    single = train_or_reuse(path, single_cfg, single_dir, tok, SCORED)
    tick = time.perf_counter()
    shot = zero_shot(single, tok, testset, opts.device, plan.n_bootstrap)
    scoring = time.perf_counter() - tick
    joined_cfg = recipe.joined(cfg, single_dir / SCORED)
    run = train_or_reuse(path, joined_cfg, out / "runs" / cfg.name, tok, SCORED)
    log.info("compare: [%d/%d] scoring %s", i, n, cfg.name)
    tick = time.perf_counter()
    fields, hyps = evaluate_model(run, tok, testset, validset, plan, opts.device, opts.edges)
    scoring += time.perf_counter() - tick
    entry = run_result(run)
    entry.pop("resolved_config", None)
    entry.update(fields)
    entry.update(
        seed=cfg.train.seed,
        stages={"single": _stage(single), "joined": _stage(run)},
        zero_shot={"greedy": {"by_k": shot}},
        score_seconds=round(scoring, 1),  # both checkpoints' decoding and scoring
    )
    return entry, hyps


def pairs(models: Sequence[dict]) -> list[tuple[str, str, str]]:
    """(role, attention run, ablation run) of every pair the rule rates: the headline pair per
    seed, the negative control, the null control (the ablation's first seed copy against the
    ablation) and every family, each against the ablation of the same seed."""
    by_role: dict[str, list[dict]] = {}
    for m in models:
        by_role.setdefault(m["role"], []).append(m)
    ablations = {m["seed"]: m["name"] for m in by_role.get("ablation", [])}
    main_seed = next((m["seed"] for m in models if m["role"] == "ablation" and not m["copy"]), 1)
    out = []
    for m in by_role.get("headline", []):
        if m["seed"] in ablations:
            out.append(("headline", m["name"], ablations[m["seed"]]))
    for role in ("negative", "family"):
        for m in by_role.get(role, []):
            if m["seed"] in ablations:
                out.append((role, m["name"], ablations[m["seed"]]))
    copies = sorted(s for s in ablations if s != main_seed)
    if copies:
        out.append(("null", ablations[copies[0]], ablations[main_seed]))
    return out


def rate(models: list[dict], hyps: dict, testset: EvalSet, plan, lang: str | None) -> dict:
    """Every pair's paired statistics and its row under the rule, the seed interval of the
    headline's retention difference and the overall verdict (``verdict``)."""
    by_name = {m["name"]: m for m in models}
    k_hi = max(testset.k)
    rows = []
    for role, a, b in pairs(models):
        ha, hb = hyps[a]["greedy"], hyps[b]["greedy"]
        stats = {
            "retention": retention_difference_ci(ha, hb, testset, k_hi, lang, plan.n_bootstrap),
            "retention_nobp": retention_nobp_difference(ha, hb, testset, k_hi, lang),
        }
        row = verdict.rate_pair(by_name[a], by_name[b], stats, role)
        rows.append(row)
    diffs = [r["retention"]["difference"] for r in rows if r["role"] == "headline"]
    seeds = verdict.seed_interval(diffs)
    return {
        "rows": rows,
        "seed_interval": seeds,
        "overall": verdict.overall(rows, seeds),
    }


def run_multi30k(paths, cfgs: list[Config], out, tok, opts: StudyOptions, plan: Multi30kPlan):
    """Train (or reuse) every config and the seed copies ``plan`` asks for through the recipe,
    score each as it is trained, then rate every pair; returns the results (``study.report``
    renders them)."""
    tick = time.perf_counter()
    out = Path(out)
    role_of = roles(cfgs, plan)
    k = plan.recipe.concat_k
    testset = build_eval_set(cfgs[0], k, opts.concat_n)
    validset = build_eval_set(cfgs[0], k, opts.concat_n, split="valid")
    extra = check_plan(cfgs, plan)
    every = list(cfgs) + extra
    labels = [str(p) for p in paths] + [f"{c.name} (seed copy)" for c in extra]
    calls = [
        (label, cfg, out, testset, validset, plan, opts, i, len(every))
        for i, (label, cfg) in enumerate(zip(labels, every, strict=True), start=1)
    ]
    done = run_pool(_study_job, calls, opts.jobs, "training and scoring")
    models, hyps = [], {}
    for i, (cfg, (entry, h)) in enumerate(zip(every, done, strict=True)):
        copy = i >= len(cfgs)
        base = cfg.name.rsplit("-seed", 1)[0] if copy else cfg.name
        entry.update(role=role_of[base], base=base, copy=copy)
        models.append(entry)
        hyps[cfg.name] = h
    rating = rate(models, hyps, testset, plan, cfgs[0].data.tgt_lang)
    return {
        "study": "multi30k",
        "recipe": {**plan.recipe.__dict__, "words": plan.recipe.describe()},
        "machine": machine_line(opts.jobs),
        "wall_seconds": round(time.perf_counter() - tick, 1),
        "tokenizer": {**cfgs[0].tokenizer.model_dump(mode="json"), "sha256": tokenizer_digest(tok)},
        "eval_set": {
            "origin": testset.origin,
            "sentences_per_k": {str(x): testset.k.count(x) for x in sorted(set(testset.k))},
            "valid_lines": len(validset.src),
        },
        "buckets": list(opts.edges),
        "beam": {"size": plan.beam, "alphas": list(plan.alphas)},
        "seeds": list(plan.seeds),
        "models": models,
        "verdict": rating,
        "reverse": plan.reverse,
        "zoo": plan.zoo,
    }

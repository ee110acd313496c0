"""``seq2seq compare``: the bottleneck-versus-attention study (Bahdanau et al. 2015, Figure 2).

Every config trains with one shared tokenizer (``runs.shared_tokenizer``) into ``OUT/runs/<name>``
(reused when finished, resumed when interrupted: ``runs.train_or_reuse``) and is decoded and
scored by source length; ``study.report`` writes report.md, results.json and the plots. Real text
goes through ``study.multi30k``; a synthetic task (``--exact-match`` / ``--alignment``) through
``study.synthetic``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from seq2seq.config import ConfigError
from seq2seq.data.text import DataError, resolve_corpus_file
from seq2seq.study.multi30k import run_multi30k
from seq2seq.study.plan import Budget, Multi30kPlan, StudyOptions, check_plan, load_study_configs
from seq2seq.study.report import write_report
from seq2seq.study.runs import shared_tokenizer
from seq2seq.study.synthetic import run_synthetic


def compare(
    paths: Sequence[str | Path],
    out: str | Path,
    budget: Budget,
    opts: StudyOptions,
    plan: Multi30kPlan | None = None,
) -> dict:
    """Train (or reuse) every config, decode, score, draw and write the report into ``out``;
    returns the results (also in ``out/results.json``). Real text (no ``opts.alignment`` /
    ``opts.exact_match``) trains with ``plan.recipe``; a synthetic task under ``budget``.

    Raises:
        ConfigError, DataError, CheckpointError, TrainingError: one-line, user-facing problems
            (a missing ``--test`` file before anything is trained or written).
    """
    out = Path(out)
    real_text = not (opts.alignment or opts.exact_match)
    if real_text and budget.given:
        raise ConfigError(
            "real text trains with the two-stage recipe; give --single-steps and "
            "--joined-steps instead of a --budget-* option"
        )
    cfgs = load_study_configs(paths, budget, opts.device)
    if real_text:
        plan = plan or Multi30kPlan()
        check_plan(cfgs, plan)  # what the plan names, checked before any training
        for prefix in plan.tests:  # every --test set's files, before the tokenizer too
            _check_test_prefix(prefix, cfgs[0].data.src_lang, cfgs[0].data.tgt_lang)
        if plan.score_only:  # nothing trained or written when a run is missing
            runs = [*cfgs, *check_plan(cfgs, plan)]
            _check_scored_runs(out, [c for c in runs if not plan.only or c.name in plan.only])
    tok = shared_tokenizer(cfgs[0], out, opts.overwrite)  # reads the corpus before OUT is made
    out.mkdir(parents=True, exist_ok=True)
    if real_text:
        results = run_multi30k(paths, cfgs, out, tok, opts, plan)
    else:
        results = run_synthetic(paths, cfgs, out, tok, budget, opts)
    write_report(results, out)
    return results


def _check_test_prefix(prefix: str, src_lang: str, tgt_lang: str) -> None:
    """``--test PREFIX``'s two files exist, or DataError: one line naming the option (and a
    PREFIX given with its language suffix as such)."""
    for lang in (src_lang, tgt_lang):
        try:
            resolve_corpus_file(prefix, lang)
        except DataError as e:
            for suffix in (f".{src_lang}", f".{tgt_lang}", f".{src_lang}.gz", f".{tgt_lang}.gz"):
                if prefix.endswith(suffix):
                    raise DataError(
                        f"--test {prefix}: give the test set's PREFIX, without the language "
                        f"suffix: --test {prefix.removesuffix(suffix)}"
                    ) from None
            raise DataError(f"--test {prefix}: {e}") from None


def _check_scored_runs(out: Path, cfgs: Sequence) -> None:
    """``--score-only``: every run, both stages, was trained into ``out`` (its compare.json),
    and the study's tokenizer is there, or ConfigError naming the first missing run."""
    if not (out / "tokenizer" / "spec.json").is_file():
        raise ConfigError(
            f"compare --score-only: {out} holds no study (no tokenizer/); train it first (the "
            "same command without --score-only)"
        )
    for cfg in cfgs:
        for name in (f"{cfg.name}-single", cfg.name):
            if not (out / "runs" / name / "compare.json").is_file():
                raise ConfigError(
                    f"compare --score-only: {out / 'runs' / name} holds no finished run of "
                    f"{cfg.name}; train it first (the same command without --score-only)"
                )

"""``seq2seq paired``: several systems against the first (the baseline), with sacreBLEU's own paired
significance tests (``sacrebleu.significance.PairedTest``, what ``sacrebleu --paired-bs`` and
``--paired-ar`` run), over BLEU, chrF and TER.

``bs`` is paired bootstrap resampling (Koehn 2004), ``ar`` approximate randomisation (Riezler and
Maxwell 2005; its intervals from a separate bootstrap of ``AR_CONFIDENCE`` resamples). Scores are
``metrics.corpus_score``'s, so a system's score equals its ``eval`` score. The seed is sacrebleu's
(``SACREBLEU_SEED``, else 12345) unless one is given.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seq2seq.data.text import read_lines
from seq2seq.evaluation.metrics import METRICS, sacrebleu_metric, sacrebleu_seed
from seq2seq.evaluation.report import MADE_WITH, EvalTexts, check_aligned, text_warnings

PAIRED_TESTS = {"bs": "paired bootstrap resampling", "ar": "paired approximate randomisation"}
AR_CONFIDENCE = 1000  # bootstrap resamples for the intervals of an ``ar`` test
SIGNIFICANT = 0.05  # p-values below this are marked ``*``, as sacrebleu marks them


@dataclass
class System:
    """One system's hypotheses: ``name`` (its file, or its ``-c``) and how it was translated
    (``made_with``: checkpoint, decode, decode_source, ensemble; None for a file)."""

    name: str
    hyps: list[str]
    made_with: dict | None = None


def read_systems(paths: Sequence[Path], texts: EvalTexts) -> list[System]:
    """Read each ``--hyp`` file as a system (the command refuses a file given twice); raises as
    ``read_eval_texts`` (DataError for a file, ValueError for its line count)."""
    systems = [System(str(p), read_lines(p)) for p in paths]
    check_aligned([(texts.ref_names[0], texts.refs[0])] + [(s.name, s.hyps) for s in systems])
    return systems


def paired_report(
    systems: Sequence[System],
    texts: EvalTexts,
    names: Sequence[str],
    test: str,
    n_samples: int | None = None,
    seed: int | None = None,
    tgt_lang: str | None = None,
    lowercase: bool = False,
) -> dict:
    """sacreBLEU's ``PairedTest`` of two or more ``systems`` (the first is the baseline) over the
    metrics ``names``, as one JSON-ready dict: the test (``bs`` | ``ar``), its resamples (None:
    sacrebleu's 1000 / 10000) and seed (>= 1; None: sacrebleu's), each metric's sacrebleu name
    and signature, warnings, and per system (baseline first) how it was made and, per metric,
    ``score``, ``mean`` and ``ci`` (the bootstrap mean and the half-width of its 95% interval)
    and ``p_value`` (None for the baseline; 1 in a metric that counts the same on every line of
    a system as of the baseline, such as a copy of it, where sacrebleu's test would give
    p = 1/(n+1), as if significant). Raises ValueError for a
    BLEU tokenizer of ``tgt_lang`` that is not installed, or (``seed`` None) an environment's
    ``SACREBLEU_SEED`` that is not a seed."""
    from sacrebleu.significance import PairedTest

    env_seed = os.environ.get("SACREBLEU_SEED", "12345")
    if seed is None and env_seed.lower() != "none" and not _is_seed(env_seed):
        raise ValueError(
            f"SACREBLEU_SEED={env_seed!r} (the environment): give a whole number from 0 to "
            f"{2**32 - 1}, or None, or unset it; --paired-seed overrides it"
        )
    metrics = {n: sacrebleu_metric(n, tgt_lang, lowercase) for n in names}
    named = [(s.name, [h.rstrip() for h in s.hyps]) for s in systems]
    stripped = [[x.rstrip() for x in r] for r in texts.refs]
    with sacrebleu_seed(None if seed is None else str(seed)):
        ps = PairedTest(
            named,
            metrics,
            references=stripped,
            test_type=test,
            n_samples=n_samples or 0,
            n_ar_confidence=AR_CONFIDENCE if test == "ar" else -1,
        )
        sigs, scores = ps()
    keys = dict(zip(names, ps.metrics, strict=True))  # ours -> sacrebleu's metric name
    warnings = text_warnings([(s.name, s.hyps) for s in systems], texts)
    same = _same_counts(named, stripped, metrics)
    for i, same_in in same.items():
        copy = named[i][1] == named[0][1]
        how = "is line for line the baseline" if copy else "counts as the baseline on every line"
        warnings.append(
            f"{systems[i].name} {how} in {', '.join(same_in)} (no resample can differ): reported "
            "as no difference there (p = 1)"
        )
    rows = []
    for i, s in enumerate(systems):
        row: dict = {"name": s.name, "baseline": i == 0}
        row.update(s.made_with or dict.fromkeys(MADE_WITH))
        for n, key in keys.items():
            r = scores[key][i]
            row[n] = {k: _num(getattr(r, k)) for k in ("score", "mean", "ci", "p_value")}
            if n in same.get(i, ()):  # no resample can differ, but sacrebleu says p = 1/(n+1)
                row[n]["p_value"] = 1.0
        rows.append(row)
    used_seed = seed if seed is not None else env_seed
    return {
        "paired": test,
        "test": PAIRED_TESTS[test],
        "n_samples": ps.n_samples,
        "seed": None if str(used_seed).lower() == "none" else int(used_seed),
        "baseline": systems[0].name,
        "refs": list(texts.ref_names),
        "sentences": len(systems[0].hyps),
        "tgt_lang": tgt_lang,
        "lowercase": lowercase,
        "warnings": warnings,
        "metric_names": keys,
        "signatures": {n: sigs[key].format() for n, key in keys.items()},
        "systems": rows,
    }


def _same_counts(named, refs, metrics: dict) -> dict[int, list[str]]:
    """System index -> the metrics (of ``metrics``, name -> sacrebleu's metric object) whose
    per-line statistics (what sacrebleu's resampling adds up) equal the baseline's on every line,
    for each system with any: none of its resamples can differ, though sacrebleu counts that as
    p = 1/(n+1), as if significant."""
    out: dict[int, list[str]] = {}
    for n, metric in metrics.items():
        stats = [metric._extract_corpus_statistics(hyps, refs) for _, hyps in named]
        for i in range(1, len(named)):
            if np.array_equal(np.asarray(stats[i]), np.asarray(stats[0])):
                out.setdefault(i, []).append(n)
    return out


def _is_seed(text: str) -> bool:
    """``text`` is a seed numpy's RandomState takes (what sacrebleu makes of SACREBLEU_SEED)."""
    return text.strip().isdigit() and int(text) <= 2**32 - 1


def _num(x) -> float | None:
    """A sacrebleu number (numpy float32/64 or Python float) as a Python float; None stays."""
    return None if x is None else float(x)


def _cell(r: dict) -> str:
    """``31.42 (31.40 ± 1.20) p = 0.0010*`` (the baseline has no p-value)."""
    text = f"{r['score']:.2f}"
    if r["mean"] is not None:
        text += f" ({r['mean']:.2f} ± {r['ci']:.2f})"
    if r["p_value"] is not None:
        star = "*" if r["p_value"] < SIGNIFICANT else ""
        text += f" p = {r['p_value']:.4f}{star}"
    return text


def format_paired(report: dict) -> str:
    """The paired report as plain text: a header naming the test, one row per system (score,
    bootstrap mean ± 95% interval, p-value against the baseline), the signatures, the legend."""
    names = [n for n in METRICS if n in report["signatures"]]
    unit = "resamples" if report["paired"] == "bs" else "trials"
    head = (
        f"{report['test']} (sacreBLEU), {report['n_samples']} {unit}, seed {report['seed']}: "
        f"each system against the baseline {report['baseline']}"
    )
    label = report["metric_names"]  # sacrebleu's: BLEU, chrF2, TER
    table = [["system"] + [f"{label[n]} (μ ± 95% CI)" for n in names]]
    for row in report["systems"]:
        name = ("Baseline: " if row["baseline"] else "") + row["name"]
        table.append([name] + [_cell(row[n]) for n in names])
    widths = [max(len(r[c]) for r in table) for c in range(len(table[0]))]
    lines = [head] + [
        "  ".join(x.ljust(w) for x, w in zip(r, widths, strict=True)).rstrip() for r in table
    ]
    lines += [f"  {label[n]} signature: {report['signatures'][n]}" for n in names]
    lines.append(
        f"p: the chance of a difference this large from the baseline were the two the same "
        f"system; * marks p < {SIGNIFICANT}"
    )
    return "\n".join(lines)

"""What ``eval`` reports: the files read and checked line for line, every metric with its
signature, tokenisation warnings, BLEU by source length; as one JSON-ready dict and as text.
Scoring is text against text: the hypotheses are a file, or translations someone else made."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from seq2seq.console import counted
from seq2seq.data.text import read_lines
from seq2seq.evaluation.metrics import (
    DEFAULT_BUCKETS,
    METRICS,
    bleu_by_length,
    corpus_score,
    tokenisation_warnings,
)

# what ``runs.Translator.made_with`` says of translated hypotheses; all null for a file
MADE_WITH = ("checkpoint", "ensemble", "decode", "decode_source")


@dataclass
class EvalTexts:
    """The lines ``eval`` scores: one or more reference streams, the sources (with ``--src``) and
    the hypotheses (empty until translated when there is no hypothesis file)."""

    refs: list[list[str]]
    ref_names: list[str]
    sources: list[str] | None
    hyps: list[str]
    hyp_name: str


def read_eval_texts(refs: Sequence[Path], src: Path | None, hyp: Path | None) -> EvalTexts:
    """Read the hypothesis file (if any), the references and the sources (if any).

    Raises:
        DataError: a file is missing, unreadable or not UTF-8.
        ValueError: the files differ in line count (``check_aligned``), or a reference file has
            no non-blank line (a score over zero reference tokens is refused).
    """
    hyps = read_lines(hyp) if hyp is not None else []
    ref_lines = [read_lines(r) for r in refs]
    sources = read_lines(src) if src is not None else None
    streams = [(str(p), r) for p, r in zip(refs, ref_lines, strict=True)]
    streams += [(str(src), sources)] if sources is not None else []
    streams += [(str(hyp), hyps)] if hyp is not None else []
    check_aligned(streams)
    for name, lines in zip(refs, ref_lines, strict=True):
        if not any(x.strip() for x in lines):
            blank = {0: "", 1: " (its one line is blank)"}.get(
                len(lines), f" (all {len(lines)} blank)"
            )
            raise ValueError(f"{name}: no lines to score{blank}; give a reference with text")
    hyp_name = str(hyp) if hyp is not None else f"translations of {src}"
    return EvalTexts(ref_lines, [str(r) for r in refs], sources, hyps, hyp_name)


def check_aligned(streams: Sequence[tuple[str, Sequence[str]]]) -> None:
    """Every (name, lines) stream must have as many lines as the first one; raises ValueError,
    one line naming both files and both counts."""
    first, lines = streams[0]
    for name, other in streams[1:]:
        if len(other) != len(lines):
            raise ValueError(
                f"{name} has {counted(len(other), 'line')} but {first} has {len(lines)}: "
                "hypotheses, references and sources must align line for line"
            )


def evaluation_report(
    texts: EvalTexts,
    names: Sequence[str],
    by_length: bool = False,
    edges: Sequence[int] = DEFAULT_BUCKETS,
    tgt_lang: str | None = None,
    lowercase: bool = False,
    made_with: dict | None = None,
) -> dict:
    """Everything ``eval`` reports, as one JSON-ready dict: each metric's score and signature,
    the warnings (``text_warnings``), (``by_length``) BLEU by source length, and ``made_with``,
    how the hypotheses were translated (``runs.Translator.made_with``; null for a file). Raises
    ValueError as ``metrics.corpus_score``."""
    hyps, refs = texts.hyps, texts.refs
    warnings = text_warnings([(texts.hyp_name, hyps)], texts)
    report: dict = {
        "hyp": texts.hyp_name,
        **dict.fromkeys(MADE_WITH),
        **(made_with or {}),
        "refs": list(texts.ref_names),
        "sentences": len(hyps),
        "tgt_lang": tgt_lang,
        "lowercase": lowercase,
        "warnings": warnings,
    }
    for n in names:
        report[n] = corpus_score(n, hyps, refs, tgt_lang, lowercase).as_dict()
    if by_length and texts.sources is not None:
        rows = bleu_by_length(texts.sources, hyps, refs, edges, tgt_lang, lowercase)
        report["by_length"] = {"unit": "source words", "buckets": rows}
    return report


def text_warnings(systems: Sequence[tuple[str, Sequence[str]]], texts: EvalTexts) -> list[str]:
    """The warnings about what is scored: each (name, hypotheses) system's and each reference's
    tokenisation (``tokenisation_warnings``), then each system that is, line for line
    (right-stripped), one of the references: a score of 100 that measures no translation."""
    warnings = [w for name, hyps in systems for w in tokenisation_warnings(hyps, name)]
    for lines, ref_name in zip(texts.refs, texts.ref_names, strict=True):
        warnings += tokenisation_warnings(lines, ref_name)
    for name, hyps in systems:
        mine = [h.rstrip() for h in hyps]
        warnings += [
            f"{name} is line for line the reference {ref_name}, so its scores are a copy's (BLEU "
            "100 on real text); is the hypothesis file the reference? give the system's "
            "translations"
            for ref, ref_name in zip(texts.refs, texts.ref_names, strict=True)
            if mine and mine == [r.rstrip() for r in ref]
        ]
    return warnings


def format_report(report: dict) -> str:
    """The scores, each with its signature, and the by-length table (aligned), as plain text."""
    scored = [n for n in METRICS if n in report]
    out = [f"{report[n]['text']}\n  signature: {report[n]['signature']}" for n in scored]
    if "by_length" in report:
        out.append(f"BLEU by source length ({report['hyp']}):")
        out.append(f"{'source words':>12}  {'sentences':>9}  {'BLEU':>6}")
        for r in report["by_length"]["buckets"]:
            bleu = "-" if r["bleu"] is None else f"{r['bleu']:.2f}"
            out.append(f"{r['bucket']:>12}  {r['sentences']:>9}  {bleu:>6}")
    return "\n".join(out)

"""Corpus metrics through sacrebleu (Post 2018), the one home of ``sacrebleu``.

Scores are computed on detokenised, cased text against raw references, exactly as the ``sacrebleu``
command line does, and always reported with their signature.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sacrebleu.metrics import BLEU, CHRF, TER


@dataclass
class Score:
    name: str
    score: float
    signature: str
    text: str

    def as_dict(self) -> dict:
        return {"score": self.score, "signature": self.signature, "text": self.text}


def _metric(name: str, tgt_lang: str | None, lowercase: bool, tokenize: str | None):
    if name == "bleu":
        return BLEU(lowercase=lowercase, tokenize=tokenize, trg_lang=tgt_lang or "")
    if name == "chrf":
        return CHRF(lowercase=lowercase)
    if name == "ter":
        return TER(case_sensitive=not lowercase)
    raise ValueError(f"unknown metric {name!r}; choose bleu, chrf or ter")


def corpus_score(
    name: str,
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    tgt_lang: str | None = None,
    lowercase: bool = False,
    tokenize: str | None = None,
) -> Score:
    """One corpus-level score.

    Args:
        name: ``bleu``, ``chrf`` or ``ter``.
        hyps: one hypothesis per line.  refs: one or more reference streams, each as long as hyps.
        tgt_lang: target language code; lets sacrebleu pick its tokenizer (zh, ja, ko) for BLEU.
        tokenize: force a sacrebleu BLEU tokenizer (default: 13a, or the language's own).

    Raises:
        ValueError: a reference stream's length differs from the hypotheses'.
    """
    for r in refs:
        if len(r) != len(hyps):
            raise ValueError(f"{len(hyps)} hypotheses but a reference stream of {len(r)} lines")
    metric = _metric(name, tgt_lang, lowercase, tokenize)
    result = metric.corpus_score(list(hyps), [list(r) for r in refs])
    return Score(name, float(result.score), str(metric.get_signature()), str(result))

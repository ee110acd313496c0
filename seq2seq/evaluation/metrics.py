"""Corpus metrics through sacrebleu (Post 2018), the one home of ``sacrebleu``.

Scores are computed on detokenised, cased text against raw references, as the ``sacrebleu``
command line does (each line right-stripped, an empty line an empty segment), with their
signature. BLEU's tokenizer is sacrebleu's choice for the target language (``zh``, ``ja-mecab``,
``ko-mecab``: the last two need ``sacrebleu[ja]`` / ``[ko]``; ``13a`` otherwise). ``lowercase``
lowercases BLEU and chrF (``sacrebleu -lc --chrf-lowercase``); TER is case-insensitive always, as
sacrebleu's default.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from sacrebleu.metrics import BLEU, CHRF, TER

from seq2seq.config.lists import parse_list

METRICS = ("bleu", "chrf", "ter")
DEFAULT_BUCKETS = (10, 20, 30, 40, 60)

# A space before a sentence-final period or a comma, or split English clitics: "cat .", "do n't".
_PRETOKENISED = re.compile(r" [.,](?: |$)| n't\b| 's\b")
_SUBWORD = re.compile(r"▁|@@ |@@$")


@dataclass
class Score:
    name: str
    score: float
    signature: str
    text: str

    def as_dict(self) -> dict:
        return {"score": self.score, "signature": self.signature, "text": self.text}


def sacrebleu_metric(name: str, tgt_lang: str | None = None, lowercase: bool = False):
    """sacreBLEU's metric object for ``name`` (``bleu``, ``chrf`` or ``ter``), as every score here
    uses it (BLEU: 13a, or the target language's tokenizer, chosen by the code's language part in
    lower case: ZH, zh-CN and zh_CN are zh; sacreBLEU's own warning on tokenised text, lines long,
    is left to ``tokenisation_warnings``); raises ValueError for an unknown metric, or a language
    whose BLEU tokenizer is not installed."""
    if name == "bleu":
        lang = (tgt_lang or "").lower().replace("_", "-").split("-")[0]
        try:
            return BLEU(lowercase=lowercase, trg_lang=lang, force=True)
        except (ImportError, RuntimeError):  # sacrebleu's message spans lines: say it in one
            raise ValueError(
                f"BLEU for target language {tgt_lang!r} needs sacrebleu's extra tokenizer; "
                f"install it with: pip install 'sacrebleu[{lang}]'"
            ) from None
    if name == "chrf":
        return CHRF(lowercase=lowercase)
    if name == "ter":
        return TER()  # case-insensitive, as sacrebleu's default (--ter-case-sensitive is opt-in)
    raise ValueError(f"unknown metric {name!r}; choose bleu, chrf or ter")


def corpus_score(
    name: str,
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    tgt_lang: str | None = None,
    lowercase: bool = False,
) -> Score:
    """One corpus-level score of ``name`` (``bleu``, ``chrf`` or ``ter``): one hypothesis per
    line against one or more reference streams, each as long as ``hyps``. Raises ValueError for
    no hypothesis (a score over zero segments is refused, never 0 or an IndexError), a reference
    stream whose length differs from the hypotheses', or a tokenizer that is not installed."""
    metric = sacrebleu_metric(name, tgt_lang, lowercase)
    result = _corpus(metric, name, hyps, refs)
    return Score(name, float(result.score), str(metric.get_signature()), str(result))


def corpus_bleu(hyps: Sequence[str], refs: Sequence[str], tgt_lang: str | None = None):
    """sacreBLEU's corpus BLEU result (score, bp, sys_len, ref_len) against one reference
    stream, as ``eval --bleu`` scores (``corpus_score``, and raising as it does)."""
    return _corpus(sacrebleu_metric("bleu", tgt_lang), "bleu", hyps, [refs])


def _corpus(metric, name: str, hyps: Sequence[str], refs: Sequence[Sequence[str]]):
    """``metric``'s corpus score of right-stripped lines; refuses no hypothesis, and a reference
    stream whose length differs from the hypotheses'."""
    if not hyps:
        raise ValueError(f"{name}: no segments to score")
    for r in refs:
        if len(r) != len(hyps):
            raise ValueError(f"{len(hyps)} hypotheses but a reference stream of {len(r)} lines")
    return metric.corpus_score([h.rstrip() for h in hyps], [[x.rstrip() for x in r] for r in refs])


def parse_buckets(spec: str | None) -> tuple[int, ...]:
    """``"10,20,30"`` -> (10, 20, 30), the upper bounds of buckets 1-10, 11-20, 21-30, 31+;
    None -> ``DEFAULT_BUCKETS``. Raises ValueError for anything but a comma-separated list of
    increasing positive integers."""
    if spec is None:
        return DEFAULT_BUCKETS
    fix = "give increasing positive word counts, e.g. 10,20,30"
    return parse_list(spec, "--buckets", fix, int, 1, increasing=True)


def bucket_label(n_words: int, edges: Sequence[int]) -> str:
    """The bucket of a source of ``n_words`` words: ``"0"`` (empty), ``"1-10"``, ..., ``"61+"``."""
    if n_words == 0:
        return "0"
    low = 1
    for high in edges:
        if n_words <= high:
            return f"{low}-{high}"
        low = high + 1
    return f"{low}+"


def bleu_by_length(
    sources: Sequence[str],
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    edges: Sequence[int] = DEFAULT_BUCKETS,
    tgt_lang: str | None = None,
    lowercase: bool = False,
) -> list[dict]:
    """Corpus BLEU of each source-length bucket (length in whitespace-separated words): one row
    per bucket, shortest first, ``{"bucket", "sentences", "bleu"}`` (``bleu`` None for a bucket
    with no sentence; an empty-source bucket ``"0"`` appears only when needed)."""
    labels = [bucket_label(len(s.split()), edges) for s in sources]
    order = ["0"] if "0" in labels else []
    order += [bucket_label(e, edges) for e in edges] + [bucket_label(edges[-1] + 1, edges)]
    rows = []
    for label in order:
        idx = [i for i, x in enumerate(labels) if x == label]
        bleu = None
        if idx:
            sub_refs = [[r[i] for i in idx] for r in refs]
            bleu = corpus_score("bleu", [hyps[i] for i in idx], sub_refs, tgt_lang, lowercase).score
        rows.append({"bucket": label, "sentences": len(idx), "bleu": bleu})
    return rows


def tokenisation_warnings(lines: Sequence[str], name: str) -> list[str]:
    """One-line warnings when ``lines`` do not look like plain detokenised text.

    Subword-tokenised: sentencepiece ``▁`` or BPE ``@@`` in more than 10% of the non-empty lines.
    Pre-tokenised: a space before ``.``/``,`` or split clitics (``n't``) in more than half of them.
    Either makes BLEU incomparable with published (detokenised) scores.
    """
    text = [x for x in lines if x.strip()]
    if not text:
        return []
    out = []
    sub = sum(bool(_SUBWORD.search(x)) for x in text)
    if sub > 0.1 * len(text):
        out.append(
            f"{name}: {sub} of {len(text)} non-empty lines look subword-tokenised "
            "(sentencepiece '▁' or BPE '@@'); detokenise before scoring, or scores are "
            "not comparable"
        )
    pre = sum(bool(_PRETOKENISED.search(x)) for x in text)
    if pre > 0.5 * len(text):
        out.append(
            f"{name}: {pre} of {len(text)} non-empty lines look pre-tokenised (a space "
            "before punctuation, e.g. 'cat .'); sacrebleu expects detokenised text, so "
            "scores are not comparable"
        )
    return out


def sacrebleu_seed(value: str | None) -> AbstractContextManager:
    """``SACREBLEU_SEED`` (read by sacreBLEU's bootstrap and paired tests) set to ``value`` for
    the block, the environment restored after it; None leaves it as it is ("None" asks sacreBLEU
    for fresh entropy)."""
    from unittest import mock  # only here: it imports asyncio

    return mock.patch.dict(os.environ, {} if value is None else {"SACREBLEU_SEED": value})

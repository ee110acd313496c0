"""The study's test lines and their scores: long inputs joined from real sentences, BLEU,
chrF and exact match overall, per source-length bucket and per number of sentences joined.

Long inputs (``build_eval_set``): the test split's lines joined k at a time, k = 2..K, source and
reference alike, consecutive non-overlapping groups joined with a space -- 4 Multi30k sentences
make a 40-80 word source. The k = 1 lines are the test set itself. On a synthetic reversal or
sort (``synth.task_of``) a joined line's reference is the task's output of the joined source.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from seq2seq.config import Config
from seq2seq.data.text import DataError, join_lines, load_split
from seq2seq.evaluation.metrics import bleu_by_length, bucket_label, corpus_score
from seq2seq.study.synth import task_of, task_output


@dataclass
class EvalSet:
    """Sources and references to decode, with k (sentences joined) for each line."""

    name: str
    src: list[str]
    ref: list[str]
    k: list[int]
    origin: str

    def digest(self) -> str:
        return hashlib.sha256("\n".join(self.src + ["\0"] + self.ref).encode()).hexdigest()


def lines_of(k_of_line: Sequence[int], k: int) -> list[int]:
    """The indices of the lines joined from ``k`` sentences, in order."""
    return [i for i, x in enumerate(k_of_line) if x == k]


def build_eval_set(
    cfg: Config, concat_k: int, concat_n: int | None, split: str = "test", prefix: str | None = None
) -> EvalSet:
    """The config's ``split`` (test, or valid: its first ``data.max_valid_pairs`` lines, as
    training validates on), plus its first ``concat_n`` (default: all) lines joined k at a
    time for k = 2..``concat_k`` (consecutive, non-overlapping groups; joined with a space; the
    references of a synthetic reversal or sort are the task's output of the joined source).

    ``prefix``: a test split's files other than the config's ``data.test`` (``compare --test``),
    the set named after its last part (``test_2017_flickr``); a validation set is ``valid``.

    Raises:
        DataError: the split is unusable, or no pair is left in it after cleaning (every
            score would be over zero segments).
    """
    data = cfg.data if prefix is None else cfg.data.model_copy(update={"test": prefix})
    text = load_split(data, split)
    if split == "valid" and cfg.data.max_valid_pairs:
        text.keep(range(min(len(text), cfg.data.max_valid_pairs)))
    if not len(text):
        raise DataError(f"{text.origin}: no usable {split} pair ({text.n_read} lines read)")
    joined, ks = join_lines(text, concat_k, concat_n)
    if task := task_of(text.src, text.tgt):  # reverse(a b) is reverse(b) reverse(a), not a join
        joined.tgt = [" ".join(task_output(task, s.split())) for s in joined.src]
    name = split if split != "test" or data.test is None else Path(data.test).name
    dropped = sum(len(v) for v in text.dropped.values())
    origin = text.origin + (f" ({dropped} empty pairs dropped)" if dropped else "")
    return EvalSet(name, joined.src, joined.tgt, ks, origin)


def train_length_ratio(cfg: Config) -> float:
    """The training split's target over source length in whitespace words (every cleaned pair;
    ``data.max_train_pairs`` applies): r of the secondary statistic's length cap
    (``cells.length_caps``), known before any test line is seen.

    Raises:
        DataError: the training split is unusable or has no source word.
    """
    text = load_split(cfg.data, "train")
    n = cfg.data.max_train_pairs or len(text)
    src = sum(len(s.split()) for s in text.src[:n])
    if not src:
        raise DataError(f"{text.origin}: no source word in the training split")
    return sum(len(t.split()) for t in text.tgt[:n]) / src


def score_decode(evalset: EvalSet, hyps: list[str], edges: Sequence[int], tgt_lang: str) -> dict:
    """Scores of one decoding: BLEU / chrF / exact match on the k = 1 lines (the test set),
    BLEU and exact match per source-length bucket and per k over every line."""
    single = lines_of(evalset.k, 1)
    h1, r1 = [hyps[i] for i in single], [evalset.ref[i] for i in single]
    rows = bleu_by_length(evalset.src, hyps, [evalset.ref], edges, tgt_lang)
    labels = [bucket_label(len(s.split()), edges) for s in evalset.src]
    for row in rows:
        idx = [i for i, lab in enumerate(labels) if lab == row["bucket"]]
        row["exact"] = exact_match([hyps[i] for i in idx], [evalset.ref[i] for i in idx])
    by_k = []  # per k (ascending), that k's lines
    for k in sorted(set(evalset.k)):
        idx = lines_of(evalset.k, k)
        hk, rk = [hyps[i] for i in idx], [evalset.ref[i] for i in idx]
        bleu, exact = corpus_score("bleu", hk, [rk], tgt_lang).score, exact_match(hk, rk)
        words = sum(len(evalset.src[i].split()) for i in idx) / len(idx)
        by_k.append(
            {"k": k, "sentences": len(idx), "bleu": bleu, "exact": exact, "mean_src_words": words}
        )
    return {
        "sentences": len(single),
        "bleu": corpus_score("bleu", h1, [r1], tgt_lang).score,
        "chrf": corpus_score("chrf", h1, [r1]).score,
        "exact": exact_match(h1, r1),
        "by_length": rows,
        "by_k": by_k,
    }


def exact_match(hyps: Sequence[str], refs: Sequence[str]) -> float | None:
    """Percentage of hypotheses equal to their reference (whitespace-normalised); None if none."""
    if not hyps:
        return None
    same = sum(" ".join(h.split()) == " ".join(r.split()) for h, r in zip(hyps, refs, strict=True))
    return 100.0 * same / len(hyps)


def attention_sentences(evalset: EvalSet, n: int) -> list[int]:
    """``n`` lines of increasing source length (at 25%, ..., 98% of the length order), so the
    maps show a short, a middling and a long input alike for every model."""
    if n <= 0 or not evalset.src:
        return []
    order = sorted(range(len(evalset.src)), key=lambda i: (len(evalset.src[i].split()), i))
    fracs = [0.98] if n == 1 else [0.25 + (0.98 - 0.25) * j / (n - 1) for j in range(n)]
    picked = [order[round(f * (len(order) - 1))] for f in fracs]
    return list(dict.fromkeys(picked))

"""Leakage checks at training start: evaluation pairs that also occur in the training split (they
inflate a score), and pairs repeated within it (they weigh more unchosen); ``data.dedup`` removes
both. Pairs are compared on cleaned text, whitespace runs collapsed and ends stripped.
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Iterable

import numpy as np

from seq2seq.data.text import ParallelText

log = logging.getLogger("seq2seq")

DROP_DUPLICATE = "duplicate of an earlier training pair"
DROP_IN_EVAL = "also in a validation or test split"


def pair_key(src: str, tgt: str) -> tuple[str, str]:
    """The pair as the checks compare it: whitespace runs collapsed, ends stripped."""
    return " ".join(src.split()), " ".join(tgt.split())


def report_leakage(
    train: Iterable[tuple[str, str]], evals: dict[str, ParallelText], duplicates: bool = True
) -> None:
    """Log one line per evaluation split (its pairs, and its sources, also in training) and, with
    ``duplicates``, one for the pairs repeated in the training split (counted by 64-bit hash, 8
    bytes a pair); ``train`` is read once.
    """
    keys = {
        name: [pair_key(s, t) for s, t in zip(e.src, e.tgt, strict=True)]
        for name, e in evals.items()
    }
    wanted = {k for ks in keys.values() for k in ks}
    wanted_src = {k[0] for k in wanted}
    found, found_src = set(), set()
    hashes = array("q")  # 8 bytes a pair: a large corpus is counted without holding its text
    for s, t in train:
        k = pair_key(s, t)
        if k in wanted:
            found.add(k)
        if k[0] in wanted_src:
            found_src.add(k[0])
        if duplicates:
            hashes.append(hash(k))
    for name, ks in keys.items():
        pairs, sources = sum(k in found for k in ks), sum(k[0] in found_src for k in ks)
        (log.warning if pairs or sources else log.info)(
            "leakage: %s: %d of %d pairs, and %d of %d source sentences (with any translation), "
            "also in the training split (%s)",
            name,
            pairs,
            len(ks),
            sources,
            len(ks),
            evals[name].origin,
        )
    if not duplicates:
        return
    counts = np.unique(np.asarray(hashes, dtype=np.int64), return_counts=True)[1]
    extra, repeated = int((counts - 1).sum()), int((counts > 1).sum())
    (log.warning if extra else log.info)(
        "leakage: train: %d duplicate pairs (%d distinct pairs occur more than once)%s",
        extra,
        repeated,
        "; data.dedup: true removes them" if extra else "",
    )


def dedup(text: ParallelText, evals: dict[str, ParallelText]) -> None:
    """Drop, in place, every training pair already seen earlier in ``text`` or present in an
    evaluation split; the drops are counted with line numbers like every other drop."""
    held_out = {pair_key(s, t) for e in evals.values() for s, t in zip(e.src, e.tgt, strict=True)}
    seen: set[tuple[str, str]] = set()
    keep, dropped = [], {DROP_DUPLICATE: [], DROP_IN_EVAL: []}
    for i, (s, t) in enumerate(zip(text.src, text.tgt, strict=True)):
        k = pair_key(s, t)
        if k in held_out:
            dropped[DROP_IN_EVAL].append(text.line_no[i])
        elif k in seen:
            dropped[DROP_DUPLICATE].append(text.line_no[i])
        else:
            seen.add(k)
            keep.append(i)
    text.src[:] = [text.src[i] for i in keep]
    text.tgt[:] = [text.tgt[i] for i in keep]
    text.line_no[:] = [text.line_no[i] for i in keep]
    text.dropped.update({k: v for k, v in dropped.items() if v})

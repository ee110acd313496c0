"""Synthetic parallel corpora for checking what a model can carry from source to target.

``copy`` (y = x), ``reverse`` (y = x reversed) and ``sort`` (y = x sorted) over a vocabulary of V
symbols ``s0 .. s{V-1}``, lengths drawn uniformly from [min_len, max_len]. Reversal at length 60 is
the classic probe of the fixed-vector bottleneck: the first source symbol must come out last, after
the whole sentence has been squeezed into one state.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Literal

from seq2seq.atomic import atomic_write_text

Task = Literal["copy", "reverse", "sort"]
TASKS = ("copy", "reverse", "sort")
SPLITS = ("train", "val", "test")
SYMBOLS = re.compile(r"s\d+( s\d+)*")  # a source line of symbols


def make_pairs(
    task: Task, n: int, min_len: int, max_len: int, vocab: int, seed: int
) -> list[tuple[str, str]]:
    """n (source, target) lines of whitespace-separated symbols; ValueError: an empty length
    range, a vocabulary under 2 symbols or n < 1."""
    if not 1 <= min_len <= max_len:
        raise ValueError(
            f"--min-len {min_len} --max-len {max_len}: give lengths with 1 <= --min-len <= "
            "--max-len, such as --min-len 1 --max-len 30"
        )
    if vocab < 2:
        raise ValueError(f"--vocab must be at least 2, got {vocab}")
    if n < 1:
        raise ValueError(f"--n must be at least 1 (training pairs), got {n}")
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        x = [f"s{rng.randrange(vocab)}" for _ in range(rng.randint(min_len, max_len))]
        pairs.append((" ".join(x), " ".join(task_output(task, x))))
    return pairs


def task_output(task: str, symbols: list[str]) -> list[str]:
    """The task's target for a source of symbols ``s<i>``: itself, reversed, or sorted by i."""
    if task == "sort":
        return sorted(symbols, key=lambda s: int(s[1:]))
    return symbols[::-1] if task == "reverse" else list(symbols)


def task_of(src: list[str], tgt: list[str]) -> str | None:
    """``reverse`` or ``sort`` when every target line is that task's output of its source line
    of symbols (and some line is not its own source), else None (a copy, or any other text)."""
    if not all(SYMBOLS.fullmatch(s) for s in src):
        return None
    pairs = [(s.split(), t.split()) for s, t in zip(src, tgt, strict=True)]
    for task in ("reverse", "sort"):
        if all(t == task_output(task, s) for s, t in pairs) and any(t != s for s, t in pairs):
            return task
    return None


def write_corpus(
    task: str,
    n: int,
    min_len: int,
    max_len: int,
    vocab: int,
    out: Path,
    seed: int = 1,
    overwrite: bool = False,
) -> dict[str, int]:
    """Write ``train``, ``val`` and ``test`` splits as ``{split}.src`` / ``{split}.tgt`` in ``out``
    (train n pairs, val and test n // 10 each, at least 100, disjoint seeds). Returns counts.
    ValueError: an unknown task, bad lengths or vocabulary, or a corpus already in ``out`` (without
    ``overwrite``)."""
    if task not in TASKS:
        raise ValueError(f"--task {task!r}: choose copy, reverse or sort")
    existing = [out / f"{s}.{side}" for s in SPLITS for side in ("src", "tgt")]
    existing = [p for p in existing if p.exists()]
    if existing and not overwrite:
        raise ValueError(f"{existing[0]}: exists already; pass --overwrite or another --out")
    sizes = {"train": n, "val": max(100, n // 10), "test": max(100, n // 10)}
    for k, (split, size) in enumerate(sizes.items()):
        pairs = make_pairs(task, size, min_len, max_len, vocab, seed * 1000 + k)
        atomic_write_text(out / f"{split}.src", "".join(s + "\n" for s, _ in pairs))
        atomic_write_text(out / f"{split}.tgt", "".join(t + "\n" for _, t in pairs))
    return sizes

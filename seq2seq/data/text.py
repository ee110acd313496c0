"""Parallel corpora: files or Hugging Face datasets -> cleaned pairs -> ids -> token batches.

Reading policy (stated in the README, "Data hygiene"):
- A line ends at ``\\n`` and nowhere else. ``\\r\\n`` and a UTF-8 BOM at the start of a file are
  read as plain text. Characters that other readers treat as line breaks inside a line (a lone
  ``\\r``, U+0085, U+2028, U+2029, vertical tab, form feed) become one space, so a file of N lines
  is always N pairs. A NUL byte is removed, with a warning that names the file and line.
  ``translate`` reads stdin by the same rules.
- Invalid UTF-8 stops with the file, the line and the byte offset.
- Source and target files with different line counts stop before anything is trained.
- Cleaning strips whitespace; a side that is empty (or holds only whitespace and invisible format
  characters such as zero-width spaces) drops the pair; pairs over ``max_len`` tokens are dropped
  after tokenisation. Every drop is counted in the log, with line numbers.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import random
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from seq2seq.config import DataConfig, data_root

log = logging.getLogger("seq2seq")

_LINE_BREAK_LIKE = str.maketrans({c: " " for c in "\r\x0b\x0c\x85\u2028\u2029\x1c\x1d\x1e"})
# Sentences handed over in Python (not read from a file) may still hold a newline or a NUL.
_IN_SENTENCE = str.maketrans({"\n": " ", "\x00": None})


class DataError(ValueError):
    """Unusable input data; the message names the file, the line and what to do."""


def is_blank(text: str) -> bool:
    """True when ``text`` has nothing but whitespace and invisible format characters (Cf)."""
    return all(c.isspace() or unicodedata.category(c) == "Cf" for c in text)


def clean_line(text: str) -> str:
    """Normalise line-break-like characters (``\\n`` too) to spaces, remove NULs and strip;
    blank-looking lines become ''."""
    text = text.translate(_LINE_BREAK_LIKE).translate(_IN_SENTENCE).strip()
    return "" if is_blank(text) else text


def resolve_corpus_file(prefix: str, lang: str) -> Path:
    """``multi30k/train`` + ``de`` -> the existing ``<root>/multi30k/train.de[.gz]``.

    Raises:
        DataError: neither the plain nor the gzipped file exists.
    """
    bases = [Path(prefix)] if Path(prefix).is_absolute() else [Path(prefix), data_root() / prefix]
    for base in bases:
        for c in (base.with_name(f"{base.name}.{lang}"), base.with_name(f"{base.name}.{lang}.gz")):
            if c.is_file():
                return c
    candidates = [bases[-1].with_name(f"{bases[-1].name}.{lang}{ext}") for ext in ("", ".gz")]
    raise DataError(
        f"{candidates[0]}: corpus file not found (nor {candidates[1].name}); set SEQ2SEQ_DATA_DIR "
        "to the folder holding multi30k/, or fetch it with scripts/get_multi30k.sh"
    )


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, read 1 MiB at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_lines(path: str | Path, warnings: list[str] | None = None) -> list[str]:
    """Read a text file (plain or ``.gz``) as lines, splitting on ``\\n`` only.

    Returns the lines unstripped except for the ``\\r`` of ``\\r\\n`` and a leading BOM; other
    line-break-like characters are replaced by spaces and NUL bytes removed (see the module policy).

    Raises:
        DataError: the file is missing, not gzip though named .gz, or not valid UTF-8 (names the
            line).
    """
    path = Path(path)
    try:
        if path.suffix == ".gz":
            with gzip.open(path) as f:
                raw = f.read()
        else:
            raw = path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except (OSError, EOFError) as e:
        raise DataError(f"{path}: cannot read ({e})") from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    chunks = raw.split(b"\n")
    if chunks and chunks[-1] == b"":
        chunks.pop()
    return [decode_line(chunk, str(path), i, warnings) for i, chunk in enumerate(chunks, start=1)]


def decode_line(raw: bytes, where: str, line_no: int, warnings: list[str] | None = None) -> str:
    """One line's bytes (``\\n`` already removed) -> text, by the module's reading policy.

    Shared by files and ``translate``'s stdin, so both read a line the same way: a trailing
    ``\\r`` is dropped, NUL bytes are removed with a warning naming ``where`` and the line, and
    line-break-like characters become spaces.

    Raises:
        DataError: not valid UTF-8 (names ``where``, the line and the byte).
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(
            f"{where} line {line_no}: not valid UTF-8 (byte {e.start + 1} of the line); "
            "convert the file with iconv -f <encoding> -t utf-8"
        ) from None
    if text.endswith("\r"):
        text = text[:-1]
    if "\x00" in text:
        text = text.replace("\x00", "")
        msg = f"{where} line {line_no}: NUL byte removed"
        log.warning(msg)
        if warnings is not None:
            warnings.append(msg)
    return text.translate(_LINE_BREAK_LIKE)


@dataclass
class ParallelText:
    """Aligned source and target sentences, with the 1-based line each came from."""

    src: list[str]
    tgt: list[str]
    line_no: list[int]
    origin: str
    dropped: dict[str, list[int]] = field(default_factory=dict)
    n_read: int = 0  # pairs read, before any drop

    def __len__(self) -> int:
        return len(self.src)


def read_parallel_files(src_path: Path, tgt_path: Path) -> ParallelText:
    """Read two aligned files and drop pairs with an empty side (counted, not silent).

    Raises:
        DataError: different line counts (both files and counts named), unreadable files.
    """
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise DataError(
            f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}: parallel files must "
            "have one sentence per line, line for line"
        )
    return clean_pairs(src, tgt, origin=f"{src_path}")


def clean_pairs(src: Sequence[str], tgt: Sequence[str], origin: str) -> ParallelText:
    out = ParallelText([], [], [], origin)
    empty: list[int] = []
    for i, (s, t) in enumerate(zip(src, tgt, strict=True), start=1):
        s, t = clean_line(s), clean_line(t)
        if not s or not t:
            empty.append(i)
            continue
        out.src.append(s)
        out.tgt.append(t)
        out.line_no.append(i)
    if empty:
        out.dropped["empty"] = empty
    out.n_read = len(src)
    return out


def _hf_column(ds, name: str) -> list[str]:
    """A text column, where ``translation.de`` reaches into a dict column as WMT sets have."""
    head, _, rest = name.partition(".")
    if head not in ds.column_names:
        raise DataError(f"dataset has no field {head!r}; its fields are {ds.column_names}")
    col = ds[head]
    if rest:
        col = [row[rest] for row in col]
    return ["" if x is None else str(x) for x in col]


def load_hf_split(cfg: DataConfig, split: str) -> ParallelText:
    """Read one split of a Hugging Face dataset (hub name or local path) with ``datasets``.

    Raises:
        DataError: the dataset, split or a field cannot be found or reached.
    """
    import datasets

    hf = cfg.hf
    assert hf is not None
    try:
        local = Path(hf.path)
        if local.is_dir() and (local / "dataset_dict.json").exists():
            ds = datasets.load_from_disk(str(local))[split]
        else:
            ds = datasets.load_dataset(hf.path, hf.name, split=split)
    except (FileNotFoundError, ValueError, KeyError, ConnectionError, OSError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DataError(f"dataset {hf.path} split {split!r}: {first}") from None
    src, tgt = _hf_column(ds, hf.src_field), _hf_column(ds, hf.tgt_field)
    return clean_pairs(src, tgt, origin=f"{hf.path}[{split}]")


def load_split(cfg: DataConfig, split: str) -> ParallelText:
    """``split`` is ``train``, ``valid`` or ``test``."""
    if cfg.hf is not None:
        return load_hf_split(cfg, getattr(cfg.hf, f"{split}_split"))
    prefix = getattr(cfg, split)
    if prefix is None:
        raise DataError(f"data.{split} is not set in the config")
    return read_parallel_files(
        resolve_corpus_file(prefix, cfg.src_lang), resolve_corpus_file(prefix, cfg.tgt_lang)
    )


def log_dropped(text: ParallelText, what: str) -> None:
    n_kept = text.n_read - sum(len(v) for v in text.dropped.values())
    log.info("%s: %d pairs read from %s, %d kept", what, text.n_read, text.origin, n_kept)
    for reason, lines in text.dropped.items():
        shown = ", ".join(str(i) for i in lines[:10]) + (" ..." if len(lines) > 10 else "")
        log.info(
            "%s: dropped %d pairs (%s) at lines %s of %s",
            what,
            len(lines),
            reason,
            shown,
            text.origin,
        )


@dataclass
class TokenizedPairs:
    """Token ids of kept pairs (no BOS/EOS), with the source line each came from."""

    src: list[list[int]]
    tgt: list[list[int]]
    line_no: list[int]

    def __len__(self) -> int:
        return len(self.src)


def tokenize_pairs(
    text: ParallelText, encode_src, encode_tgt, max_len: int, what: str
) -> TokenizedPairs:
    """Encode both sides; drop pairs over ``max_len`` tokens or with a side that encodes to
    nothing. Runs before batching, so no batch ever sees a dropped pair."""
    src_ids, tgt_ids = encode_src(text.src), encode_tgt(text.tgt)
    out = TokenizedPairs([], [], [])
    too_long, empty = [], []
    for s, t, line in zip(src_ids, tgt_ids, text.line_no, strict=True):
        if not s or not t:
            empty.append(line)
        elif len(s) > max_len or len(t) > max_len:
            too_long.append(line)
        else:
            out.src.append(s)
            out.tgt.append(t)
            out.line_no.append(line)
    if too_long:
        text.dropped[f"over max_len {max_len} tokens"] = too_long
    if empty:
        text.dropped["no tokens left after normalisation"] = empty
    log_dropped(text, what)
    return out


def drop_long_sources(text: ParallelText, max_words: int) -> None:
    """Keep only pairs whose source has at most ``max_words`` whitespace-separated words, in
    place; the dropped lines are counted like every other drop. Bahdanau et al. (2015, §4.2)
    trained RNNencdec-30 / RNNsearch-30 on sentences of at most 30 words."""
    keep = [i for i, s in enumerate(text.src) if len(s.split()) <= max_words]
    dropped = [text.line_no[i] for i in range(len(text)) if len(text.src[i].split()) > max_words]
    if dropped:
        text.dropped[f"over max_src_words {max_words}"] = dropped
    text.src[:] = [text.src[i] for i in keep]
    text.tgt[:] = [text.tgt[i] for i in keep]
    text.line_no[:] = [text.line_no[i] for i in keep]


def concat_pairs(pairs: TokenizedPairs, k_max: int, seed: int) -> TokenizedPairs:
    """Add training pairs made of k = 2..k_max consecutive (shuffled) pairs joined end to end."""
    if k_max <= 1:
        return pairs
    rng = random.Random(seed)
    out = TokenizedPairs(list(pairs.src), list(pairs.tgt), list(pairs.line_no))
    n = len(pairs)
    for k in range(2, k_max + 1):
        order = list(range(n))
        rng.shuffle(order)
        for j in range(0, n - k + 1, k):
            group = order[j : j + k]
            out.src.append([x for i in group for x in pairs.src[i]])
            out.tgt.append([x for i in group for x in pairs.tgt[i]])
            out.line_no.append(pairs.line_no[group[0]])
    return out


def cut_runs(runs: Iterable[tuple[int, int]], batch_tokens: int) -> list[int]:
    """Batch sizes for examples sorted by length, given as runs of (width, count): a batch grows
    while n_sentences x widest <= ``batch_tokens``. Costs O(runs + batches), not O(examples).

    Raises:
        DataError: one example alone exceeds the budget.
    """
    sizes: list[int] = []
    size = width = 0
    for need, k in runs:
        if need > batch_tokens:
            raise DataError(
                f"one example has {need} tokens, more than batch_tokens {batch_tokens}: raise "
                "train.batch_tokens or lower data.max_len"
            )
        while k:
            w = max(width, need)
            if size and w * (size + 1) > batch_tokens:
                sizes.append(size)
                size = width = 0
                continue
            m = min(k, batch_tokens // w - size)
            size, k, width = size + m, k - m, w
    if size:
        sizes.append(size)
    return sizes


def length_batches(
    src_lens: Sequence[int] | np.ndarray,
    tgt_lens: Sequence[int] | np.ndarray,
    batch_tokens: int,
    seed: int = 0,
    epoch: int = 0,
    shuffle: bool = True,
    part: int = 0,
) -> list[np.ndarray]:
    """Length-bucketed batches of example indices, each within ``batch_tokens`` padded tokens.

    The padded size of a batch is n_sentences x max(longest source, longest target + 1), the +1 for
    the BOS/EOS shift. Examples are shuffled, then sorted by (target, source) length with ties left
    shuffled -- the target first, because the decoder and the output layer cost most -- cut into
    batches, and the batch order is shuffled: a pure function of (seed, epoch), so a resumed run
    sees the same batches. ``part`` numbers independent draws within an epoch (stream buffers).
    Memory: a few bytes an example.

    Raises:
        DataError: one example alone exceeds the budget.
    """
    src_lens, tgt_lens = np.asarray(src_lens), np.asarray(tgt_lens)
    rng = np.random.default_rng([seed % 2**63, epoch, part])
    idx = rng.permutation(len(src_lens)) if shuffle else np.arange(len(src_lens))
    idx = idx[np.lexsort((src_lens[idx], tgt_lens[idx]))]  # stable: ties stay shuffled
    need = np.maximum(src_lens[idx], tgt_lens[idx] + 1)
    starts = np.flatnonzero(np.diff(need, prepend=-1))
    counts = np.diff(np.append(starts, len(need)))
    sizes = cut_runs(zip(need[starts].tolist(), counts.tolist(), strict=True), batch_tokens)
    batches = np.split(idx, np.cumsum(sizes)[:-1]) if sizes else []
    return [batches[i] for i in rng.permutation(len(batches))] if shuffle else batches


def token_batches(
    src_lens: Sequence[int],
    tgt_lens: Sequence[int],
    batch_tokens: int,
    seed: int = 0,
    epoch: int = 0,
    shuffle: bool = True,
) -> list[list[int]]:
    """``length_batches`` as lists of ints."""
    return [
        b.tolist() for b in length_batches(src_lens, tgt_lens, batch_tokens, seed, epoch, shuffle)
    ]

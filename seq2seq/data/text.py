"""Parallel corpora: files or Hugging Face datasets -> cleaned pairs -> token ids (batched in
``batch.py``), by the reading policy of docs/data.md ("Data hygiene"): every dropped pair is
counted in the log with its line numbers.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import logging
import random
import unicodedata
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from seq2seq.config import DataConfig, data_root
from seq2seq.data import DataError as DataError  # re-exported: most callers import it here
from seq2seq.data.batch import Batch, length_batches, shard, target_vocab_mask
from seq2seq.data.hf import hf_column, hf_fields, open_hf

log = logging.getLogger("seq2seq")

_LINE_BREAK_LIKE = str.maketrans({c: " " for c in "\r\x0b\x0c\x85\u2028\u2029\x1c\x1d\x1e"})
# Sentences handed over in Python (not read from a file) may still hold a newline or a NUL.
_IN_SENTENCE = str.maketrans({"\n": " ", "\x00": None})


# Why a pair is dropped, as the drop log names it (every backend).
DROP_EMPTY = "empty"
DROP_NO_TOKENS = "no tokens left after normalisation"


def drop_over_max_len(max_len: int) -> str:
    return f"over max_len {max_len} tokens"


def clean_line(text: str) -> str:
    """Normalise line-break-like characters (``\\n`` too) to spaces, remove NULs and strip; a
    line of only whitespace and invisible format characters (Cf) becomes ''."""
    text = text.translate(_LINE_BREAK_LIKE).translate(_IN_SENTENCE).strip()
    return "" if all(c.isspace() or unicodedata.category(c) == "Cf" for c in text) else text


def resolve_corpus_file(prefix: str, lang: str) -> Path:
    """``multi30k/train`` + ``de`` -> the existing ``<root>/multi30k/train.de[.gz]``.

    Raises:
        DataError: neither the plain nor the gzipped file exists, or one is a folder.
    """
    bases = [Path(prefix)] if Path(prefix).is_absolute() else [Path(prefix), data_root() / prefix]
    for base in bases:
        for c in (base.with_name(f"{base.name}.{lang}"), base.with_name(f"{base.name}.{lang}.gz")):
            if c.is_file():
                return c
            if c.is_dir():
                raise DataError(f"{c}: is a folder, not a corpus file; give the files' PREFIX")
    if folder := next((b for b in bases if b.is_dir()), None):
        raise DataError(
            f"{folder}: is a folder; a corpus is named by a file prefix (PREFIX.{lang} or "
            f"PREFIX.{lang}.gz must exist), e.g. {folder / 'train'}"
        )
    where = f" in {Path.cwd()} nor under {data_root()}" if len(bases) > 1 else ""
    hint = (
        "set SEQ2SEQ_DATA_DIR to the folder holding multi30k/, or fetch it with "
        "scripts/get_multi30k.sh DIR"
        if Path(prefix).parts[:1] == ("multi30k",)
        else "fix the path in the config, or set SEQ2SEQ_DATA_DIR to the folder it is relative to"
    )
    raise DataError(f"{prefix}.{lang}: corpus file not found (nor .gz){where}; {hint}")


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, read 1 MiB at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def iter_lines(path: str | Path) -> Iterator[str]:
    """A text file (plain or ``.gz``) one line at a time, by docs/data.md's reading policy: split on
    ``\\n`` only, a leading BOM and the ``\\r`` of ``\\r\\n`` dropped, ``decode_line`` applied.

    Raises:
        DataError: the file is missing or unreadable, not gzip though named .gz, or not valid UTF-8
            (names the line).
    """
    path = Path(path)
    try:
        f = gzip.open(path) if path.suffix == ".gz" else open(path, "rb")
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e})") from None
    with f:
        i = 0
        try:
            for i, raw in enumerate(f, start=1):
                if i == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                yield decode_line(raw[:-1] if raw.endswith(b"\n") else raw, str(path), i)
        except (OSError, EOFError, zlib.error) as e:  # zlib.error: bad data inside the stream
            where = f"after line {i}" if i else "at its start"
            fix = "check the file"
            if path.suffix == ".gz" and isinstance(e, (EOFError, gzip.BadGzipFile, zlib.error)):
                fix = (
                    "the gzip file is damaged or truncated (gzip -t checks it); fetch or compress "
                    "it again"
                )
            raise DataError(f"{path}: cannot read {where} ({e}); {fix}") from None


def read_lines(path: str | Path) -> list[str]:
    """``iter_lines`` as a list (unstripped). Raises DataError as ``iter_lines``."""
    return list(iter_lines(path))


def decode_line(raw: bytes, where: str, line_no: int) -> str:
    """One line's bytes (``\\n`` already removed) -> text, for files and ``translate``'s stdin
    alike: a trailing ``\\r`` dropped, NULs removed with a warning naming ``where`` and the line,
    line-break-like characters made spaces.

    Raises:
        DataError: not valid UTF-8 (names ``where``, the line and the byte; gzip data says so).
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        fix = "convert the file with iconv -f <encoding> -t utf-8"
        if where.endswith(".gz"):  # damage inside a gzip stream decompresses to garbage first
            fix = f"gzip -t {where} checks for damage; if it is whole, {fix}"
        elif line_no == 1 and raw.startswith(b"\x1f\x8b"):  # gzip's magic number, read as text
            fix = "it is gzip data: decompress it with zcat, or read it from a file named *.gz"
        raise DataError(
            f"{where} line {line_no}: not valid UTF-8 (byte {e.start + 1} of the line); {fix}"
        ) from None
    if text.endswith("\r"):
        text = text[:-1]
    if "\x00" in text:
        text = text.replace("\x00", "")
        log.warning("%s line %d: NUL byte removed", where, line_no)
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

    def keep(self, idx: Sequence[int]) -> None:
        """Keep only the pairs at ``idx``, in place (the drops are the caller's to count)."""
        for side in (self.src, self.tgt, self.line_no):
            side[:] = [side[i] for i in idx]


def read_parallel_files(src_path: Path, tgt_path: Path) -> ParallelText:
    """Read two aligned files and drop pairs with an empty side (counted, not silent).

    Raises:
        DataError: different line counts (both files and counts named), unreadable files.
    """
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise misaligned_files(src_path, len(src), tgt_path, len(tgt))
    return clean_pairs(src, tgt, origin=f"{src_path}")


def misaligned_files(src_path: Path, n_src: int, tgt_path: Path, n_tgt: int) -> DataError:
    """The one error for parallel files of different lengths, naming both files and counts."""
    return DataError(
        f"{src_path} has {n_src} lines but {tgt_path} has {n_tgt}: parallel files must have one "
        "sentence per line, line for line"
    )


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
        out.dropped[DROP_EMPTY] = empty
    out.n_read = len(src)
    return out


def split_files(cfg: DataConfig, split: str) -> tuple[Path, Path]:
    """The source and target files of a local split (DataError: not set, or a file missing)."""
    prefix = getattr(cfg, split)
    if prefix is None:
        raise DataError(f"data.{split} is not set in the config")
    return resolve_corpus_file(prefix, cfg.src_lang), resolve_corpus_file(prefix, cfg.tgt_lang)


def split_origin(cfg: DataConfig, split: str) -> str:
    """Where a split comes from, as logs name it: the source-side file, or ``path[split]``."""
    if cfg.hf is not None:
        return f"{cfg.hf.path}[{getattr(cfg.hf, f'{split}_split')}]"
    return str(split_files(cfg, split)[0])


def split_names(cfg: DataConfig, split: str) -> str:
    """A split's files as a message names them: both sides, or the dataset split."""
    if cfg.hf is not None or getattr(cfg, split) is None:
        return split_origin(cfg, split)
    return " and ".join(str(f) for f in split_files(cfg, split))


def load_split(cfg: DataConfig, split: str) -> ParallelText:
    """``split`` is ``train``, ``valid`` or ``test``.

    Raises:
        DataError: the split is not configured, or its files or dataset are unusable.
    """
    if cfg.hf is not None:
        ds = open_hf(cfg, split)
        src, tgt = (hf_column(ds, *side) for side in hf_fields(cfg))
        return clean_pairs(src, tgt, origin=split_origin(cfg, split))
    return read_parallel_files(*split_files(cfg, split))


def log_dropped(text: ParallelText, what: str) -> None:
    drops = {reason: (len(lines), lines) for reason, lines in text.dropped.items()}
    log_drops(what, text.origin, text.n_read, drops)


def log_drops(what: str, origin: str, n_read: int, drops: dict[str, tuple[int, list[int]]]) -> None:
    """The drop log of every backend: pairs read and kept, then per reason the count and the
    first ten line numbers. ``drops``: reason -> (count, first line numbers)."""
    n_kept = n_read - sum(n for n, _ in drops.values())
    log.info("%s: %d pairs read from %s, %d kept", what, n_read, origin, n_kept)
    for reason, (n, lines) in drops.items():
        shown = ", ".join(str(i) for i in lines[:10]) + (" ..." if n > 10 else "")
        log.info("%s: dropped %d pairs (%s) at lines %s of %s", what, n, reason, shown, origin)


@dataclass
class TokenizedPairs:
    """Token ids of kept pairs (no BOS/EOS), with the source line each came from. The training
    corpus of ``data.backend: memory`` (a ``prepare.Corpus``), and the validation pairs."""

    src: list[list[int]]
    tgt: list[list[int]]
    line_no: list[int]

    def __len__(self) -> int:
        return len(self.src)

    def epoch_batches(
        self, batch_tokens: int, seed: int, epoch: int, rank: int = 0, world: int = 1
    ) -> list[list[int]]:
        """This rank's batches of pair indices for ``epoch``, a pure function of (seed, epoch)."""
        src_lens, tgt_lens = [len(s) for s in self.src], [len(t) for t in self.tgt]
        batches = length_batches(src_lens, tgt_lens, batch_tokens, seed, epoch)
        return shard([b.tolist() for b in batches], rank, world)

    def batch(
        self, idx: list[int], pad_multiple: int = 1, max_width: int | None = None, pin: bool = False
    ) -> Batch:
        """The pairs ``idx`` as a ``Batch`` on the CPU, lengths rounded up to ``pad_multiple`` (at
        most ``max_width``), in pinned memory if ``pin``."""
        src, tgt = [self.src[i] for i in idx], [self.tgt[i] for i in idx]
        return Batch.from_ids(src, tgt, pad_multiple, max_width, pin)

    def target_vocab(self, vocab_size: int) -> torch.Tensor:
        """(V,) bool: the target ids of these pairs, and EOS (``batch.target_vocab_mask``)."""
        flat = np.fromiter(itertools.chain.from_iterable(self.tgt), np.int64)
        return target_vocab_mask([flat], vocab_size)


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
        text.dropped[drop_over_max_len(max_len)] = too_long
    if empty:
        text.dropped[DROP_NO_TOKENS] = empty
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
    text.keep(keep)


def join_lines(
    text: ParallelText, k_max: int, n: int | None = None
) -> tuple[ParallelText, list[int]]:
    """``text`` plus its first ``n`` (default: all) pairs joined k = 2..``k_max`` at a time, both
    sides with a space, in consecutive, non-overlapping groups (lines 1-2, 3-4, ... for k = 2): long
    inputs of real sentences. Returns the joined text (a joined pair's ``line_no`` is its first
    line's) and k for each pair."""
    n = len(text) if n is None else min(n, len(text))
    out = ParallelText(list(text.src), list(text.tgt), list(text.line_no), text.origin)
    out.dropped, out.n_read = dict(text.dropped), text.n_read
    ks = [1] * len(text)
    for k in range(2, k_max + 1):
        for j in range(0, n - k + 1, k):
            out.src.append(" ".join(text.src[j : j + k]))
            out.tgt.append(" ".join(text.tgt[j : j + k]))
            out.line_no.append(text.line_no[j])
            ks.append(k)
    return out, ks


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

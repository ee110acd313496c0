"""What the on-disk training backends share, ``data.backend`` ``arrow`` (arrow.py: cached,
memory-mapped Arrow files) and ``stream`` (stream.py: read and tokenised on the fly): text.py's
readers applied row by row, the tokenising function ``Dataset.map`` runs, the drop counts (logged
by ``text.log_drops`` as for ``memory``), and Arrow tables as batches.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from seq2seq.config import DataConfig
from seq2seq.data.batch import Batch
from seq2seq.data.hf import hf_fields, hf_text, open_hf
from seq2seq.data.text import (
    DROP_EMPTY,
    DROP_NO_TOKENS,
    clean_line,
    drop_over_max_len,
    iter_lines,
    log_drops,
    misaligned_files,
    split_files,
)
from seq2seq.data.tokenizer import Tokenizer

ROWS_PER_CHUNK = 1000  # rows per Arrow record batch written, and per chunk read back


def _zip_files(src_path: Path, tgt_path: Path) -> Iterator[tuple[str, str]]:
    src, tgt = iter_lines(src_path), iter_lines(tgt_path)
    n = 0
    for s, t in itertools.zip_longest(src, tgt):
        if s is None or t is None:
            n_src = n + (s is not None) + sum(1 for _ in src)
            n_tgt = n + (t is not None) + sum(1 for _ in tgt)
            raise misaligned_files(src_path, n_src, tgt_path, n_tgt)
        n += 1
        yield s, t


def _raw_pairs(cfg: DataConfig, split: str, streaming: bool) -> Iterator[tuple[str, str]]:
    if cfg.hf is not None:
        (src, src_key, src_lang), (tgt, tgt_key, tgt_lang) = hf_fields(cfg)
        for i, row in enumerate(open_hf(cfg, split, streaming)):
            yield hf_text(row, src, src_key, i, src_lang), hf_text(row, tgt, tgt_key, i, tgt_lang)
        return
    yield from _zip_files(*split_files(cfg, split))


def clean_rows(cfg_json: str, split: str, streaming: bool = True) -> Iterator[dict]:
    """Cleaned rows {line_no, src, tgt} of a split, in order; a side left empty is kept as '' (the
    tokeniser marks it dropped). Stops after ``max_<split>_pairs`` non-empty pairs. Takes the config
    as JSON so ``datasets`` can hash and pickle it."""
    cfg = DataConfig.model_validate_json(cfg_json)
    limit = getattr(cfg, f"max_{split}_pairs", None)
    kept = 0
    for i, (s, t) in enumerate(_raw_pairs(cfg, split, streaming), start=1):
        s, t = clean_line(s), clean_line(t)
        yield {"line_no": i, "src": s if s and t else "", "tgt": t if s and t else ""}
        kept += bool(s and t)
        if limit and kept >= limit:
            return


_TOKENIZERS: dict[str, Tokenizer] = {}  # encode_rows's, one per worker process


def encode_rows(batch: dict, src_proto: bytes, tgt_proto: bytes | None, max_len: int) -> dict:
    """``Dataset.map`` function: ids of both sides and a ``drop`` code (0 = kept, 1 = an empty
    side, 2 = no tokens left, 3 = over ``max_len``; see ``Drops``); the tokenizer is built once
    per worker process."""
    key = hashlib.sha256(src_proto + (tgt_proto or b"")).hexdigest()
    tok = _TOKENIZERS.get(key) or _TOKENIZERS.setdefault(key, Tokenizer(src_proto, tgt_proto))
    src_ids, tgt_ids = tok.encode_src(batch["src"]), tok.encode_tgt(batch["tgt"])
    drop = [
        1 if not s_text else 2 if not s or not t else 3 if max(len(s), len(t)) > max_len else 0
        for s_text, s, t in zip(batch["src"], src_ids, tgt_ids, strict=True)
    ]
    return {"src_ids": src_ids, "tgt_ids": tgt_ids, "drop": drop}


def encode_dataset(ds, tok: Tokenizer, max_len: int, **kwargs):
    """``ds`` (rows {line_no, src, tgt}) mapped by ``encode_rows`` in batches; ``kwargs`` go to
    ``map``."""
    protos = {"src_proto": tok.src_proto, "tgt_proto": tok.state_dict()["tgt"]}
    fn_kwargs = {**protos, "max_len": max_len}
    return ds.map(
        encode_rows, batched=True, remove_columns=["src", "tgt"], fn_kwargs=fn_kwargs, **kwargs
    )


def token_features():
    from datasets import Features, List, Value

    ids = List(Value("int32"))
    return Features(
        {"line_no": Value("int64"), "src_ids": ids, "tgt_ids": ids, "drop": Value("int8")}
    )


class Drops:
    """Dropped pairs per reason: a count and the first lines (a log line, not a list of all)."""

    def __init__(self, max_len: int):
        self.reasons = {1: DROP_EMPTY, 2: DROP_NO_TOKENS, 3: drop_over_max_len(max_len)}
        self.n_read = 0
        self.count: Counter[int] = Counter()
        self.first: dict[int, list[int]] = {}

    def add(self, codes: np.ndarray, line_no: np.ndarray) -> None:
        self.n_read += len(codes)
        for code in np.unique(codes[codes > 0]).tolist():
            lines = line_no[codes == code]
            self.count[code] += len(lines)
            self.first.setdefault(code, [])
            self.first[code] += lines[: 10 - len(self.first[code])].tolist()

    def log(self, what: str, origin: str) -> None:
        drops = {self.reasons[c]: (n, self.first[c]) for c, n in sorted(self.count.items())}
        log_drops(what, origin, self.n_read, drops)


def table_lengths(table) -> tuple[np.ndarray, np.ndarray]:
    """(N,) int32 source and target token counts of a Table with ``src_ids`` and ``tgt_ids``."""
    import pyarrow.compute as pc

    return tuple(
        pc.list_value_length(table.column(c)).to_numpy().astype(np.int32)
        for c in ("src_ids", "tgt_ids")
    )


def table_batch(table) -> Batch:
    """A pyarrow Table of pairs -> ``Batch`` (the teacher-forcing shift happens there)."""
    return Batch.from_ids(table.column("src_ids").to_pylist(), table.column("tgt_ids").to_pylist())


def stream_sentences(cfg: DataConfig, side: str) -> Iterator[str]:
    """One side's sentences of the kept pairs, streamed (for tokenizer training)."""
    return (row[side] for row in clean_rows(cfg.model_dump_json(), "train") if row[side])

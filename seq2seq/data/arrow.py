"""The on-disk training backends' shared rows (text.py's readers applied row by row, the tokenising
``Dataset.map`` function, the drop counts, Arrow tables as batches; stream.py uses them too), and
``data.backend: arrow``: cleaned text -> ``text.arrow`` (line_no, src, tgt) -> ``Dataset.map``
(``data.num_proc``) -> ``ids*.arrow`` (line_no, src_ids, tgt_ids, drop), memory-mapped, in folders
under ``data.cache_dir`` named by hashes of what they depend on (``train-<data files or HF
fingerprint, max_train_pairs>/``, inside it ``ids-<tokenizer protos, max_len>/``), renamed into
place only when complete.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from seq2seq.config import DataConfig
from seq2seq.data import DataError
from seq2seq.data.batch import Batch, length_batches, shard, target_vocab_mask
from seq2seq.data.hf import hf_fields, hf_text, open_hf
from seq2seq.data.text import (
    DROP_EMPTY,
    DROP_NO_TOKENS,
    clean_line,
    drop_over_max_len,
    iter_lines,
    log_drops,
    misaligned_files,
    sha256_file,
    split_files,
    split_origin,
)
from seq2seq.data.tokenizer import Tokenizer

if TYPE_CHECKING:
    import torch

log = logging.getLogger("seq2seq")

ROWS_PER_CHUNK = 1000  # rows per Arrow record batch written, and per chunk read back
CACHE_VERSION = 1  # bump when the cached files' layout or the cleaning changes


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


def cache_root(cfg: DataConfig) -> Path:
    if cfg.cache_dir:
        return Path(cfg.cache_dir)
    if os.environ.get("SEQ2SEQ_CACHE_DIR"):
        return Path(os.environ["SEQ2SEQ_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "seq2seq"


def _text_key(cfg: DataConfig, split: str) -> str:
    """Content hash of a split's source: the files' sha256 or the HF dataset's fingerprint."""
    if cfg.hf is not None:
        fingerprint = open_hf(cfg, split, streaming=False)._fingerprint
        source = [fingerprint, cfg.hf.src_field, cfg.hf.tgt_field]
    else:
        source = [sha256_file(f) for f in split_files(cfg, split)]
    parts = [CACHE_VERSION, split, *source, getattr(cfg, f"max_{split}_pairs", None)]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:20]


def _build_once(folder: Path, build: Callable[[Path], None]) -> Path:
    """Run ``build`` into a temporary folder, renamed to ``folder`` when complete; skip it when
    ``folder`` exists (a cache hit)."""
    if folder.is_dir():
        return folder
    tmp = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
    except OSError as e:  # a read-only home: name what moves the cache, not only the folder
        raise DataError(
            f"data.backend arrow: cannot write its cache in {folder.parent} ({e.strerror}); set "
            "data.cache_dir (or the environment variable SEQ2SEQ_CACHE_DIR) to a writable folder"
        ) from None
    try:
        build(tmp)
        os.replace(tmp, folder)
    except OSError:
        if not folder.is_dir():  # another process finished first: use its copy
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _write_text(cfg: DataConfig, split: str, folder: Path) -> None:
    import pyarrow as pa

    schema = pa.schema([("line_no", pa.int64()), ("src", pa.string()), ("tgt", pa.string())])
    rows = clean_rows(cfg.model_dump_json(), split, streaming=False)
    with pa.OSFile(str(folder / "text.arrow"), "wb") as sink, pa.ipc.new_stream(sink, schema) as w:
        while chunk := list(itertools.islice(rows, ROWS_PER_CHUNK)):
            w.write_batch(pa.RecordBatch.from_pylist(chunk, schema))


def arrow_text(cfg: DataConfig, split: str = "train"):
    """The cleaned split as a memory-mapped ``datasets.Dataset`` of (line_no, src, tgt), built on
    first use and cached."""
    from datasets import Dataset

    folder = cache_root(cfg) / f"{split}-{_text_key(cfg, split)}"
    if not folder.is_dir():
        log.info("%s: writing cleaned text to %s", split, folder)
    return Dataset.from_file(
        str(_build_once(folder, lambda d: _write_text(cfg, split, d)) / "text.arrow")
    )


def text_sentences(text, side: str) -> Iterator[str]:
    """One side's sentences of the kept pairs, read in chunks (for tokenizer training)."""
    for chunk in text.with_format("arrow").iter(batch_size=ROWS_PER_CHUNK):
        yield from (s for s in chunk.column(side).to_pylist() if s)


class ArrowCorpus:
    """Tokenised pairs in memory-mapped Arrow files; in memory only the index of kept pairs.

    Attributes:
        rows: (N,) int64 the kept pairs' rows in the Arrow files.
        src_lens, tgt_lens: (N,) int32 their token counts (no BOS/EOS).
    """

    def __init__(self, ds, rows: np.ndarray, src_lens: np.ndarray, tgt_lens: np.ndarray):
        self.ds = ds.with_format("arrow")  # ds[indices] is a pyarrow Table of those rows
        self.rows, self.src_lens, self.tgt_lens = rows, src_lens, tgt_lens

    def __len__(self) -> int:
        return len(self.rows)

    def epoch_batches(
        self, batch_tokens: int, seed: int, epoch: int, rank: int = 0, world: int = 1
    ) -> Sequence[np.ndarray]:
        """This rank's batches of pair indices for ``epoch``, a pure function of (seed, epoch)."""
        batches = length_batches(self.src_lens, self.tgt_lens, batch_tokens, seed, epoch)
        return shard(batches, rank, world)

    def batch(self, idx: np.ndarray, pad_multiple: int = 1, max_width=None, pin=False) -> Batch:
        """The pairs ``idx`` as an unpadded, unpinned ``Batch`` (the options are for ``memory``)."""
        return table_batch(self.ds[self.rows[idx].tolist()])

    def target_vocab(self, vocab_size: int) -> torch.Tensor:
        """(V,) bool: the target ids of the kept pairs, and EOS (``batch.target_vocab_mask``); one
        pass over the memory-mapped ``tgt_ids`` column, a chunk (of ~1000 rows) at a time."""
        import pyarrow as pa
        import pyarrow.compute as pc

        keep = np.zeros(self.ds.num_rows, dtype=bool)
        keep[self.rows] = True

        def chunks() -> Iterator[np.ndarray]:
            start = 0
            for chunk in self.ds.data.column("tgt_ids").chunks:
                kept = pa.array(keep[start : start + len(chunk)])
                start += len(chunk)
                yield pc.list_flatten(chunk.filter(kept)).to_numpy(zero_copy_only=False)

        return target_vocab_mask(chunks(), vocab_size)


def _tokenise(text, tok: Tokenizer, max_len: int, num_proc: int, folder: Path) -> None:
    from datasets import Features, List, Value

    ids = List(Value("int32"))
    features = {"line_no": Value("int64"), "src_ids": ids, "tgt_ids": ids, "drop": Value("int8")}
    ds = encode_dataset(
        text,
        tok,
        max_len,
        features=Features(features),
        num_proc=num_proc if num_proc > 1 else None,
        cache_file_name=str(folder / "ids.arrow"),
        new_fingerprint=folder.name,
        desc="tokenising",
    )
    files = [Path(f["filename"]).name for f in ds.cache_files]
    (folder / "files.json").write_text(json.dumps(files), encoding="utf-8")


def open_arrow(cfg: DataConfig, tok: Tokenizer, split: str = "train", what: str = "train"):
    """The tokenised split as an ``ArrowCorpus``: tokenised (``num_proc`` processes) and cached on
    first use; the index of kept pairs is read from the ``drop`` and length columns."""
    from datasets import Dataset, concatenate_datasets

    text = arrow_text(cfg, split)
    protos = tok.src_proto + b"|" + (tok.state_dict()["tgt"] or b"")
    key = hashlib.sha256(protos + str(cfg.max_len).encode()).hexdigest()[:20]
    folder = Path(text.cache_files[0]["filename"]).parent / f"ids-{key}"
    folder = _build_once(folder, lambda d: _tokenise(text, tok, cfg.max_len, cfg.num_proc, d))
    files = json.loads((folder / "files.json").read_text(encoding="utf-8"))
    ds = concatenate_datasets([Dataset.from_file(str(folder / f)) for f in files])
    table = ds.data
    drop = table.column("drop").to_numpy()
    drops = Drops(cfg.max_len)
    drops.add(drop, table.column("line_no").to_numpy())
    drops.log(what, split_origin(cfg, split))
    rows = np.flatnonzero(drop == 0)
    src_lens, tgt_lens = table_lengths(table)
    return ArrowCorpus(ds, rows, src_lens[rows], tgt_lens[rows])

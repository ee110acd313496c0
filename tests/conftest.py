"""Shared fixtures: a small slice of Multi30k and a tokenizer trained on it.

Multi30k is read from $SEQ2SEQ_DATA_DIR (default ../shared/data); nothing is downloaded.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from seq2seq.config import TokenizerConfig, data_root
from seq2seq.data.tokenizer import Tokenizer

MULTI30K = data_root() / "multi30k"


def _slice(src: Path, dst: Path, n: int) -> None:
    with gzip.open(src, "rt", encoding="utf-8") as f:
        lines = [next(f) for _ in range(n)]
    dst.write_text("".join(lines), encoding="utf-8")


@pytest.fixture(scope="session")
def multi30k_slice(tmp_path_factory) -> Path:
    """1,000 training and 100 validation pairs of Multi30k de-en as plain files; returns the folder
    (prefixes ``train`` and ``val``)."""
    if not (MULTI30K / "train.de.gz").exists():
        pytest.fail(f"Multi30k not found under {MULTI30K}: set SEQ2SEQ_DATA_DIR")
    d = tmp_path_factory.mktemp("m30k")
    for lang in ("de", "en"):
        _slice(MULTI30K / f"train.{lang}.gz", d / f"train.{lang}", 1000)
        _slice(MULTI30K / f"val.{lang}.gz", d / f"val.{lang}", 100)
    return d


@pytest.fixture(scope="session")
def slice_tokenizer(multi30k_slice) -> Tokenizer:
    src = (multi30k_slice / "train.de").read_text().splitlines()
    tgt = (multi30k_slice / "train.en").read_text().splitlines()
    return Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=400))

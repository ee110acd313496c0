"""Shared fixtures: a synthetic corpus for the fast tier, a Multi30k slice for the end-to-end one.

Two tiers (markers registered in pyproject.toml):
- fast, ``pytest -m "not e2e and not slow"`` (``make test-fast``): units and invariants on toy
  models and made-up data written to tmp_path; needs no corpus.
- end-to-end, ``-m e2e``: real training, resume, DDP, the CLI in subprocesses, the study, and
  anything that reads Multi30k.

Multi30k is read from $SEQ2SEQ_DATA_DIR (default ../shared/data); nothing is downloaded. A test that
asks for it must be marked ``e2e`` (or ``slow``): collection stops otherwise, so the fast tier can
never come to need the corpus.
"""

from __future__ import annotations

import gzip
import os
import random
from pathlib import Path

import pytest
import torch

from seq2seq.config import TokenizerConfig, data_root
from seq2seq.data.tokenizer import Tokenizer

MULTI30K = data_root() / "multi30k"
CORPUS_FIXTURES = {"multi30k_slice", "slice_tokenizer"}


def pytest_configure(config):
    # One torch thread per process (the CLI's subprocesses inherit OMP_NUM_THREADS unless it is
    # set): toy models gain nothing from a second thread, and on a busy machine the threads'
    # waiting made the fast tier six times slower (19 minutes against 3 at load 14).
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    unmarked = [
        item.nodeid
        for item in items
        if CORPUS_FIXTURES & set(getattr(item, "fixturenames", ()))
        and item.get_closest_marker("e2e") is None
        and item.get_closest_marker("slow") is None
    ]
    if unmarked:
        raise pytest.UsageError(
            "these tests read Multi30k but are not marked e2e (the fast tier needs no corpus; use "
            "the synth_corpus fixture or mark them): " + ", ".join(unmarked)
        )


# ---- synthetic: a made-up word-for-word "translation", for the fast tier ----------------------

# source:target words; a few umlauts and an eszett so the source is not plain ASCII.
LEXICON = [
    tuple(pair.split(":"))
    for pair in """
    ein:a eine:a der:the die:the das:the und:and mann:man frau:woman kind:child hund:dog katze:cat
    vogel:bird haus:house straße:street tür:door baum:tree wasser:water brot:bread ball:ball
    fahrrad:bike läuft:runs spielt:plays sitzt:sits steht:stands isst:eats trinkt:drinks sieht:sees
    hält:holds rot:red blau:blue grün:green groß:big klein:small alt:old jung:young schnell:fast
    müde:tired fröhlich:happy auf:on in:in vor:before neben:beside über:over mit:with zwei:two
    drei:three viele:many heute:today
    """.split()
]


def synth_pairs(n: int, seed: int, max_words: int = 24) -> list[tuple[str, str]]:
    """n made-up (German-looking, English) sentence pairs of 2 .. max_words words, translated
    word for word, capitalised, ending in a full stop."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        words = [rng.choice(LEXICON) for _ in range(rng.randint(2, max_words))]
        src, tgt = (" ".join(w[side] for w in words) for side in (0, 1))
        pairs.append((src.capitalize() + ".", tgt.capitalize() + "."))
    return pairs


def write_pairs(prefix: Path, pairs: list[tuple[str, str]], src: str = "de", tgt: str = "en"):
    for lang, side in ((src, 0), (tgt, 1)):
        Path(f"{prefix}.{lang}").write_text("".join(p[side] + "\n" for p in pairs), "utf-8")


@pytest.fixture(scope="session")
def synth_corpus(tmp_path_factory) -> Path:
    """600 training and 100 validation made-up pairs as ``train.{de,en}`` and ``val.{de,en}`` in
    the returned folder: the layout of ``multi30k_slice``, no corpus needed."""
    d = tmp_path_factory.mktemp("synth")
    write_pairs(d / "train", synth_pairs(600, seed=1))
    write_pairs(d / "val", synth_pairs(100, seed=2))
    return d


@pytest.fixture(scope="session")
def synth_tokenizer(synth_corpus) -> Tokenizer:
    src = (synth_corpus / "train.de").read_text().splitlines()
    tgt = (synth_corpus / "train.en").read_text().splitlines()
    return Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=200))


@pytest.fixture(scope="session")
def synth_run(tmp_path_factory, synth_corpus, synth_tokenizer) -> Path:
    """A run folder (best.pt, last.pt, ...) of the tiny rnn after 2 updates on ``synth_corpus``:
    a real checkpoint for the commands' fast tests, trained in a second or two."""
    from seq2seq.training.loop import train

    from .toys import synth_run_config

    run = tmp_path_factory.mktemp("synth_run") / "run"
    train(synth_run_config(synth_corpus, max_steps=2), run, tokenizer=synth_tokenizer)
    return run


# ---- Multi30k, for the end-to-end tier ---------------------------------------------------------


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

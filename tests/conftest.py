"""Shared fixtures: a synthetic corpus and tiny trained runs for the fast tier, a Multi30k slice for
the end-to-end one.

Two tiers, set by the folder (markers registered in pyproject.toml):
- fast, ``tests/unit/`` (``pytest -m "not e2e and not slow and not browser"``, ``make test-fast``):
  units and invariants on toy models and made-up data written to tmp_path; needs no corpus.
  ``tests/unit/<package>/test_<module>.py`` tests ``seq2seq/<package>/<module>.py``; files named
  by what they pin (``test_imports.py``, ``test_shipped_configs.py``) hold repository-wide rules.
- end-to-end, ``tests/e2e/`` (``-m e2e``): real training, resume, DDP, the CLI in subprocesses,
  the study, a server, anything that reads Multi30k; named by command or module. Every test there
  is marked ``e2e`` here, at collection; the ``slow`` and ``browser`` checks live there too.

Multi30k is read from $SEQ2SEQ_DATA_DIR (default ../shared/data); nothing is downloaded. A test that
asks for it must be marked ``e2e`` (or ``slow``): collection stops otherwise, so the fast tier can
never come to need the corpus.

Helpers shared by test files: ``toys/`` (toy models, the oracle, tiny run configs, the command
line in this process: ``run_cli``, and the ``run_in_process`` fixture below), ``corpora.py``
(made-up corpora), ``scoring.py`` (sacrebleu's command line), ``serve_runs.py`` (the server's tiny
runs), ``e2e/helpers.py`` (the command line in a subprocess).
"""

from __future__ import annotations

import gzip
import logging
import os
from functools import partial
from pathlib import Path

import pytest
import torch

from seq2seq.config import TokenizerConfig
from seq2seq.data.text import DataError, resolve_corpus_file
from seq2seq.data.tokenizer import Tokenizer
from tests.corpora import (
    BLANK_SRC_LINE,
    EMPTY_TGT_LINE,
    MONSTER_LINE,
    ZWSP_LINE,
    synth_pairs,
    toy_pairs,
    write_pairs,
    write_raw_lines,
)
from tests.toys import cli_result, tiny_model_config

CORPUS_FIXTURES = {"multi30k_slice", "slice_tokenizer"}
E2E = Path(__file__).resolve().parent / "e2e"


def pytest_configure(config):
    # One torch thread per process (the CLI's subprocesses inherit OMP_NUM_THREADS unless it is
    # set): toy models gain nothing from a second thread, and on a busy machine the threads'
    # waiting made the fast tier six times slower (19 minutes against 3 at load 14).
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        if E2E in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.e2e)
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


@pytest.fixture(autouse=True)
def _seq2seq_logger_put_back():
    """After each test, the ``seq2seq`` logger as it was: a command run in this process sets its
    level and handlers, which would otherwise reach whichever tests run after it."""
    logger = logging.getLogger("seq2seq")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]


@pytest.fixture
def run_in_process(monkeypatch, capsys):
    """``seq2seq ARGS`` in this process (``toys.cli_result``), called as ``e2e/helpers.run`` is:
    ``run_in_process("train", cfg, cwd=tmp_path, stdin="...")`` answers ``returncode``,
    ``stdout`` and ``stderr``, without starting an interpreter and importing torch again."""
    return partial(cli_result, monkeypatch, capsys)


# ---- synthetic: a made-up word-for-word "translation", for the fast tier ----------------------


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
    from tests.toys import synth_run_config

    run = tmp_path_factory.mktemp("synth_run") / "run"
    train(synth_run_config(synth_corpus, max_steps=2), run, tokenizer=synth_tokenizer)
    return run


@pytest.fixture(scope="session")
def synth_transformer_run(tmp_path_factory, synth_corpus, synth_tokenizer) -> Path:
    """A run folder of the tiny Transformer (post-norm, sinusoidal positions, shared embeddings,
    joint vocabulary) after 300 updates on ``synth_corpus``: trained enough that most greedy
    translations end with EOS, in about 5 seconds. The export tests' run."""
    from seq2seq.training.loop import train
    from tests.toys import synth_run_config

    run = tmp_path_factory.mktemp("synth_transformer_run") / "run"
    cfg = synth_run_config(synth_corpus, model="transformer", max_steps=300, lr=0.005)
    train(cfg, run, tokenizer=synth_tokenizer)
    return run


class Collect(logging.Handler):
    """Every log record's message, in order."""

    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture(scope="session")
def toy(tmp_path_factory):
    """A 20-step Transformer on the toy corpus (``corpora.toy_pairs``), whose training source has
    a 3,000-word line, a line of zero-width spaces and a blank-looking line, and whose target has
    an empty line: its folder, run, training log, model, tokenizer and config."""
    from seq2seq.config import validate_config
    from seq2seq.decoding.runs import load
    from seq2seq.training.loop import train

    d = tmp_path_factory.mktemp("toy")
    src, tgt = toy_pairs(400, seed=7)
    src[MONSTER_LINE - 1] = " ".join(["house"] * 3000)
    src[ZWSP_LINE - 1], tgt[ZWSP_LINE - 1] = "\u200b\u200b\u200b", "house"
    tgt[EMPTY_TGT_LINE - 1] = ""
    src[BLANK_SRC_LINE - 1] = " \t\u00a0 "
    write_raw_lines(d / "train.de", src)
    write_raw_lines(d / "train.en", tgt)
    vsrc, vtgt = toy_pairs(20, seed=8)
    write_raw_lines(d / "val.de", vsrc)
    write_raw_lines(d / "val.en", vtgt)
    cfg = validate_config(
        {
            "data": {"train": str(d / "train"), "valid": str(d / "val"), "max_len": 60},
            "tokenizer": {"vocab_size": 60},
            "model": tiny_model_config(
                "transformer", d_model=32, d_ff=64, dropout=0.0, max_positions=128
            ),
            "train": {"max_steps": 20, "batch_tokens": 400, "valid_every": 20, "lr": 0.005},
            "decode": {"batch_size": 16},
        }
    )
    logger, collect = logging.getLogger("seq2seq"), Collect()
    logger.addHandler(collect)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        train(cfg, d / "run")
    finally:
        logger.removeHandler(collect)
        logger.setLevel(level)
    run = load(d / "run", "cpu")
    model, tok, run_cfg = run.model, run.tok, run.cfg
    return {
        "dir": d,
        "run": d / "run",
        "log": collect.lines,
        "model": model,
        "tok": tok,
        "cfg": run_cfg,
    }


@pytest.fixture(scope="session")
def tiny_runs(tmp_path_factory) -> dict[str, Path]:
    """The server's three tiny runs (``serve_runs.train_tiny_runs``): name -> run folder."""
    from tests.serve_runs import train_tiny_runs

    return train_tiny_runs(tmp_path_factory.mktemp("serve"))


# ---- Multi30k, for the end-to-end tier ---------------------------------------------------------


def multi30k_lines(name: str, lang: str, n: int | None = None) -> list[str]:
    """The first ``n`` lines (all when None) of Multi30k's ``name.lang``, plain or ``.gz``, found
    as training finds a corpus (``resolve_corpus_file``), each with its newline; when missing, fails
    the test with training's own message (what to set, how to fetch it)."""
    try:
        path = resolve_corpus_file(f"multi30k/{name}", lang)
    except DataError as e:
        missing = str(e)  # failed outside the except block, so the message shows once
    else:
        missing = None
    if missing:
        pytest.fail(missing, pytrace=False)
    with (gzip.open if path.suffix == ".gz" else open)(path, "rt", encoding="utf-8") as f:
        return f.readlines() if n is None else [next(f) for _ in range(n)]


@pytest.fixture(scope="session")
def multi30k_slice(tmp_path_factory) -> Path:
    """1,000 training and 100 validation pairs of Multi30k de-en as plain files; returns the folder
    (prefixes ``train`` and ``val``)."""
    d = tmp_path_factory.mktemp("m30k")
    for lang in ("de", "en"):
        (d / f"train.{lang}").write_text("".join(multi30k_lines("train", lang, 1000)), "utf-8")
        (d / f"val.{lang}").write_text("".join(multi30k_lines("val", lang, 100)), "utf-8")
    return d


@pytest.fixture(scope="session")
def slice_tokenizer(multi30k_slice) -> Tokenizer:
    src = (multi30k_slice / "train.de").read_text().splitlines()
    tgt = (multi30k_slice / "train.en").read_text().splitlines()
    return Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=400))

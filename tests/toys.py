"""Toy-sized models of every family, for invariant tests; a scripted oracle for the searches; the
config of tiny training runs (``tiny_model_config``, ``tiny_config``) and the runs built on it; and
the command line run in this process."""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import sys
from pathlib import Path

import pytest
import torch
import yaml
from typer.testing import CliRunner

from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.data.tokenizer import BOS, EOS, PAD
from seq2seq.models import MODELS, build_model
from seq2seq.models.base import Seq2SeqModel
from seq2seq.models.configs import (
    BahdanauConfig,
    LuongConfig,
    RNNConfig,
    RNNEncDecConfig,
    TransformerConfig,
)
from tests.corpora import SENTENCES, write_raw_lines, write_split

REPO = Path(__file__).resolve().parent.parent

# Every registered model (and the variants whose wiring differs) at toy size; tests/unit/models/
# test_registry.py checks that each entry of MODELS has one.
TINY_MODELS = {
    "rnn": RNNConfig(emb_size=16, hidden_size=24, encoder_hidden_size=12, dropout=0.0),
    "rnn_context_lstm": RNNConfig(
        cell="lstm", feed_context=True, num_layers=2, emb_size=16, hidden_size=24, dropout=0.0
    ),
    "bahdanau": BahdanauConfig(
        emb_size=16,
        hidden_size=24,
        encoder_hidden_size=12,
        attention_size=20,
        maxout_size=10,
        dropout=0.0,
    ),
    "bahdanau_lstm_2l": BahdanauConfig(
        cell="lstm",
        num_layers=2,
        emb_size=16,
        hidden_size=24,
        attention_size=20,
        maxout_size=16,
        dropout=0.0,
        tie_embeddings=True,
    ),
    "rnnencdec": RNNEncDecConfig(
        emb_size=16, hidden_size=24, encoder_hidden_size=12, maxout_size=10, dropout=0.0
    ),
    "rnnencdec_lstm_2l": RNNEncDecConfig(
        cell="lstm",
        num_layers=2,
        emb_size=16,
        hidden_size=24,
        maxout_size=16,
        dropout=0.0,
        tie_embeddings=True,
    ),
    "luong_dot": LuongConfig(
        score="dot", emb_size=16, hidden_size=24, encoder_hidden_size=12, dropout=0.0
    ),
    "luong_general_uni": LuongConfig(
        score="general", bidirectional=False, emb_size=16, hidden_size=24, dropout=0.0
    ),
    "luong_concat_nofeed": LuongConfig(
        score="concat",
        input_feeding=False,
        emb_size=16,
        hidden_size=24,
        attention_size=20,
        dropout=0.0,
    ),
    "transformer": TransformerConfig(
        d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=2, dropout=0.0
    ),
    "transformer_prenorm_learned": TransformerConfig(
        d_model=32,
        n_heads=2,
        d_ff=64,
        n_encoder_layers=1,
        n_decoder_layers=2,
        dropout=0.0,
        pre_norm=True,
        learned_positions=True,
    ),
}
ATTENTION_MODELS = [k for k, cfg in TINY_MODELS.items() if MODELS[cfg.name].has_attention]


def tiny_model(name: str, src_vocab: int = 40, tgt_vocab: int = 45, seed: int = 0):
    """A deterministic toy model in eval mode."""
    torch.manual_seed(seed)
    return build_model(TINY_MODELS[name], src_vocab, tgt_vocab, joint_vocab=False).eval()


def random_batch(n: int, seed: int, max_len: int = 14, vocab: int = 40):
    """(n, S) source ids of random lengths 1..max_len, zero-padded."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, max_len + 1, (n,), generator=g)
    src = torch.zeros(n, int(lengths.max()), dtype=torch.long)
    for i, k in enumerate(lengths.tolist()):
        src[i, :k] = torch.randint(4, vocab, (k,), generator=g)
    return src


def toy_batch(seed: int = 0):
    """3 sources of lengths 7, 4, 2 (right-padded) and 3 targets of length 5."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 40, (3, 7), generator=g)
    src[1, 4:] = PAD
    src[2, 2:] = PAD
    tgt = torch.randint(4, 45, (3, 5), generator=g)
    tgt[:, 0] = 2  # BOS
    return src, src != PAD, tgt


def teacher_forced(model, src_row, tokens):
    """Log-probability of ``tokens`` and the cross-attention (T, S) under teacher forcing."""
    tgt_in = torch.tensor([[BOS, *tokens[:-1]]])
    with torch.no_grad():
        logits, att = model.forward_attention(src_row, src_row != 0, tgt_in)
    logp = torch.log_softmax(logits[0].float(), -1)
    return float(logp[torch.arange(len(tokens)), tokens].sum()), att


class Oracle(Seq2SeqModel):
    """A fake model whose next-token distribution is looked up by (sentence, prefix).

    ``table[(sid, prefix)] = {token: probability}``, where ``sid`` is the source's first id and
    ``prefix`` the tokens generated so far (no BOS). Unlisted tokens get probability 0; an unlisted
    prefix ends the sentence (EOS with probability 1). Records the rows decoded at every step.
    """

    static_state_keys = frozenset({"src_mask", "sid"})

    def __init__(self, table: dict, vocab: int = 8):
        super().__init__()
        self.table = table
        self.src_vocab_size = self.tgt_vocab_size = vocab
        self.rows_per_step: list[int] = []

    def encode(self, src, src_mask):
        return {"sid": src[:, 0], "src_mask": src_mask}

    def init_state(self, enc):
        return {**enc, "prefix": enc["sid"].new_zeros(len(enc["sid"]), 0)}

    def decode_step(self, prev_tokens, state, need_attention=False):
        prefix = torch.cat([state["prefix"], prev_tokens.unsqueeze(1)], 1)
        self.rows_per_step.append(len(prev_tokens))
        logits = torch.full((len(prev_tokens), self.tgt_vocab_size), float("-inf"))
        for r in range(len(prev_tokens)):
            key = (int(state["sid"][r]), tuple(t for t in prefix[r].tolist() if t != BOS))
            for tok, p in self.table.get(key, {EOS: 1.0}).items():
                logits[r, tok] = math.log(p)
        return logits, None, {**state, "prefix": prefix}


# One source sentence for the oracle, and a script for it whose best hypothesis depends on the
# search: [EOS] p=.4 · [A EOS] p=.24 · [A B EOS] p=.324 · [A B C EOS] p=.036
A, B, C = 4, 5, 6  # three ordinary target tokens
SENT = 4  # the source id of a one-sentence oracle
T1 = {
    (): {EOS: 0.4, A: 0.6},
    (A,): {EOS: 0.4, B: 0.6},
    (A, B): {EOS: 0.9, C: 0.1},
    (A, B, C): {EOS: 1.0},
}


def one_sentence(table: dict) -> dict:
    """An oracle table for the one sentence ``[SENT]``, from ``{prefix: distribution}``."""
    return {(SENT, prefix): dist for prefix, dist in table.items()}


# ---- tiny training runs: their config --------------------------------------------------------

# The sizes of a toy model of each family, as a config's model section gives them; tests change
# them with the overrides of ``tiny_model_config``.
TINY_SIZES = {
    "rnn": {"emb_size": 16, "hidden_size": 24},
    "rnnencdec": {"emb_size": 16, "hidden_size": 24, "maxout_size": 16},
    "bahdanau": {"emb_size": 16, "hidden_size": 24, "attention_size": 16, "maxout_size": 16},
    "luong": {"emb_size": 16, "hidden_size": 24},
    "transformer": {
        "d_model": 16,
        "n_heads": 2,
        "d_ff": 32,
        "n_encoder_layers": 1,
        "n_decoder_layers": 1,
    },
}


def tiny_model_config(family: str, **overrides) -> dict:
    """The ``model`` section of a toy-sized ``family``: ``TINY_SIZES[family]``, then ``overrides``
    (other sizes, ``dropout``, ``max_positions``, ...)."""
    return {"name": family, **TINY_SIZES[family], **overrides}


def tiny_config(family: str, corpus, *, model: dict | None = None, **sections) -> dict:
    """The raw config of a toy-sized run of ``family`` on the files ``corpus/train.*``, validated
    on ``corpus/val.*``: the model section ``tiny_model_config(family, **model)``, a tokenizer of
    400 pieces, and each of ``sections`` (``data``, ``tokenizer``, ``train``, ``decode``) merged
    over the section of its name; ``name="x"`` names the run."""
    raw = {
        "data": {"train": str(Path(corpus) / "train"), "valid": str(Path(corpus) / "val")},
        "tokenizer": {"vocab_size": 400},
        "model": tiny_model_config(family, **(model or {})),
    }
    for key, value in sections.items():
        raw[key] = {**raw[key], **value} if isinstance(raw.get(key), dict) else value
    return raw


# The families of the study tests and the synthetic runs, a narrower encoder than decoder.
TINY_RUN_MODELS = {
    "rnn": tiny_model_config("rnn", encoder_hidden_size=12),
    "rnnencdec": tiny_model_config("rnnencdec", encoder_hidden_size=12),
    "bahdanau": tiny_model_config("bahdanau", encoder_hidden_size=12),
    "transformer": tiny_model_config("transformer"),
}


def synth_run_raw(corpus, model: str = "rnn", dropout: float = 0.0, **train) -> dict:
    """The raw config of a tiny run on ``synth_corpus`` (its tokenizer is ``synth_tokenizer``'s
    section): 300-token batches, one log line per update, validation by loss on 10 pairs."""
    return tiny_config(
        model,
        corpus,
        model={**TINY_RUN_MODELS[model], "dropout": dropout},
        name=model,
        data={"max_len": 40, "max_valid_pairs": 10},
        tokenizer={"vocab_size": 200},
        train={
            "batch_tokens": 300,
            "valid_every": 1000,
            "log_every": 1,
            "num_threads": 1,
            "valid_bleu": False,
            "best_metric": "loss",
            "seed": 1,
            **train,
        },
        decode={"batch_size": 16, "max_len_b": 5},
    )


def synth_run_config(corpus, model: str = "rnn", dropout: float = 0.0, **train):
    from seq2seq.config import validate_config

    return validate_config(synth_run_raw(corpus, model, dropout, **train))


# The training tests' model: a tiny bahdanau without dropout.
SMALL_RUN_MODEL = tiny_model_config("bahdanau", dropout=0.0)


def small_run_config(corpus, model: dict | None = None, **train_cfg):
    """A run of ``model`` (default ``SMALL_RUN_MODEL``) on 200 pairs of ``corpus``, 6 updates of
    800-token batches, one log line per update, no validation."""
    from seq2seq.config import validate_config

    raw = tiny_config(
        "bahdanau",
        corpus,
        model={"dropout": 0.0},
        name="t",
        data={"max_len": 60, "max_train_pairs": 200, "max_valid_pairs": 20},
        train={
            "max_steps": 6,
            "batch_tokens": 800,
            "valid_every": 1000,
            "lr": 0.003,
            "seed": 1,
            "log_every": 1,
            "num_threads": 1,
            **train_cfg,
        },
        decode={"batch_size": 50},
    )
    if model is not None:
        raw["model"] = model
    return validate_config(raw)


def copy_run_config(tmp_path, train=None, valid=None, data=None, tokenizer=None, **train_cfg):
    """Two updates of a Transformer (d_model 32, ``max_positions`` 40) on the copy corpus (the 12
    ``SENTENCES`` x3, target = source; ``data.max_len`` 30) with a ``word`` tokenizer, validated on
    its first 4 every 2 updates, 256-token batches; ``train`` / ``valid`` replace the corpus."""
    from seq2seq.config import validate_config

    d = tmp_path / "data"
    d.mkdir(exist_ok=True)
    raw = tiny_config(
        "transformer",
        d,
        model={"d_model": 32, "d_ff": 64, "max_positions": 40, "dropout": 0.0},
        name="toy",
        data={
            "train": train or write_split(d, "train", SENTENCES * 3),
            "valid": valid or write_split(d, "valid", SENTENCES[:4]),
            "max_len": 30,
            **(data or {}),
        },
        tokenizer={"type": "word", "vocab_size": 64, **(tokenizer or {})},
        train={
            "max_steps": 2,
            "batch_tokens": 256,
            "valid_every": 2,
            "lr": 0.003,
            "seed": 1,
            "log_every": 1,
            "num_threads": 1,
            "device": "cpu",
            **train_cfg,
        },
        decode={"batch_size": 16, "max_len_b": 5},
    )
    return validate_config(raw)


# The four families of the loop tests on ``corpora.write_word_reversal`` files.
WORD_REVERSAL_MODELS = {
    "rnn": tiny_model_config("rnn", dropout=0.0),
    "bahdanau": tiny_model_config("bahdanau", dropout=0.0),
    "luong": tiny_model_config("luong", dropout=0.1),
    "transformer": tiny_model_config(
        "transformer",
        d_model=32,
        n_heads=4,
        d_ff=64,
        n_encoder_layers=2,
        n_decoder_layers=2,
        dropout=0.1,
    ),
}


def word_reversal_config(folder, name: str, log_every: int, max_steps: int, **train):
    """A run of the model ``name`` on ``write_word_reversal`` files in ``folder``."""
    from seq2seq.config import validate_config

    return validate_config(
        {
            "data": {"train": str(folder / "train"), "valid": str(folder / "val")},
            "tokenizer": {"type": "word", "vocab_size": 40},
            "model": WORD_REVERSAL_MODELS[name],
            "train": {
                "max_steps": max_steps,
                "batch_tokens": 120,
                "log_every": log_every,
                "valid_every": 1000,
                "valid_bleu": False,
                "best_metric": "loss",
                "num_threads": 1,
                **train,
            },
        }
    )


def slice_data(slice_dir):
    """A study's data section on a corpus folder: its val split doubles as the test set."""
    return {
        "train": str(slice_dir / "train"),
        "valid": str(slice_dir / "val"),
        "test": str(slice_dir / "val"),
        "max_len": 40,
        "max_valid_pairs": 20,
    }


def write_study_config(folder, name, model, data, tokenizer, **data_extra):
    """``folder/<name>.yaml``: a tiny ``model`` of ``TINY_RUN_MODELS`` for ``compare``."""
    cfg = {
        "name": name,
        "data": {**data, **data_extra},
        "tokenizer": tokenizer,
        "model": {**TINY_RUN_MODELS[model], "dropout": 0.0},
        "train": {"max_steps": 50, "batch_tokens": 800, "valid_every": 100, "seed": 1},
        "decode": {"batch_size": 64, "max_len_a": 1.0, "max_len_b": 5},
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def write_staged_config(folder, name, model, data):
    """``folder/<name>.yaml``: a tiny ``model`` for the two-stage study on real text (joined
    lines up to k = 3 in training and validation)."""
    cfg = {
        "name": name,
        "data": {**data, "concat_k": 3, "valid_concat_k": 3},
        "tokenizer": {"vocab_size": 300},
        "model": {**TINY_RUN_MODELS[model], "dropout": 0.0},
        "train": {"max_steps": 50, "batch_tokens": 800, "seed": 1, "lr": 0.003},
        "decode": {"batch_size": 64, "max_len_a": 1.0, "max_len_b": 5},
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def reverse_data(folder, n: int, max_words: int, max_len: int) -> dict:
    """A reversal corpus of ``n`` training pairs (1..``max_words`` of 6 symbols, seed 3) written
    into ``folder/rev``, and the config ``data`` section that reads it."""
    from seq2seq.study.synth import write_corpus

    write_corpus("reverse", n, 1, max_words, 6, folder / "rev", seed=3)
    return {
        "src_lang": "src",
        "tgt_lang": "tgt",
        "train": str(folder / "rev" / "train"),
        "valid": str(folder / "rev" / "val"),
        "test": str(folder / "rev" / "test"),
        "max_len": max_len,
        "max_valid_pairs": 20,
    }


# ---- tiny training runs: what they leave ------------------------------------------------------


def step_tokens(run_dir) -> list[int]:
    """The target tokens of each update, as the device counted them (train_log.jsonl)."""
    rows = [json.loads(x) for x in (run_dir / "train_log.jsonl").read_text().splitlines()]
    return [r["tokens"] for r in rows if "tokens" in r]


NO_CUDA_FIX = "but torch sees no CUDA device on this machine; give --device cpu (or auto)"
needs_no_cuda = pytest.mark.skipif(
    torch.cuda.is_available(), reason="needs a machine where torch sees no CUDA device"
)


def run_with_config(synth_run, tmp_path, section: str, key: str, value, name: str = "changed"):
    """A copy of ``synth_run`` whose config (config.yaml and every checkpoint's) sets
    ``section.key`` to ``value``, as a run configured differently (or by older code) would."""
    run = tmp_path / name
    shutil.copytree(synth_run, run)
    raw = yaml.safe_load((run / "config.yaml").read_text())
    raw[section][key] = value
    (run / "config.yaml").write_text(yaml.safe_dump(raw))
    for ckpt_name in ("best.pt", "last.pt"):
        ckpt = load_checkpoint(run / ckpt_name)
        ckpt["config"][section][key] = value
        save_checkpoint(run / ckpt_name, ckpt)
    return run


def cuda_run(synth_run, tmp_path):
    """A copy of ``synth_run`` whose config (config.yaml and every checkpoint's) says cuda."""
    return run_with_config(synth_run, tmp_path, "train", "device", "cuda", name="cudarun")


# ---- the command line, in this process --------------------------------------------------------


def run_cli(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """``seq2seq ARGS`` in this process: (exit code, stdout, stderr). The ``seq2seq`` logger the
    command sets up is put back afterwards, so later tests' ``caplog`` still sees its records."""
    from seq2seq.cli import main

    logger = logging.getLogger("seq2seq")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    monkeypatch.setattr(sys, "argv", ["seq2seq", *map(str, args)])
    try:
        try:
            main()
            code = 0
        except SystemExit as e:
            code = e.code or 0
    finally:
        logger.handlers[:] = saved[0]
        logger.setLevel(saved[1])
        logger.propagate = saved[2]
    out = capsys.readouterr()
    return code, out.out, out.err


def run_main(monkeypatch, capsys, *args) -> tuple[int, str]:
    """``run_cli`` without its stdout: (exit code, stderr)."""
    code, _, err = run_cli(monkeypatch, capsys, *args)
    return code, err


def run_seq2seq(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """Run the CLI in-process: (exit code, stdout, stderr), errors mapped as ``main`` maps them;
    ``main`` must exit."""
    from seq2seq.cli import main

    monkeypatch.setattr(sys, "argv", ["seq2seq", *map(str, args)])
    with pytest.raises(SystemExit) as e:
        main()
    out = capsys.readouterr()
    return e.value.code or 0, out.out, out.err


def translate_cli(
    run_dir, *args, lines: list[str] | None = None, tmp_path=None, final_newline: bool = True
):
    """``seq2seq translate`` in this process on a file; returns (exit code, stdout, stderr)."""
    from seq2seq.cli import app

    logger = logging.getLogger("seq2seq")
    saved = (list(logger.handlers), logger.propagate, logger.level)
    extra = []
    if lines is not None:
        write_raw_lines(tmp_path / "in.txt", lines, final_newline)
        extra = ["-i", str(tmp_path / "in.txt")]
    try:
        r = CliRunner().invoke(app, ["translate", "-c", str(run_dir), *extra, *map(str, args)])
    finally:  # the CLI installs its own log handler; give pytest's caplog its logger back
        logger.handlers[:], logger.propagate, logger.level = saved
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


class FakeStdin:
    """Standard input read from a pipe that already holds ``text`` (and is closed), a terminal
    or not."""

    def __init__(self, text: str, tty: bool = False):
        r, w = os.pipe()
        os.write(w, text.encode("utf-8"))
        os.close(w)
        self.buffer = os.fdopen(r, "rb")
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

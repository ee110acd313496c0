"""The command line in a subprocess, as the end-to-end tests run it, and the files they give it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import yaml

from seq2seq.checkpoint import save_checkpoint
from seq2seq.config import validate_config
from seq2seq.models import build_model
from tests.toys import tiny_model_config


def run(*args, stdin: str | None = None, cwd=None, env_extra=None):
    """``python -m seq2seq ARGS`` to its end (10 minutes at most), output captured as text."""
    env = {**os.environ, "COLUMNS": "200", **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "seq2seq", *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


ENV = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "200"}


def cli(*args, wait=True, stdin=None):
    """``python -m seq2seq ARGS`` with one torch thread: its result, or with ``wait=False`` the
    running process (to signal)."""
    cmd = [sys.executable, "-m", "seq2seq", *map(str, args)]
    if not wait:  # Ctrl-C reaches it as from a terminal, even when pytest was started with `&`,
        # which leaves SIGINT ignored in its children (and training keeps an ignored signal so)
        return subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300, input=stdin)


def one_line_exit_2(r, needle):
    """``r`` failed as a user error: exit 2, ``needle`` in one line of stderr, no traceback."""
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def write_config(tmp_path, slice_dir, model: dict, **train):
    """``tmp_path/config.yaml``: ``model`` for 40 updates of 1,500 tokens on the Multi30k slice."""
    cfg = {
        "name": "tiny",
        "data": {"train": str(slice_dir / "train"), "valid": str(slice_dir / "val"), "max_len": 60},
        "tokenizer": {"vocab_size": 400},
        "model": model,
        "train": {
            "max_steps": 40,
            "batch_tokens": 1500,
            "valid_every": 20,
            "lr": 0.003,
            "seed": 1,
            **train,
        },
        "decode": {"batch_size": 50},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def untrained_checkpoint(tmp_path, tok, hidden=24, **extra):
    """``tmp_path/model.pt``: an untrained rnn with ``tok``, no optimizer (an inference-only
    checkpoint, like an averaged one); returns (path, config)."""
    cfg = validate_config(
        {
            "train": {"max_steps": 1},
            "model": tiny_model_config("rnn", emb_size=8, hidden_size=hidden),
        }
    )
    model = build_model(cfg.model, tok.src_vocab_size, tok.tgt_vocab_size, tok.joint)
    path = tmp_path / "model.pt"
    save_checkpoint(
        path,
        {
            "config": cfg.model_dump(mode="json"),
            "model": model.state_dict(),
            "tokenizer": tok.state_dict(),
            **extra,
        },
    )
    return path, cfg

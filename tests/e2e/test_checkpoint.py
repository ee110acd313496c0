"""A checkpoint that cannot be used (truncated, garbage, a newer format, weights of another model)
is one line and exit 2 from the command line."""

from __future__ import annotations

import os

import pytest
import torch

from tests.e2e.helpers import untrained_checkpoint


def _truncated(tmp_path, tok):
    path, _ = untrained_checkpoint(tmp_path, tok)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path


def _newer_version(tmp_path, tok):
    path, _ = untrained_checkpoint(tmp_path, tok)
    ckpt = torch.load(path, weights_only=True)
    torch.save({**ckpt, "version": 99}, path)
    return path


def _wrong_weights(tmp_path, tok):
    path, cfg = untrained_checkpoint(tmp_path, tok)
    ckpt = torch.load(path, weights_only=True)
    ckpt["config"]["model"]["hidden_size"] = 32
    torch.save(ckpt, path)
    return path


def _garbage(tmp_path, tok):
    path = tmp_path / "garbage.pt"
    path.write_bytes(b"\x80\xaa" + bytes(range(256)) * 20)  # torch warns "pickle protocol 170"
    return path


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (_truncated, "cannot read this checkpoint"),
        (_garbage, "cannot read this checkpoint"),
        (_newer_version, "format version 99 is newer"),
        (_wrong_weights, "weights do not match the model config"),
    ],
)
def test_bad_checkpoint_is_one_line_exit_2(tmp_path, slice_tokenizer, make, needle, run_in_process):
    path = make(tmp_path, slice_tokenizer)
    r = run_in_process("translate", "-c", path, "-i", os.devnull)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1

"""What tiny training runs leave (``step_tokens``), and copies of a run configured otherwise
(``run_with_config``, ``cuda_run``); the mark for tests that need a machine without CUDA."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
import yaml

from seq2seq.checkpoint import load_checkpoint, save_checkpoint


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

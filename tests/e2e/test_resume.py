"""Resuming through the command line: exact resume after SIGKILL, Ctrl-C, SIGTERM and SIGHUP save
and exit 130, ``--resume`` takes no other folder, a corrupt or inference-only checkpoint is
refused."""

from __future__ import annotations

import json
import signal
import time

import pytest
import torch
import yaml

from seq2seq.checkpoint import CheckpointError, load_checkpoint
from seq2seq.config import DecodeConfig, load_config
from seq2seq.decoding.runs import load
from seq2seq.decoding.translate import translate_sentences
from seq2seq.training.loop import train
from tests.e2e.helpers import cli, untrained_checkpoint
from tests.toys import tiny_model_config


def write_config(tmp_path, slice_dir, **train):
    cfg = {
        "name": "resume",
        "data": {
            "train": str(slice_dir / "train"),
            "valid": str(slice_dir / "val"),
            "max_len": 60,
            "max_train_pairs": 120,
            "max_valid_pairs": 10,
        },
        "tokenizer": {"vocab_size": 400},
        # dropout > 0: the resumed run must restore the RNG to draw the same masks
        "model": tiny_model_config("bahdanau", dropout=0.3),
        "train": {
            "batch_tokens": 800,
            "lr": 0.003,
            "seed": 3,
            "log_every": 1,
            "num_threads": 1,
            "valid_bleu": False,
            "best_metric": "loss",
            **train,
        },
        "decode": {"batch_size": 50, "max_len_b": 5},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def step_losses(run_dir):
    lines = (run_dir / "train_log.jsonl").read_text().splitlines()
    return [(r["step"], r["loss"]) for r in map(json.loads, lines) if "loss" in r]


def checkpoint_step(path):
    try:
        return load_checkpoint(path)["train_state"]["step"]
    except (CheckpointError, FileNotFoundError):
        return 0


def test_resume_refuses_run_dir_and_overwrite(tmp_path, run_in_process):
    for extra in (["--run-dir", "elsewhere"], ["--overwrite"]):
        r = run_in_process("train", "cfg.yaml", "--resume", "run", *extra, cwd=tmp_path)
        assert r.returncode == 2 and "--resume continues the run in its own folder" in r.stderr


def test_resume_after_sigkill_is_exact(tmp_path, multi30k_slice, run_in_process):
    """2N steps straight == N steps, SIGKILL, --resume to 2N: same losses, same weights. The
    killed run is a subprocess (the point: a process killed mid-run); the rest runs in process."""
    n = 4  # checkpoint_every; 120 pairs make ~6 batches an epoch, so step N is mid-epoch
    cfg = write_config(tmp_path, multi30k_slice, checkpoint_every=n, valid_every=3, keep_last=2)
    killed = tmp_path / "killed"
    proc = cli("train", cfg, "--run-dir", killed, "--max-steps", 1000, wait=False)
    deadline = time.time() + 240
    while checkpoint_step(killed / "last.pt") < n and proc.poll() is None:
        assert time.time() < deadline, "no checkpoint at step N in time"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    state = load_checkpoint(killed / "last.pt")["train_state"]
    k = state["step"]  # N, unless the poll missed it and the run reached the next multiple
    assert k % n == 0 and state["epoch"] == 0 and state["batch_in_epoch"] > 0  # mid-epoch

    r = run_in_process("train", cfg, "--resume", killed, "--max-steps", 2 * k)
    assert r.returncode == 0, r.stderr
    r = run_in_process("train", cfg, "--run-dir", tmp_path / "straight", "--max-steps", 2 * k)
    assert r.returncode == 0, r.stderr

    straight, resumed = step_losses(tmp_path / "straight"), step_losses(killed)
    assert [s for s, _ in resumed] == [s for s, _ in straight] == list(range(1, 2 * k + 1))
    assert max(abs(a - b) for (_, a), (_, b) in zip(straight, resumed, strict=True)) <= 1e-6
    a, b = (load_checkpoint(d / "last.pt") for d in (tmp_path / "straight", killed))
    assert a["train_state"]["epoch"] >= 1  # the second half crossed an epoch boundary
    for name, w in a["model"].items():
        assert (w - b["model"][name]).abs().max() <= 1e-6, name

    # keep_last survived the kill; `average --last 2` is the mean of those two and translates
    saved = sorted({s for s in range(1, 2 * k + 1) if s % 3 == 0 or s % n == 0})
    kept = sorted(killed.glob("step*.pt"), key=lambda p: int(p.stem[4:]))
    assert [p.name for p in kept] == [f"step{s}.pt" for s in saved[-2:]]
    r = run_in_process("average", "-c", killed, "--last", 2, "-o", tmp_path / "avg.pt")
    assert r.returncode == 0, r.stderr
    x, y = (load_checkpoint(p)["model"] for p in kept)
    avg = load_checkpoint(tmp_path / "avg.pt")["model"]
    assert all(torch.allclose(avg[k], (x[k] + y[k]) / 2, atol=1e-7) for k in x)
    run = load(tmp_path / "avg.pt", "cpu")
    model, tok = run.model, run.tok
    assert translate_sentences(model, tok, ["Ein Hund läuft."], DecodeConfig())[0].hypotheses


@pytest.mark.parametrize(
    "sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"]
)
def test_ctrl_c_sigterm_or_sighup_saves_and_exits_130_with_how_to_resume(
    tmp_path, multi30k_slice, sig
):
    cfg = write_config(tmp_path, multi30k_slice, valid_every=1000)
    run = tmp_path / "run"
    proc = cli("train", cfg, "--run-dir", run, "--max-steps", 1000, wait=False)
    log = run / "train_log.jsonl"
    deadline = time.time() + 240
    while not (log.exists() and len(log.read_text().splitlines()) >= 3):
        assert proc.poll() is None and time.time() < deadline, "training did not start"
        time.sleep(0.05)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err  # not finished: `train && eval` stops here
    summary = json.loads(out)
    assert summary["stopped"] == "interrupted" and 3 <= summary["steps"] < 1000
    assert err.strip().splitlines()[-1] == (
        f"stopped: interrupted at step {summary['steps']}: last.pt saved; resume with seq2seq "
        f"train {run / 'config.yaml'} --resume {run}"
    )
    assert load_checkpoint(run / "last.pt")["train_state"]["step"] == summary["steps"]
    assert "Traceback" not in err


def test_resume_refuses_a_corrupt_or_inference_only_checkpoint(
    tmp_path, multi30k_slice, slice_tokenizer, run_in_process
):
    cfg = write_config(tmp_path, multi30k_slice, max_steps=2)
    run = tmp_path / "run"
    run.mkdir()
    path, _ = untrained_checkpoint(
        tmp_path, slice_tokenizer
    )  # no optimizer, like an averaged checkpoint
    path.rename(run / "last.pt")
    with pytest.raises(CheckpointError, match="can translate but not resume training"):
        train(load_config(cfg), run, resume=True)
    (run / "last.pt").write_bytes(b"\x00" * 100)
    r = run_in_process("train", cfg, "--resume", run)
    assert r.returncode == 2 and "corrupt or truncated" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr

"""The CPU speed options end to end: a bf16 run resumes exactly (as ``test_resume`` checks fp32),
a run whose ``auto`` became bf16 keeps bf16 on ``--resume`` with its ``auto`` config and probes
nothing, and ``translate``/``eval`` with ``--quantize int8`` through the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import validate_config
from seq2seq.training import precision as P
from seq2seq.training import setup
from seq2seq.training.loop import train
from tests.toys import synth_run_raw

pytestmark = pytest.mark.e2e  # training runs stopped and resumed, the CLI in subprocesses

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "200"}
K = 3  # steps before the stop; 60 pairs make ~5 batches an epoch: step K is mid-epoch


def cli(*args):
    cmd = [sys.executable, "-m", "seq2seq", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300)


def raw_config(corpus, precision: str) -> dict:
    """The tiny rnn on 60 synthetic pairs, dropout on (a resume must restore the RNG)."""
    raw = synth_run_raw(corpus, "rnn", dropout=0.3, precision=precision, checkpoint_every=K)
    raw["data"]["max_train_pairs"] = 60
    return raw


def step_losses(run_dir):
    lines = (run_dir / "train_log.jsonl").read_text().splitlines()
    return [(r["step"], r["loss"]) for r in map(json.loads, lines) if "loss" in r]


def assert_same_run(a, b):
    """Same losses at every step and the same final weights (within 1e-6)."""
    la, lb = step_losses(a), step_losses(b)
    assert [s for s, _ in la] == [s for s, _ in lb] == list(range(1, 2 * K + 1))
    assert max(abs(x - y) for (_, x), (_, y) in zip(la, lb, strict=True)) <= 1e-6
    wa, wb = (load_checkpoint(d / "last.pt")["model"] for d in (a, b))
    for name, w in wa.items():
        assert (w - wb[name]).abs().max() <= 1e-6, name


def test_a_bf16_run_resumes_exactly(tmp_path, synth_corpus, run_in_process):
    """2K bf16 steps straight == K steps, then --resume to 2K (the command line in this process,
    mid-epoch, across an epoch)."""
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(raw_config(synth_corpus, "bf16")))
    r = run_in_process("train", cfg, "--run-dir", tmp_path / "straight", "--max-steps", 2 * K)
    assert r.returncode == 0, r.stderr
    r = run_in_process("train", cfg, "--run-dir", tmp_path / "parts", "--max-steps", K)
    assert r.returncode == 0, r.stderr
    state = load_checkpoint(tmp_path / "parts" / "last.pt")["train_state"]
    assert state["step"] == K and state["batch_in_epoch"] > 0  # stopped mid-epoch
    r = run_in_process("train", cfg, "--resume", tmp_path / "parts", "--max-steps", 2 * K)
    assert r.returncode == 0, r.stderr
    assert "resume is not exact" not in r.stderr
    assert load_checkpoint(tmp_path / "straight" / "last.pt")["train_state"]["epoch"] >= 1
    assert_same_run(tmp_path / "straight", tmp_path / "parts")
    assert yaml.safe_load((tmp_path / "parts" / "config.yaml").read_text())["train"][
        "precision"
    ] == ("bf16")


def test_auto_resumes_with_the_precision_it_chose_without_a_probe(
    tmp_path, synth_corpus, monkeypatch
):
    """A run whose auto became bf16, resumed with the same auto config on a machine whose probe
    would now say fp32, goes on in bf16: the same run as an uninterrupted explicit bf16 one."""
    probes = []

    def probe(says: str):
        def stub(model, t, batches, device):
            probes.append(says)
            return {"bf16": 2.0, "fp32": 1.0} if says == "bf16" else {"bf16": 1.0, "fp32": 2.0}

        return stub

    monkeypatch.setattr(P, "cpu_flags", lambda: frozenset({"avx512f", "avx512_bf16"}))
    monkeypatch.setattr(P, "MIN_PROBE_PARAMETERS", 0)
    monkeypatch.setattr(P, "MIN_PROBE_STEPS", 0)

    def cfg(precision, steps):
        raw = raw_config(synth_corpus, precision)
        raw["train"]["max_steps"] = steps
        return validate_config(raw)

    train(cfg("bf16", 2 * K), tmp_path / "straight")
    monkeypatch.setattr(setup, "probe_speeds", probe("bf16"))
    train(cfg("auto", K), tmp_path / "parts")
    monkeypatch.setattr(setup, "probe_speeds", probe("fp32"))
    train(cfg("auto", 2 * K), tmp_path / "parts", resume=True)
    assert probes == ["bf16"]  # the first stretch probed; the resume kept its choice
    assert load_checkpoint(tmp_path / "parts" / "last.pt")["config"]["train"]["precision"] == (
        "bf16"
    )
    assert_same_run(tmp_path / "straight", tmp_path / "parts")


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory, synth_corpus):
    """The tiny rnn after 30 fp32 updates on the synthetic corpus: enough to emit EOS."""
    run = tmp_path_factory.mktemp("int8") / "run"
    raw = synth_run_raw(synth_corpus, "rnn", precision="fp32", max_steps=30)
    raw["train"]["lr"] = 0.01
    train(validate_config(raw), run)
    return run


def test_translate_and_eval_with_quantize_int8(tmp_path, trained_run, synth_corpus):
    src = tmp_path / "src.txt"
    lines = (synth_corpus / "val.de").read_text().splitlines()[:12]
    src.write_text("\n".join([*lines[:6], "", *lines[6:]]) + "\n")
    outs = {}
    for mode in ("fp32", "int8"):
        extra = ["--quantize", "int8"] if mode == "int8" else []
        r = cli("translate", "-c", trained_run, "-i", src, "--method", "greedy", *extra)
        assert r.returncode == 0, r.stderr
        outs[mode] = r.stdout.splitlines()
    assert len(outs["int8"]) == 13 and outs["int8"][6] == ""  # line for line, empty for empty
    same = sum(a == b for a, b in zip(outs["fp32"], outs["int8"], strict=True))
    assert same >= 0.5 * 13, (outs["fp32"], outs["int8"])
    ref = tmp_path / "ref.txt"
    ref.write_text("\n".join((synth_corpus / "val.en").read_text().splitlines()[:6]) + "\n")
    short = tmp_path / "short.txt"
    short.write_text("\n".join(lines[:6]) + "\n")
    r = cli("eval", "-c", trained_run, "--src", short, "--ref", ref, "--quantize", "int8")
    assert r.returncode == 0, r.stderr
    assert "BLEU" in r.stdout

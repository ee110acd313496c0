"""``seq2seq compare`` end to end on synthetic reversal corpora: the exact-match report, the
alignment numbers for attention models only, and SIGTERM stopping its workers."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.study.compare import compare
from seq2seq.study.plan import Budget, StudyOptions
from tests.toys import TINY_RUN_MODELS, reverse_data, write_study_config


def test_reverse_study_reports_exact_match(tmp_path):

    data = reverse_data(tmp_path, 300, 25, 40)
    tok = {"type": "word", "vocab_size": 16}
    paths = [
        write_study_config(tmp_path, n, n, data, tok) for n in ("rnn", "bahdanau", "rnnencdec")
    ]
    opts = StudyOptions(beams=(1,), concat_k=1, n_attention=1, exact_match=True, device="cpu")
    torch.manual_seed(0)
    results = compare(paths, tmp_path / "out", Budget(steps=2), opts)
    assert results["eval_set"]["sentences"] == 100
    rows = results["models"][0]["decodes"]["greedy"]["by_length"]
    assert [r["bucket"] for r in rows] == [
        "1-10",
        "11-20",
        "21-30",
        "31-40",
        "41-50",
        "51-60",
        "61+",
    ]
    assert all(r["exact"] is None or 0 <= r["exact"] <= 100 for r in rows)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Exact match (%) by source length (greedy)" in report
    assert results["findings"]["exact"] in report
    assert (tmp_path / "out" / "exact_by_length.png").is_file()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_to_compare_stops_its_workers_and_keeps_their_runs(tmp_path, signum):
    """``kill``, ``timeout`` or a closed terminal (SIGHUP) signal compare's own process only: it
    passes SIGTERM on to its worker processes, which save last.pt (a rerun resumes from it), no
    queued job starts after it (the third config here waits for a worker) and no worker outlives
    it."""
    import time

    data = reverse_data(tmp_path, 300, 12, 40)
    tok = {"type": "word", "vocab_size": 16}
    paths = [
        write_study_config(tmp_path, n, n, data, tok) for n in ("rnn", "bahdanau", "rnnencdec")
    ]
    out = tmp_path / "out"
    args = ["compare", *paths, "--out", out, "--budget-steps", 100000, "--exact-match"]
    args += ["--beams", 1, "--concat-k", 1, "--jobs", 2, "--device", "cpu"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "seq2seq", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    logs = [out / "runs" / n / "train_log.jsonl" for n in ("rnn", "bahdanau")]
    deadline = time.monotonic() + 240
    while not all(p.is_file() and p.stat().st_size for p in logs):  # both are training
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-2000:]
        time.sleep(0.5)
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    cmdline = {int(c): Path(f"/proc/{c}/cmdline").read_bytes() for c in children}
    workers = [pid for pid, cmd in cmdline.items() if b"spawn_main" in cmd]  # not the tracker
    assert len(workers) == 2, cmdline
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err, err[-3000:]
    for n in ("rnn", "bahdanau"):
        assert (out / "runs" / n / "last.pt").is_file()
    alive = [pid for pid in workers if Path(f"/proc/{pid}").exists()]
    assert not alive, f"workers left running: {alive}"
    assert not (out / "runs" / "rnnencdec").exists()  # queued, never started


def test_compare_writes_alignment_for_attention_models_only(tmp_path):
    data = reverse_data(tmp_path, 200, 12, 20)
    models = {n: TINY_RUN_MODELS[n] for n in ("rnn", "bahdanau")}
    models["transformer"] = {
        **TINY_RUN_MODELS["transformer"],
        "n_decoder_layers": 2,
        "pre_norm": True,
    }
    paths = []
    for name, model in models.items():
        cfg = {
            "name": name,
            "data": data,
            "tokenizer": {"type": "word", "vocab_size": 16},
            "model": {**model, "dropout": 0.0},
            "train": {
                "max_steps": 6,
                "batch_tokens": 300,
                "valid_every": 2,
                "valid_bleu": False,
                "best_metric": "loss",
                "keep_last": 3,
                "seed": 1,
            },
            "decode": {"batch_size": 64, "max_len_a": 1.0, "max_len_b": 5},
        }
        paths.append(tmp_path / f"{name}.yaml")
        paths[-1].write_text(yaml.safe_dump(cfg))
    opts = StudyOptions(
        beams=(1,),
        concat_k=1,
        edges=(4, 8, 12),
        n_attention=0,
        exact_match=True,
        device="cpu",
        alignment="reverse",
    )
    torch.manual_seed(0)
    results = compare(paths, tmp_path / "out", Budget(), opts)
    assert results["alignment"] == "reverse"
    by_name = {m["name"]: m for m in results["models"]}
    assert by_name["rnn"]["alignment"] is None
    for name in ("bahdanau", "transformer"):
        a = by_name[name]["alignment"]
        assert 0 <= a["accuracy"] <= 100 and a["positions"] > 0
        assert sum(r["positions"] for r in a["by_length"]) == a["positions"]
    assert by_name["bahdanau"]["alignment"]["best_head"] is None
    t = by_name["transformer"]["alignment"]
    assert (t["layers"], t["heads"]) == (2, 2) and len(t["per_head"]) == 2
    assert set(t["best_head"]) == {"layer", "head"}
    for m in results["models"]:
        p = m["plateau"]
        assert [c["step"] for c in p["curve"]] == [2, 4, 6]  # keep_last 3
        assert p["bucket"] == "1-4" and p["verdict"] in {"trained", "flat", "rising", "too few"}
    assert (tmp_path / "out" / "exact_by_length.png").is_file()
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Reverse table" in report and results["findings"]["plateau"] in report
    assert "| transformer |" in report and "layer " in report

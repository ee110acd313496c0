"""Training on the corpora kept on disk (``data.backend`` arrow and stream) end to end on the
Multi30k slice: an exact resume, torchrun, and resident memory that stays flat as the corpus
grows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seq2seq.config import DataConfig, validate_config
from seq2seq.data.text import load_split, tokenize_pairs
from seq2seq.data.tokenizer import Tokenizer
from tests.conftest import multi30k_lines
from tests.toys import REPO, tiny_model_config


def _train_cfg(folder: Path, tmp_path: Path, backend: str, max_steps: int):
    return validate_config(_train_raw(folder, tmp_path, backend, max_steps))


def _train_raw(folder: Path, tmp_path: Path, backend: str, max_steps: int) -> dict:
    return {
        "data": {
            "train": str(folder / "train"),
            "valid": str(folder / "val"),
            "max_len": 40,
            "max_valid_pairs": 20,
            "backend": backend,
            "cache_dir": str(tmp_path / "c"),
            "shuffle_buffer": 400,
        },
        "tokenizer": {"vocab_size": 300},
        "model": tiny_model_config("transformer", dropout=0.0),
        "train": {
            "max_steps": max_steps,
            "batch_tokens": 400,
            "valid_every": 1000,
            "valid_bleu": False,
            "best_metric": "loss",
            "seed": 2,
            "device": "cpu",
        },
    }


def _losses(run_dir: Path) -> list[float]:
    rows = [json.loads(ln) for ln in (run_dir / "train_log.jsonl").read_text().splitlines()]
    return [r["loss"] for r in rows if "loss" in r and "valid" not in r]


# Run in a fresh process: open the corpus and make every batch of one epoch. Peak anonymous RSS
# (RssAnon sampled every 2 ms) is what a corpus held in Python objects grows; the pages of the
# memory-mapped Arrow files count as RssFile, page cache the kernel drops under pressure, so
# VmHWM (anonymous + file) is reported but not judged.
_MEASURE = r"""
import json, sys, threading, time
import datasets, pyarrow, torch  # imported before the baseline, whichever the backend

def kb(key):
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith(key))

peak = [kb("RssAnon:")]
def sample():
    while True:
        peak[0] = max(peak[0], kb("RssAnon:"))
        time.sleep(0.002)
threading.Thread(target=sample, daemon=True).start()

from seq2seq.data import text as data
from seq2seq.data.batch import Batch, length_batches
from seq2seq.config import DataConfig
from seq2seq.data.arrow import open_arrow
from seq2seq.data.tokenizer import Tokenizer

backend, prefix, tok_dir, cache = sys.argv[1:5]
tok = Tokenizer.load(tok_dir)
cfg = DataConfig(train=prefix, backend=backend, cache_dir=cache, max_len=100)
n = 0
if backend == "memory":
    pairs = data.tokenize_pairs(data.load_split(cfg, "train"), tok.encode_src, tok.encode_tgt,
                                cfg.max_len, "train")
    lens = [len(s) for s in pairs.src], [len(t) for t in pairs.tgt]
    for idx in length_batches(*lens, 4000, 1, 0):
        n += Batch.from_ids([pairs.src[i] for i in idx], [pairs.tgt[i] for i in idx]).n_tokens
else:
    corpus = open_arrow(cfg, tok)
    for item in corpus.epoch_batches(4000, 1, 0):
        n += corpus.batch(item).n_tokens
peak[0] = max(peak[0], kb("RssAnon:"))
print(json.dumps({"tokens": n, "peak_anon_mb": peak[0] / 1024, "hwm_mb": kb("VmHWM:") / 1024}))
"""


def _repeated_corpus(folder: Path, n_pairs: int | None, times: int) -> Path:
    folder.mkdir(parents=True)
    for lang in ("de", "en"):
        lines = multi30k_lines("train", lang)[:n_pairs]
        (folder / f"train.{lang}").write_text("".join(lines) * times, encoding="utf-8")
    return folder / "train"


def _peak(backend: str, prefix: Path, tok_dir: Path, cache: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    r = subprocess.run(
        [sys.executable, "-c", _MEASURE, backend, str(prefix), str(tok_dir), str(cache)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _growth(backend: str, tmp_path: Path, tok_dir: Path, n_pairs: int | None) -> tuple[dict, dict]:
    x1 = _peak(
        backend, _repeated_corpus(tmp_path / f"{backend}1", n_pairs, 1), tok_dir, tmp_path / "c"
    )
    x10 = _peak(
        backend, _repeated_corpus(tmp_path / f"{backend}10", n_pairs, 10), tok_dir, tmp_path / "c"
    )
    assert x10["tokens"] == 10 * x1["tokens"]  # the whole corpus went through the batches
    return x1, x10


# Growth allowed from 2,000 to 20,000 pairs: the index (16 bytes a pair) and allocator noise fit;
# the same corpus held as Python lists (the memory backend) grows by ~25 MB.
MARGIN_MB = 8.0


@pytest.mark.parametrize(
    "backend", ["stream", pytest.param("arrow", marks=pytest.mark.slow)]
)  # arrow's batches are a pure function of (seed, epoch), like the memory backend's
def test_training_resumes_exactly_on_a_disk_backend(multi30k_slice, tmp_path, backend):
    """The stream replays the interrupted epoch up to the batch the checkpoint stopped at."""
    from seq2seq.training.loop import train

    straight = train(_train_cfg(multi30k_slice, tmp_path, backend, 4), tmp_path / "a")
    assert straight["steps"] == 4
    train(_train_cfg(multi30k_slice, tmp_path, backend, 2), tmp_path / "b")
    train(_train_cfg(multi30k_slice, tmp_path, backend, 4), tmp_path / "b", resume=True)
    a, b = _losses(tmp_path / "a"), _losses(tmp_path / "b")
    assert len(a) == 4 and a == pytest.approx(b, abs=1e-6)


def test_training_on_the_arrow_backend(multi30k_slice, tmp_path):
    from seq2seq.training.loop import train

    summary = train(_train_cfg(multi30k_slice, tmp_path, "arrow", 2), tmp_path / "run")
    assert summary["steps"] == 2 and len(_losses(tmp_path / "run")) == 2
    info = json.loads((tmp_path / "run" / "run_info.json").read_text())
    tok = Tokenizer.load(tmp_path / "run")  # the memory backend keeps as many pairs
    text = load_split(DataConfig(train=str(multi30k_slice / "train")), "train")
    assert info["train_pairs"] == len(tokenize_pairs(text, tok.encode_src, tok.encode_tgt, 40, "t"))


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["arrow", "stream"])
def test_torchrun_two_ranks_on_a_disk_backend(multi30k_slice, tmp_path, backend):
    """Rank 0 builds the cache and the tokenizer while rank 1 waits; the replicas stay identical."""
    raw = _train_raw(multi30k_slice, tmp_path, backend, 3)
    raw["train"]["num_threads"] = 1
    (tmp_path / "config.yaml").write_text(json.dumps(raw))  # JSON is YAML
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "seq2seq",
        "train",
        str(tmp_path / "config.yaml"),
        "--run-dir",
        str(tmp_path / "run"),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    digests = json.loads(r.stdout)["rank_weights_sha256"]
    assert len(digests) == 2 and digests[0] == digests[1]


def test_arrow_peak_memory_does_not_grow_with_the_corpus(slice_tokenizer, tmp_path):
    slice_tokenizer.save(tmp_path / "tok")
    x1, x10 = _growth("arrow", tmp_path, tmp_path / "tok", 2000)
    assert x10["peak_anon_mb"] - x1["peak_anon_mb"] < MARGIN_MB, (x1, x10)


@pytest.mark.slow
def test_the_margin_catches_a_corpus_held_in_lists(slice_tokenizer, tmp_path):
    slice_tokenizer.save(tmp_path / "tok")
    m1, m10 = _growth("memory", tmp_path, tmp_path / "tok", 2000)
    assert m10["peak_anon_mb"] - m1["peak_anon_mb"] > MARGIN_MB, (m1, m10)


@pytest.mark.slow
def test_arrow_peak_memory_flat_on_multi30k_x1_and_x10(slice_tokenizer, tmp_path):
    """All of Multi30k (29,000 pairs) and ten copies of it (290,000)."""
    slice_tokenizer.save(tmp_path / "tok")
    x1, x10 = _growth("arrow", tmp_path, tmp_path / "tok", None)
    assert x10["peak_anon_mb"] - x1["peak_anon_mb"] < 30.0, (x1, x10)
    m1, m10 = _growth("memory", tmp_path, tmp_path / "tok", None)
    assert m10["peak_anon_mb"] - m1["peak_anon_mb"] > 100.0, (m1, m10)

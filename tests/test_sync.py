"""The training loop never waits for the device between log points.

On CUDA, reading a tensor on the host (``item``, ``tolist``, ``cpu``, ``bool``, ``float``, ``int``,
``nonzero``) waits for every queued kernel, so the host can no longer run ahead of the GPU. On the
CPU those calls cost nothing, but they are the same calls: counting them here, over the updates
between two log points of a real training run, proves the loop makes none.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter

import pytest
import torch

from seq2seq.config import validate_config
from seq2seq.training.loop import train
from seq2seq.training.updates import Updates

# torch functions whose reads are of tensors that always live on the host (a PackedSequence's
# batch_sizes), so they never wait for a device
ON_THE_HOST = {"get_expected_hidden_size"}
SYNCING = ("item", "tolist", "cpu", "__bool__", "__float__", "__int__", "nonzero")

MODELS = {
    "rnn": {"name": "rnn", "emb_size": 16, "hidden_size": 24, "dropout": 0.0},
    "bahdanau": {
        "name": "bahdanau",
        "emb_size": 16,
        "hidden_size": 24,
        "attention_size": 16,
        "maxout_size": 16,
        "dropout": 0.0,
    },
    "luong": {"name": "luong", "emb_size": 16, "hidden_size": 24, "dropout": 0.1},
    "transformer": {
        "name": "transformer",
        "d_model": 32,
        "n_heads": 4,
        "d_ff": 64,
        "n_encoder_layers": 2,
        "n_decoder_layers": 2,
        "dropout": 0.1,
    },
}


def _reverse_corpus(folder, n: int, seed: int = 0) -> None:
    """``n`` pairs of random words and the same words reversed, as train and valid files."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(30)]
    for split, size in (("train", n), ("val", 8)):
        src = [" ".join(rng.choices(words, k=rng.randint(2, 12))) for _ in range(size)]
        (folder / f"{split}.de").write_text("".join(s + "\n" for s in src))
        (folder / f"{split}.en").write_text("".join(" ".join(s.split()[::-1]) + "\n" for s in src))


def sync_test_config(folder, name: str, log_every: int, max_steps: int, **train):
    """A run of the model ``name`` on ``_reverse_corpus`` files in ``folder``."""
    return validate_config(
        {
            "data": {"train": str(folder / "train"), "valid": str(folder / "val")},
            "tokenizer": {"type": "word", "vocab_size": 40},
            "model": MODELS[name],
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


@pytest.mark.parametrize("name", list(MODELS))
def test_no_host_sync_between_log_points(tmp_path, monkeypatch, name):
    _reverse_corpus(tmp_path, 300)
    log_every = 4
    cfg = sync_test_config(tmp_path, name, log_every, 3 * log_every)
    calls, window = Counter(), {"open": False, "updates": 0, "closed": 0}

    def counting(label, fn):
        def counted(*args, **kwargs):
            if window["open"] and sys._getframe(1).f_code.co_name not in ON_THE_HOST:
                calls[label] += 1
            return fn(*args, **kwargs)

        return counted

    for method in SYNCING:
        monkeypatch.setattr(torch.Tensor, method, counting(method, getattr(torch.Tensor, method)))
    monkeypatch.setattr(torch, "nonzero", counting("torch.nonzero", torch.nonzero))

    flush, update = Updates.flush, Updates.update

    def flush_closing_the_window(self):
        if window["open"]:  # the first log point after the window opened closes it
            window["open"], window["closed"] = False, window["closed"] + 1
        out = flush(self)
        if self.state.step == log_every and not window["closed"]:
            window["open"] = True  # counting starts after the first log point's reads
        return out

    def counted_update(self, batches):
        window["updates"] += window["open"]
        return update(self, batches)

    monkeypatch.setattr(Updates, "flush", flush_closing_the_window)
    monkeypatch.setattr(Updates, "update", counted_update)
    summary = train(cfg, tmp_path / "run")
    assert summary["steps"] == 3 * log_every
    assert window["closed"] and window["updates"] == log_every
    assert not calls, f"host syncs between log points: {dict(calls)}"
    run_config = (tmp_path / "run" / "config.yaml").read_text()
    assert "precision: fp32" in run_config  # auto, recorded as resolved on the CPU
    runtime = json.loads((tmp_path / "run" / "run_info.json").read_text())["runtime"]
    assert runtime == {"device": "cpu", "precision": "fp32", "pad_multiple": 1, "cudnn_sdp": False}

"""``torchrun --nproc_per_node 2 -m seq2seq train`` on CPU with gloo: sharded batches, one writer,
identical replicas, a token budget counted over both ranks, and a resume as one process that goes
on at the epoch's next batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

from seq2seq.checkpoint import load_checkpoint, weights_digest
from seq2seq.config import load_config
from seq2seq.data.prepare import epoch_batches, make_batch, prepare_data
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.training.distributed import DistInfo
from tests.toys import step_tokens, synth_run_raw, tiny_model_config

BUDGET = 1500  # target tokens: about 8 updates of 300-token batches


def test_two_ranks_sum_their_target_tokens_and_stop_together(tmp_path, synth_corpus):
    """Under torchrun the ranks' host counts are summed at log points (every 2 updates here):
    the count is every rank's batches, and the run stops at the first log point past the
    budget, with identical replicas (no rank left waiting)."""
    path, run = tmp_path / "ddp.yaml", tmp_path / "run"
    raw = synth_run_raw(synth_corpus, max_tokens=2 * BUDGET, log_every=2, device="cpu")
    path.write_text(yaml.safe_dump(raw))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    cmd += ["-m", "seq2seq", "train", str(path), "--run-dir", str(run)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout)
    tokens = step_tokens(run)  # each update's tokens over both ranks, as the device summed them
    assert summary["stopped"] == "max_tokens" and summary["steps"] == len(tokens)
    assert summary["steps"] % 2 == 0 and summary["target_tokens"] == sum(tokens)
    assert sum(tokens[:-2]) < 2 * BUDGET <= summary["target_tokens"]
    digests = summary["rank_weights_sha256"]
    assert len(digests) == 2 and digests[0] == digests[1]
    assert load_checkpoint(run / "last.pt")["train_state"]["target_tokens"] == sum(tokens)


def test_a_two_rank_run_resumed_as_one_process_goes_on_at_the_epochs_next_batch(
    tmp_path, synth_corpus, run_in_process
):
    """2 ranks x 2 updates train the epoch's first 4 batches; one process resumed from there
    trains batches 4 and 5 of the epoch's order (it went on at its own batch 2: batches seen
    twice, silently), and the log says why the position moved."""
    path, run = tmp_path / "ddp.yaml", tmp_path / "run"
    path.write_text(yaml.safe_dump(synth_run_raw(synth_corpus, max_steps=2, device="cpu")))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    cmd += ["-m", "seq2seq", "train", str(path), "--run-dir", str(run)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    state = load_checkpoint(run / "last.pt")["train_state"]
    assert (state["epoch"], state["batch_in_epoch"], state["world"]) == (0, 2, 2)

    r = run_in_process("train", path, "--resume", run, "--max-steps", 4)
    assert r.returncode == 0, r.stderr
    conf = load_config(path)
    data = prepare_data(conf, run, Tokenizer.load(run), DistInfo())
    order = [
        make_batch(data.train, b, "cpu").n_tokens
        for b in epoch_batches(data.train, conf.train, 0, DistInfo())
    ]
    assert order[2:4] != order[4:6]  # the check tells the two positions apart
    assert step_tokens(run)[2:] == order[4:6]
    state = load_checkpoint(run / "last.pt")["train_state"]
    assert (state["epoch"], state["batch_in_epoch"], state["world"]) == (0, 6, 1)
    assert (
        "last.pt was saved by 2 processes (torchrun ranks), this resume has 1: epoch 1 goes on "
        "exactly after the 4 batches it has trained"
    ) in (run / "train.log").read_text()


def test_torchrun_two_ranks_train_identical_replicas(tmp_path, multi30k_slice):
    cfg = {
        "name": "ddp",
        "data": {
            "train": str(multi30k_slice / "train"),
            "valid": str(multi30k_slice / "val"),
            "max_len": 60,
            "max_train_pairs": 200,
            "max_valid_pairs": 10,
        },
        "tokenizer": {"vocab_size": 400},
        "model": tiny_model_config("bahdanau", dropout=0.1),
        "train": {
            "max_steps": 4,
            "batch_tokens": 800,
            "valid_every": 1000,
            "log_every": 1,
            "num_threads": 1,
            "valid_bleu": False,
            "best_metric": "loss",
            "device": "cpu",
        },
        "decode": {"max_len_b": 5},
    }
    path, run = tmp_path / "config.yaml", tmp_path / "run"
    path.write_text(yaml.safe_dump(cfg))
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
        str(path),
        "--run-dir",
        str(run),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout)  # rank 0 alone prints it

    # both replicas ended identical, and equal to what rank 0 wrote
    digests = summary["rank_weights_sha256"]
    assert len(digests) == 2 and digests[0] == digests[1]
    assert weights_digest(load_checkpoint(run / "last.pt")["model"]) == digests[0]

    # one writer: each step logged once, one TensorBoard event file
    log = [json.loads(x) for x in (run / "train_log.jsonl").read_text().splitlines()]
    steps = [x for x in log if "loss" in x]
    assert [x["step"] for x in steps] == [1, 2, 3, 4]
    assert len(list((run / "tensorboard").iterdir())) == 1

    # every step's tokens are rank 0's batch plus rank 1's: the ranks trained on different shards
    conf = load_config(path)
    data = prepare_data(conf, run, Tokenizer.load(run), DistInfo())
    shards = [epoch_batches(data.train, conf.train, 0, DistInfo(rank, 2, rank)) for rank in (0, 1)]
    assert shards[0][:4] != shards[1][:4]
    for i, x in enumerate(steps):
        n = [make_batch(data.train, s[i], "cpu").n_tokens for s in shards]
        assert x["tokens"] == sum(n)

"""``seq2seq/runtime.py``: what a run resolves per device (precision, padding), and a device that
is not here blamed on where it was asked for."""

from __future__ import annotations

import os

import pytest
import torch

from seq2seq.config import ConfigError, TrainConfig, validate_config
from seq2seq.runtime import inference_device, pick_device, resolve_pad_multiple, resolve_precision
from seq2seq.training.loop import train
from tests.toys import NO_CUDA_FIX, needs_no_cuda, small_run_config

CPU, CUDA = torch.device("cpu"), torch.device("cuda")


def test_auto_resolves_per_device():
    assert TrainConfig(max_steps=1).precision == "auto"
    assert (resolve_precision("auto", CUDA), resolve_precision("auto", CPU)) == ("bf16", "fp32")
    assert resolve_precision("bf16", CPU) == "bf16" and resolve_precision("fp32", CUDA) == "fp32"
    assert (resolve_pad_multiple("auto", CUDA), resolve_pad_multiple("auto", CPU)) == (8, 1)
    assert resolve_pad_multiple(4, CPU) == 4
    with pytest.raises(ConfigError, match="data.pad_multiple"):
        validate_config({"data": {"pad_multiple": 0}, "train": {"max_steps": 1}})


@needs_no_cuda
def test_the_message_names_where_cuda_came_from():
    with pytest.raises(ConfigError) as e:
        pick_device("cuda", "fp32")  # a training run: its config's train.device
    assert (
        str(e.value) == f"train.device (from the config, --set or --device) is cuda, {NO_CUDA_FIX}"
    )
    with pytest.raises(ConfigError) as e:
        inference_device("cuda")
    assert str(e.value) == f"--device is cuda, {NO_CUDA_FIX}"
    with pytest.raises(ConfigError) as e:
        inference_device("cuda", "the train.device of run/best.pt")
    assert str(e.value) == f"the train.device of run/best.pt is cuda, {NO_CUDA_FIX}"
    with pytest.raises(ConfigError, match="--device 'gpu7': choose auto, cpu or cuda"):
        inference_device("gpu7")


def test_fp16_without_cuda_is_a_config_error(synth_corpus, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ConfigError, match="fp16 needs CUDA"):
        train(small_run_config(synth_corpus, precision="fp16"), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_importing_seq2seq_raises_the_onednn_primitive_cache_unless_the_user_set_it(monkeypatch):
    # bf16 on the CPU builds a oneDNN primitive per matmul shape; the default 1,024 thrashes
    # over an epoch of length-bucketed batches (seq2seq/__init__.py)
    import importlib

    import seq2seq

    monkeypatch.delenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", raising=False)
    importlib.reload(seq2seq)
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == seq2seq.ONEDNN_CACHE
    assert int(seq2seq.ONEDNN_CACHE) > 1024
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "64")
    importlib.reload(seq2seq)
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "64"

"""``seq2seq/runtime.py``: what a run resolves per device (precision, padding), and a device that
is not here blamed on where it was asked for."""

from __future__ import annotations

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

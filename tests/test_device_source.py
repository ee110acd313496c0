"""A device that is not here is blamed on where it was asked for: the --device flag, a training
config's train.device, or the train.device of the run being served; the fix is --device cpu."""

from __future__ import annotations

import shutil

import pytest
import torch
import yaml

from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.config import ConfigError
from seq2seq.runtime import inference_device, pick_device

from .toys import run_main

pytestmark = pytest.mark.skipif(
    torch.cuda.is_available(), reason="needs a machine where torch sees no CUDA device"
)

FIX = "but torch sees no CUDA device on this machine; give --device cpu (or auto)"


def test_the_message_names_where_cuda_came_from():
    with pytest.raises(ConfigError) as e:
        pick_device("cuda", "fp32")  # a training run: its config's train.device
    assert str(e.value) == f"train.device (from the config, --set or --device) is cuda, {FIX}"
    with pytest.raises(ConfigError) as e:
        inference_device("cuda")
    assert str(e.value) == f"--device is cuda, {FIX}"
    with pytest.raises(ConfigError) as e:
        inference_device("cuda", "the train.device of run/best.pt")
    assert str(e.value) == f"the train.device of run/best.pt is cuda, {FIX}"
    with pytest.raises(ConfigError, match="--device 'gpu7': choose auto, cpu or cuda"):
        inference_device("gpu7")


def _cuda_run(synth_run, tmp_path):
    """A copy of ``synth_run`` whose config (config.yaml and every checkpoint's) says cuda."""
    run = tmp_path / "cudarun"
    shutil.copytree(synth_run, run)
    raw = yaml.safe_load((run / "config.yaml").read_text())
    raw["train"]["device"] = "cuda"
    (run / "config.yaml").write_text(yaml.safe_dump(raw))
    for name in ("best.pt", "last.pt"):
        ckpt = load_checkpoint(run / name)
        ckpt["config"]["train"]["device"] = "cuda"
        save_checkpoint(run / name, ckpt)
    return run


def test_train_and_resume_blame_train_device_not_a_flag(synth_run, tmp_path, monkeypatch, capsys):
    run = _cuda_run(synth_run, tmp_path)
    before = sorted(p.name for p in run.iterdir())
    new = tmp_path / "new"
    for args in (
        ["train", run / "config.yaml", "--run-dir", new],
        ["train", run / "config.yaml", "--resume", run],
    ):
        code, err = run_main(monkeypatch, capsys, *args)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "train.device (from the config, --set or --device) is cuda" in err, err
        assert "--device cpu" in err and "was asked for" not in err
    assert not new.exists() and sorted(p.name for p in run.iterdir()) == before
    code, err = run_main(monkeypatch, capsys, "train", run / "config.yaml", "--device", "cuda")
    assert code == 2 and "--device" in err and "--device cpu" in err


def test_serve_blames_the_runs_train_device_and_accepts_device_cpu(
    synth_run, tmp_path, monkeypatch, capsys
):
    from seq2seq.serve.runs import load_runs

    run = _cuda_run(synth_run, tmp_path)
    with pytest.raises(ConfigError) as e:
        load_runs([run])
    assert (
        str(e.value) == f"the train.device of {run / 'best.pt'} (its run's config) is cuda, {FIX}"
    )
    with pytest.raises(ConfigError) as e:
        load_runs([run], "cuda")
    assert str(e.value) == f"--device is cuda, {FIX}"
    assert str(load_runs([run], "cpu")[0].device) == "cpu"
    code, err = run_main(monkeypatch, capsys, "serve", run, "--port", "0")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "the train.device of" in err and "--device cpu" in err and "--device is" not in err


def test_translate_does_not_take_the_runs_train_device(synth_run, tmp_path):
    """Translation decodes where --device says (default auto), whatever the run trained on."""
    from seq2seq.commands.common import load_model

    run = _cuda_run(synth_run, tmp_path)
    *_, dev = load_model(run, "auto")
    assert dev == "cpu"

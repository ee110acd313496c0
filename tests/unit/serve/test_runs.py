"""``seq2seq/serve/runs.py``: the runs served -- their device, their tuned decode file, and model
names refused before any path is read."""

from __future__ import annotations

import pytest

from seq2seq.config import ConfigError
from seq2seq.serve import ServeError
from seq2seq.serve.runs import load_runs, name_runs
from tests.toys import NO_CUDA_FIX, cuda_run, needs_no_cuda, run_main


@needs_no_cuda
def test_serve_blames_the_runs_train_device_and_accepts_device_cpu(
    synth_run, tmp_path, monkeypatch, capsys
):
    from seq2seq.serve.runs import load_runs

    run = cuda_run(synth_run, tmp_path)
    with pytest.raises(ConfigError) as e:
        load_runs([run])
    assert (
        str(e.value)
        == f"the train.device of {run / 'best.pt'} (its run's config) is cuda, {NO_CUDA_FIX}"
    )
    with pytest.raises(ConfigError) as e:
        load_runs([run], "cuda")
    assert str(e.value) == f"--device is cuda, {NO_CUDA_FIX}"
    assert str(load_runs([run], "cpu")[0].run.device) == "cpu"
    code, err = run_main(monkeypatch, capsys, "serve", run, "--port", "0")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "the train.device of" in err and "--device cpu" in err and "--device is" not in err


def test_the_card_knows_the_runs_length_beyond_its_checkpoints_step(synth_run, tmp_path):
    """best.pt from step 150 of a 600-update run: the card said "trained 150 steps"."""
    import json
    import shutil

    run = tmp_path / "run"
    shutil.copytree(synth_run, run)
    (run / "train_summary.json").write_text(json.dumps({"steps": 600}))
    (served,) = load_runs([run], "cpu")
    assert served.info["training"]["steps"] == 2 and served.info["training"]["run_steps"] == 600
    # side files that hold JSON but not an object: the card goes without what they would add
    for name in ("train_summary.json", "run_info.json"):
        (run / name).write_text("[1, 2]")
    (served,) = load_runs([run], "cpu")
    assert "run_steps" not in served.info["training"]
    assert "train_pairs" not in served.info["training"]


def test_serve_uses_the_runs_tuned_decode_file(tiny_runs, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(tiny_runs["bahdanau"], run)
    (run / "decode.yaml").write_text("method: beam\nbeam_size: 3\nlength_penalty: 0.7\n")
    (tuned, untuned) = load_runs([run, tiny_runs["bahdanau"]])
    assert tuned.run.cfg.decode.method == "beam" and tuned.run.cfg.decode.beam_size == 3
    assert tuned.info["decode"]["length_penalty"] == 0.7
    # the page says which runs tune-decode has tuned, and how to tune the run as it was given
    assert tuned.info["decode_tuned"] is True and untuned.info["decode_tuned"] is False
    assert f"tune-decode -c {tiny_runs['bahdanau']}`" in untuned.info["tune_hint"]
    # a request without a beam: the tuned run's beam, and 5 for a run that searches greedily
    from seq2seq.serve.engine import TranslateRequest, beam_size

    req = TranslateRequest(text="x")
    assert untuned.run.cfg.decode.method == "greedy" and untuned.info["beam"] == 5
    assert tuned.info["beam"] == 3
    assert beam_size(tuned.run.cfg.decode, req) == 3 and beam_size(untuned.run.cfg.decode, req) == 5
    assert beam_size(untuned.run.cfg.decode, TranslateRequest(text="x", beam=2)) == 2


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["=runs/nu"], "=runs/nu: empty model name; write NAME=PATH"),
        (["my model=runs/nu"], "model name 'my model' is not a simple label"),
        (["-x=runs/nu"], "model name '-x' is not a simple label"),
        (["a/b=runs/nu"], "model name 'a/b' is not a simple label"),
        (["a=runs/x", "b=runs/y", "a=runs/z"], "model name 'a' given twice"),
        (["nu="], "nu=: no PATH after '='"),
    ],
)
def test_bad_model_names_are_one_line_errors_before_any_path_is_read(
    tmp_path, monkeypatch, args, needle
):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ServeError) as e:
        name_runs(args)  # none of these paths exists: the name is refused first
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_an_exports_card_leaves_out_the_epoch_it_does_not_record(synth_transformer_run, tmp_path):
    """An export keeps its step, not its epoch: the card said "epoch 0"."""
    from seq2seq.export.weights import export_checkpoint

    export_checkpoint(synth_transformer_run, tmp_path / "export")
    (served,) = load_runs([tmp_path / "export"], "cpu")
    assert served.info["training"]["steps"] is not None
    assert served.info["training"]["epoch"] is None

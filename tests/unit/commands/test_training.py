"""``seq2seq train`` (``seq2seq/commands/training.py``), in this process: a bad config or data is
one line and exit 2 before anything is written, a missing device is blamed on train.device, and
Ctrl-C saves last.pt and exits 130 naming the resume command."""

from __future__ import annotations

import contextlib
import json
import re
import shlex

import pytest
import yaml

import seq2seq.training.loop as loop
from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import to_yaml
from tests.corpora import DICT_FIELD, SENTENCES, hf_dataset, translation_rows, write_split
from tests.toys import copy_run_config, cuda_run, needs_no_cuda, run_main, synth_run_raw


@contextlib.contextmanager
def ctrl_c_at_step_3():
    """``interruptible`` as if Ctrl-C arrived during step 3."""
    calls = {"n": 0}

    def hit():
        calls["n"] += 1
        return calls["n"] >= 3

    yield hit


@contextlib.contextmanager
def second_ctrl_c_at_step_3():
    """``interruptible`` as if a second Ctrl-C (its handler raises KeyboardInterrupt) arrived
    during step 3."""
    calls = {"n": 0}

    def hit():
        calls["n"] += 1
        if calls["n"] >= 3:
            raise KeyboardInterrupt
        return False

    yield hit


def test_a_second_ctrl_c_saves_last_pt_and_says_it_was_aborted_not_an_error(
    tmp_path, synth_corpus, monkeypatch, capsys
):
    path, run = tmp_path / "cfg.yaml", tmp_path / "run"
    path.write_text(yaml.safe_dump(synth_run_raw(synth_corpus, max_steps=6)))
    monkeypatch.setattr(loop, "interruptible", second_ctrl_c_at_step_3)
    code, err = run_main(monkeypatch, capsys, "train", path, "--run-dir", run)
    assert code == 130 and "error" not in err, err
    assert (
        f"aborted by a second Ctrl-C: last.pt saved at step 3; seq2seq train CONFIG --resume "
        f"{run} goes on" in err
    )
    assert err.strip().splitlines()[-1] == "stopped: interrupted"
    assert load_checkpoint(run / "last.pt")["train_state"]["step"] == 3


def test_train_refuses_a_config_with_a_key_twice_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.yaml").write_text("name: x\ntrain:\n  max_steps: 5\n  max_steps: 7\n")
    code, err = run_main(monkeypatch, capsys, "train", "x.yaml")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "x.yaml: train.max_steps is given twice (lines 3 and 4); keep one" in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("bad", ["train.lr=.inf", "train.betas=[0.9, 1.2]"])
def test_train_refuses_a_bad_number_before_writing_anything(tmp_path, monkeypatch, capsys, bad):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.yaml").write_text("name: x\nrun_dir: run\ntrain:\n  max_steps: 5\n")
    code, err = run_main(monkeypatch, capsys, "train", "x.yaml", "--set", bad)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    key = bad.split("=")[0]
    assert f"x.yaml: {key}" in err and "valid: a finite number" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.yaml"]


def test_train_exits_2_with_one_line_for_an_hf_dict_field(tmp_path, monkeypatch, capsys):
    path = hf_dataset(tmp_path / "ds", translation_rows(SENTENCES * 3))
    hf = {"path": path, "src_field": "translation", "tgt_field": "translation.en"}
    (tmp_path / "config.yaml").write_text(to_yaml(copy_run_config(tmp_path, data={"hf": hf})))
    capsys.readouterr()  # save_to_disk's progress bar
    code, err = run_main(
        monkeypatch, capsys, "train", tmp_path / "config.yaml", "--run-dir", tmp_path / "run"
    )
    assert code == 2
    assert err.strip().splitlines() == [f"error: {DICT_FIELD}"]


def test_resume_takes_the_run_folder_and_says_so_for_a_file_or_no_folder(
    synth_run, tmp_path, monkeypatch, capsys
):
    """``--resume RUN/last.pt`` said 'is a file, not a folder; give a folder to write into'."""
    cfg = synth_run / "config.yaml"
    code, err = run_main(monkeypatch, capsys, "train", cfg, "--resume", synth_run / "last.pt")
    assert code == 2 and err.strip().splitlines() == [
        f"error: --resume {synth_run / 'last.pt'}: a file; --resume takes the run's folder: "
        f"--resume {synth_run}"
    ]
    code, err = run_main(monkeypatch, capsys, "train", cfg, "--resume", tmp_path / "none")
    assert code == 2 and err.strip().splitlines() == [
        f"error: --resume {tmp_path / 'none'}: no such folder; give the folder of the run to "
        "continue"
    ]
    assert not (tmp_path / "none").exists()


@needs_no_cuda
def test_train_and_resume_blame_train_device_not_a_flag(synth_run, tmp_path, monkeypatch, capsys):
    run = cuda_run(synth_run, tmp_path)
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


@pytest.mark.parametrize(
    "flags", [[], ["--max-steps", "6"]], ids=["config-alone", "with-overrides"]
)
def test_ctrl_c_saves_last_pt_and_exits_130_naming_the_resume_command(
    tmp_path, synth_corpus, monkeypatch, capsys, flags
):
    """``train && eval`` must not go on after Ctrl-C: last.pt is saved, the exit code is 130 and
    the last stderr line says how to resume; that command (the run's own config.yaml when options
    changed the config) finishes the run."""
    path, run = tmp_path / "cfg.yaml", tmp_path / "run"
    path.write_text(yaml.safe_dump(synth_run_raw(synth_corpus, max_steps=6)))
    real = loop.interruptible
    monkeypatch.setattr(loop, "interruptible", ctrl_c_at_step_3)
    code, err = run_main(monkeypatch, capsys, "train", path, "--run-dir", run, *flags)
    assert code == 130, err
    again = path if not flags else run / "config.yaml"
    assert err.strip().splitlines()[-1] == (
        f"stopped: interrupted at step 3: last.pt saved; resume with seq2seq train {again} "
        f"--resume {run}"
    )
    assert load_checkpoint(run / "last.pt")["train_state"]["step"] == 3
    assert json.loads((run / "train_summary.json").read_text())["stopped"] == "interrupted"

    monkeypatch.setattr(loop, "interruptible", real)
    command = re.search(r"resume with seq2seq (.*)$", err.strip()).group(1)
    code, err = run_main(monkeypatch, capsys, *shlex.split(command))
    assert code == 0, err
    summary = json.loads((run / "train_summary.json").read_text())
    assert (summary["steps"], summary["stopped"]) == (6, "max_steps")


@pytest.mark.parametrize("lang", ["ja", "ko"])
def test_a_target_language_without_its_bleu_tokenizer_is_refused_before_writing_anything(
    tmp_path, monkeypatch, capsys, lang
):
    from seq2seq.evaluation.metrics import sacrebleu_metric

    try:
        sacrebleu_metric("bleu", lang)
        pytest.skip(f"sacrebleu[{lang}] is installed: {lang} BLEU works")
    except ValueError as e:
        eval_line = str(e)  # what `eval --tgt-lang ja` prints
    d = tmp_path / "data"
    d.mkdir()
    train = write_split(d, "train", SENTENCES * 3, tgt_lang=lang)
    valid = write_split(d, "valid", SENTENCES[:4], tgt_lang=lang)
    cfg = copy_run_config(tmp_path, train=train, valid=valid, data={"tgt_lang": lang})
    (tmp_path / "config.yaml").write_text(to_yaml(cfg))
    run = tmp_path / "runs" / "x"
    code, err = run_main(monkeypatch, capsys, "train", tmp_path / "config.yaml", "--run-dir", run)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: {eval_line} (data.tgt_lang {lang}, for validation BLEU); ")
    assert "--set train.valid_bleu=false --set train.best_metric=loss" in err
    assert not (tmp_path / "runs").exists()
    # without validation BLEU nothing asks for the tokenizer
    off = ["--set", "train.valid_bleu=false", "--set", "train.best_metric=loss"]
    code, err = run_main(
        monkeypatch, capsys, "train", tmp_path / "config.yaml", "--run-dir", run, *off
    )
    assert code == 0, err
    assert json.loads((run / "run_info.json").read_text())["bleu_signature"] is None

"""`make best` (scripts/best.py) end to end on a tiny model and a Multi30k slice: train, choose the
checkpoint on validation (best.pt or an average), tune the search on validation, score both test
sets, write the table; a rerun continues instead of redoing; each shipped recipe
(configs/multi30k/best/) trains two updates. Its argument errors are checked in process, in
tests/unit/test_best_script.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import multi30k_lines
from tests.toys import REPO, tiny_model_config


def best(*args, data: Path | None = None):
    env = {**os.environ, **({"SEQ2SEQ_DATA_DIR": str(data)} if data else {})}
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "best.py"), *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=REPO,
    )


def test_the_makefile_passes_best_and_its_settings_to_the_script():
    recipe = (REPO / "Makefile").read_text().split("\nbest:")[1].split("\n\n")[0]
    assert "scripts/best.py" in recipe and "$(BEST)" in recipe and "$(BEST_JOBS)" in recipe


@pytest.fixture(scope="module")
def tiny_best(tmp_path_factory, multi30k_slice):
    root = tmp_path_factory.mktemp("best")
    data = root / "data" / "multi30k"
    data.mkdir(parents=True)
    for name in ("train", "val"):
        for lang in ("de", "en"):
            shutil.copy(multi30k_slice / f"{name}.{lang}", data / f"{name}.{lang}")
    for test in ("test_2016_flickr", "test_2017_flickr"):
        for lang in ("de", "en"):
            (data / f"{test}.{lang}").write_text("".join(multi30k_lines(test, lang, 40)))
    configs = root / "configs"
    configs.mkdir()
    cfg = {
        "name": "tiny",
        "data": {"train": "multi30k/train", "valid": "multi30k/val", "max_len": 60},
        "tokenizer": {"vocab_size": 400},
        "model": tiny_model_config(
            "bahdanau", emb_size=32, hidden_size=32, attention_size=32, maxout_size=32
        ),
        "train": {
            "max_steps": 40,
            "batch_tokens": 1500,
            "valid_every": 10,
            "lr": 0.003,
            "keep_best": 3,
            "keep_last": 3,
            "patience": 20,
        },
        "decode": {"batch_size": 50},
    }
    (configs / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    args = ("--configs", configs, "--runs", root / "runs", "--beams", "2", "--alphas", "0,1")
    r = best(*args, "tiny", data=root / "data")
    assert r.returncode == 0, r.stderr + r.stdout
    return root, args, r


def test_best_trains_chooses_tunes_and_scores_once(tiny_best):
    root, _, r = tiny_best
    runs = root / "runs"
    (result,) = json.loads((runs / "results.json").read_text())
    assert result["family"] == "tiny" and result["train"]["steps"] == 40
    val = result["val_bleu"]
    assert set(val) == {"best.pt", "avg_best3.pt", "avg_last3.pt"}
    assert val[result["chosen"]] == max(val.values())  # averaging is kept only when it helps
    tune = result["tune"]
    grid = [(x["method"], x["beam_size"], x["length_penalty"]) for x in tune["sweep"][:3]]
    assert grid == [("greedy", 1, 0.0), ("beam", 2, 0.0), ("beam", 2, 1.0)]
    # tune-decode sweeps past the grid's top edge when the best setting sits there
    assert len(tune["sweep"]) == 3 + len(tune["beyond_grid"])
    assert tune["best"]["bleu"] == max(x["bleu"] for x in tune["sweep"]) >= tune["greedy_bleu"]
    assert tune["checkpoint"].endswith(result["chosen"])
    decode = yaml.safe_load((runs / "tiny" / "decode.yaml").read_text())
    assert decode["method"] == tune["best"]["method"]
    assert set(result["tests"]) == {
        f"{t}_{s}" for t in ("test_2016_flickr", "test_2017_flickr") for s in ("greedy", "tuned")
    }
    for scores in result["tests"].values():
        assert {"bleu", "chrf", "by_length"} <= set(scores)
        labels = [b["bucket"] for b in scores["by_length"]["buckets"]]
        assert labels == ["1-10", "11-20", "21+"]
    table = (runs / "README.md").read_text()
    # updates, minutes, why it stopped (and the update of the best validation)
    assert re.search(r"\| 40 \| \d+ \| max_steps(; best at update \d+)? \| ", table)
    assert "## Search tuned on validation" in table
    tested = runs / "tiny" / result["chosen"]  # how to translate with the tested checkpoint
    assert f"- `seq2seq translate -c {tested}`" in table and tested.is_file()
    assert "| tiny greedy | " in table and "| tiny tuned | " in table  # BLEU by source length
    assert table in r.stdout


def test_a_rerun_continues_instead_of_redoing(tiny_best):
    root, args, _ = tiny_best
    runs = root / "runs" / "tiny"
    before = {
        p.name: p.stat().st_mtime_ns
        for p in runs.glob("*.json")
        if p.name not in ("train_summary.json", "run_info.json")
    }
    r = best(*args, "tiny", data=root / "data")
    assert r.returncode == 0, r.stderr
    assert "resuming" in r.stdout and "scoring" not in r.stdout and "tune-decode on" not in r.stdout
    after = {
        p.name: p.stat().st_mtime_ns
        for p in runs.glob("*.json")
        if p.name not in ("train_summary.json", "run_info.json")
    }
    assert after == before


@pytest.mark.slow  # 10-15 s: kept out of the default suite (567 s in CI)
def test_a_new_grid_tunes_again_and_a_failing_family_does_not_hide_the_others(tiny_best):
    root, args, _ = tiny_best
    runs = root / "runs"
    bad = yaml.safe_load((root / "configs" / "tiny.yaml").read_text())
    bad["train"]["keep_lst"] = 3
    (root / "configs" / "bad.yaml").write_text(yaml.safe_dump(bad))
    tuned = runs / "tiny" / "test_2016_flickr_tuned.json"
    kept = (runs / "tiny" / "test_2016_flickr_greedy.json").stat().st_mtime_ns
    args = [*args[:-1], "0,2"]  # --alphas 0,2 instead of 0,1
    r = best(*args, "--jobs", "2", "bad", "tiny", data=root / "data")
    assert r.returncode == 1
    assert "error: bad: seq2seq train exited 2: " in r.stderr and "train.keep_lst" in r.stderr
    assert "the search grid changed (beams 2, alphas 0,1 -> beams 2, alphas 0,2)" in r.stdout
    sweep = json.loads((runs / "tiny" / "tune_decode.json").read_text())["sweep"]
    assert [x["length_penalty"] for x in sweep[1:3]] == [0.0, 2.0]
    assert tuned.is_file() and tuned.stat().st_mtime_ns > kept  # the tuned search scored again
    assert (runs / "tiny" / "test_2016_flickr_greedy.json").stat().st_mtime_ns == kept
    (result,) = json.loads((runs / "results.json").read_text())  # the family that finished
    assert result["family"] == "tiny"


@pytest.mark.slow  # 10-15 s: kept out of the default suite (567 s in CI)
def test_sigterm_stops_the_training_step_which_saves_last_pt(tiny_best, tmp_path):
    root, args, _ = tiny_best
    slow = yaml.safe_load((root / "configs" / "tiny.yaml").read_text())
    slow["train"].update(max_steps=100_000, valid_every=100_000)
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "slow.yaml").write_text(yaml.safe_dump(slow))
    env = {**os.environ, "SEQ2SEQ_DATA_DIR": str(root / "data")}
    cmd = [sys.executable, str(REPO / "scripts" / "best.py"), "--configs", configs]
    cmd += ["--runs", tmp_path / "runs", "slow"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    log = tmp_path / "runs" / "slow.log"
    deadline = time.time() + 300
    while " parameters; " not in (log.read_text() if log.is_file() else ""):
        assert time.time() < deadline, "training never started"
        time.sleep(0.5)  # the model line, logged as the loop starts
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "interrupted: run the same command again to continue"
    assert (tmp_path / "runs" / "slow" / "last.pt").is_file()
    assert "SIGTERM: finishing this step, then saving" in log.read_text()


BEST_CONFIGS = sorted((REPO / "configs" / "multi30k" / "best").glob("*.yaml"))


@pytest.mark.parametrize("path", BEST_CONFIGS, ids=lambda p: p.stem)
def test_each_best_recipe_trains_two_updates(path, multi30k_slice, tmp_path):
    """Each shipped recipe, full-size model and its own schedule, on the Multi30k slice with a
    small vocabulary and small batches: two updates, finite loss, a loadable last.pt."""
    from seq2seq.checkpoint import load_checkpoint
    from seq2seq.config import load_config
    from seq2seq.training.loop import train

    cfg = load_config(
        path,
        [
            f"data.train={multi30k_slice / 'train'}",
            f"data.valid={multi30k_slice / 'val'}",
            "data.test=null",
            "tokenizer.vocab_size=400",
            "train.max_steps=2",
            "train.batch_tokens=400",
            "train.valid_every=1000",
            "train.num_threads=1",
        ],
    )
    summary = train(cfg, tmp_path / "run")
    assert summary["steps"] == 2 and summary["nonfinite_skipped"] == 0
    assert load_checkpoint(tmp_path / "run" / "last.pt")["train_state"]["step"] == 2

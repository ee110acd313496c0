"""scripts/best.py without training: its argument errors (one line, exit 2, before any training),
and its bookkeeping: what a rerun deletes when the run was trained further or the search grid is
new, and what it keeps."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from tests.toys import REPO


@pytest.fixture
def best(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    module = importlib.import_module("best")
    yield module
    sys.modules.pop("best", None)


def best_main(best, monkeypatch, capsys, *args) -> subprocess.CompletedProcess:
    """``scripts/best.py ARGS`` in this process, from the repository's root: its exit code and
    output, as a subprocess would give them."""
    monkeypatch.chdir(REPO)
    capsys.readouterr()
    code = best.main([str(a) for a in args])
    out = capsys.readouterr()
    return subprocess.CompletedProcess(["best.py", *args], code, out.out, out.err)


def test_an_unknown_family_is_refused_in_one_line(best, monkeypatch, capsys):
    r = best_main(best, monkeypatch, capsys, "transformer", "lstm")
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "error: unknown family 'lstm' (BEST): choose from bahdanau, luong_concat, rnn, "
        "rnn_context, transformer"
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--beams", "5,x"], "--beams '5,x': give comma-separated beam sizes"),
        (["--alphas", "0,,1"], "--alphas '0,,1': give comma-separated numbers"),
        (["--configs", "."], "--configs .: no <family>.yaml there"),
        (["--runs", "README.md"], "--runs README.md: a file, not a folder"),
    ],
)
def test_bad_arguments_are_refused_before_any_training(best, monkeypatch, capsys, args, needle):
    r = best_main(best, monkeypatch, capsys, *args, "transformer")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().startswith(f"error: {needle}"), r.stderr


FILES = [
    "val_best.json",
    "avg_best5.pt",
    "val_avg_best5.json",
    "tune_decode.json",
    "test_2016_flickr_greedy.json",
    "test_2016_flickr_tuned.json",
    "test_2016_flickr_tuned.hyp.en",
    "best.pt",
    "last.pt",
]
GRID = {"beams": "5,10", "alphas": "0,0.5,1"}


def _run(tmp_path, inputs):
    for name in FILES:
        (tmp_path / name).write_text("x")
    if inputs is not None:
        (tmp_path / "best_inputs.json").write_text(json.dumps(inputs))
    return tmp_path


@pytest.mark.parametrize(
    ("inputs", "gone"),
    [
        (None, set()),  # a run scored before the record existed: its files stand
        ({"trained_steps": 500, **GRID}, set()),
        (
            {"trained_steps": 400, **GRID},
            {f for f in FILES if f not in ("best.pt", "last.pt")},
        ),
        (
            {"trained_steps": 500, "beams": "5,10", "alphas": "0,1"},
            {"tune_decode.json", "test_2016_flickr_tuned.json", "test_2016_flickr_tuned.hyp.en"},
        ),
    ],
)
def test_a_rerun_deletes_only_what_changed_inputs_made_stale(best, tmp_path, inputs, gone):
    run = _run(tmp_path, inputs)
    best.invalidate("fam", run, {"steps": 500}, GRID)
    assert {f for f in FILES if not (run / f).exists()} == gone
    assert json.loads((run / "best_inputs.json").read_text()) == {"trained_steps": 500, **GRID}

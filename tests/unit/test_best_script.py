"""scripts/best.py's bookkeeping without training: what a rerun deletes when the run was trained
further or the search grid is new, and what it keeps."""

from __future__ import annotations

import importlib
import json
import sys

import pytest

from tests.toys import REPO


@pytest.fixture
def best(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    module = importlib.import_module("best")
    yield module
    sys.modules.pop("best", None)


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

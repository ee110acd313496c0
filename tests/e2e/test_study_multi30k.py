"""``seq2seq compare`` on real text: the two-stage recipe end to end on the Multi30k slice --
every model through the same stages, scored at the budget step, the pairs rated, everything
reused on a rerun."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from seq2seq.checkpoint import load_checkpoint
from seq2seq.study.compare import compare
from seq2seq.study.plan import Budget, Multi30kPlan, Recipe, StudyOptions
from tests.toys import write_staged_config

SINGLE, JOINED = 4, 3


@pytest.fixture(scope="module")
def staged_study(tmp_path_factory, multi30k_slice):
    """rnnencdec, bahdanau and rnn through both stages, seeds 1 and 2 of the pair, two jobs at a
    time, through the command line; the slice's first 40 val lines are the test set."""
    tmp = tmp_path_factory.mktemp("staged")
    for lang in ("de", "en"):
        lines = (multi30k_slice / f"val.{lang}").read_text().splitlines(keepends=True)[:40]
        (tmp / f"test.{lang}").write_text("".join(lines))
    data = {
        "train": str(multi30k_slice / "train"),
        "valid": str(multi30k_slice / "val"),
        "test": str(tmp / "test"),
        "max_len": 40,
        "max_valid_pairs": 20,
    }
    paths = [write_staged_config(tmp, n, n, data) for n in ("rnnencdec", "bahdanau", "rnn")]
    out = tmp / "out"
    args = [*paths, "--out", out, "--single-steps", SINGLE, "--joined-steps", JOINED]
    args += ["--concat-k", 3, "--concat-n", 30, "--seeds", "1,2", "--jobs", 2]
    args += ["--alphas", "0.6,1.0", "--bootstrap", 50, "--device", "cpu"]
    r = subprocess.run(
        [sys.executable, "-m", "seq2seq", "compare", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=900,
    )
    assert r.returncode == 0, r.stderr
    return paths, out, r


def test_every_model_goes_through_both_stages_at_equal_tokens(staged_study):
    _, out, r = staged_study
    results = json.loads((out / "results.json").read_text())
    for name in ("report.md", "bleu_by_k.png"):
        assert (out / name).is_file(), name
    models = {m["name"]: m for m in results["models"]}
    assert set(models) == {"rnnencdec", "bahdanau", "rnn", "bahdanau-seed2", "rnnencdec-seed2"}
    for stage, steps in (("single", SINGLE), ("joined", JOINED)):
        tokens = {m["stages"][stage]["target_tokens"] for m in models.values() if m["seed"] == 1}
        assert all(m["stages"][stage]["steps"] == steps for m in models.values())
        assert max(tokens) <= 1.01 * min(tokens), (stage, tokens)  # one batching: equal data
    for name, m in models.items():
        single = load_checkpoint(out / "runs" / f"{name}-single" / "last.pt")
        joined = load_checkpoint(out / "runs" / name / "last.pt")
        assert single["train_state"]["step"] == SINGLE
        assert single["config"]["data"]["concat_k"] == 1
        assert joined["train_state"]["step"] == JOINED  # the scored checkpoint: the budget step
        t = joined["config"]["train"]
        assert t["init_from"] == str(out / "runs" / f"{name}-single" / "last.pt")
        assert t["schedule"] == "cosine" and joined["config"]["data"]["concat_k"] == 3
        assert [c["k"] for c in m["zero_shot"]["greedy"]["by_k"]] == [1, 2, 3]
        assert set(m["caption_gap"]) == {"2", "3"}
        assert m["stages"]["single"]["valid_curve"][-1][0] == SINGLE
    rows = [(r["role"], r["attention"], r["ablation"]) for r in results["verdict"]["rows"]]
    assert rows == [
        ("headline", "bahdanau", "rnnencdec"),
        ("headline", "bahdanau-seed2", "rnnencdec-seed2"),
        ("negative", "rnn", "rnnencdec"),
        ("null", "rnnencdec-seed2", "rnnencdec"),
    ]
    assert results["verdict"]["overall"]["words"] in r.stdout


def test_a_rerun_reuses_every_stage_and_scores_the_same(staged_study):
    paths, out, _ = staged_study
    before = json.loads((out / "results.json").read_text())
    plan = Multi30kPlan(
        recipe=Recipe(SINGLE, JOINED, 3), alphas=(0.6, 1.0), n_bootstrap=50, seeds=(1, 2)
    )
    opts = StudyOptions(concat_k=3, concat_n=30, device="cpu")
    again = compare(paths, out, Budget(), opts, plan)
    for m in again["models"]:
        assert m["stages"]["single"]["reused"] and m["stages"]["joined"]["reused"], m["name"]
    old = {m["name"]: m["decodes"] for m in before["models"]}
    assert {m["name"]: m["decodes"] for m in again["models"]} == old

"""``seq2seq compare`` on real text: the two-stage recipe end to end on the Multi30k slice --
every model through the same stages, scored at the budget step, the pairs rated, everything
reused on a rerun."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from seq2seq.checkpoint import load_checkpoint
from seq2seq.study.compare import compare
from seq2seq.study.plan import Budget, Multi30kPlan, Recipe, StudyOptions

from .toys import TINY_RUN_MODELS

SINGLE, JOINED = 4, 3


def write_config(folder, name, model, data):
    cfg = {
        "name": name,
        "data": {**data, "concat_k": 3, "valid_concat_k": 3},
        "tokenizer": {"vocab_size": 300},
        "model": {**TINY_RUN_MODELS[model], "dropout": 0.0},
        "train": {"max_steps": 50, "batch_tokens": 800, "seed": 1, "lr": 0.003},
        "decode": {"batch_size": 64, "max_len_a": 1.0, "max_len_b": 5},
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


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
    paths = [write_config(tmp, n, n, data) for n in ("rnnencdec", "bahdanau", "rnn")]
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


@pytest.mark.e2e
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


@pytest.mark.e2e
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


def test_real_text_refuses_a_budget_and_needs_both_stages(tmp_path, synth_corpus):
    from seq2seq.config import ConfigError

    data = {"train": str(synth_corpus / "train"), "valid": str(synth_corpus / "val")}
    path = write_config(tmp_path, "rnnencdec", "rnnencdec", data)
    with pytest.raises(ConfigError, match="--single-steps and --joined-steps instead"):
        compare([path], tmp_path / "out", Budget(steps=3), StudyOptions(), Multi30kPlan())
    r = subprocess.run(
        [sys.executable, "-m", "seq2seq", "compare", str(path), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "give --single-steps and --joined-steps" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1

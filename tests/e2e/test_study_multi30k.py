"""``seq2seq compare`` on real text: the two-stage recipe end to end on the Multi30k slice --
every model through the same stages, scored at the budget step, rho by k and the pairs read from
the per-line files alone, everything reused on a rerun."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import ConfigError
from seq2seq.study.compare import compare
from seq2seq.study.lines import read_lines
from seq2seq.study.multi30k import rho_pairs
from seq2seq.study.plan import Budget, Multi30kPlan, Recipe, StudyOptions
from seq2seq.study.report.common import finite
from seq2seq.study.rho import rho_spread
from tests.toys import write_staged_config

SINGLE, JOINED = 4, 3


@pytest.fixture(scope="module")
def staged_study(tmp_path_factory, multi30k_slice):
    """The whole pipeline on the Multi30k slice, as make study, study-confirm and a rescore run
    it: (1) the study through the command line: rnnencdec, bahdanau and rnn through both stages,
    seeds 1 and 2 of the pair, two jobs at a time, scored on test_2016_flickr (the slice's first
    40 val lines); (2) the confirmation: seed 4 of all three, every run scored on
    test_2016_flickr and on test_2017_flickr (the next 40), which step 1 never scored;
    (3) --score-only over the finished runs."""
    tmp = tmp_path_factory.mktemp("staged")
    for lang in ("de", "en"):
        lines = (multi30k_slice / f"val.{lang}").read_text().splitlines(keepends=True)
        (tmp / f"test_2016_flickr.{lang}").write_text("".join(lines[:40]))
        (tmp / f"test_2017_flickr.{lang}").write_text("".join(lines[40:80]))
    data = {
        "train": str(multi30k_slice / "train"),
        "valid": str(multi30k_slice / "val"),
        "test": str(tmp / "test_2016_flickr"),
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
    study = json.loads((out / "results.json").read_text())
    tests = (str(tmp / "test_2016_flickr"), str(tmp / "test_2017_flickr"))
    plan = Multi30kPlan(
        recipe=Recipe(SINGLE, JOINED, 3),
        alphas=(0.6, 1.0),
        n_bootstrap=50,
        seeds=(1, 2, 4),
        negative_seeds=(4,),
        tests=tests,
    )
    opts = StudyOptions(concat_k=3, concat_n=30, device="cpu", jobs=2)
    confirmed = compare(paths, out, Budget(), opts, plan)
    plan.score_only = True
    rescored = compare(paths, out, Budget(), opts, plan)
    return paths, out, r, study, confirmed, rescored, plan, opts


def test_every_model_goes_through_both_stages_at_equal_tokens(staged_study):
    _, out, r, results, *_ = staged_study
    for name in ("report.md", "rho_by_k.png"):
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
        assert [c["k"] for c in m["decodes"]["greedy"]["by_k"]] == [1, 2, 3]
        assert m["stages"]["single"]["valid_curve"][-1][0] == SINGLE
    pairs = results["sets"]["test_2016_flickr"]["pairs"]
    assert all(p["units"] == 10 for p in pairs)  # the k = 3 lines of --concat-n 30
    assert sorted((p["role"], p["run"], p["against"], p["k"]) for p in pairs) == [
        ("headline", "bahdanau", "rnnencdec", 3),
        ("headline", "bahdanau-seed2", "rnnencdec-seed2", 3),
        ("negative", "rnn", "rnnencdec", 3),
        ("seed", "bahdanau-seed2", "bahdanau", 3),
        ("seed", "rnnencdec-seed2", "rnnencdec", 3),
    ]
    tables = results["tables"]["test_2016_flickr"]
    assert {d: t["seeds"] for d, t in tables.items()} == {
        "rnnencdec": [1, 2],
        "bahdanau": [1, 2],
        "rnn": [1],
    }
    assert results["findings"]["rho"] in r.stdout and "not a verdict" in r.stdout
    report, last = (out / "report.md").read_text(), json.loads((out / "results.json").read_text())
    assert report.splitlines()[2] == f"**Finding.** {last['findings']['rho']}"  # the rescore's


def test_confirmation_scores_new_seeds_and_a_new_test_set_without_retraining(staged_study):
    _, out, _, study, confirmed, *_ = staged_study
    before = {m["name"]: m for m in study["models"]}
    for m in confirmed["models"]:
        if m["name"] in before:  # step 1's runs: reused, not trained again for the new set
            assert m["stages"]["single"]["reused"] and m["stages"]["joined"]["reused"], m["name"]
            assert m["decodes"] == before[m["name"]]["decodes"]
    names = {m["name"] for m in confirmed["models"]}
    assert {"bahdanau-seed4", "rnnencdec-seed4", "rnn-seed4"} <= names
    assert set(confirmed["sets"]) == {"test_2016_flickr", "test_2017_flickr"}
    for set_name in confirmed["sets"]:
        for name in names:
            assert (out / "lines" / set_name / f"{name}.json.gz").is_file()
    for set_name, s in confirmed["sets"].items():  # every set: the same pairs, seed 4's too
        pairs = [(p["role"], p["run"], p["against"]) for p in s["pairs"]]
        assert ("headline", "bahdanau-seed4", "rnnencdec-seed4") in pairs, set_name
        assert ("negative", "rnn-seed4", "rnnencdec-seed4") in pairs, set_name
        assert sum(p[0] == "seed" and p[1].startswith("rnnencdec") for p in pairs) == 3
        assert confirmed["tables"][set_name]["rnnencdec"]["seeds"] == [1, 2, 4]


def test_every_interval_recomputes_from_the_per_line_files_alone(staged_study):
    _, out, _, _, confirmed, _, plan, _ = staged_study
    saved = json.loads((out / "results.json").read_text())
    lines = {
        (p.parent.name, p.name.removesuffix(".json.gz")): read_lines(p)
        for p in (out / "lines").glob("*/*.json.gz")
    }
    for set_name, data in saved["sets"].items():
        again = rho_pairs(saved["models"], lines, set_name, plan.n_bootstrap)
        assert finite(again) == data["pairs"]
        for design, table in saved["tables"][set_name].items():
            runs = [m["name"] for m in saved["models"] if m["base"] == design]
            spread = rho_spread([lines[set_name, r].captions for r in runs])
            assert json.loads(json.dumps(finite(spread))) == {
                k: v for k, v in table.items() if k != "seeds"
            }


def test_score_only_reuses_everything_and_refuses_an_untrained_run(staged_study):
    paths, out, _, _, confirmed, rescored, plan, opts = staged_study
    assert finite(rescored["sets"]) == finite(confirmed["sets"])
    assert finite(rescored["tables"]) == finite(confirmed["tables"])
    plan = dataclasses.replace(plan, seeds=(1, 9), negative_seeds=())
    with pytest.raises(ConfigError, match=r"--score-only: .*-seed9-single holds no finished run"):
        compare(paths, out, Budget(), opts, plan)


def test_only_trains_the_runs_it_names_and_collect_keeps_them(staged_study, tmp_path):
    """--only (scripts/study_runs.sh): one new seed copy trained and scored, nothing else; an
    unknown name refused before anything trains; ``judge.collect`` copies its per-line files
    and its training record into a results folder."""
    from seq2seq.study.judge import collect

    paths, out, _, _, _, _, plan, opts = staged_study
    plan = dataclasses.replace(plan, negative_seeds=(5,), only=("rnn-seed5",), score_only=False)
    results = compare(paths, out, Budget(), opts, plan)
    assert [m["name"] for m in results["models"]] == ["rnn-seed5"]
    assert results["models"][0]["role"] == "negative"
    assert not (out / "runs" / "bahdanau-seed5").exists()
    with pytest.raises(ConfigError, match=r"--only 'rnn-seed6' is not a run of this study"):
        compare(paths, out, Budget(), opts, dataclasses.replace(plan, only=("rnn-seed6",)))
    copied = collect(out, tmp_path, ["rnn-seed5"])
    assert sorted(p.split("/")[-2] for p in copied) == ["test_2016_flickr", "test_2017_flickr"]
    record = json.loads((tmp_path / "training" / "rnn-seed5.json").read_text())
    assert record["stages"]["single"]["steps"] == SINGLE
    assert record["stages"]["joined"]["valid_curve"][-1][0] == JOINED
    assert collect(out, tmp_path, ["rnn-seed5"]) == []  # the same bytes: nothing copied again

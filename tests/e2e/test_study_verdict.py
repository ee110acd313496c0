"""Rule v3's committed report (docs/results/study/multi30k/verdict.json) against the per-line
files beside it: every interval recomputes from them alone, every control of the dry run holds,
the freeze predates every score of the judged set, and the README carries the verdict."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from seq2seq.config import load_config
from seq2seq.study import verdict_v3 as v3
from seq2seq.study.judge import build, main
from seq2seq.study.report.common import finite
from seq2seq.study.report.v3 import verdict_line
from tests.conftest import multi30k_lines

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "docs" / "results" / "study" / "multi30k"
CONFIG = ROOT / "configs" / "study" / "multi30k" / "bahdanau.yaml"


@pytest.fixture(scope="module")
def committed():
    return json.loads((FOLDER / "verdict.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def rebuilt():
    multi30k_lines("train", "de", 1)  # without Multi30k: training's message, what to set
    r = finite(build(FOLDER, load_config(CONFIG)))
    r["words"] = verdict_line(r)
    return r


def test_every_number_of_the_report_recomputes_from_the_per_line_files(committed, rebuilt):
    assert json.loads(json.dumps(rebuilt)) == committed


def test_the_dry_run_on_the_data_seen_holds_every_control(committed):
    assert committed["chosen"]["feasible"], committed["chosen"]["problems"]
    for name, d in committed["dry_run"].items():
        assert d["controls"] and all(c["kind"] == "holds" for c in d["controls"]), name
        assert {c["role"] for c in d["controls"]} == {"negative", "null"}
        negatives = {c["name"].split(",")[0] for c in d["controls"] if c["role"] == "negative"}
        assert negatives == {"rnn vs rnnencdec", "meanpool vs rnnencdec", "meanpool vs rnn"}
        assert [h["seed"] for h in d["heads"]] == list(v3.SEEN[name])


def test_the_frozen_margins_are_those_the_data_seen_gives(rebuilt):
    if v3.DELTA is None:
        pytest.skip("rule v3 is not frozen yet")
    assert (rebuilt["chosen"]["delta"], rebuilt["chosen"]["margin"]) == (v3.DELTA, v3.MARGIN)
    assert rebuilt["frozen"]["commit"] == v3.FROZEN_COMMIT


def _git(*args) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_freeze_predates_every_score_of_the_judged_set():
    judged = sorted((FOLDER / "lines" / v3.JUDGED_SET).glob("*.json.gz"))
    if v3.FROZEN_COMMIT is None:
        assert not judged, f"{v3.JUDGED_SET} scored before rule v3 was frozen"
        return
    try:
        _git("cat-file", "-e", f"{v3.FROZEN_COMMIT}^{{commit}}")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout with the freeze in its history")
    frozen = _git("show", f"{v3.FROZEN_COMMIT}:seq2seq/study/verdict_v3.py")
    for name in ("DELTA", "MARGIN"):  # the values in force now are those the freeze set
        assert re.search(rf"^{name}: float \| None = {getattr(v3, name)}\b", frozen, re.M)
    path = f"docs/results/study/multi30k/lines/{v3.JUDGED_SET}"
    assert not _git("ls-tree", "-r", "--name-only", v3.FROZEN_COMMIT, "--", path)
    for commit in _git("log", "--format=%H", "--diff-filter=A", "--", path).split():
        _git("merge-base", "--is-ancestor", v3.FROZEN_COMMIT, commit)  # raises when not


def test_readme_and_results_page_carry_the_verdict_sentence(committed):
    for page in (ROOT / "README.md", ROOT / "docs" / "results" / "README.md"):
        text = " ".join(page.read_text(encoding="utf-8").split())
        assert committed["words"] in text, page


def test_a_folder_without_the_data_seen_is_refused_in_one_line(tmp_path, capsys):
    """The judged cells alone (a new results folder): rule v3's margins have nothing to be
    chosen from, and the command says so and what to judge instead (exit 1, no traceback)."""
    multi30k_lines("train", "de", 1)
    for path in FOLDER.glob("lines/test_2018_flickr/*.json.gz"):
        (tmp_path / "lines" / path.parent.name).mkdir(parents=True, exist_ok=True)
        (tmp_path / "lines" / path.parent.name / path.name).write_bytes(path.read_bytes())
    assert main(["verdict", str(tmp_path), "--config", str(CONFIG)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: no per-line files of the data seen") and "\n" not in err
    assert "docs/results/study/multi30k" in err and not (tmp_path / "verdict.md").exists()

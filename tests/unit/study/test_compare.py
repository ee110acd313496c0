"""``seq2seq/study/compare.py``: a study on real text takes stages, not a budget."""

from __future__ import annotations

import re

import pytest

from seq2seq.study.compare import compare
from seq2seq.study.plan import Budget, Multi30kPlan, StudyOptions
from tests.toys import REPO, run_main, write_staged_config


def test_real_text_refuses_a_budget_and_needs_both_stages(
    tmp_path, synth_corpus, monkeypatch, capsys
):
    from seq2seq.config import ConfigError

    data = {"train": str(synth_corpus / "train"), "valid": str(synth_corpus / "val")}
    path = write_staged_config(tmp_path, "rnnencdec", "rnnencdec", data)
    with pytest.raises(ConfigError, match="--single-steps and --joined-steps instead"):
        compare([path], tmp_path / "out", Budget(steps=3), StudyOptions(), Multi30kPlan())
    code, err = run_main(monkeypatch, capsys, "compare", path, "--out", tmp_path / "o")
    assert code == 2 and "give --single-steps and --joined-steps" in err
    assert len(err.strip().splitlines()) == 1
    make = (REPO / "Makefile").read_text()  # the error names make study's own stages
    single = re.search(r"STUDY_SINGLE_STEPS \?= (\d+)", make)[1]
    joined = re.search(r"STUDY_JOINED_STEPS \?= (\d+)", make)[1]
    assert f"--single-steps {single} --joined-steps {joined})" in err

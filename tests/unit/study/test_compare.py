"""``seq2seq/study/compare.py``: a study on real text takes stages, not a budget."""

from __future__ import annotations

import subprocess
import sys

import pytest

from seq2seq.study.compare import compare
from seq2seq.study.plan import Budget, Multi30kPlan, StudyOptions
from tests.toys import write_staged_config


def test_real_text_refuses_a_budget_and_needs_both_stages(tmp_path, synth_corpus):
    from seq2seq.config import ConfigError

    data = {"train": str(synth_corpus / "train"), "valid": str(synth_corpus / "val")}
    path = write_staged_config(tmp_path, "rnnencdec", "rnnencdec", data)
    with pytest.raises(ConfigError, match="--single-steps and --joined-steps instead"):
        compare([path], tmp_path / "out", Budget(steps=3), StudyOptions(), Multi30kPlan())
    r = subprocess.run(
        [sys.executable, "-m", "seq2seq", "compare", str(path), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "give --single-steps and --joined-steps" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1

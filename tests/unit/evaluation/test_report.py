"""``seq2seq/evaluation/report.py``: what ``eval`` reads and refuses."""

from __future__ import annotations

import pytest


def test_eval_refuses_a_blank_reference_file(tmp_path):
    from seq2seq.evaluation.report import read_eval_texts

    (tmp_path / "ref").write_text("\n \n")
    (tmp_path / "hyp").write_text("a\nb\n")
    with pytest.raises(ValueError, match=r"ref: no lines to score \(all 2 blank\)"):
        read_eval_texts([tmp_path / "ref"], None, tmp_path / "hyp")

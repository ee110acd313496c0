"""``seq2seq/serve/runs.py`` ``load_study``: a study folder that cannot be served is named."""

from __future__ import annotations

import pytest

from seq2seq.serve import ServeError
from seq2seq.serve.runs import load_study


def test_study_folder_errors_name_the_file(tmp_path):
    with pytest.raises(ServeError, match="results.json: not found"):
        load_study(tmp_path)
    (tmp_path / "results.json").write_text('{"models": [{"name": "x"}]}')
    with pytest.raises(ServeError, match="not a results.json written by seq2seq compare"):
        load_study(tmp_path)

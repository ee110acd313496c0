"""``seq2seq/evaluation/plots.py``: attention plots need a model with attention."""

from __future__ import annotations

import pytest


def test_plotting_a_model_without_attention_is_an_error(tmp_path):
    from seq2seq.decoding.search import Hypothesis
    from seq2seq.decoding.translate import Translation
    from seq2seq.evaluation.plots import plot_translations

    results = [Translation("ein hund", [Hypothesis([4, 3], -1.0, -1.0, True, None)], ["a dog"])]
    with pytest.raises(ValueError, match="no attention"):
        plot_translations(results, None, 1, tmp_path)

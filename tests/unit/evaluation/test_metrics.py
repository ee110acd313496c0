"""``seq2seq/evaluation/metrics.py``: no score over zero segments, tokenisation warnings."""

from __future__ import annotations

import pytest

from seq2seq.evaluation.metrics import corpus_score, tokenisation_warnings


def test_no_metric_over_zero_segments():
    for name in ("bleu", "chrf", "ter"):
        with pytest.raises(ValueError, match="no segments to score"):
            corpus_score(name, [], [[]])


@pytest.mark.parametrize(
    ("lines", "kind"),
    [
        (["▁the ▁cat", "a dog"], "subword"),
        (["the c@@ at sle@@ eps", "a dog"], "subword"),
        (["the cat sleeps .", "I do n't know", "a dog"], "pre-tokenised"),
        (["the cat sleeps.", "I don't know, he said.", "3.5 m"], None),
        (["", "", ""], None),
    ],
)
def test_tokenisation_warnings(lines, kind):
    warnings = tokenisation_warnings(lines, "f.txt")
    assert len(warnings) == (kind is not None)
    if kind:
        assert warnings[0].startswith("f.txt: ") and kind in warnings[0]

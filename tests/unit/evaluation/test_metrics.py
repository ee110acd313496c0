"""``seq2seq/evaluation/metrics.py``: no score over zero segments, tokenisation warnings."""

from __future__ import annotations

import logging

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


@pytest.mark.parametrize("code", ["zh", "ZH", "zh-CN", "zh_CN", "zh-Hans-CN"])
def test_a_language_code_picks_its_bleu_tokenizer_whatever_its_case_or_region(code):
    """ZH or zh-CN fell back to 13a, scoring Chinese without its tokenizer (a new-user trial)."""
    hyp, ref = ["我们在北京"], ["我们在上海"]
    assert "tok:zh" in corpus_score("bleu", hyp, [ref], tgt_lang=code).signature
    assert "tok:13a" in corpus_score("bleu", hyp, [ref], tgt_lang="pt-BR").signature


def test_sacrebleus_own_warning_on_tokenised_text_is_not_printed(caplog):
    """Its five lines leaked into tune-decode's output; tokenisation_warnings says it in one."""
    hyps = ["a man runs ."] * 120
    with caplog.at_level(logging.WARNING, logger="sacrebleu"):
        assert corpus_score("bleu", hyps, [hyps]).score == pytest.approx(100)
    assert not [r for r in caplog.records if r.name == "sacrebleu"]
    assert len(tokenisation_warnings(hyps, "hyp")) == 1

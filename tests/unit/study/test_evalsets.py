"""``seq2seq/study/evalsets.py``: long inputs joined from real lines, scores by length and by k, the
attention lines, and an eval set with nothing usable."""

from __future__ import annotations

import pytest

from seq2seq.config import load_config
from seq2seq.data.text import DataError
from seq2seq.study.evalsets import EvalSet, attention_sentences, build_eval_set, score_decode
from tests.corpora import write_pairs, write_split
from tests.toys import copy_run_config


def test_a_study_eval_set_with_no_usable_pair_is_refused(tmp_path):
    from seq2seq.study.evalsets import build_eval_set

    cfg = copy_run_config(tmp_path, data={"test": write_split(tmp_path, "test", ["", " "])})
    with pytest.raises(DataError, match="no usable test pair"):
        build_eval_set(cfg, 2, None)


def test_long_inputs_join_consecutive_lines(tmp_path):
    for lang, words in (("de", "a b c d e"), ("en", "A B C D E")):
        (tmp_path / f"t.{lang}").write_text("".join(f"{w}\n" for w in words.split()))
    cfg = load_config(None, [f"data.test={tmp_path / 't'}"])
    ev = build_eval_set(cfg, concat_k=3, concat_n=None)
    assert ev.src == ["a", "b", "c", "d", "e", "a b", "c d", "a b c"]
    assert ev.ref == ["A", "B", "C", "D", "E", "A B", "C D", "A B C"]
    assert ev.k == [1, 1, 1, 1, 1, 2, 2, 3]
    assert build_eval_set(cfg, concat_k=3, concat_n=4).src[5:] == ["a b", "c d", "a b c"]
    assert build_eval_set(cfg, concat_k=2, concat_n=2).src[5:] == ["a b"]


@pytest.mark.parametrize("task", ["copy", "reverse", "sort"])
def test_a_joined_line_of_a_synthetic_task_is_scored_against_that_tasks_output(tmp_path, task):
    """reverse(a b) is reverse(b) reverse(a), not reverse(a) reverse(b): joined lines scored
    against joined references once gave a perfect reverser 0% exact match on every k >= 2."""
    from seq2seq.study.synth import make_pairs, task_output

    write_pairs(tmp_path / "t", make_pairs(task, 9, 2, 6, 12, seed=1))
    ev = build_eval_set(load_config(None, [f"data.test={tmp_path / 't'}"]), 3, None)
    assert ev.k[9:] == [2] * 4 + [3] * 3
    perfect = [" ".join(task_output(task, s.split())) for s in ev.src]
    by_k = score_decode(ev, perfect, [10, 20], "en")["by_k"]
    assert [(row["k"], row["exact"]) for row in by_k] == [(1, 100.0), (2, 100.0), (3, 100.0)]
    assert ev.ref[:9] == [t for _, t in make_pairs(task, 9, 2, 6, 12, seed=1)]


def test_scores_by_length_and_by_k():
    # sources of 2, 2, 12 and 12 words; the third hypothesis is wrong
    long = " ".join(["w"] * 12)
    ev = EvalSet(
        "test",
        ["x y", "x z", long, long],
        ["the cat sat on it", "a dog ran to us", "one two three four", "five six seven eight"],
        [1, 1, 2, 2],
        "toy",
    )
    hyps = [ev.ref[0], ev.ref[1], "nothing alike at all", ev.ref[3]]
    s = score_decode(ev, hyps, edges=(10, 20), tgt_lang="en")
    assert s["sentences"] == 2 and s["bleu"] == pytest.approx(100.0) and s["exact"] == 100.0
    rows = {r["bucket"]: r for r in s["by_length"]}
    assert [(b, rows[b]["sentences"], rows[b]["exact"]) for b in ("1-10", "11-20", "21+")] == [
        ("1-10", 2, 100.0),
        ("11-20", 2, 50.0),
        ("21+", 0, None),
    ]
    assert rows["1-10"]["bleu"] == pytest.approx(100.0) and rows["11-20"]["bleu"] < 100.0
    assert [(r["k"], r["sentences"], r["exact"], r["mean_src_words"]) for r in s["by_k"]] == [
        (1, 2, 100.0, 2.0),
        (2, 2, 50.0, 12.0),
    ]


def test_attention_lines_span_short_to_long():
    ev = EvalSet("t", [" ".join(["w"] * n) for n in (5, 1, 9, 3, 7)], [""] * 5, [1] * 5, "toy")
    # length order: 1 (line 1), 3 (line 3), 5 (line 0), 7 (line 4), 9 (line 2)
    assert attention_sentences(ev, 3) == [3, 0, 2]
    assert attention_sentences(ev, 1) == [2]
    assert attention_sentences(ev, 0) == []

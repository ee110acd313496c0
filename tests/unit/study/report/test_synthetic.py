"""``seq2seq/study/report/synthetic.py``: the length finding follows the numbers."""

from __future__ import annotations

from seq2seq.study.report.synthetic import length_finding


def fake_results(rows: dict[str, list[float]], attention: dict[str, bool], metric="bleu"):
    buckets = [("1-10", 50), ("11-20", 40), ("21-30", 3)]
    models = []
    for name, ys in rows.items():
        by_length = [
            {"bucket": b, "sentences": n, "bleu": y, "exact": y}
            for (b, n), y in zip(buckets, ys, strict=True)
        ]
        models.append(
            {
                "name": name,
                "attention": attention[name],
                "concat_k": 4,
                "max_src_words": None,
                "decodes": {"greedy": {"by_length": by_length}, "beam5": {"by_length": by_length}},
            }
        )
    return {"models": models, "exact_match": metric == "exact"}


def test_finding_names_the_fastest_fall_and_checks_the_claim():
    # 21-30 holds only 3 lines, so the finding spans 1-10 to 11-20
    res = fake_results(
        {"rnn": [20.0, 5.0, 0.0], "att": [30.0, 27.0, 1.0]}, {"rnn": False, "att": True}
    )
    text = length_finding(res, "bleu")
    assert text.startswith(
        "From 1-10 to 11-20 source words (beam5), rnn keeps the least of "
        "its BLEU (20.0 -> 5.0, 25% kept) and att the most (30.0 -> 27.0, 90% "
        "kept)"
    )
    assert "the fixed-vector rnn keeps 25% against at least 90% for every attention model" in text
    res = fake_results(
        {"rnn": [20.0, 18.0, 0.0], "att": [30.0, 15.0, 1.0]}, {"rnn": False, "att": True}
    )
    text = length_finding(res, "bleu")
    assert (
        "unlike Bahdanau et al. (2015, Figure 2), the fixed-vector rnn keeps 90%, no less "
        "than the attention model att (50%)" in text
    )


def test_a_model_that_never_learnt_is_named_but_not_rated():
    res = fake_results(
        {"rnn": [20.0, 5.0, 0.0], "att": [30.0, 27.0, 1.0], "flat": [7.0, 9.0, 0.0]},
        {"rnn": False, "att": True, "flat": True},
    )
    text = length_finding(res, "bleu")
    assert "and att the most (30.0 -> 27.0, 90% kept)" in text
    assert "for every attention model (att)" in text
    assert text.endswith(
        "; not rated, as they score under a quarter of the best BLEU on the shortest inputs: "
        "flat (7.0)."
    )


def test_exact_match_finding():
    res = fake_results(
        {"rnn": [95.0, 20.0, 0.0], "att": [99.0, 91.0, 10.0]},
        {"rnn": False, "att": True},
        metric="exact",
    )
    assert length_finding(res, "exact") == (
        "Exact-match accuracy from 1-10 to 11-20 source words (beam5): rnn goes from 95% to "
        "20%; att stays at or above 90% in every bucket (lowest 91%)."
    )

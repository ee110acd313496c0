"""Rule v1 and what rule v2 shares with it, on hand-made results: the competence gate, length
flags, a pair's kind, the seed t-interval and rule v1's overall verdict with its controls (rule
v2's own: test_verdict_v2.py)."""

from __future__ import annotations

import math

import pytest

from seq2seq.study.stats import T_975, T_975_DF2
from seq2seq.study.verdict import (
    CUT_MAX,
    PLATEAU_GAIN,
    RATIO_HIGH,
    RATIO_LOW,
    competence,
    length_flags,
    seed_interval,
)
from seq2seq.study.verdict_v1 import overall, rate_pair


def cell(k: int, ratio: float = 1.0, cut: float = 0.0, bleu: float = 30.0) -> dict:
    return {"k": k, "sentences": 1000 // k, "bleu": bleu, "ratio": ratio, "cut": cut}


def model(
    name: str,
    k1_ratio: float = 1.0,
    k4_ratio: float = 1.0,
    k4_cut: float = 0.0,
    curve: list | None = None,
) -> dict:
    """A results entry: greedy cells at k = 1..4 and a single-pair validation curve that gains
    0.3 BLEU over its last quarter (steps 7500 to 10000)."""
    cells = [cell(1, k1_ratio), cell(2), cell(3), cell(4, k4_ratio, k4_cut)]
    if curve is None:
        curve = [[2500, 20.0], [5000, 28.0], [7500, 29.7], [10000, 30.0]]
    return {
        "name": name,
        "decodes": {"greedy": {"by_k": cells}},
        "stages": {"single": {"valid_curve": curve}},
    }


def stats(diff: float, low: float, high: float, nobp: float = 0.05) -> dict:
    return {
        "retention": {"difference": diff, "low": low, "high": high, "a": 0.8, "b": 0.8 - diff},
        "retention_nobp": {"a": 0.9, "b": 0.9 - nobp, "difference": nobp},
    }


PASS = stats(0.12, 0.05, 0.19)


# ---- competence and length flags ---------------------------------------------------------------


def test_the_rule_s_thresholds_are_defined_once():
    assert (RATIO_LOW, RATIO_HIGH, CUT_MAX, PLATEAU_GAIN) == (0.9, 1.1, 5.0, 1.0)
    assert T_975_DF2 == T_975[2] == pytest.approx(4.302652729749464, abs=1e-12)
    assert T_975[1] == pytest.approx(math.tan(0.475 * math.pi), rel=1e-12)  # Cauchy at df = 1
    # df = 2 has a closed form: (2p - 1) / sqrt(2 p (1 - p))
    assert T_975[2] == pytest.approx(0.95 / math.sqrt(2 * 0.975 * 0.025), rel=1e-12)
    assert all(T_975[d] > T_975[d + 1] > 1.96 for d in range(1, 10))


def test_a_competent_model():
    c = competence(model("bahdanau"))
    assert c == {
        "competent": True,
        "k1_ratio": 1.0,
        "plateau_gain": pytest.approx(0.3),
        "reasons": [],
    }
    # the ends of the ratio window are inside it
    assert competence(model("m", k1_ratio=0.9))["competent"]
    assert competence(model("m", k1_ratio=1.1))["competent"]


def test_the_competence_gate_fails_short_outputs_and_a_rising_curve():
    short = competence(model("rnn", k1_ratio=0.85))
    assert not short["competent"] and short["k1_ratio"] == 0.85
    assert short["reasons"] == ["k = 1 greedy length ratio 0.850 outside [0.9, 1.1]"]
    rising = [[2500, 20.0], [5000, 25.0], [7500, 28.0], [10000, 30.0]]  # +2.0 in the last quarter
    r = competence(model("rnn", curve=rising))
    assert not r["competent"] and r["plateau_gain"] == pytest.approx(2.0)
    assert len(r["reasons"]) == 1 and r["reasons"][0].startswith("validation BLEU still rising")
    assert "+2.00 from step 7500 to 10000" in r["reasons"][0]
    both = competence(model("rnn", k1_ratio=1.25, curve=rising))
    assert len(both["reasons"]) == 2 and all("\n" not in x for x in both["reasons"])
    # exactly PLATEAU_GAIN is not a plateau
    edge = [[7500, 29.0], [10000, 30.0]]
    assert not competence(model("m", curve=edge))["competent"]
    # the point at or before 75% is the last one there, not the first
    later = [[1000, 0.0], [7000, 29.5], [8000, 10.0], [10000, 30.0]]
    assert competence(model("m", curve=later))["plateau_gain"] == pytest.approx(0.5)


def test_too_few_validations_is_not_competent():
    for curve in ([], [[10000, 30.0]], [[8000, 29.9], [10000, 30.0]]):
        c = competence(model("m", curve=curve))
        assert not c["competent"] and c["plateau_gain"] is None
        assert c["reasons"][0].startswith("too few validations")


def test_length_flags_are_reported_and_never_refuse():
    assert length_flags(cell(1, 1.0, 0.0)) == []
    assert length_flags(cell(4, 0.85, 7.5)) == ["short", "cut"]
    assert length_flags(cell(4, 1.2, 5.0)) == ["long"]  # exactly CUT_MAX is not flagged
    attention = model("bahdanau", k4_ratio=0.7, k4_cut=12.0)
    row = rate_pair(attention, model("ablation"), PASS, "headline")
    assert row["kind"] == "reproduces"
    assert row["flags"] == {
        "attention": {"k1": [], "k4": ["short", "cut"]},
        "ablation": {"k1": [], "k4": []},
    }


# ---- rate_pair -----------------------------------------------------------------------------------


def test_a_pair_that_passes_reproduces():
    row = rate_pair(model("bahdanau"), model("ablation"), PASS, "headline")
    assert (row["role"], row["attention"], row["ablation"]) == ("headline", "bahdanau", "ablation")
    assert row["kind"] == "reproduces"
    assert "+0.120 (95% CI +0.050 to +0.190) above 0" in row["why"] and "\n" not in row["why"]
    assert row["competent"]["attention"]["competent"] and row["competent"]["ablation"]["competent"]
    assert row["retention"] is PASS["retention"]
    assert row["retention_nobp"] is PASS["retention_nobp"]


def test_a_pair_failing_the_competence_gate_names_the_model_and_why():
    row = rate_pair(model("bahdanau"), model("ablation", k1_ratio=0.85), PASS, "headline")
    assert row["kind"] == "not competent"
    assert row["why"] == (
        "ablation model ablation not competent: k = 1 greedy length ratio 0.850 outside [0.9, 1.1]"
    )
    rising = [[2500, 20.0], [5000, 25.0], [7500, 28.0], [10000, 30.0]]
    row = rate_pair(model("bahdanau", curve=rising), model("ablation"), PASS, "headline")
    assert row["kind"] == "not competent"
    assert row["why"].startswith("attention model bahdanau not competent: validation BLEU still")
    # not competent even when the interval is entirely below 0
    row = rate_pair(model("b", k1_ratio=0.5), model("a"), stats(-0.2, -0.3, -0.1), "headline")
    assert row["kind"] == "not competent"


def test_an_interval_including_zero_shows_no_difference():
    row = rate_pair(model("bahdanau"), model("ablation"), stats(0.04, -0.02, 0.10), "headline")
    assert row["kind"] == "no difference shown"
    assert "does not lie above 0" in row["why"] and "brevity" not in row["why"]


def test_a_negative_no_bp_difference_blocks():
    row = rate_pair(model("bahdanau"), model("ablation"), stats(0.12, 0.05, 0.19, -0.01), "family")
    assert row["kind"] == "no difference shown"
    assert row["why"] == "without the brevity penalty the difference is -0.010"
    zero = rate_pair(model("bahdanau"), model("ablation"), stats(0.12, 0.05, 0.19, 0.0), "family")
    assert zero["kind"] == "reproduces"  # at least 0 is enough
    both = rate_pair(model("b"), model("a"), stats(0.0, -0.1, 0.1, -0.2), "headline")
    assert "does not lie above 0; without the brevity penalty" in both["why"]


def test_an_interval_below_zero_is_the_opposite():
    row = rate_pair(model("bahdanau"), model("ablation"), stats(-0.2, -0.3, -0.1, -0.1), "headline")
    assert row["kind"] == "opposite" and "below 0: the ablation retains more" in row["why"]


def test_a_nan_retention_is_never_a_result():
    nan = stats(math.nan, math.nan, math.nan)
    assert rate_pair(model("b"), model("a"), nan, "headline")["kind"] == "no difference shown"
    none = {
        "retention": dict.fromkeys(["difference", "low", "high", "a", "b"]),
        "retention_nobp": {"a": None, "b": None, "difference": None},
    }
    assert rate_pair(model("b"), model("a"), none, "headline")["kind"] == "no difference shown"


def test_an_unknown_role_is_refused():
    with pytest.raises(ValueError, match="role 'main': one of headline, negative, null, family"):
        rate_pair(model("b"), model("a"), PASS, "main")


# ---- seed_interval -------------------------------------------------------------------------------


def test_seed_interval_by_hand():
    s = seed_interval([0.1, 0.2, 0.3])
    half = 4.3027 * 0.1 / math.sqrt(3)
    assert s["n"] == 3
    assert s["mean"] == pytest.approx(0.2) and s["sd"] == pytest.approx(0.1)
    assert s["low"] == pytest.approx(0.2 - half, abs=1e-5)
    assert s["high"] == pytest.approx(0.2 + half, abs=1e-5)
    two = seed_interval([0.1, 0.3])  # df = 1: 12.706 * sd / sqrt(2)
    assert two["high"] - two["mean"] == pytest.approx(T_975[1] * math.sqrt(0.02) / math.sqrt(2))


def test_seed_interval_without_enough_seeds():
    assert seed_interval([0.2]) == {"n": 1, "mean": 0.2, "low": None, "high": None, "sd": None}
    assert seed_interval([]) == {"n": 0, "mean": None, "low": None, "high": None, "sd": None}
    nan = seed_interval([0.1, math.nan, 0.3])
    assert nan["n"] == 3 and nan["mean"] is None and nan["low"] is None
    assert seed_interval([0.1] * 11)["sd"] == 0.0
    with pytest.raises(ValueError, match="12 differences, the t table stops at df = 10"):
        seed_interval([0.1] * 12)


# ---- overall -------------------------------------------------------------------------------------


def headline_rows(n: int, pair_stats: dict = PASS) -> list[dict]:
    return [
        rate_pair(model(f"bahdanau-s{s}"), model(f"ablation-s{s}"), pair_stats, "headline")
        for s in range(1, n + 1)
    ]


NULL = rate_pair(model("ablation-s2"), model("ablation-s1"), stats(0.01, -0.05, 0.06), "null")
NEGATIVE = rate_pair(model("rnn"), model("ablation-s1"), stats(-0.01, -0.06, 0.04), "negative")
SEEDS = seed_interval([0.12, 0.10, 0.14])


def never_says_not_reproduced(verdict: dict) -> dict:
    assert "not reproduced" not in verdict["words"].lower()
    assert verdict["words"].endswith(".") and "\n" not in verdict["words"]
    return verdict


def test_every_headline_seed_passing_with_quiet_controls_reproduces():
    rows = headline_rows(3) + [NEGATIVE, NULL]
    v = never_says_not_reproduced(overall(rows, SEEDS))
    assert v["kind"] == "reproduces"
    assert "all 3 seeds" in v["words"] and "+0.120 over 3 seeds" in v["words"]


def test_a_negative_control_that_passes_makes_the_rule_invalid():
    negative = rate_pair(model("rnn"), model("ablation-s1"), PASS, "negative")
    assert negative["kind"] == "reproduces"
    v = never_says_not_reproduced(overall(headline_rows(3) + [negative, NULL], SEEDS))
    assert v["kind"] == "rule invalid"
    assert "no conclusion" in v["words"] and "rnn vs ablation-s1 (negative)" in v["words"]
    # it takes precedence over everything else
    weak = [rate_pair(model("b", k1_ratio=0.5), model("a"), PASS, "headline")]
    assert overall(weak + [negative], None)["kind"] == "rule invalid"


def test_the_null_control_passing_makes_the_rule_invalid_and_quiet_it_does_not():
    assert NULL["kind"] == "no difference shown"
    null = rate_pair(model("ablation-s2"), model("ablation-s1"), PASS, "null")
    v = never_says_not_reproduced(overall(headline_rows(3) + [NEGATIVE, null], SEEDS))
    assert v["kind"] == "rule invalid" and "(null)" in v["words"]
    # a family row that reproduces is reported, never decisive
    family = rate_pair(model("luong"), model("ablation-s1"), PASS, "family")
    assert overall(headline_rows(3) + [NULL, family], SEEDS)["kind"] == "reproduces"


def test_a_headline_model_failing_the_gate_is_not_competent():
    rows = headline_rows(2) + [
        rate_pair(model("bahdanau-s3", k1_ratio=0.85), model("ablation-s3"), PASS, "headline")
    ]
    v = never_says_not_reproduced(overall(rows + [NULL], SEEDS))
    assert v["kind"] == "not competent" and v["words"].startswith("No claim")
    assert "bahdanau-s3" in v["words"] and "0.850" in v["words"]


def test_fewer_seeds_than_wanted_is_incomplete():
    v = never_says_not_reproduced(overall(headline_rows(2) + [NULL], seed_interval([0.1, 0.2])))
    assert v["kind"] == "incomplete" and "2 of 3 headline seeds" in v["words"]
    assert overall(headline_rows(1), seed_interval([0.1]), seeds_wanted=1)["kind"] == "reproduces"
    assert overall(headline_rows(3), None)["kind"] == "incomplete"  # no seed interval


def test_a_seed_interval_including_zero_shows_no_difference():
    v = never_says_not_reproduced(overall(headline_rows(3), seed_interval([0.3, 0.01, -0.2])))
    assert v["kind"] == "no difference shown" and v["words"].startswith("No claim")
    assert "3 of 3 headline seeds pass" in v["words"]
    mixed = headline_rows(2) + headline_rows(1, stats(0.04, -0.02, 0.10))
    assert overall(mixed, SEEDS)["kind"] == "no difference shown"


def test_every_seed_opposite_is_the_opposite():
    rows = headline_rows(3, stats(-0.2, -0.3, -0.1, -0.1))
    v = never_says_not_reproduced(overall(rows, seed_interval([-0.2, -0.25, -0.15])))
    assert v["kind"] == "opposite" and "ablation kept more" in v["words"]

"""Rule v2 on hand-made per-pair statistics (``study.verdict``): a headline cell that passes,
fails, or makes no claim when its two statistics disagree; controls as equivalence tests; the
margins chosen by their rule; the study's verdict from the confirmation cells."""

from __future__ import annotations

import math

import pytest

from seq2seq.study import verdict
from seq2seq.study.verdict import choose_margins, overall, rate_control, rate_seed
from tests.unit.study.test_verdict import model

DELTA, MARGIN = 0.10, 0.05


def ci(difference: float, low: float, high: float) -> dict:
    return {"a": 0.9, "b": 0.9 - difference, "difference": difference, "low": low, "high": high}


def cell(rho: dict, capped: dict, a=None, b=None) -> dict:
    return rate_seed(
        a or model("bahdanau"), b or model("ablation"), {"rho": rho, "capped": capped}, DELTA
    )


def test_rule_v2_s_constants_are_stated_once():
    assert verdict.K_RULE == 4 and verdict.EQUIVALENCE_LEVEL == 0.90
    assert verdict.CONFIRMATION == {
        "test_2016_flickr": (4, 5, 6),
        "test_2017_flickr": (1, 2, 3, 4, 5, 6),
    }
    assert verdict.EXPLORATORY == {"test_2016_flickr": (1, 2, 3)}
    assert verdict.NEGATIVE_SEEDS == (1, 4, 5, 6)
    if verdict.DELTA is not None:  # once frozen: the margin is at most half the threshold
        assert verdict.MARGIN is not None and verdict.MARGIN <= verdict.DELTA / 2
        assert verdict.MARGINS_WHY.startswith("chosen once by choose_margins")


def test_a_headline_cell_passes_fails_or_makes_no_claim():
    passes = cell(ci(0.30, 0.20, 0.40), ci(0.25, 0.15, 0.35))
    assert passes["kind"] == "passes" and "lower bound above 0.1" in passes["why"]
    fails = cell(ci(0.05, -0.02, 0.12), ci(-0.01, -0.05, 0.03))
    assert fails["kind"] == "fails"
    # the secondary disagreeing with the primary, either way, is no claim
    runaway = cell(ci(0.30, 0.20, 0.40), ci(0.02, -0.03, 0.07))
    assert runaway["kind"] == "no claim" and "the statistics disagree" in runaway["why"]
    other = cell(ci(0.12, 0.05, 0.20), ci(0.20, 0.10, 0.30))
    assert other["kind"] == "no claim"
    # the threshold is strict, and a missing bound never passes
    assert cell(ci(0.2, DELTA, 0.3), ci(0.2, 0.1, 0.3))["kind"] == "no claim"
    assert cell(ci(0.2, math.nan, 0.3), ci(0.2, math.nan, 0.3))["kind"] == "fails"


def test_a_model_that_is_not_competent_makes_the_cell_not_competent():
    row = cell(ci(0.3, 0.2, 0.4), ci(0.3, 0.2, 0.4), b=model("ablation", k1_ratio=1.3))
    assert row["kind"] == "not competent" and "ablation model ablation not competent" in row["why"]
    frozen_not = rate_seed(
        model("b"), model("a"), {"rho": ci(0.3, 0.2, 0.4), "capped": ci(0.3, 0.2, 0.4)}, None
    )
    assert frozen_not["kind"] == ("not frozen" if verdict.DELTA is None else "passes")


def test_a_control_holds_only_inside_the_margin():
    assert rate_control(ci(0.01, -0.02, 0.04), MARGIN)["kind"] == "holds"
    broken = rate_control(ci(0.03, 0.01, 0.06), MARGIN)
    assert broken["kind"] == "breaks" and "not inside +/-0.05" in broken["why"]
    assert rate_control(ci(-0.03, -0.05, 0.0), MARGIN)["kind"] == "breaks"  # the edge is outside
    assert rate_control(ci(0.0, math.nan, 0.01), MARGIN)["kind"] == "breaks"
    if verdict.MARGIN is None:
        assert rate_control(ci(0.0, -0.01, 0.01))["kind"] == "not frozen"


def test_choose_margins_follows_its_rule():
    got = choose_margins([(-0.012, 0.018), (-0.021, 0.009)])
    assert got["margin"] == 0.05 and got["delta"] == 0.10  # 2 x 0.021 = 0.042 -> 0.05
    assert "0.0210" in got["why"] and "3 x" not in got["why"]
    assert choose_margins([(-0.001, 0.002)])["margin"] == verdict.MARGIN_FLOOR
    assert choose_margins([(-0.03, 0.03)]) == {**choose_margins([(-0.03, 0.03)]), "margin": 0.06}
    with pytest.raises(ValueError, match="finite intervals"):
        choose_margins([])
    with pytest.raises(ValueError, match="finite intervals"):
        choose_margins([(math.nan, 0.1)])


def heads(rho_by_cell, capped=ci(0.2, 0.1, 0.3)) -> list[dict]:
    cells = [(s, seed) for s, seeds in verdict.CONFIRMATION.items() for seed in seeds]
    out = []
    for (s, seed), rho in zip(cells, rho_by_cell, strict=True):
        row = {"set": s, "seed": seed, "role": "headline", "attention": "b", "ablation": "a"}
        row.update(rho=rho, capped=capped, **cell(rho, capped))
        out.append(row)
    return out


def controls(kind="holds"):
    return [
        {
            "set": "test_2017_flickr",
            "role": "null",
            "attention": "a2",
            "ablation": "a1",
            "kind": kind,
        }
    ]


def test_the_study_reproduces_does_not_or_draws_no_conclusion():
    strong = heads([ci(0.30 + 0.01 * i, 0.2, 0.4) for i in range(9)])
    v = overall(strong, controls(), DELTA)
    assert v["kind"] == "reproduces" and v["seeds"]["n"] == 6 and v["seeds"]["low"] > DELTA
    assert "in all 9 confirmation cells" in v["words"] and "all 1 controls hold" in v["words"]
    # seeds 4-6 are scored on both sets: each seed counts once, its two cells averaged
    # (2016: seeds 4-6 = 0.30-0.32; 2017: seeds 1-6 = 0.33-0.38)
    assert v["seeds"]["seeds"] == [1, 2, 3, 4, 5, 6]
    assert v["seeds"]["mean"] == pytest.approx((0.33 + 0.34 + 0.35 + 0.33 + 0.34 + 0.35) / 6)
    weak = heads([ci(0.02, -0.05, 0.09)] * 9, capped=ci(0.0, -0.05, 0.05))
    v = overall(weak, controls(), DELTA)
    assert v["kind"] == "does not reproduce" and v["words"].startswith("Not reproduced")
    assert overall(strong, controls("breaks"), DELTA)["kind"] == "no conclusion"
    assert "rule v2 is invalid here" in overall(strong, controls("breaks"), DELTA)["words"]
    assert overall(strong[:8], controls(), DELTA)["words"].startswith("No conclusion yet: 8 of 9")
    mixed = heads([ci(0.3, 0.2, 0.4)] * 8 + [ci(0.3, 0.05, 0.4)])  # one cell short of DELTA
    v = overall(mixed, controls(), DELTA)
    assert v["kind"] == "no conclusion" and "8 of 9 confirmation cells pass" in v["words"]
    if verdict.DELTA is None:
        assert overall(strong, controls())["kind"] == "not frozen"

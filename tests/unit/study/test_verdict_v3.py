"""Rule v3 on hand-made statistics (``study.verdict_v3``): the margins and the feasibility stop
chosen by their rule, a headline cell that passes, fails, makes no claim or is excluded,
non-superiority controls, and the study's verdict with its competence floor."""

from __future__ import annotations

import pytest

from seq2seq.study import verdict_v3 as v3

DELTA, MARGIN = 0.13, 0.05


def ci(difference: float, low: float, high: float) -> dict:
    return {"a": 0.9, "b": 0.9 - difference, "difference": difference, "low": low, "high": high}


def head(seed: int, rho: dict, capped=None, ratios=(1.0, 1.0)) -> dict:
    rated = v3.rate_headline(
        rho, capped or ci(0.3, 0.2, 0.4), dict(zip("ab", ratios, strict=True)), DELTA
    )
    return {"seed": seed, "rho": rho, **rated}


def control(name: str, interval: dict, bound: float = DELTA) -> dict:
    return {"name": name, **v3.rate_control(interval, bound)}


def test_the_constants_are_stated_once_and_the_judged_cells_are_new():
    assert v3.K_RULE == 4 and v3.N_BOOTSTRAP == 1000 and v3.CAP_SLACK == 1.5
    assert v3.JUDGED_SET not in v3.SEEN
    assert not set(v3.JUDGED_SEEDS) & set(sum(v3.SEEN.values(), ()))
    assert set(v3.FIXED_VECTOR) < set(v3.FAMILIES) and v3.HEADLINE[1] in v3.FIXED_VECTOR
    if v3.DELTA is not None:  # once frozen: MARGIN fits inside half of DELTA, the set is pinned
        assert v3.MARGIN is not None and v3.MARGIN <= v3.DELTA / 2
        assert len(v3.JUDGED_SHA256) == 2 and v3.FROZEN_COMMIT


def test_choose_takes_the_far_bounds_with_headroom_and_rounds_up():
    fixed = [ci(-0.08, -0.0964, -0.07), ci(0.01, -0.01, 0.03)]
    seeds = [ci(0.01, -0.005, 0.0325), ci(-0.01, -0.02, 0.0)]
    c = v3.choose(fixed, seeds, [0.25, 0.1815])
    assert (c["delta"], c["margin"]) == (0.13, 0.05)  # ceil(1.25 x 0.0964), ceil(1.25 x 0.0325)
    assert c["feasible"] and c["d_max"] == 0.0964 and c["lowest_headline"] == 0.1815


def test_choose_stops_when_delta_reaches_the_headline_effect_or_margin_exceeds_half_of_it():
    c = v3.choose([ci(-0.12, -0.13, -0.11)], [ci(0.0, -0.01, 0.01)], [0.18])
    assert not c["feasible"] and "cannot tell attention" in c["problems"][0]  # 0.17 > 0.15
    c = v3.choose([ci(-0.05, -0.06, -0.04)], [ci(0.0, -0.05, 0.05)], [0.3])
    assert not c["feasible"] and "MARGIN 0.07 is above DELTA / 2" in c["problems"][0]
    with pytest.raises(ValueError, match="finite intervals"):
        v3.choose([], [ci(0, -0.01, 0.01)], [0.2])


def test_a_headline_cell_passes_fails_makes_no_claim_or_is_excluded():
    assert head(7, ci(0.2, 0.15, 0.25))["kind"] == "passes"
    assert head(7, ci(0.1, 0.05, 0.15), ci(0.0, -0.1, 0.1))["kind"] == "fails"
    assert head(7, ci(0.2, 0.15, 0.25), ci(0.0, -0.1, 0.1))["kind"] == "no claim"
    assert head(7, ci(0.1, 0.12, 0.15))["kind"] == "no claim"  # rho's bound not above DELTA
    weak = head(7, ci(0.2, 0.15, 0.25), ratios=(1.0, 1.12))
    assert weak["kind"] == "not competent" and "b's k = 1 length ratio 1.12" in weak["why"]


def test_a_control_holds_only_strictly_inside_its_bound():
    assert v3.rate_control(ci(-0.08, -0.1, -0.06), DELTA)["kind"] == "holds"
    assert v3.rate_control(ci(-0.08, -0.13, -0.06), DELTA)["kind"] == "breaks"
    assert v3.rate_control(ci(0.02, 0.0, 0.06), MARGIN)["kind"] == "breaks"


def test_the_study_reproduces_does_not_or_draws_no_conclusion():
    strong = [head(s, ci(0.2 + s / 1000, 0.18, 0.23)) for s in (7, 8, 9)]
    holds = [control("rnn vs rnnencdec, seed 7", ci(-0.08, -0.1, -0.06))]
    r = v3.overall(strong, holds, DELTA, 3)
    assert r["kind"] == "reproduces" and r["seeds"]["seeds"] == [7, 8, 9]
    weak = [head(s, ci(0.05, 0.02, 0.08), ci(0.0, -0.1, 0.1)) for s in (7, 8, 9)]
    assert v3.overall(weak, holds, DELTA, 3)["kind"] == "does not reproduce"
    broken = [control("rnn vs meanpool, seed 8", ci(0.12, 0.1, 0.14))]
    r = v3.overall(strong, holds + broken, DELTA, 3)
    assert r["kind"] == "no conclusion" and "rnn vs meanpool, seed 8" in r["words"]
    assert v3.overall(strong[:2], holds, DELTA, 3)["words"].startswith("Not judged yet: 2 of 3")


def test_a_not_competent_cell_is_excluded_and_named_and_two_of_three_are_needed():
    strong = [head(s, ci(0.2 + s / 1000, 0.18, 0.23)) for s in (7, 8)]
    out = head(9, ci(0.2, 0.18, 0.23), ratios=(0.8, 1.0))
    r = v3.overall([*strong, out], [], DELTA, 3)
    assert r["kind"] == "reproduces" and r["seeds"]["seeds"] == [7, 8]
    assert "Excluded as not competent: seed 9" in r["words"]
    two_out = [strong[0], out, {**out, "seed": 8}]
    r = v3.overall(two_out, [], DELTA, 3)
    assert r["kind"] == "no conclusion" and "1 of 3 headline cells competent" in r["words"]


def test_growth_needs_every_cell_and_the_seed_interval_above_zero():
    rows = [{"seed": s, "at_k": {2: 0.15, 4: 0.2 + s / 100}} for s in (7, 8, 9)]
    assert v3.growth(rows)["grows"]
    rows[0]["at_k"][4] = 0.1
    assert not v3.growth(rows)["grows"]

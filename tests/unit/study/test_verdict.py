"""What rule v3 keeps of the earlier rules: the competence window's ends and the plateau gain of
the single-pair stage's validation curve (reported beside the verdict, not a gate)."""

from __future__ import annotations

import pytest

from seq2seq.study import verdict_v3
from seq2seq.study.verdict import PLATEAU_FROM, RATIO_HIGH, RATIO_LOW, plateau_gain


def test_the_window_and_the_plateau_share_are_defined_once():
    assert (RATIO_LOW, RATIO_HIGH, PLATEAU_FROM) == (0.9, 1.1, 0.75)
    assert verdict_v3.competent(0.9) and verdict_v3.competent(1.1)  # the ends are inside
    assert not verdict_v3.competent(0.899) and not verdict_v3.competent(None)


def test_the_plateau_gain_reads_the_last_point_at_or_before_three_quarters():
    rising = [[2500, 20.0], [5000, 25.0], [7500, 28.0], [10000, 30.0]]
    assert plateau_gain(rising) == pytest.approx(2.0)
    assert plateau_gain(list(reversed(rising))) == pytest.approx(2.0)  # any order
    # the point at or before 75% is the last one there, not the first
    later = [[1000, 0.0], [7000, 29.5], [8000, 10.0], [10000, 30.0]]
    assert plateau_gain(later) == pytest.approx(0.5)


def test_no_plateau_gain_without_two_usable_points():
    for curve in (None, [], [[10000, 30.0]], [[8000, 29.9], [10000, 30.0]]):
        assert plateau_gain(curve) is None

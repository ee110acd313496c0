"""``seq2seq/config/lists.py``: the one parser of --beams, --alphas, --seeds and --buckets."""

from __future__ import annotations

import pytest

from seq2seq.config.lists import parse_list


def test_values_of_the_kind_asked_for():
    assert parse_list("5,10", "--beams", "fix") == (5, 10)
    assert parse_list("0, 0.5,1", "--alphas", "fix", float, 0) == (0.0, 0.5, 1.0)
    assert parse_list("10,20,30", "--buckets", "fix", increasing=True) == (10, 20, 30)


@pytest.mark.parametrize(
    ("spec", "kwargs", "says"),
    [
        ("5,,10", {}, "--x '5,,10': not a list"),
        ("", {}, "--x '': not a list"),
        ("1.5", {}, "--x '1.5': not a list"),
        ("0,5", {"low": 1}, "--x '0,5': out of bounds"),
        ("5,2000", {"high": 1000}, "--x '5,2000': out of bounds"),
        ("20,10", {"increasing": True}, "--x '20,10': out of bounds"),
        ("10,10", {"increasing": True}, "--x '10,10': out of bounds"),
        ("0,nan", {"kind": float}, "--x '0,nan': out of bounds"),
        ("inf", {"kind": float}, "--x 'inf': out of bounds"),
    ],
)
def test_a_bad_list_is_one_line_naming_the_option(spec, kwargs, says):
    with pytest.raises(ValueError) as e:
        parse_list(spec, "--x", "out of bounds", bad="not a list", **kwargs)
    assert str(e.value) == says

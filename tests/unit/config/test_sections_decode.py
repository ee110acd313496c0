"""The decode section (``seq2seq/config/sections.py``): its defaults, the settings of each search
method, and switching methods."""

from __future__ import annotations

import re

import pytest

from seq2seq.config import ConfigError, DecodeConfig, validate_config


def test_min_len_default_is_one():
    assert DecodeConfig().min_len == 1


@pytest.mark.parametrize(
    ("decode", "says"),
    [
        ({"method": "greedy", "beam_size": 5}, "decode.beam_size: 5 is a setting of method beam"),
        ({"method": "sample", "beam_size": 3}, "decode.beam_size: 3 is a setting of method beam"),
        ({"beam_size": 4, "top_p": 0.9}, "decode.top_p: 0.9 is a setting of method sample"),
        ({"method": "greedy", "temperature": 0.5}, "decode.temperature: 0.5 is a setting"),
        ({"seed": 1}, "decode.seed: 1 is a setting of method sample, but method is greedy"),
        ({"method": "sample", "top_p": 0}, "decode.top_p: Input should be greater than 0"),
        ({"method": "sample", "top_p": 1.5}, "decode.top_p: Input should be less than or equal"),
        ({"method": "sample", "temperature": 0}, "decode.temperature: Input should be greater"),
        ({"method": "sample", "top_k": 0}, "decode.top_k: Input should be greater than or equal"),
        ({"method": "nucleus"}, "decode.method: Input should be 'greedy', 'beam'"),
        # a new-user trial: alpha 1e30 made every score -0.0; max_len_a 1e6 filled 20 GB
        ({"length_penalty": 11}, "decode.length_penalty: Input should be less than or equal to 10"),
        ({"max_len_a": 1e6}, "decode.max_len_a: Input should be less than or equal to 10"),
        ({"max_len_b": 10_001}, "decode.max_len_b: Input should be less than or equal to 10000"),
    ],
)
def test_contradictions_and_out_of_bounds_settings_are_one_line_errors(decode, says):
    with pytest.raises(ConfigError, match="^config: " + re.escape(says)) as e:
        validate_config({"decode": decode})
    assert "\n" not in str(e.value)


def test_switching_method_drops_the_old_methods_settings_and_keeps_the_shared_ones():
    sample = DecodeConfig(method="sample", temperature=0.5, top_p=0.9, seed=3, max_len_b=7)
    beam = sample.with_method("beam", beam_size=4)
    assert (beam.method, beam.beam_size, beam.max_len_b) == ("beam", 4, 7)
    assert (beam.temperature, beam.top_p, beam.seed) == (1.0, 1.0, None)
    again = sample.with_method("sample", seed=4)
    assert (again.temperature, again.top_p, again.seed) == (0.5, 0.9, 4)
    with pytest.raises(ValueError, match="setting of method sample"):
        beam.with_method("greedy", top_k=3)
    with pytest.raises(ValueError, match="5 is a setting of method beam, but method is greedy"):
        DecodeConfig().model_copy(update={"beam_size": 5})  # a copy is validated too

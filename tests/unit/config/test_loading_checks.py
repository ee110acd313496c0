"""``Config`` (``seq2seq/config/loading.py``): the checks that span sections."""

from __future__ import annotations

import pytest

from seq2seq.config import ConfigError, validate_config


def test_config_rejects_training_lengths_past_max_positions():
    with pytest.raises(ConfigError, match=r"max_positions \(64\) must be at least .* = 101"):
        validate_config(
            {"model": {"name": "transformer", "max_positions": 64}, "data": {"max_len": 100}}
        )

"""``seq2seq/commands/serve.py``: the options default to the engine's limits."""

from __future__ import annotations

import inspect

import pytest

from seq2seq.commands.serve import serve as serve_command
from seq2seq.serve.engine import Limits


def test_serve_options_default_to_the_limits_and_are_checked():
    params = inspect.signature(serve_command).parameters
    defaults = {name: params[name].default.default for name in ("workers", "max_queued", "timeout")}
    limits = Limits()
    assert (defaults["workers"], defaults["max_queued"], defaults["timeout"]) == (
        limits.workers,
        limits.max_queued,
        limits.timeout_s,
    )
    with pytest.raises(ValueError, match="need workers >= 1"):
        Limits(workers=0)

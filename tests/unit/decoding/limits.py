"""``limits``: the DecodeConfig a test hands a search (its one argument), with the defaults the
searches' tests are written against: no minimum length, no length penalty."""

from __future__ import annotations

from seq2seq.config import DecodeConfig


def limits(method: str | None = None, **settings) -> DecodeConfig:
    """A DecodeConfig for ``method`` (default: greedy, or beam with ``beam_size`` above 1) with
    ``min_len`` 0, ``length_penalty`` 0 and ``beam_size`` 5 for beam search unless given."""
    method = method or ("beam" if settings.get("beam_size", 1) > 1 else "greedy")
    base = {"min_len": 0, "length_penalty": 0.0}
    if method == "beam":
        base["beam_size"] = 5
    return DecodeConfig(method=method, **{**base, **settings})

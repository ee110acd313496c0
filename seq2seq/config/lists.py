"""``parse_list``: the one parser of the comma-separated options (``--beams``, ``--alphas``,
``--seeds``, ``--buckets``). Imports nothing of ``seq2seq``."""

from __future__ import annotations

import math


def parse_list(
    spec: str,
    option: str,
    fix: str,
    kind: type = int,
    low: float | None = None,
    high: float | None = None,
    increasing: bool = False,
    bad: str | None = None,
) -> tuple:
    """``"5,10"`` -> (5, 10): one or more comma-separated values of ``kind`` (int or float),
    finite, from ``low`` to ``high``, strictly increasing when ``increasing``.

    Raises:
        ValueError: ``{option} {spec!r}: {bad}`` for an empty item or one that is not a
            ``kind``; ``{option} {spec!r}: {fix}`` for a value out of bounds (``bad`` defaults
            to ``fix``).
    """
    items = spec.split(",")
    try:
        if any(not x.strip() for x in items):
            raise ValueError(spec)
        values = tuple(kind(x) for x in items)
    except ValueError:
        raise ValueError(f"{option} {spec!r}: {bad or fix}") from None
    if (  # a value out of bounds
        not all(math.isfinite(v) for v in values)
        or (low is not None and min(values) < low)
        or (high is not None and max(values) > high)
        or (increasing and any(a >= b for a, b in zip(values, values[1:], strict=False)))
    ):
        raise ValueError(f"{option} {spec!r}: {fix}")
    return values

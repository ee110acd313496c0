"""Formatting and reading helpers every report of ``seq2seq compare`` shares: numbers and
markdown table rows, the by-length buckets of a decoding, and results made safe for JSON."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def missing(x: Any) -> bool:
    """None or NaN: a number results.json does not hold."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def num(x: float | None, digits: int = 1) -> str:
    """``x`` with ``digits`` decimals (a negative one that rounds to 0 as 0), or "-" when there is
    none (None or NaN)."""
    return "-" if missing(x) else f"{x:z.{digits}f}"


def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A markdown table: the head, its rule, then the rows."""
    return ["| " + " | ".join(r) + " |" for r in (head, ["---"] * len(head), *rows)]


def interval(d: dict) -> str:
    """A difference with its interval, in signed points: ``+5.0 [+1.2, +8.8]``."""
    return f"{points(d['difference'])} [{points(d['low'])}, {points(d['high'])}]"


def pct(x: float | None, digits: int = 1) -> str:
    """A fraction as a percentage (``0.723`` -> ``72.3%``), or "-"."""
    return "-" if missing(x) else f"{100 * x:.{digits}f}%"


def points(x: float | None, digits: int = 1) -> str:
    """A difference of fractions in signed percentage points (``0.05`` -> ``+5.0``), or "-"."""
    return "-" if missing(x) else f"{100 * x:+.{digits}f}"


def finite(x: Any) -> Any:
    """``x`` with every non-finite float (a retention over a k = 1 BLEU of 0) replaced by None,
    recursively through dicts, lists and tuples (as lists), so results.json stays valid JSON."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


def main_label(results: dict) -> str:
    """The decoding the findings are stated for: the widest beam."""
    labels = list(results["models"][0]["decodes"])
    return max(labels, key=lambda x: 1 if x == "greedy" else int(x.removeprefix("beam")))


def filled_buckets(results: dict) -> list[dict]:
    """The by-length rows (bucket, sentences) that hold at least one line, shortest first."""
    rows = results["models"][0]["decodes"][main_label(results)]["by_length"]
    return [{"bucket": r["bucket"], "sentences": r["sentences"]} for r in rows if r["sentences"]]


def series(results: dict, label: str, metric: str) -> dict[str, list[float | None]]:
    """Model name -> ``metric`` (bleu or exact) per filled bucket, for decoding ``label``."""
    keep = {b["bucket"] for b in filled_buckets(results)}
    return {
        m["name"]: [r[metric] for r in m["decodes"][label]["by_length"] if r["bucket"] in keep]
        for m in results["models"]
    }

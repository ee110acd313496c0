"""``--study DIR``: the by-length scores of a ``seq2seq compare --out DIR`` study, for the page's
BLEU-by-length plot. Read once at start; requests only ever get this copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seq2seq.serve import ServeError


def load_study(folder: str | Path) -> dict[str, Any]:
    """Read ``folder/results.json`` and keep what the plot needs.

    Returns:
        ``{"budget", "machine", "exact_match", "buckets", "modes", "findings", "models"}``; each
        model has ``name``, ``family``, ``attention``, ``steps``, ``parameters`` and, per decode
        mode (``greedy``, ``beam5``, ... or the Multi30k study's ``beam``), ``bleu``, ``chrf``
        and ``by_length`` rows ``{"bucket", "sentences", "bleu", "exact"}``.

    Raises:
        ServeError: no results.json there, or one that is not a compare study's.
    """
    path = Path(folder) / "results.json"
    if not path.is_file():
        raise ServeError(
            f"{path}: not found; --study takes the folder `seq2seq compare --out` wrote"
        )
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        models = [_model(m) for m in raw["models"]]
        buckets = [int(b) for b in raw["buckets"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ServeError(
            f"{path}: not a results.json written by seq2seq compare ({type(e).__name__}: {e})"
        ) from None
    modes = sorted({mode for m in models for mode in m["decodes"]}, key=_mode_order)
    # the sentence under the plot: the Multi30k study's verdict, or a synthetic study's BLEU finding
    found = raw.get("findings")
    finding = found.get("verdict") or found.get("bleu") if isinstance(found, dict) else None
    return {
        "budget": raw.get("budget"),
        "machine": raw.get("machine"),
        "exact_match": bool(raw.get("exact_match")),
        "buckets": buckets,
        "modes": modes,
        "findings": finding,
        "models": models,
    }


def _model(m: dict) -> dict[str, Any]:
    decodes = {
        mode: {
            "bleu": d.get("bleu"),
            "chrf": d.get("chrf"),
            "by_length": [
                {
                    "bucket": str(row["bucket"]),
                    "sentences": int(row["sentences"]),
                    "bleu": None if row.get("bleu") is None else float(row["bleu"]),
                    "exact": None if row.get("exact") is None else float(row["exact"]),
                }
                for row in d["by_length"]
            ],
        }
        for mode, d in m["decodes"].items()
    }
    return {
        "name": str(m["name"]),
        "family": m.get("family"),
        "attention": m.get("attention"),
        "steps": m.get("steps"),
        "parameters": m.get("parameters"),
        "decodes": decodes,
    }


def _mode_order(mode: str) -> tuple[int, str]:
    """greedy first, then beams by size (the Multi30k study's one tuned ``beam`` after greedy)."""
    digits = "".join(c for c in mode if c.isdigit())
    return (0 if mode == "greedy" else 1 + int(digits or 0), mode)

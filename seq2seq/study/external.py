"""The results from outside the study's own runs that the real-text report shows: make zoo's
greedy test scores (``compare --zoo``) and the synthetic half's results (``compare --reverse``)."""

from __future__ import annotations

import json
from pathlib import Path


def read_zoo(folder: Path | None) -> dict | None:
    """{NAME: {"bleu", "chrf", "step", "file"}} for each folder/NAME/test_greedy.json (written by
    scripts/train_zoo.sh), or None when no folder is given or it holds none. ValueError: no such
    folder, or a test_greedy.json that is not JSON or has no BLEU score."""
    if folder is None:
        return None
    if not folder.is_dir():
        raise ValueError(
            f"--zoo {folder}: {'is a file' if folder.exists() else 'no such folder'}; give make "
            "zoo's runs folder (runs/multi30k), or leave --zoo out"
        )
    zoo = {}
    for path in sorted(folder.glob("*/test_greedy.json")):
        try:
            scored = json.loads(path.read_text(encoding="utf-8"))
            zoo[path.parent.name] = {
                "bleu": float(scored["bleu"]["score"]),
                "chrf": float(scored["chrf"]["score"]),
                "step": (scored.get("checkpoint") or {}).get("step"),
                "file": str(path),
            }
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(
                f"{path}: not a test_greedy.json of scripts/train_zoo.sh ({e!r}); score the run "
                "again with make zoo, or leave --zoo out"
            ) from None
    return zoo or None


def read_reverse(path: Path | None) -> dict | None:
    """The synthetic half's results, or None when not given; ValueError: no such file, or a file
    that is not JSON."""
    if path is None:
        return None
    if not path.is_file():
        raise ValueError(
            f"--reverse {path}: {'is a folder' if path.exists() else 'no such file'}; give the "
            "synthetic half's results.json (make study-quick writes it), or leave --reverse out"
        )
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(
            f"{path}: not a results.json of compare ({e}); run make study-quick"
        ) from None

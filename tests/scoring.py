"""Scores to check ours against: the ``sacrebleu`` command line on the same files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SACREBLEU = Path(sys.executable).parent / "sacrebleu"


def cli_scores(ref: Path, hyp: Path, *extra: str) -> list[float]:
    """BLEU, chrF and TER from the ``sacrebleu`` command line, 4 decimals."""
    r = subprocess.run(
        [SACREBLEU, ref, "-i", hyp, "-m", "bleu", "chrf", "ter", "-b", "-w", "4", *extra],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(r.stdout)


def assert_same_as_cli(report: dict, ref: Path, hyp: Path, *cli_extra: str) -> list[float]:
    """``report``'s BLEU, chrF and TER equal the command line's on the same files."""
    expected = cli_scores(ref, hyp, *cli_extra)
    got = [round(report[m]["score"], 4) for m in ("bleu", "chrf", "ter")]
    assert got == pytest.approx(expected, abs=1e-9)
    return expected

"""scripts/gpu_check.sh is for a CUDA machine; on any other it must stop at once, in one line."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from seq2seq.config import data_root
from tests.toys import REPO


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_gpu_check_fails_fast_and_clearly_without_cuda():
    r = subprocess.run(
        ["bash", str(REPO / "scripts/gpu_check.sh"), str(data_root())],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable},
    )
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu_check: no CUDA device visible to torch")


def test_gpu_check_names_a_missing_interpreter():
    r = subprocess.run(
        ["bash", str(REPO / "scripts/gpu_check.sh")],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHON": "/nonexistent/python"},
    )
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "gpu_check: /nonexistent/python cannot import torch; set PYTHON to "
        "the interpreter that has a CUDA build of torch"
    )

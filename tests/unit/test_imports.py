"""Import rules: validating a config needs no torch."""

from __future__ import annotations

import subprocess
import sys

from tests.toys import REPO


def test_config_module_imports_without_torch():
    """Validating a config (the model sections come from seq2seq/models/configs.py) needs no torch:
    ``seq2seq.config`` and the ``seq2seq.models`` package import none."""
    code = (
        "import sys, seq2seq.config as c; "
        "c.validate_config({'model': {'name': 'transformer'}}); "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr

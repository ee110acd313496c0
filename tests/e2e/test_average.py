"""``seq2seq average`` end to end: it never overwrites the run's own checkpoints, the run stays
resumable, and too few checkpoints are one clear error (one average in a subprocess, the command's
end-to-end path; the rest in process)."""

from __future__ import annotations

import hashlib
import json

import pytest

from seq2seq.checkpoint import CheckpointError
from seq2seq.training.average import select_checkpoints
from tests.e2e.helpers import one_line_exit_2, run


def test_average_refuses_to_overwrite_the_runs_own_checkpoints(trained_run, run_in_process):
    run_dir, _ = trained_run
    before = (run_dir / "last.pt").read_bytes()
    for name in ("last.pt", "best.pt", "step99.pt", "best-step99.pt"):
        one_line_exit_2(
            run_in_process("average", "-c", run_dir, "--last", "1", "-o", run_dir / name),
            f"would overwrite the run's own {name}",
        )
    assert (run_dir / "last.pt").read_bytes() == before
    assert not (run_dir / "step99.pt").exists() and not (run_dir / "best-step99.pt").exists()
    one_line_exit_2(
        run_in_process("average", "-c", run_dir, "--last", "0", "-o", "x.pt"),
        "give exactly one of --last K or --best K, with K >= 1",
    )


def test_averaging_a_runs_checkpoints_keeps_the_run_resumable(
    trained_run, tmp_path, run_in_process
):
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(trained_run[0], run_dir)
    last = hashlib.sha256((run_dir / "last.pt").read_bytes()).hexdigest()
    r = run("average", "-c", run_dir, "--best", "1", "-o", run_dir / "averaged.pt")
    assert r.returncode == 0, r.stderr
    assert hashlib.sha256((run_dir / "last.pt").read_bytes()).hexdigest() == last
    averaged = (run_dir / "averaged.pt").read_bytes()
    r = run_in_process("train", run_dir / "config.yaml", "--resume", run_dir, "--max-steps", "45")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["steps"] == 45  # went on from step 40
    assert (run_dir / "averaged.pt").read_bytes() == averaged
    r = run_in_process("translate", "-c", run_dir / "averaged.pt", stdin="ein hund .\n")
    assert r.returncode == 0 and r.stdout.strip()


def test_average_needs_enough_checkpoints(tmp_path):
    (tmp_path / "run").mkdir()
    with pytest.raises(CheckpointError, match="fewer than --last 2; train with train.keep_last"):
        select_checkpoints(tmp_path / "run", last=2, best=None)
    with pytest.raises(CheckpointError, match="exactly one of --last K or --best K"):
        select_checkpoints(tmp_path / "run", last=2, best=2)

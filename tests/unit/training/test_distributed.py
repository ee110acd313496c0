"""torchrun's environment (``training/distributed.py``): its variables left in a plain shell, or
half set, are refused in one line before anything is written; a rank whose peers never come gives
up after ``SEQ2SEQ_RENDEZVOUS_TIMEOUT`` seconds with a message (torch waits 30 minutes)."""

from __future__ import annotations

import socket
import time

import pytest

from seq2seq.config import to_yaml
from tests.toys import copy_run_config


def _config(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(to_yaml(copy_run_config(tmp_path)))
    return path


def one_line_exit_2(r, needle: str) -> None:
    """``r`` failed as a user error: exit 2, one line holding ``needle``, no traceback."""
    assert r.returncode == 2 and needle in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


FULL = {"RANK": "0", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1"}
STALE = {
    "world_size": {"WORLD_SIZE": "2"},
    "rank": {"RANK": "1"},
    "master": {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29511"},
    "all_five": {"WORLD_SIZE": "2", **FULL, "MASTER_PORT": "29512"},  # torch: a 30-minute wait
}


@pytest.mark.parametrize("env", STALE.values(), ids=STALE)
def test_torchrun_variables_left_in_a_plain_shell_are_refused_in_one_line(
    tmp_path, run_in_process, monkeypatch, env
):
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    run = tmp_path / "run"
    r = run_in_process("train", _config(tmp_path), "--run-dir", run, env_extra=env)
    said = ", ".join(f"{k}={v}" for k, v in env.items())
    one_line_exit_2(
        r,
        f"{said} set, but this process was not started by torchrun: unset {' '.join(env)} in "
        "this shell, or launch with torchrun --nproc_per_node N -m seq2seq train CONFIG",
    )
    assert not run.exists()


def test_torchrun_variables_half_set_or_that_do_not_fit_are_refused(tmp_path, run_in_process):
    config, run = _config(tmp_path), tmp_path / "run"
    for env in ({"WORLD_SIZE": "2", "RANK": "0"}, {"WORLD_SIZE": "2", **FULL, "MASTER_PORT": "x"}):
        r = run_in_process(
            "train", config, "--run-dir", run, env_extra={"TORCHELASTIC_RUN_ID": "none", **env}
        )
        one_line_exit_2(r, "torchrun's variables are half set or do not fit together (WORLD_SIZE=2")
    assert not run.exists()


def test_a_rank_whose_peers_never_come_gives_up_after_the_rendezvous_timeout(
    tmp_path, run_in_process
):
    """As torchrun starts a rank (TORCHELASTIC_RUN_ID), one of two, with nobody to meet."""
    port, config, run = _free_port(), _config(tmp_path), tmp_path / "run"
    env = {"TORCHELASTIC_RUN_ID": "none", "WORLD_SIZE": "2", **FULL, "MASTER_PORT": port}
    limit = {**env, "SEQ2SEQ_RENDEZVOUS_TIMEOUT": "soon"}
    r = run_in_process("train", config, "--run-dir", run, env_extra=limit)
    one_line_exit_2(r, "SEQ2SEQ_RENDEZVOUS_TIMEOUT=soon: give a number of seconds above 0")
    tick = time.monotonic()
    limit = {**env, "SEQ2SEQ_RENDEZVOUS_TIMEOUT": "2"}
    r = run_in_process("train", config, "--run-dir", run, env_extra=limit)
    assert time.monotonic() - tick < 60
    one_line_exit_2(
        r, f"torchrun: rank 0 of 2 could not join the others at 127.0.0.1:{port} within 2 s ("
    )
    assert "SEQ2SEQ_RENDEZVOUS_TIMEOUT=SECONDS" in r.stderr

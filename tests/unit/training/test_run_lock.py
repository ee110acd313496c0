"""``seq2seq/training/run_lock.py``: one writer per run folder. A second training into a held folder
(new, ``--resume``, ``--overwrite``) exits 2 naming the holder and touches nothing; a lock left by a
process that is gone is taken over with a log line; the lock goes when the run ends; a run that
fails before its first checkpoint leaves nothing behind."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys

import pytest
import yaml

from seq2seq.training.distributed import launched_as_main
from seq2seq.training.run_lock import LOCK_FILE, RunFolderBusy, RunLock
from tests.toys import run_main, synth_run_raw


def tree(folder) -> dict:
    """Every file under ``folder`` -> its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_held_folder_refuses_a_second_lock_naming_the_holder_and_frees_on_exit(tmp_path):
    run = tmp_path / "runs" / "x"
    with RunLock(run) as held:
        holder = json.loads((run / LOCK_FILE).read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
        with pytest.raises(RunFolderBusy) as e:
            RunLock(run).__enter__()
        msg = str(e.value)
        busy = f"{run}: another training is writing this run folder (PID {os.getpid()} on host"
        assert msg.startswith(busy)
        assert f"host {socket.gethostname()}, since 20" in msg and " UTC; lock " in msg
        assert "another --run-dir" in msg and "\n" not in msg
        assert held.fd is not None
    assert not (run / LOCK_FILE).exists()
    with RunLock(run):  # free again
        pass
    assert run.is_dir()  # a run that ended without an error keeps its folder


def test_a_lock_left_by_a_dead_process_is_taken_over_with_a_log_line(tmp_path, caplog):
    run, host = tmp_path / "run", socket.gethostname()
    run.mkdir()
    (run / LOCK_FILE).write_text(json.dumps({"pid": 4_000_000, "host": host, "since": 0}))
    with caplog.at_level("WARNING", logger="seq2seq"), RunLock(run):
        assert json.loads((run / LOCK_FILE).read_text())["pid"] == os.getpid()
    said = f"{run / LOCK_FILE}: taking over a stale lock (PID 4000000 on host {host}, since 1970"
    assert said + "-01-01 00:00:00 UTC, no longer running)" in caplog.text


def test_a_free_lock_written_on_another_host_is_not_taken_over(tmp_path):
    """Some shared file systems keep locks per host: that training may still run."""
    run = tmp_path / "run"
    run.mkdir()
    (run / LOCK_FILE).write_text(json.dumps({"pid": 7, "host": "elsewhere", "since": 0}))
    with pytest.raises(RunFolderBusy) as e:
        RunLock(run).__enter__()
    assert str(e.value) == (
        f"{run}: a training on another host wrote train.lock (PID 7 on host elsewhere, since "
        "1970-01-01 00:00:00 UTC) and its lock is free here: it has ended, or this file system "
        "does not share locks between hosts; if it no longer runs, delete "
        f"{run / LOCK_FILE} and try again"
    )
    assert json.loads((run / LOCK_FILE).read_text())["host"] == "elsewhere"  # untouched


def test_ranks_other_than_0_take_no_lock(tmp_path, monkeypatch):
    with RunLock(tmp_path / "run", enabled=False):
        assert not (tmp_path / "run").exists()
    torchrun = {"TORCHELASTIC_RUN_ID": "x", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}
    for key, value in (torchrun | {"MASTER_PORT": "29500"}).items():
        monkeypatch.setenv(key, value)
    for rank, main in (("1", False), ("0", True)):
        monkeypatch.setenv("RANK", rank)
        monkeypatch.setenv("LOCAL_RANK", rank)
        assert launched_as_main() is main


def test_a_failed_start_removes_the_run_files_and_the_folders_it_made(tmp_path):
    run = tmp_path / "runs" / "a" / "b"
    with pytest.raises(ValueError), RunLock(run):
        (run / "train.log").write_text("x")
        (run / "spm.model").write_text("x")
        raise ValueError("no data")
    assert not (tmp_path / "runs").exists()
    # a folder that held something else keeps it (a config.yaml too), and itself
    run.mkdir(parents=True)
    (run / "notes.txt").write_text("mine")
    (run / "config.yaml").write_text("mine")
    with pytest.raises(ValueError), RunLock(run):
        (run / "train.log").write_text("x")
        (run / "tensorboard").mkdir()
        raise ValueError("no data")
    assert sorted(p.name for p in run.iterdir()) == ["config.yaml", "notes.txt"]
    assert (run / "config.yaml").read_text() == "mine"
    # a run that saved a checkpoint before its error keeps everything
    with pytest.raises(ValueError), RunLock(run):
        (run / "last.pt").write_text("x")
        raise ValueError("later")
    assert sorted(p.name for p in run.iterdir()) == ["config.yaml", "last.pt", "notes.txt"]


@pytest.mark.parametrize(
    "how", [["--run-dir", "RUN"], ["--run-dir", "RUN", "--overwrite"], ["--resume", "RUN"]]
)
def test_train_into_a_folder_another_training_holds_exits_2_and_touches_nothing(
    synth_run, tmp_path, monkeypatch, capsys, how
):
    run = tmp_path / "run"
    shutil.copytree(synth_run, run)
    args = [str(run) if a == "RUN" else a for a in how]
    with RunLock(run):
        before = tree(run)
        code, err = run_main(monkeypatch, capsys, "train", run / "config.yaml", *args)
        assert tree(run) == before  # --overwrite deleted nothing of the live run
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: {run}: another training is writing this run folder (PID ")


def test_train_on_a_missing_data_path_leaves_no_folder(tmp_path, synth_corpus, monkeypatch, capsys):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(synth_run_raw(synth_corpus, max_steps=2)))
    run = tmp_path / "runs" / "new"
    for bad in ["data.train=/nowhere/train", "data.valid=/nowhere/val"]:
        code, err = run_main(monkeypatch, capsys, "train", cfg, "--run-dir", run, "--set", bad)
        assert code == 2 and "corpus file not found" in err, err
        assert not (tmp_path / "runs").exists()


def test_overwrite_with_a_missing_data_path_keeps_the_earlier_run(
    synth_run, tmp_path, synth_corpus, monkeypatch, capsys
):
    run = tmp_path / "run"
    shutil.copytree(synth_run, run)
    before = tree(run)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(synth_run_raw(synth_corpus, max_steps=2)))
    args = ["--run-dir", run, "--overwrite", "--set", "data.train=/nowhere/train"]
    code, err = run_main(monkeypatch, capsys, "train", cfg, *args)
    assert code == 2 and "/nowhere/train.de: corpus file not found" in err, err
    assert tree(run) == before


def test_another_process_holds_the_lock_until_killed_then_it_is_stale(tmp_path, caplog):
    """Across processes, as two trainings are: a holder's PID is named; after ``kill -9`` (no
    cleanup ran, the file stays) the kernel has freed the lock and it is taken over."""
    run = tmp_path / "run"
    code = (
        "import sys, time\nfrom seq2seq.training.run_lock import RunLock\n"
        f"with RunLock({str(run)!r}):\n    print('held', flush=True)\n    time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(RunFolderBusy, match=f"PID {holder.pid} on host "):
            RunLock(run).__enter__()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert (run / LOCK_FILE).exists()
    with caplog.at_level("WARNING", logger="seq2seq"), RunLock(run):
        pass
    assert f"taking over a stale lock (PID {holder.pid} on host " in caplog.text


def test_average_never_replaces_a_file_a_live_training_writes(
    synth_run, tmp_path, monkeypatch, capsys
):
    run = tmp_path / "run"
    shutil.copytree(synth_run, run)
    with RunLock(run):
        before = tree(run)
        for name in ("last.pt", "best.pt"):
            args = ["average", "-c", run, "--last", "1", "-o", run / name]
            code, err = run_main(monkeypatch, capsys, *args)
            assert code == 2 and len(err.strip().splitlines()) == 1, err
            assert (
                f"-o {run / name}: a training is writing that run folder (PID {os.getpid()}" in err
            )
        assert tree(run) == before
        code, err = run_main(monkeypatch, capsys, "average", "-c", run, "--last", "1", "-o",
                             run / "avg.pt")  # fmt: skip
        assert code == 0, err


def test_a_file_system_without_locks_is_noted_and_the_run_goes_on(tmp_path, monkeypatch, caplog):
    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr("seq2seq.training.run_lock.fcntl.flock", no_locks)
    run = tmp_path / "run"
    with caplog.at_level("WARNING", logger="seq2seq"), RunLock(run):
        assert not (run / LOCK_FILE).exists()
    assert "cannot lock (No locks available): make sure no other training writes" in caplog.text

"""The run record (``training/run_dir.py``): a resume refuses data changed since the run started,
as run_info.json recorded it: the pairs the run reads, not the files' bytes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from seq2seq.config import to_yaml
from seq2seq.data.text import DataError
from seq2seq.training.loop import train
from seq2seq.training.run_dir import data_digests
from tests.corpora import SENTENCES, hf_dataset, translation_rows
from tests.toys import copy_run_config, run_main


def _reorder(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("".join(x + "\n" for x in reversed(lines)), encoding="utf-8")


def _steps(cfg, n: int):
    return cfg.model_copy(update={"train": cfg.train.model_copy(update={"max_steps": n})})


def test_resume_refuses_a_train_file_whose_lines_were_reordered(tmp_path, monkeypatch, capsys):
    cfg = copy_run_config(tmp_path, train=None, max_steps=2)
    run = tmp_path / "run"
    train(cfg, run)
    more = cfg.model_copy(update={"train": cfg.train.model_copy(update={"max_steps": 4})})
    (tmp_path / "config.yaml").write_text(to_yaml(more))
    info, last = (run / "run_info.json").read_bytes(), (run / "last.pt").read_bytes()
    train_de = Path(f"{cfg.data.train}.de")
    old = data_digests(cfg)["train"]
    _reorder(train_de)
    new = data_digests(cfg)["train"]

    capsys.readouterr()  # the first run's progress
    code, err = run_main(monkeypatch, capsys, "train", tmp_path / "config.yaml", "--resume", run)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert (
        f"--resume {run}: data changed since the run started, as run_info.json recorded it: "
        f"{train_de} and {cfg.data.train}.en (sha256 of its cleaned pairs {old[:12]} -> "
        f"{new[:12]}); restore the data, or train afresh with --overwrite"
    ) in line
    assert (run / "run_info.json").read_bytes() == info  # the record of the start is kept
    assert (run / "last.pt").read_bytes() == last

    _reorder(train_de)  # restored: the resume goes on
    assert train(more, run, resume=True)["steps"] == 4
    after = json.loads((run / "run_info.json").read_text())["data_sha256"]
    assert after == json.loads(info)["data_sha256"] == {**data_digests(more), "train": old}


def test_resume_refuses_a_local_hf_dataset_saved_again_with_other_rows(tmp_path):
    path = hf_dataset(tmp_path / "ds", translation_rows(SENTENCES * 3))
    hf = {"path": path, "src_field": "translation.de", "tgt_field": "translation.en"}
    cfg = copy_run_config(tmp_path, data={"hf": hf}, max_steps=2)
    run = tmp_path / "run"
    train(cfg, run)
    recorded = json.loads((run / "run_info.json").read_text())["data_sha256"]
    assert set(recorded) == {"train", "valid"}  # this dataset has no test split
    info = (run / "run_info.json").read_bytes()
    hf_dataset(tmp_path / "ds", translation_rows(list(reversed(SENTENCES * 3))))
    more = cfg.model_copy(update={"train": cfg.train.model_copy(update={"max_steps": 4})})
    with pytest.raises(DataError, match=r"data changed since the run started.*ds\[train\] \("):
        train(more, run, resume=True)
    assert (run / "run_info.json").read_bytes() == info


def test_a_resume_compares_the_pairs_read_so_crlf_or_gzip_copies_pass_and_a_changed_line_not(
    tmp_path,
):
    """The same lines saved with CRLF line ends (refused as "data changed" when the check hashed
    the files' bytes), then gzipped in place of the plain files: the resume goes on; one line
    changed in the gzipped copy is refused (the byte check, matching files by name, missed it)."""
    cfg = copy_run_config(tmp_path, train=None, max_steps=2)
    run = tmp_path / "run"
    train(cfg, run)
    recorded = json.loads((run / "run_info.json").read_text())["data_sha256"]
    assert {"train", "valid"} <= set(recorded) and recorded == data_digests(cfg)
    files = [Path(f"{p}.{lang}") for p in (cfg.data.train, cfg.data.valid) for lang in ("de", "en")]
    for f in files:
        f.write_bytes(f.read_bytes().replace(b"\n", b"\r\n"))
    assert train(_steps(cfg, 3), run, resume=True)["steps"] == 3
    for f in files:
        f.with_name(f"{f.name}.gz").write_bytes(gzip.compress(f.read_bytes()))
        f.unlink()
    assert train(_steps(cfg, 4), run, resume=True)["steps"] == 4
    target = Path(f"{cfg.data.train}.en.gz")
    lines = gzip.decompress(target.read_bytes()).split(b"\r\n")
    target.write_bytes(gzip.compress(b"\r\n".join([lines[0] + b" too", *lines[1:]])))
    said = rf"{cfg.data.train}\.de\.gz and {target} \(sha256 of its cleaned pairs "
    with pytest.raises(DataError, match=said):
        train(_steps(cfg, 5), run, resume=True)


def _repo(folder: Path, pyproject: str) -> str:
    """A git repository at ``folder`` holding a ``seq2seq`` package and ``pyproject``; its
    commit."""
    import subprocess

    (folder / "seq2seq").mkdir(parents=True)
    (folder / "seq2seq" / "__init__.py").write_text("")
    (folder / "pyproject.toml").write_text(pyproject)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(folder)]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "x"]):
        subprocess.run([*git, *args], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True)
    return head.stdout.strip()


def test_git_commit_is_the_seq2seq_checkouts_only(tmp_path):
    """A user's own project with seq2seq in its .venv: its commit was recorded as seq2seq's."""
    from seq2seq.training.run_dir import git_commit

    ours = _repo(tmp_path / "clone", '[project]\nname = "seq2seq"\n')
    assert git_commit(tmp_path / "clone" / "seq2seq") == ours
    _repo(tmp_path / "project", '[project]\nname = "my-app"\n')
    installed = tmp_path / "project" / ".venv" / "lib" / "site-packages" / "seq2seq"
    installed.mkdir(parents=True)
    assert git_commit(installed) is None  # inside another repository
    _repo(tmp_path / "other", '[project]\nname = "my-app"\n')
    assert git_commit(tmp_path / "other" / "seq2seq") is None  # its own seq2seq folder
    (tmp_path / "wheel" / "seq2seq").mkdir(parents=True)
    assert git_commit(tmp_path / "wheel" / "seq2seq") is None  # no repository

"""The run record (``training/run_dir.py``): a resume refuses data changed since the run started,
as run_info.json recorded it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seq2seq.config import to_yaml
from seq2seq.data.text import DataError
from seq2seq.training.loop import train
from tests.corpora import SENTENCES, hf_dataset, translation_rows
from tests.toys import copy_run_config, run_main


def _reorder(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("".join(x + "\n" for x in reversed(lines)), encoding="utf-8")


def test_resume_refuses_a_train_file_whose_lines_were_reordered(tmp_path, monkeypatch, capsys):
    from seq2seq.data.text import sha256_file

    cfg = copy_run_config(tmp_path, train=None, max_steps=2)
    run = tmp_path / "run"
    train(cfg, run)
    more = cfg.model_copy(update={"train": cfg.train.model_copy(update={"max_steps": 4})})
    (tmp_path / "config.yaml").write_text(to_yaml(more))
    info, last = (run / "run_info.json").read_bytes(), (run / "last.pt").read_bytes()
    train_de = Path(f"{cfg.data.train}.de")
    old = sha256_file(train_de)
    _reorder(train_de)
    new = sha256_file(train_de)

    capsys.readouterr()  # the first run's progress
    code, err = run_main(monkeypatch, capsys, "train", tmp_path / "config.yaml", "--resume", run)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert (
        f"--resume {run}: data changed since the run started, as run_info.json recorded it: "
        f"{train_de} (sha256 {old[:12]} -> {new[:12]}); restore the file, or train afresh "
        "with --overwrite"
    ) in line
    assert (run / "run_info.json").read_bytes() == info  # the record of the start is kept
    assert (run / "last.pt").read_bytes() == last

    _reorder(train_de)  # restored: the resume goes on
    assert train(more, run, resume=True)["steps"] == 4
    after = json.loads((run / "run_info.json").read_text())["data_files_sha256"]
    assert after == json.loads(info)["data_files_sha256"]


def test_resume_refuses_a_local_hf_dataset_saved_again_with_other_rows(tmp_path):
    path = hf_dataset(tmp_path / "ds", translation_rows(SENTENCES * 3))
    hf = {"path": path, "src_field": "translation.de", "tgt_field": "translation.en"}
    cfg = copy_run_config(tmp_path, data={"hf": hf}, max_steps=2)
    run = tmp_path / "run"
    train(cfg, run)
    recorded = json.loads((run / "run_info.json").read_text())["data_files_sha256"]
    assert any("/train/" in p and p.endswith(".arrow") for p in recorded)
    info = (run / "run_info.json").read_bytes()
    hf_dataset(tmp_path / "ds", translation_rows(list(reversed(SENTENCES * 3))))
    more = cfg.model_copy(update={"train": cfg.train.model_copy(update={"max_steps": 4})})
    with pytest.raises(DataError, match=r"data changed since the run started.*train/data-"):
        train(more, run, resume=True)
    assert (run / "run_info.json").read_bytes() == info


def test_a_recorded_file_found_under_another_path_is_matched_by_its_name(tmp_path):
    from seq2seq.data.text import sha256_file
    from seq2seq.training.run_dir import check_data_unchanged

    cfg = copy_run_config(tmp_path)
    train_de = Path(f"{cfg.data.train}.de")
    moved = {f"/elsewhere/{train_de.name}": sha256_file(train_de)}
    (tmp_path / "run_info.json").write_text(json.dumps({"data_files_sha256": moved}))
    check_data_unchanged(tmp_path, cfg)  # the same bytes: no error
    moved = {f"/elsewhere/{train_de.name}": "0" * 64}
    (tmp_path / "run_info.json").write_text(json.dumps({"data_files_sha256": moved}))
    with pytest.raises(DataError, match=rf"{train_de} \(sha256 000000000000 -> "):
        check_data_unchanged(tmp_path, cfg)

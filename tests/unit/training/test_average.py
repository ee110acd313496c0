"""``seq2seq/training/average.py``: checkpoints of different models are not averaged, and the
average's target vocabulary is the union of its inputs'."""

from __future__ import annotations

import shutil

import pytest
import torch

from seq2seq.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from seq2seq.config import validate_config
from seq2seq.models import build_model
from seq2seq.training.average import average_checkpoints
from tests.toys import run_main, tiny_model_config


def test_average_rejects_checkpoints_of_different_models(tmp_path, synth_tokenizer):
    v = synth_tokenizer.src_vocab_size
    for name, hidden in (("a.pt", 24), ("b.pt", 32)):
        cfg = validate_config(
            {
                "train": {"max_steps": 1},
                "model": tiny_model_config("rnn", emb_size=8, hidden_size=hidden),
            }
        )
        model = build_model(cfg.model, v, v, True)
        save_checkpoint(
            tmp_path / name,
            {
                "config": cfg.model_dump(mode="json"),
                "model": model.state_dict(),
                "tokenizer": synth_tokenizer.state_dict(),
            },
        )
    with pytest.raises(CheckpointError, match="a different model"):
        average_checkpoints([tmp_path / "a.pt", tmp_path / "b.pt"])


def _saved(path, tok, **extra):
    cfg = validate_config({"train": {"max_steps": 1}, "model": tiny_model_config("rnn")})
    v = tok.src_vocab_size
    model = build_model(cfg.model, v, v, True)
    save_checkpoint(
        path,
        {
            "config": cfg.model_dump(mode="json"),
            "model": model.state_dict(),
            "tokenizer": tok.state_dict(),
            **extra,
        },
    )
    return path


def test_the_average_carries_the_union_of_its_inputs_target_vocabularies(tmp_path, synth_tokenizer):
    a = _saved(tmp_path / "a.pt", synth_tokenizer, target_vocab=[3, 4, 9])
    b = _saved(tmp_path / "b.pt", synth_tokenizer, target_vocab=[3, 5])
    old = _saved(tmp_path / "old.pt", synth_tokenizer)  # written before target_vocab existed
    assert average_checkpoints([a, b, old])["target_vocab"] == [3, 4, 5, 9]
    assert "target_vocab" not in average_checkpoints([old, old])


def test_tied_weights_stay_one_tensor_and_the_file_no_larger(tmp_path, synth_tokenizer):
    """A Transformer with shared embeddings: the average keeps the tie (it wrote two copies)."""
    model_cfg = tiny_model_config("transformer", share_embeddings=True)
    cfg = validate_config({"train": {"max_steps": 1}, "model": model_cfg})
    v = synth_tokenizer.src_vocab_size
    paths = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        model = build_model(cfg.model, v, v, True)
        ckpt = {
            "config": cfg.model_dump(mode="json"),
            "model": model.state_dict(),
            "tokenizer": synth_tokenizer.state_dict(),
        }
        paths.append(tmp_path / f"{seed}.pt")
        save_checkpoint(paths[-1], ckpt)
    sd = model.state_dict()
    tied = [n for n in sd if sd[n].data_ptr() == model.src_embed.weight.data_ptr()]
    assert len(tied) >= 2  # the toy really shares its embeddings
    avg = average_checkpoints(paths)
    assert len({avg["model"][n].data_ptr() for n in tied}) == 1
    first = torch.load(paths[0], weights_only=False)["model"][tied[0]]
    expect = (first.double() + sd[tied[0]].double()) / 2
    assert torch.allclose(avg["model"][tied[0]].double(), expect)
    save_checkpoint(tmp_path / "avg.pt", avg)
    assert (tmp_path / "avg.pt").stat().st_size <= paths[1].stat().st_size + 4096


def test_an_existing_output_is_replaced_only_with_overwrite(
    synth_run, tmp_path, monkeypatch, capsys
):
    """-o another run's last.pt replaced it (exit 0), and that run could no longer resume."""
    other = shutil.copytree(synth_run, tmp_path / "other")
    last = other / "last.pt"
    before = last.read_bytes()
    code, err = run_main(monkeypatch, capsys, "average", "-c", synth_run, "--last", "1", "-o", last)
    said = f"-o {last}: already exists; give --overwrite to replace it, or another file"
    assert code == 2 and len(err.strip().splitlines()) == 1 and said in err, err
    assert last.read_bytes() == before
    code, err = run_main(monkeypatch, capsys, "average", "-c", synth_run, "--last", "1",
                         "-o", last, "--overwrite")  # fmt: skip
    assert code == 0 and "optimizer" not in load_checkpoint(last), err

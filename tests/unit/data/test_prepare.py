"""``seq2seq/data/prepare.py``: a run's data -- unusable validation sets and bad files refused
before the first update with the same error on every backend, and each rank's share of an
epoch's batches, and the target vocabulary (the kept targets' pieces and EOS) of every
backend."""

from __future__ import annotations

import pytest
import torch

from seq2seq.config import TrainConfig, validate_config
from seq2seq.data.prepare import epoch_batches
from seq2seq.data.text import DataError
from seq2seq.training.distributed import DistInfo
from seq2seq.training.loop import train
from tests.corpora import (
    SENTENCES,
    toy_pairs,
    write_raw_lines,
    write_source_only_words,
    write_split,
)
from tests.toys import copy_run_config


def _bad_utf8_train(tmp_path, side):
    d = tmp_path / "bad"
    d.mkdir()
    good = "".join(x + "\n" for x in SENTENCES * 3).encode()
    lines = good.split(b"\n")
    lines[2] = b"a dog $\xff runs"  # line 3, byte 8
    bad = b"\n".join(lines)
    (d / "train.de").write_bytes(bad if side == "src" else good)
    (d / "train.en").write_bytes(bad if side == "tgt" else good)
    return str(d / "train"), str(d / f"train.{'de' if side == 'src' else 'en'}")


@pytest.mark.parametrize("lines", [[], ["", "  ", "\t"]], ids=["empty", "blank"])
def test_an_empty_validation_set_is_refused_before_the_first_update(tmp_path, lines):
    valid = write_split(tmp_path, "valid", lines)
    cfg = copy_run_config(tmp_path, valid=valid)
    with pytest.raises(DataError, match="no usable validation pair") as e:
        train(cfg, tmp_path / "run")
    assert "valid.de" in str(e.value) and "valid.en" in str(e.value)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "run" / "last.pt").exists()  # refused before any update


def test_a_validation_set_all_over_max_len_is_refused(tmp_path):
    valid = write_split(tmp_path, "valid", [" ".join(["dog"] * 40)])
    with pytest.raises(DataError, match="no usable validation pair is left within data.max_len"):
        train(copy_run_config(tmp_path, valid=valid), tmp_path / "run")


@pytest.mark.parametrize("backend", ["memory", "arrow", "stream"])
def test_a_training_split_all_over_max_len_is_refused_naming_max_len(tmp_path, backend):
    """It blamed the batch size ('lower batch_tokens'), which cannot help (a new-user trial)."""
    prefix = write_split(tmp_path, "long", [" ".join(["dog"] * 40)] * 3)
    data = {"backend": backend, "cache_dir": str(tmp_path / "cache")}
    with pytest.raises(DataError) as e:
        train(copy_run_config(tmp_path, train=prefix, data=data), tmp_path / "run")
    assert str(e.value) == (
        f"{prefix}.de and {prefix}.en: no usable training pair is left within data.max_len 30 "
        "tokens (the log counts those dropped); raise data.max_len"
    )
    assert not (tmp_path / "run" / "last.pt").exists()


@pytest.mark.parametrize("given_tokenizer", [False, True], ids=["trained", "given"])
@pytest.mark.parametrize("side", ["src", "tgt"])
def test_every_backend_gives_the_same_one_line_error_for_invalid_utf8(
    tmp_path, side, given_tokenizer
):
    from seq2seq.data.tokenizer import Tokenizer

    train_prefix, bad_file = _bad_utf8_train(tmp_path, side)
    expected = f"{bad_file} line 3: not valid UTF-8 (byte 8 of the line)"
    tok = None
    if given_tokenizer:
        cfg = copy_run_config(tmp_path)
        tok = Tokenizer.train(SENTENCES, SENTENCES, cfg.tokenizer)
    for backend in ("memory", "arrow", "stream"):
        data = {"backend": backend, "cache_dir": str(tmp_path / "cache")}
        cfg = copy_run_config(tmp_path, train=train_prefix, data=data)
        with pytest.raises(DataError) as e:
            train(cfg, tmp_path / f"run-{backend}", tokenizer=tok)
        assert str(e.value).startswith(expected), (backend, str(e.value))
        assert "\n" not in str(e.value)


def test_every_backend_gives_the_same_error_for_misaligned_files(tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    prefix = write_split(d, "train", SENTENCES * 3, SENTENCES * 3 + ["one more"])
    for backend in ("memory", "arrow", "stream"):
        data = {"backend": backend, "cache_dir": str(tmp_path / "cache")}
        with pytest.raises(DataError, match="train.de has 36 lines but .*train.en has 37"):
            train(copy_run_config(tmp_path, train=prefix, data=data), tmp_path / f"run-{backend}")


@pytest.mark.parametrize("split", ["train", "valid"])
def test_misaligned_files_stop_before_training_and_write_no_checkpoint(tmp_path, split):
    from seq2seq.training.loop import train

    src, tgt = toy_pairs(4, seed=1)
    for prefix in ("train", "val"):
        write_raw_lines(tmp_path / f"{prefix}.de", src)
        write_raw_lines(tmp_path / f"{prefix}.en", tgt)
    bad = "train" if split == "train" else "val"
    write_raw_lines(tmp_path / f"{bad}.de", src[:3])
    cfg = validate_config(
        {
            "data": {"train": str(tmp_path / "train"), "valid": str(tmp_path / "val")},
            "train": {"max_steps": 1},
        }
    )
    with pytest.raises(DataError) as e:
        train(cfg, tmp_path / "run")
    assert str(e.value).startswith(
        f"{tmp_path / f'{bad}.de'} has 3 lines but {tmp_path / f'{bad}.en'} has 4"
    )
    assert "\n" not in str(e.value)
    assert not list(tmp_path.rglob("*.pt"))


def test_epoch_batches_are_sharded_per_rank(synth_corpus, synth_tokenizer):
    from seq2seq.data.text import TokenizedPairs

    lines = (synth_corpus / "train.de").read_text().splitlines()[:300]
    ids = synth_tokenizer.encode_src(lines)
    pairs = TokenizedPairs(ids, ids, list(range(len(ids))))
    t = TrainConfig(max_steps=1, batch_tokens=500)
    whole = epoch_batches(pairs, t, 3, DistInfo())
    r0, r1 = (epoch_batches(pairs, t, 3, DistInfo(rank=r, world=2)) for r in (0, 1))
    assert len(r0) == len(r1) == len(whole) // 2
    assert r0 == whole[0 : 2 * len(r0) : 2] and r1 == whole[1 : 2 * len(r1) : 2]
    assert not {i for b in r0 for i in b} & {i for b in r1 for i in b}


@pytest.mark.parametrize("backend", ["memory", "arrow", "stream"])
def test_the_target_vocabulary_is_every_kept_targets_pieces_and_eos(tmp_path, backend):
    from seq2seq.data.prepare import prepare_data
    from seq2seq.data.tokenizer import BOS, EOS, PAD, UNK

    prefix, kept = write_source_only_words(tmp_path / "src-only")
    data = {"backend": backend, "cache_dir": str(tmp_path / "cache")}
    cfg = copy_run_config(tmp_path, train=prefix, data=data)
    (tmp_path / "run").mkdir()
    d = prepare_data(cfg, tmp_path / "run", None, DistInfo())
    tok, mask = d.tok, d.target_vocab
    assert tok.joint and mask.dtype == torch.bool and mask.shape == (tok.tgt_vocab_size,)
    expected = {i for ids in tok.encode_tgt(kept) for i in ids} | {EOS}
    assert set(mask.nonzero().squeeze(1).tolist()) == expected
    assert not mask[[PAD, BOS]].any()
    source_only = [i for ids in tok.encode_src(["die ein zebra"]) for i in ids]
    assert len(source_only) == 3 and UNK not in source_only and not mask[source_only].any()
    assert d.train.target_vocab(tok.tgt_vocab_size).equal(mask)  # the Corpus method itself


def test_separate_vocabularies_get_a_target_vocabulary_too(tmp_path):
    from seq2seq.data.prepare import prepare_data
    from seq2seq.data.tokenizer import EOS

    prefix, kept = write_source_only_words(tmp_path / "src-only")
    cfg = copy_run_config(tmp_path, train=prefix, tokenizer={"joint": False})
    (tmp_path / "run").mkdir()
    d = prepare_data(cfg, tmp_path / "run", None, DistInfo())
    assert not d.tok.joint
    expected = {i for ids in d.tok.encode_tgt(kept) for i in ids} | {EOS}
    assert set(d.target_vocab.nonzero().squeeze(1).tolist()) == expected

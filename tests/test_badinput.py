"""Bad input, round 2 (issue 15): validation sets with nothing usable, text the tokenizer rewrites
or drops, side paths at validation, masked errors on the stream backend, inexact resumes, leakage.

Toy setup: a 36-line copy corpus (12 short English sentences x3, target = source), a ``word``
tokenizer, a Transformer with d_model 32 and ``max_positions`` 40, ``data.max_len`` 30,
``valid_every`` 2, 256-token batches; everything in tmp_path, a few steps.
"""

from __future__ import annotations

import logging

import pytest

from seq2seq.config import validate_config
from seq2seq.data.text import DataError
from seq2seq.evaluation.metrics import corpus_score
from seq2seq.training.loop import train

SENTENCES = [
    "a dog runs in the park",
    "two men play football",
    "the girl reads a book",
    "a cat sleeps on the sofa",
    "children swim in the lake",
    "a man rides a bike",
    "the woman sings a song",
    "a boy eats an apple",
    "people walk in the city",
    "the bird sits on a tree",
    "a chef cooks some food",
    "the old man drinks tea",
]


def write_split(d, prefix, src, tgt=None, src_lang="de", tgt_lang="en", raw=False):
    """``prefix.<src_lang>`` and ``prefix.<tgt_lang>`` in ``d`` (target = source by default)."""
    for lang, lines in ((src_lang, src), (tgt_lang, src if tgt is None else tgt)):
        path = d / f"{prefix}.{lang}"
        if raw:
            path.write_bytes(lines)
        else:
            path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return str(d / prefix)


def toy_config(tmp_path, train=None, valid=None, data=None, tokenizer=None, **train_cfg):
    """The issue's toy run; ``train`` / ``valid`` default to the copy corpus and its first 4."""
    d = tmp_path / "data"
    d.mkdir(exist_ok=True)
    raw = {
        "name": "toy",
        "data": {
            "train": train or write_split(d, "train", SENTENCES * 3),
            "valid": valid or write_split(d, "valid", SENTENCES[:4]),
            "max_len": 30,
            **(data or {}),
        },
        "tokenizer": {"type": "word", "vocab_size": 64, **(tokenizer or {})},
        "model": {
            "name": "transformer",
            "d_model": 32,
            "n_heads": 2,
            "d_ff": 64,
            "n_encoder_layers": 1,
            "n_decoder_layers": 1,
            "max_positions": 40,
            "dropout": 0.0,
        },
        "train": {
            "max_steps": 2,
            "batch_tokens": 256,
            "valid_every": 2,
            "lr": 0.003,
            "seed": 1,
            "log_every": 1,
            "num_threads": 1,
            "device": "cpu",
            **train_cfg,
        },
        "decode": {"batch_size": 16, "max_len_b": 5},
    }
    return validate_config(raw)


# ---- 1. validation sets with nothing usable in them ------------------------------------------


@pytest.mark.parametrize("lines", [[], ["", "  ", "\t"]], ids=["empty", "blank"])
def test_an_empty_validation_set_is_refused_before_the_first_update(tmp_path, lines):
    valid = write_split(tmp_path, "valid", lines)
    cfg = toy_config(tmp_path, valid=valid)
    with pytest.raises(DataError, match="no usable validation pair") as e:
        train(cfg, tmp_path / "run")
    assert "valid.de" in str(e.value) and "valid.en" in str(e.value)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "run" / "last.pt").exists()  # refused before any update


def test_a_validation_set_all_over_max_len_is_refused(tmp_path):
    valid = write_split(tmp_path, "valid", [" ".join(["dog"] * 40)])
    with pytest.raises(DataError, match="no usable validation pair is left within data.max_len"):
        train(toy_config(tmp_path, valid=valid), tmp_path / "run")


def test_no_metric_over_zero_segments():
    for name in ("bleu", "chrf", "ter"):
        with pytest.raises(ValueError, match="no segments to score"):
            corpus_score(name, [], [[]])


def test_eval_refuses_a_blank_reference_file(tmp_path):
    from seq2seq.evaluation.report import read_eval_texts

    (tmp_path / "ref").write_text("\n \n")
    (tmp_path / "hyp").write_text("a\nb\n")
    with pytest.raises(ValueError, match=r"ref: no lines to score \(all 2 blank\)"):
        read_eval_texts([tmp_path / "ref"], None, tmp_path / "hyp")


def test_a_study_eval_set_with_no_usable_pair_is_refused(tmp_path):
    from seq2seq.study.evalsets import build_eval_set

    cfg = toy_config(tmp_path, data={"test": write_split(tmp_path, "test", ["", " "])})
    with pytest.raises(DataError, match="no usable test pair"):
        build_eval_set(cfg, 2, None)


# ---- 5. the same data error on every backend -------------------------------------------------


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
        cfg = toy_config(tmp_path)
        tok = Tokenizer.train(SENTENCES, SENTENCES, cfg.tokenizer)
    for backend in ("memory", "arrow", "stream"):
        data = {"backend": backend, "cache_dir": str(tmp_path / "cache")}
        cfg = toy_config(tmp_path, train=train_prefix, data=data)
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
            train(toy_config(tmp_path, train=prefix, data=data), tmp_path / f"run-{backend}")


# ---- 3. text the tokenizer trainer drops without a word --------------------------------------


def test_the_tokenizer_sees_a_line_over_sentencepieces_byte_limit(caplog):
    from seq2seq.config import TokenizerConfig
    from seq2seq.data.tokenizer import UNK, Tokenizer

    long_line = "the dog runs in the park " * 200 + "die straße"  # ~5,000 bytes, the only ß
    assert len(long_line.encode()) > 4192
    src = SENTENCES * 3 + ["a short source"]
    tgt = SENTENCES * 3 + [long_line]
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        tok = Tokenizer.train(src, tgt, TokenizerConfig(type="unigram", vocab_size=100))
    assert UNK not in tok.encode_tgt(["straße"])[0]
    assert "not covered" not in caplog.text


def test_the_log_reports_the_vocabulary_learned_and_the_characters_not_covered(caplog):
    from seq2seq.config import TokenizerConfig
    from seq2seq.data.tokenizer import Tokenizer

    with caplog.at_level(logging.INFO, logger="seq2seq"):
        tok = Tokenizer.train(SENTENCES, SENTENCES, TokenizerConfig(type="word", vocab_size=5000))
    assert tok.src_vocab_size < 5000
    assert f"learned {tok.src_vocab_size} pieces, vocab_size 5000 asked" in caplog.text
    caplog.clear()
    rare = SENTENCES * 20 + ["a ß b"]  # one ß in ~500 characters: out at coverage 0.98
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        Tokenizer.train(rare, rare, TokenizerConfig(vocab_size=60, character_coverage=0.98))
    assert "training characters" in caplog.text and "'ß' x2" in caplog.text

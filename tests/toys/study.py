"""Tiny configs and corpora for the loop tests on word reversal and for ``compare`` (the study)."""

from __future__ import annotations

import yaml

from seq2seq.config import validate_config
from seq2seq.study.synth import write_corpus
from tests.toys.configs import TINY_RUN_MODELS, tiny_model_config

# The four families of the loop tests on ``corpora.write_word_reversal`` files.
WORD_REVERSAL_MODELS = {
    "rnn": tiny_model_config("rnn", dropout=0.0),
    "bahdanau": tiny_model_config("bahdanau", dropout=0.0),
    "luong": tiny_model_config("luong", dropout=0.1),
    "transformer": tiny_model_config(
        "transformer",
        d_model=32,
        n_heads=4,
        d_ff=64,
        n_encoder_layers=2,
        n_decoder_layers=2,
        dropout=0.1,
    ),
}


def word_reversal_config(folder, name: str, log_every: int, max_steps: int, **train):
    """A run of the model ``name`` on ``write_word_reversal`` files in ``folder``."""
    return validate_config(
        {
            "data": {"train": str(folder / "train"), "valid": str(folder / "val")},
            "tokenizer": {"type": "word", "vocab_size": 40},
            "model": WORD_REVERSAL_MODELS[name],
            "train": {
                "max_steps": max_steps,
                "batch_tokens": 120,
                "log_every": log_every,
                "valid_every": 1000,
                "valid_bleu": False,
                "best_metric": "loss",
                "num_threads": 1,
                **train,
            },
        }
    )


def slice_data(slice_dir):
    """A study's data section on a corpus folder: its val split doubles as the test set."""
    return {
        "train": str(slice_dir / "train"),
        "valid": str(slice_dir / "val"),
        "test": str(slice_dir / "val"),
        "max_len": 40,
        "max_valid_pairs": 20,
    }


def write_study_config(folder, name, model, data, tokenizer, **data_extra):
    """``folder/<name>.yaml``: a tiny ``model`` of ``TINY_RUN_MODELS`` for ``compare``."""
    cfg = {
        "name": name,
        "data": {**data, **data_extra},
        "tokenizer": tokenizer,
        "model": {**TINY_RUN_MODELS[model], "dropout": 0.0},
        "train": {"max_steps": 50, "batch_tokens": 800, "valid_every": 100, "seed": 1},
        "decode": {"batch_size": 64, "max_len_a": 1.0, "max_len_b": 5},
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def write_staged_config(folder, name, model, data):
    """``folder/<name>.yaml``: a tiny ``model`` for the two-stage study on real text (joined
    lines up to k = 3 in training and validation)."""
    cfg = {
        "name": name,
        "data": {**data, "concat_k": 3, "valid_concat_k": 3},
        "tokenizer": {"vocab_size": 300},
        "model": {**TINY_RUN_MODELS[model], "dropout": 0.0},
        "train": {"max_steps": 50, "batch_tokens": 800, "seed": 1, "lr": 0.003},
        "decode": {"batch_size": 64, "max_len_a": 1.0, "max_len_b": 5},
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def reverse_data(folder, n: int, max_words: int, max_len: int) -> dict:
    """A reversal corpus of ``n`` training pairs (1..``max_words`` of 6 symbols, seed 3) written
    into ``folder/rev``, and the config ``data`` section that reads it."""
    write_corpus("reverse", n, 1, max_words, 6, folder / "rev", seed=3)
    return {
        "src_lang": "src",
        "tgt_lang": "tgt",
        "train": str(folder / "rev" / "train"),
        "valid": str(folder / "rev" / "val"),
        "test": str(folder / "rev" / "test"),
        "max_len": max_len,
        "max_valid_pairs": 20,
    }

"""The config of tiny training runs: a toy model section of each family (``tiny_model_config``),
whole configs on a corpus (``tiny_config``) and the runs the tests build on them."""

from __future__ import annotations

from pathlib import Path

from seq2seq.config import validate_config
from tests.corpora import SENTENCES, write_split

# The sizes of a toy model of each family, as a config's model section gives them; tests change
# them with the overrides of ``tiny_model_config``.
TINY_SIZES = {
    "rnn": {"emb_size": 16, "hidden_size": 24},
    "rnnencdec": {"emb_size": 16, "hidden_size": 24, "maxout_size": 16},
    "bahdanau": {"emb_size": 16, "hidden_size": 24, "attention_size": 16, "maxout_size": 16},
    "luong": {"emb_size": 16, "hidden_size": 24},
    "transformer": {
        "d_model": 16,
        "n_heads": 2,
        "d_ff": 32,
        "n_encoder_layers": 1,
        "n_decoder_layers": 1,
    },
}


def tiny_model_config(family: str, **overrides) -> dict:
    """The ``model`` section of a toy-sized ``family``: ``TINY_SIZES[family]``, then ``overrides``
    (other sizes, ``dropout``, ``max_positions``, ...)."""
    return {"name": family, **TINY_SIZES[family], **overrides}


def tiny_config(family: str, corpus, *, model: dict | None = None, **sections) -> dict:
    """The raw config of a toy-sized run of ``family`` on the files ``corpus/train.*``, validated
    on ``corpus/val.*``: the model section ``tiny_model_config(family, **model)``, a tokenizer of
    400 pieces, and each of ``sections`` (``data``, ``tokenizer``, ``train``, ``decode``) merged
    over the section of its name; ``name="x"`` names the run."""
    raw = {
        "data": {"train": str(Path(corpus) / "train"), "valid": str(Path(corpus) / "val")},
        "tokenizer": {"vocab_size": 400},
        "model": tiny_model_config(family, **(model or {})),
    }
    for key, value in sections.items():
        raw[key] = {**raw[key], **value} if isinstance(raw.get(key), dict) else value
    return raw


# The families of the study tests and the synthetic runs, a narrower encoder than decoder.
TINY_RUN_MODELS = {
    "rnn": tiny_model_config("rnn", encoder_hidden_size=12),
    "rnnencdec": tiny_model_config("rnnencdec", encoder_hidden_size=12),
    "bahdanau": tiny_model_config("bahdanau", encoder_hidden_size=12),
    "transformer": tiny_model_config("transformer"),
}


def synth_run_raw(corpus, model: str = "rnn", dropout: float = 0.0, **train) -> dict:
    """The raw config of a tiny run on ``synth_corpus`` (its tokenizer is ``synth_tokenizer``'s
    section): 300-token batches, one log line per update, validation by loss on 10 pairs."""
    return tiny_config(
        model,
        corpus,
        model={**TINY_RUN_MODELS[model], "dropout": dropout},
        name=model,
        data={"max_len": 40, "max_valid_pairs": 10},
        tokenizer={"vocab_size": 200},
        train={
            "batch_tokens": 300,
            "valid_every": 1000,
            "log_every": 1,
            "num_threads": 1,
            "valid_bleu": False,
            "best_metric": "loss",
            "seed": 1,
            **train,
        },
        decode={"batch_size": 16, "max_len_b": 5},
    )


def synth_run_config(corpus, model: str = "rnn", dropout: float = 0.0, **train):
    return validate_config(synth_run_raw(corpus, model, dropout, **train))


# The training tests' model: a tiny bahdanau without dropout.
SMALL_RUN_MODEL = tiny_model_config("bahdanau", dropout=0.0)


def small_run_config(corpus, model: dict | None = None, **train_cfg):
    """A run of ``model`` (default ``SMALL_RUN_MODEL``) on 200 pairs of ``corpus``, 6 updates of
    800-token batches, one log line per update, no validation."""
    raw = tiny_config(
        "bahdanau",
        corpus,
        model={"dropout": 0.0},
        name="t",
        data={"max_len": 60, "max_train_pairs": 200, "max_valid_pairs": 20},
        train={
            "max_steps": 6,
            "batch_tokens": 800,
            "valid_every": 1000,
            "lr": 0.003,
            "seed": 1,
            "log_every": 1,
            "num_threads": 1,
            **train_cfg,
        },
        decode={"batch_size": 50},
    )
    if model is not None:
        raw["model"] = model
    return validate_config(raw)


def copy_run_config(tmp_path, train=None, valid=None, data=None, tokenizer=None, **train_cfg):
    """Two updates of a Transformer (d_model 32, ``max_positions`` 40) on the copy corpus (the 12
    ``SENTENCES`` x3, target = source; ``data.max_len`` 30) with a ``word`` tokenizer, validated on
    its first 4 every 2 updates, 256-token batches; ``train`` / ``valid`` replace the corpus."""
    d = tmp_path / "data"
    d.mkdir(exist_ok=True)
    raw = tiny_config(
        "transformer",
        d,
        model={"d_model": 32, "d_ff": 64, "max_positions": 40, "dropout": 0.0},
        name="toy",
        data={
            "train": train or write_split(d, "train", SENTENCES * 3),
            "valid": valid or write_split(d, "valid", SENTENCES[:4]),
            "max_len": 30,
            **(data or {}),
        },
        tokenizer={"type": "word", "vocab_size": 64, **(tokenizer or {})},
        train={
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
        decode={"batch_size": 16, "max_len_b": 5},
    )
    return validate_config(raw)

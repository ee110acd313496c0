"""Three tiny trained runs (rnn, bahdanau, transformer) on a synthetic reversal corpus, for the
server's tests; each trains in a few seconds on a CPU."""

from __future__ import annotations

from pathlib import Path

from seq2seq.config import validate_config
from seq2seq.study.synth import write_corpus
from tests.toys import tiny_model_config

MODELS = {
    "rnn": tiny_model_config("rnn", hidden_size=32, encoder_hidden_size=16),
    "bahdanau": tiny_model_config("bahdanau", hidden_size=32, encoder_hidden_size=16),
    "transformer": tiny_model_config(
        "transformer",
        d_model=32,
        d_ff=64,
        n_encoder_layers=2,
        n_decoder_layers=2,
        max_positions=64,
    ),
}
STEPS = 30


def train_tiny_runs(folder: Path) -> dict[str, Path]:
    """Write a reversal corpus (symbols s0..s9, 2-8 long) into ``folder/data`` and train each
    model ``STEPS`` updates into ``folder/<name>``; returns name -> run folder."""
    from seq2seq.training.loop import train

    data = folder / "data"
    write_corpus("reverse", 600, 2, 8, 10, data, seed=3)
    runs = {}
    for name, model in MODELS.items():
        cfg = validate_config(
            {
                "name": f"tiny-{name}",
                "data": {
                    "train": str(data / "train"),
                    "valid": str(data / "val"),
                    "src_lang": "src",
                    "tgt_lang": "tgt",
                    "max_valid_pairs": 20,
                    "max_len": 20,
                },
                "tokenizer": {"vocab_size": 40},
                "model": {"dropout": 0.0, **model},
                "train": {
                    "max_steps": STEPS,
                    "batch_tokens": 600,
                    "valid_every": STEPS,
                    "valid_bleu": False,
                    "best_metric": "loss",
                    "lr": 0.005,
                    "seed": 1,
                    "device": "cpu",
                },
                "decode": {"batch_size": 4},
            }
        )
        train(cfg, folder / name)
        runs[name] = folder / name
    return runs

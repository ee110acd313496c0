"""``seq2seq/config/sections.py``: the data and train sections' own checks (stop rules, backends,
teacher-forcing schedules, precision)."""

from __future__ import annotations

import pytest

from seq2seq.config import ConfigError, load_config, validate_config
from tests.toys import small_run_config


def test_a_token_budget_is_a_stop_rule():
    from seq2seq.config import ConfigError

    cfg = load_config(None, ["train.max_tokens=5000"])
    assert (cfg.train.max_tokens, cfg.train.max_epochs) == (5000, None)
    with pytest.raises(ConfigError, match="set at least one of .*max_time, max_tokens") as e:
        load_config(None, ["train.lr=0.01"])
    assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="train.max_tokens: Input should be greater than"):
        load_config(None, ["train.max_steps=5", "train.max_tokens=0"])


def test_disk_backends_refuse_concatenation():
    with pytest.raises(ConfigError, match="concat_k > 1 needs backend 'memory'"):
        validate_config({"data": {"backend": "arrow", "concat_k": 2}})
    with pytest.raises(ConfigError, match="data.backend"):
        validate_config({"data": {"backend": "mmap"}})


@pytest.mark.parametrize(
    ("train_cfg", "model", "needle"),
    [
        ({"teacher_forcing": {"schedule": "linear"}}, None, "needs decay_steps"),
        ({"teacher_forcing": {"schedule": "exponential", "k": 2}}, None, "k between 0 and 1"),
        (
            {"teacher_forcing": {"schedule": "constant", "start": 0.5}},
            {"name": "transformer", "d_model": 32, "n_heads": 2},
            "scheduled sampling is for the models rnn, .*; remove it for transformer",
        ),
        ({"teacher_forcing": {"kk": 1}}, None, "train.teacher_forcing.kk: unknown key"),
        ({"precision": "fp16", "device": "cpu"}, None, "fp16 needs CUDA"),
    ],
)
def test_train_config_rejects(synth_corpus, train_cfg, model, needle):
    with pytest.raises(ConfigError, match=needle):
        small_run_config(synth_corpus, model, **train_cfg)

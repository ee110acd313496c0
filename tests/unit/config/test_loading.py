"""``seq2seq/config/loading.py``: one-line config errors -- an unknown key with the key it may have
meant and the file or ``--set`` that gave it, a number out of range with its range."""

from __future__ import annotations

import pytest

from seq2seq.config import ConfigError, load_config, validate_config
from seq2seq.models.configs import MODEL_NAMES


def test_a_key_of_another_model_names_the_model_its_keys_and_the_models_that_have_it(tmp_path):
    from seq2seq.config import ConfigError, load_config

    cfg = tmp_path / "t.yaml"
    cfg.write_text("model:\n  name: transformer\n")
    with pytest.raises(ConfigError) as e:
        load_config(cfg, ["model.hidden_size=128"])
    msg = str(e.value)
    assert "did you mean model.hidden_size" not in msg
    assert (
        "model.hidden_size: unknown key of the transformer model (its keys: name, d_model, "
        "n_heads, " in msg
    )
    assert "; hidden_size is a key of rnn, bahdanau, rnnencdec, luong" in msg
    with pytest.raises(ConfigError, match=r"model\.n_head: unknown key of the transformer model; "):
        load_config(cfg, ["model.n_head=4"])
    with pytest.raises(ConfigError, match=r"did you mean model\.n_heads\?"):
        load_config(cfg, ["model.n_head=4"])


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (["train.lr=.inf"], "train.lr: Input should be a finite number, not inf (valid: a finite "
         "number > 0; given in --set)"),
        (["train.lr=.nan"], "train.lr: Input should be a finite number, not nan (valid: a finite "
         "number > 0; given in --set)"),
        (["train.betas=[0.9, 1.2]"], "train.betas[1]: Input should be less than 1, not 1.2 "
         "(valid: a finite number >= 0 and < 1; given in --set)"),
        (["train.betas=[-0.1, 0.98]"], "train.betas[0]: Input should be greater than or equal to "
         "0, not -0.1 (valid: a finite number >= 0 and < 1; given in --set)"),
        (["train.min_lr=0.01"], "train: min_lr (0.01) must not exceed lr (0.001)"),
        (["train.weight_decay=.inf"], "train.weight_decay: Input should be a finite number, not "
         "inf (valid: a finite number >= 0; given in --set)"),
        (["train.clip_norm=.inf"], "train.clip_norm: Input should be a finite number"),
        (["train.max_time=inf"], "train.max_time: Input should be a finite number, not inf"),
        (["train.teacher_forcing={schedule: inverse_sigmoid, k: .inf}"],
         "train.teacher_forcing.k: Input should be a finite number, not inf (valid: a finite "
         "number > 0; given in --set)"),
        (["train.schedule=cosine", "train.warmup_steps=5", "train.decay_steps=3"],
         "train: warmup_steps (5) must be below decay_steps (3) under schedule 'cosine'"),
        (["decode.length_penalty=.inf"], "decode.length_penalty: Input should be a finite "
         "number, not inf (valid: a finite number >= 0 and <= 10; given in --set)"),
        (["decode.max_len_a=.inf"], "decode.max_len_a: Input should be a finite number"),
        (["decode={method: sample, temperature: .inf}"], "decode.temperature: Input should be a "
         "finite number, not inf (valid: a finite number > 0; given in --set)"),
        (["decode={method: sample, top_p: 1.5}"], "decode.top_p: Input should be less than or "
         "equal to 1, not 1.5 (valid: a finite number > 0 and <= 1; given in --set)"),
        (["model={name: rnn, dropout: .nan}"], "model.dropout: Input should be a finite number, "
         "not nan (valid: a finite number >= 0 and < 1; given in --set)"),
        (["train.seed=-1"], "train.seed: Input should be greater than or equal to 0, not -1 "
         "(valid: an integer >= 0 and <= 4294967295; given in --set)"),
    ],
)  # fmt: skip
def test_a_number_out_of_range_is_refused_with_its_range(overrides, says):
    with pytest.raises(ConfigError) as e:
        load_config(None, [*overrides, "train.max_steps=1"])
    msg = str(e.value)
    assert msg.startswith("config: ") and says in msg and "\n" not in msg, msg


def test_a_number_out_of_range_is_blamed_on_its_file(tmp_path):
    (tmp_path / "base.yaml").write_text("train:\n  max_steps: 5\n  betas: [0.9, 1.0]\n")
    (tmp_path / "a.yaml").write_text("base: base.yaml\nname: a\ntrain:\n  lr: .inf\n")
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path / "a.yaml")
    assert str(e.value) == (
        f"{tmp_path / 'a.yaml'}: train.lr: Input should be a finite number, not inf (valid: a "
        "finite number > 0); train.betas[1]: Input should be less than 1, not 1.0 (valid: a "
        f"finite number >= 0 and < 1; given in {tmp_path / 'base.yaml'})"
    )


def test_validate_config_checks_ranges_too():
    with pytest.raises(ConfigError) as e:
        validate_config({"train": {"max_steps": 1, "betas": [0.9, 1.2]}}, "run.pt")
    assert str(e.value) == (
        "run.pt: train.betas[1]: Input should be less than 1, not 1.2 (valid: a finite number "
        ">= 0 and < 1)"
    )
    assert validate_config({"train": {"max_steps": 1, "betas": [0.0, 0.999]}}).train.betas == (
        0.0,
        0.999,
    )


def test_a_bad_key_is_blamed_on_the_file_or_set_that_gave_it(tmp_path):
    from seq2seq.config import ConfigError

    (tmp_path / "base.yaml").write_text("train:\n  valid_evry: 3\n  max_steps: 5\n")
    (tmp_path / "a.yaml").write_text("base: base.yaml\nname: a\n")
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path / "a.yaml")
    msg = str(e.value)
    assert msg.startswith(f"{tmp_path / 'a.yaml'}: train.valid_evry: unknown key; did you mean")
    assert msg.endswith(f"(given in {tmp_path / 'base.yaml'})") and "\n" not in msg
    (tmp_path / "b.yaml").write_text("name: b\ntrain:\n  max_steps: 5\n")
    with pytest.raises(ConfigError, match=r"train.lrr: unknown key; did you mean train.lr\? \("):
        load_config(tmp_path / "b.yaml", ["train.lrr=1"])
    with pytest.raises(ConfigError, match=r"trian: unknown key; did you mean train\? \(given in"):
        load_config(tmp_path / "b.yaml", ["trian.lr=1"])
    (tmp_path / "c.yaml").write_text("name: c\ntrain:\n  max_steps: 5\n  lrr: 1\n")
    with pytest.raises(ConfigError) as e:  # said in the file named first: nothing added
        load_config(tmp_path / "c.yaml")
    assert str(e.value) == f"{tmp_path / 'c.yaml'}: train.lrr: unknown key; did you mean train.lr?"


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ({"model": {"name": "transformer", "n_head": 4}}, "model.n_head: unknown key"),
        ({"modle": {}}, "modle: unknown key"),
        (
            {"model": {"name": "transformer", "d_model": 30, "n_heads": 4}},
            "d_model (30) must be divisible by n_heads (4)",
        ),
        (
            {"model": {"name": "luong", "score": "dot", "hidden_size": 64}},
            "score 'dot' needs equal encoder and decoder sizes",
        ),
        ({"model": {"name": "gpt"}}, f"unknown model name; choose {', '.join(MODEL_NAMES[:-1])}"),
        ({"train": {"lr": -1, "max_steps": 3}}, "train.lr"),
    ],
)
def test_config_errors_are_one_clear_line(raw, needle):
    with pytest.raises(ConfigError) as e:
        validate_config(raw, "my.yaml")
    msg = str(e.value)
    assert msg.startswith("my.yaml: ")
    assert needle in msg
    assert "\n" not in msg


def test_a_value_from_an_option_names_the_option_not_set(tmp_path):
    """``train --max-steps -1`` said 'given in --set' (a new-user trial)."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: x\n")
    with pytest.raises(ConfigError, match=r"train\.max_steps: .*; given in --max-steps\)"):
        load_config(cfg, ["train.max_steps=-1"], {"train.max_steps": "--max-steps"})
    with pytest.raises(ConfigError, match=r"train\.max_steps: .*; given in --set\)"):
        load_config(cfg, ["train.max_steps=-1"], {"train.seed": "--seed"})
    for bad in ("=5", "train.=5", ".lr=1"):
        with pytest.raises(ConfigError, match=r"the key before '=' is empty or has an empty part"):
            load_config(cfg, [bad])


def test_a_check_across_keys_names_where_each_key_came_from(tmp_path):
    """``best_metric 'bleu' needs valid_bleu: true`` said '(given in --max-steps)' when both keys
    came from the file or --set: any option under train was blamed."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: x\ntrain:\n  best_metric: bleu\n  valid_bleu: false\n")
    max_steps = (["train.max_steps=5"], {"train.max_steps": "--max-steps"})
    with pytest.raises(ConfigError) as e:
        load_config(cfg, *max_steps)
    assert str(e.value) == f"{cfg}: train: best_metric 'bleu' needs valid_bleu: true"
    cfg.write_text("name: x\ntrain:\n  valid_bleu: false\n")
    with pytest.raises(ConfigError) as e:
        load_config(cfg, ["train.best_metric=bleu", *max_steps[0]], max_steps[1])
    assert str(e.value).endswith("needs valid_bleu: true (best_metric given in --set)")
    (tmp_path / "base.yaml").write_text("train:\n  best_metric: bleu\n")
    cfg.write_text("base: base.yaml\nname: x\n")
    with pytest.raises(ConfigError) as e:
        load_config(cfg, ["train.valid_bleu=false", *max_steps[0]], max_steps[1])
    assert str(e.value).endswith(
        f"(best_metric given in {tmp_path / 'base.yaml'}; valid_bleu given in --set)"
    )

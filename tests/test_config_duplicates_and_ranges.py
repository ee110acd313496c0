"""A key written twice and a number out of range are refused where the config loads, in one line
naming the file (or --set), the key and what to do; nothing is written to the run folder."""

from __future__ import annotations

import pytest
import yaml

from seq2seq.config import (
    ConfigError,
    DecodeConfig,
    DuplicateKeyError,
    load_config,
    load_yaml,
    validate_config,
)

from .toys import run_main

# ---- a key or a section given twice -------------------------------------------------------------


def test_a_key_given_twice_in_a_config_is_refused_naming_both_lines(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("name: x\ntrain:\n  max_steps: 5\n  lr: 0.001\n  max_steps: 7\n")
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert str(e.value) == f"{p}: train.max_steps is given twice (lines 3 and 5); keep one"


def test_a_section_given_twice_is_refused(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("train:\n  max_steps: 5\nname: x\ntrain:\n  lr: 0.01\n")
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert str(e.value) == f"{p}: train is given twice (lines 1 and 4); keep one"


def test_a_key_given_twice_in_a_base_file_names_the_base(tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text("train:\n  max_steps: 5\n  max_steps: 6\n")
    (tmp_path / "a.yaml").write_text("base: base.yaml\nname: a\n")
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path / "a.yaml")
    assert str(e.value) == f"{base}: train.max_steps is given twice (lines 2 and 3); keep one"


def test_a_set_value_or_a_set_key_given_twice_is_refused():
    with pytest.raises(ConfigError) as e:
        load_config(None, ["train={max_steps: 1, max_steps: 2}"])
    assert str(e.value) == (
        "--set 'train={max_steps: 1, max_steps: 2}': train.max_steps is given twice; keep one"
    )
    with pytest.raises(ConfigError) as e:
        load_config(None, ["train.max_steps=1", "train.lr=0.1", "train.max_steps=2"])
    assert str(e.value).startswith(
        "command line: train.max_steps is given twice (train.max_steps=1, then train.max_steps=2"
    )
    with pytest.raises(ConfigError, match="train.lr is given twice"):  # the section replaces it
        load_config(None, ["train.lr=0.1", "train={max_steps: 1}"])
    # a section, then a key inside it, loses nothing
    cfg = load_config(None, ["train={max_steps: 1}", "train.lr=0.1"])
    assert (cfg.train.max_steps, cfg.train.lr) == (1, 0.1)


def test_the_loader_finds_duplicates_in_nested_lists_and_allows_merge_overrides():
    with pytest.raises(DuplicateKeyError) as e:
        load_yaml("a:\n  - b: 1\n  - b: 2\n    c: 3\n    b: 4\n")
    assert str(e.value) == "a[1].b is given twice (lines 3 and 5); keep one"
    assert isinstance(e.value, yaml.YAMLError)  # callers that catch YAML errors still do
    # "1" and 1 are different keys; a key beside a merge overrides the merged one (YAML's rule)
    assert load_yaml("1: a\n'1': b\n") == {1: "a", "1": "b"}
    assert load_yaml("x: &x {k: 1, j: 2}\ny:\n  <<: *x\n  k: 3\n") == {
        "x": {"k": 1, "j": 2},
        "y": {"k": 3, "j": 2},
    }


def test_a_tuned_decode_file_with_a_key_twice_is_refused(tmp_path):
    from seq2seq.checkpoint import CheckpointError, with_tuned_decode
    from seq2seq.config import Config

    (tmp_path / "decode.yaml").write_text("method: beam\nbeam_size: 4\nbeam_size: 5\n")
    with pytest.raises(CheckpointError) as e:
        with_tuned_decode(Config(), tmp_path)
    msg = str(e.value)
    assert "decode.yaml" in msg and "beam_size is given twice (lines 2 and 3)" in msg
    assert "\n" not in msg


def test_train_refuses_a_config_with_a_key_twice_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.yaml").write_text("name: x\ntrain:\n  max_steps: 5\n  max_steps: 7\n")
    code, err = run_main(monkeypatch, capsys, "train", "x.yaml")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "x.yaml: train.max_steps is given twice (lines 3 and 4); keep one" in err
    assert not (tmp_path / "runs").exists()


# ---- numbers: finite and within range -------------------------------------------------------


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
        (["train.schedule=cosine", "train.warmup_steps=5"],
         "train: warmup_steps (5) must be below max_steps (1) under schedule 'cosine'"),
        (["decode.length_penalty=.inf"], "decode.length_penalty: Input should be a finite "
         "number, not inf (valid: a finite number >= 0; given in --set)"),
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


def test_a_decoding_option_out_of_range_names_the_option_and_its_range():
    from seq2seq.commands.common import UserError, user_errors

    with pytest.raises(UserError) as e, user_errors():
        DecodeConfig().with_method("sample", temperature=float("inf"))
    assert str(e.value) == (
        "--temperature: Input should be a finite number, not inf (valid: a finite number > 0)"
    )
    with pytest.raises(UserError) as e, user_errors():
        DecodeConfig().model_copy(update={"length_penalty": float("nan")})
    assert str(e.value).startswith("--length-penalty: Input should be a finite number, not nan")


@pytest.mark.parametrize("bad", ["train.lr=.inf", "train.betas=[0.9, 1.2]"])
def test_train_refuses_a_bad_number_before_writing_anything(tmp_path, monkeypatch, capsys, bad):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.yaml").write_text("name: x\nrun_dir: run\ntrain:\n  max_steps: 5\n")
    code, err = run_main(monkeypatch, capsys, "train", "x.yaml", "--set", bad)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    key = bad.split("=")[0]
    assert f"x.yaml: {key}" in err and "valid: a finite number" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.yaml"]


def test_an_empty_config_or_one_that_is_not_utf8_is_refused_in_one_line(tmp_path):
    """An empty file would otherwise train the defaults (a full-size bahdanau on Multi30k); a
    Latin-1 byte would otherwise end in a UnicodeDecodeError."""
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(ConfigError, match="empty.yaml: the config is empty; start from one in"):
        load_config(empty)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: ok\ntrain:\n  max_steps: 3\nname2: \xe9t\n")
    with pytest.raises(ConfigError, match=r"latin.yaml line 4: not UTF-8 \(byte 0xe9\)"):
        load_config(latin)

"""``seq2seq/config/reading.py``: a key or section written twice is refused naming both lines, an
empty or non-UTF-8 config is one line, and a config derives from its ``base:`` key by key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from seq2seq.config import ConfigError, load_config, load_yaml
from seq2seq.config.reading import DuplicateKeyError


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


def test_a_config_derives_from_its_base_key_by_key(tmp_path):
    (tmp_path / "zoo").mkdir()
    (tmp_path / "zoo" / "base.yaml").write_text(
        "name: base\nmodel: {name: transformer, d_model: 64, n_heads: 4, d_ff: 128}\n"
        "train: {max_time: 20, lr: 0.001}\n"
    )
    (tmp_path / "best.yaml").write_text(
        "base: zoo/base.yaml\nname: best\nmodel: {d_ff: 256}\ntrain: {max_time: 60}\n"
    )
    cfg = load_config(tmp_path / "best.yaml", ["train.lr=0.002"])
    assert cfg.name == "best"
    assert (cfg.model.d_model, cfg.model.n_heads, cfg.model.d_ff) == (64, 4, 256)
    assert (cfg.train.max_time, cfg.train.lr) == (60, 0.002)


def test_a_derived_config_trains_into_its_own_folder_not_its_bases(tmp_path):
    (tmp_path / "zoo.yaml").write_text("name: zoo\nrun_dir: runs/zoo/x\n")
    (tmp_path / "best.yaml").write_text("base: zoo.yaml\nname: best\n")
    (tmp_path / "mine.yaml").write_text("base: zoo.yaml\nname: mine\nrun_dir: elsewhere\n")
    assert load_config(tmp_path / "zoo.yaml").run_dir == "runs/zoo/x"
    assert load_config(tmp_path / "best.yaml").run_dir is None  # so train picks runs/best
    assert load_config(tmp_path / "mine.yaml").run_dir == "elsewhere"


def test_the_zoo_configs_train_where_make_demo_does():
    """``seq2seq train configs/multi30k/X.yaml`` and ``make demo`` (scripts/train_zoo.sh with
    RUNS=runs/multi30k: RUNS/<file stem>) use one folder."""
    configs = sorted(Path("configs/multi30k").glob("*.yaml"))
    assert configs
    for path in configs:
        assert load_config(path).run_dir == f"runs/multi30k/{path.stem}", path


@pytest.mark.parametrize(
    ("files", "needle"),
    [
        ({"a.yaml": "base: a.yaml\n"}, "leads back to itself"),
        ({"a.yaml": "base: b.yaml\n", "b.yaml": "base: a.yaml\n"}, "leads back to itself"),
        ({"a.yaml": "base: missing.yaml\n"}, "a.yaml: base missing.yaml: config file not found"),
        ({"a.yaml": "base: [x]\n"}, "base must be the path of another config"),
    ],
)
def test_a_bad_base_is_refused_in_one_line(tmp_path, files, needle):
    from seq2seq.config import ConfigError

    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError, match=needle) as e:
        load_config(tmp_path / "a.yaml")
    assert "\n" not in str(e.value)

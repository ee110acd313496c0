"""An unknown config key named as another toolkit names the setting (fairseq, Joey NMT,
OpenNMT-py), misspelt so, or put in the wrong section gets the key it means, in a file and in
``--set`` alike (``seq2seq/config/aliases.py``)."""

from __future__ import annotations

import pytest
import yaml

from seq2seq.config import ConfigError, load_config
from seq2seq.config.aliases import ALIASES
from seq2seq.config.loading import _keys_of
from tests.toys import run_main

CASES = {
    "train.lerning_rate": "did you mean train.lr? (learning_rate is another toolkit's name for it)",
    "decode.beam": "did you mean decode.beam_size? (beam is another toolkit's name for it)",
    "train.warmup": "did you mean train.warmup_steps? (warmup is another toolkit's name for it)",
    "train.warmup_updates": "did you mean train.warmup_steps?",
    "train.dropout": "did you mean model.dropout? (dropout is a key of the model section)",
    "train.beam_size": "did you mean decode.beam_size? (beam_size is a key of the decode section)",
    "decode.lenpen": "did you mean decode.length_penalty? (lenpen is another toolkit's name",
    "train.max_update": "did you mean train.max_steps? (max_update is another toolkit's name",
    "train.batch_size": "did you mean train.batch_tokens? (batch_size is another toolkit's name",
    "train.max_grad_norm": "did you mean train.clip_norm? (max_grad_norm is another toolkit's",
    "learning_rate": "did you mean train.lr? (learning_rate is another toolkit's name for it)",
    "model.label_smoothing": "unknown key of the transformer model; did you mean "
    "train.label_smoothing? (label_smoothing is a key of the train section)",
    "model.ffn_embed_dim": "unknown key of the transformer model; did you mean model.d_ff? "
    "(ffn_embed_dim is another toolkit's name for it)",
}


def write(tmp_path, key: str, value) -> str:
    *parents, last = key.split(".")
    raw = {"name": "x", "train": {"max_steps": 5}, "model": {"name": "transformer"}}
    node = raw
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(raw))
    return str(path)


@pytest.mark.parametrize("key", list(CASES))
def test_an_unknown_key_gets_the_key_it_means_in_a_file_and_in_set(tmp_path, key):
    with pytest.raises(ConfigError) as e:
        load_config(write(tmp_path, key, 1))
    assert f"{key}: unknown key" in str(e.value) and CASES[key] in str(e.value)
    with pytest.raises(ConfigError) as e:
        load_config(write(tmp_path, "train.seed", 1), [f"{key}=1"])
    assert CASES[key] in str(e.value) and "(given in --set)" in str(e.value)


def test_a_key_close_in_its_own_section_is_still_preferred_and_nonsense_gets_no_guess(tmp_path):
    with pytest.raises(ConfigError, match=r"train\.lrr: unknown key; did you mean train\.lr\?"):
        load_config(write(tmp_path, "train.lrr", 1))
    with pytest.raises(ConfigError) as e:
        load_config(write(tmp_path, "train.zzzqqq", 1))
    assert str(e.value).endswith("train.zzzqqq: unknown key")


def test_every_alias_points_at_a_real_key():
    keys = _keys_of(None)
    for name, targets in ALIASES.items():
        for key in targets:
            section, _, field = key.partition(".")
            assert field in keys[section], (name, key)


def test_train_says_it_in_one_line_exit_2(tmp_path, monkeypatch, capsys):
    code, err = run_main(
        monkeypatch, capsys, "train", write(tmp_path, "train.seed", 1), "--set", "decode.beam=5"
    )
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "decode.beam: unknown key; did you mean decode.beam_size?" in err

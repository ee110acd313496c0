"""Every shipped config loads and builds its model; embedding sharing, tying and the Transformer's
input scaling and positions follow their papers."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from seq2seq.config import LuongConfig, RNNConfig, TransformerConfig, load_config
from seq2seq.models import build_model
from seq2seq.models.transformer import sinusoidal_positions

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "configs").rglob("*.yaml"))


def test_config_module_imports_without_torch():
    """Validating a config (the model sections come from seq2seq/models/configs.py) needs no torch:
    ``seq2seq.config`` and the ``seq2seq.models`` package import none."""
    code = (
        "import sys, seq2seq.config as c; "
        "c.validate_config({'model': {'name': 'transformer'}}); "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_configs_are_shipped():
    names = {p.relative_to(ROOT / "configs").as_posix() for p in SHIPPED}
    assert {f"multi30k/{m}.yaml" for m in ("rnn", "bahdanau", "luong_dot", "transformer")} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.relative_to(ROOT / "configs").as_posix())
def test_shipped_config_loads_and_builds(path):
    cfg = load_config(path)
    v = cfg.tokenizer.vocab_size
    model = build_model(cfg.model, v, v, joint_vocab=cfg.tokenizer.joint)
    src = torch.randint(4, v, (2, 5))
    mask = torch.ones(2, 5, dtype=torch.bool)
    tgt_in = torch.randint(4, v, (2, 3))
    with torch.no_grad():
        logits = model.eval()(src, mask, tgt_in)
    assert logits.shape == (2, 3, v)
    assert torch.isfinite(logits).all()


def test_joint_vocabulary_shares_one_matrix_for_source_target_and_output():
    """Vaswani et al. 2017, §3.4: one matrix for both embeddings and the pre-softmax layer."""
    cfg = TransformerConfig(d_model=16, n_heads=2, n_encoder_layers=1, n_decoder_layers=1)
    joint = build_model(cfg, 30, 30, joint_vocab=True)
    separate = build_model(cfg, 30, 30, joint_vocab=False)
    assert joint.src_embed is joint.tgt_embed
    assert separate.src_embed is not separate.tgt_embed
    assert separate.num_parameters() - joint.num_parameters() == 30 * 16
    # the output projection is the target embedding: changing one row moves that token's logit only
    joint.eval()
    src, mask, tgt_in = (
        torch.tensor([[5, 6, 7]]),
        torch.ones(1, 3, dtype=torch.bool),
        torch.tensor([[8]]),
    )
    with torch.no_grad():
        before = joint(src, mask, tgt_in)
        # a random direction: the final LayerNorm's output sums to ~0, so a constant shift of the
        # row moves the logit only by rounding error, and whether it moves at all is a coin toss
        joint.tgt_embed.weight[20] += torch.randn(16, generator=torch.Generator().manual_seed(0))
        after = joint(src, mask, tgt_in)
    changed = (before != after).squeeze().nonzero().flatten().tolist()
    assert changed == [20]


@pytest.mark.parametrize("name", ["rnn", "bahdanau", "luong"])
def test_tied_decoder_embeddings_are_the_output_matrix(name):
    """Press & Wolf 2017: W_o = E^T; the tied model has exactly V x E fewer weights."""
    extra = {"maxout_size": 8} if name == "bahdanau" else {}
    sizes = dict(name=name, emb_size=8, hidden_size=8, dropout=0.0, **extra)
    from seq2seq.config import BahdanauConfig

    cls = {"rnn": RNNConfig, "bahdanau": BahdanauConfig, "luong": LuongConfig}[name]
    tied = build_model(cls(tie_embeddings=True, **sizes), 20, 25, joint_vocab=False)
    untied = build_model(cls(tie_embeddings=False, **sizes), 20, 25, joint_vocab=False)
    assert tied.out.tie_with is tied.tgt_embed
    assert untied.num_parameters() - tied.num_parameters() == 25 * 8


def test_sinusoidal_positions_match_the_formula():
    """PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(pos / 10000^(2i/D)) (§3.5)."""
    d = 6
    pe = sinusoidal_positions(50, d)
    for pos in (0, 1, 7, 49):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-5)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-5)


def test_transformer_input_is_scaled_embedding_plus_position():
    """§3.4: embeddings are multiplied by sqrt(d_model) before the positions are added."""
    cfg = TransformerConfig(
        d_model=16, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, dropout=0
    )
    model = build_model(cfg, 30, 30, joint_vocab=False).eval()
    ids = torch.tensor([[4, 9, 3]])
    x = model._embed(model.src_embed, ids)
    expected = model.src_embed.weight[ids] * 4.0 + sinusoidal_positions(3, 16)
    torch.testing.assert_close(x, expected)
    # decoding step t (incremental) uses position t
    x_t = model._embed(model.tgt_embed, ids[:, 2:], start=2)
    torch.testing.assert_close(
        x_t, model.tgt_embed.weight[ids[:, 2:]] * 4.0 + sinusoidal_positions(3, 16)[2:]
    )


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


def test_the_best_configs_differ_from_the_zoo_only_in_training():
    """configs/multi30k/best/ derive from the zoo: same data, tokenizer and model."""
    for path in sorted((ROOT / "configs" / "multi30k" / "best").glob("*.yaml")):
        best, zoo = load_config(path), load_config(ROOT / "configs" / "multi30k" / path.name)
        assert (best.data, best.tokenizer, best.model) == (zoo.data, zoo.tokenizer, zoo.model)
        assert best.train.max_time == 60 and best.train.patience and best.train.keep_best >= 5


def test_a_token_budget_is_a_stop_rule():
    from seq2seq.config import ConfigError

    cfg = load_config(None, ["train.max_tokens=5000"])
    assert (cfg.train.max_tokens, cfg.train.max_epochs) == (5000, None)
    with pytest.raises(ConfigError, match="set at least one of .*max_time, max_tokens") as e:
        load_config(None, ["train.lr=0.01"])
    assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="train.max_tokens: Input should be greater than"):
        load_config(None, ["train.max_steps=5", "train.max_tokens=0"])

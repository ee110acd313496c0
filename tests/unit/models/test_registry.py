"""``seq2seq/models/registry.py``: every registered model has a config class and a toy, and
``joint_vocab`` shares one matrix for source, target and output."""

from __future__ import annotations

import torch

from seq2seq.config import validate_config
from seq2seq.models import MODELS, build_model
from seq2seq.models.configs import MODEL_CONFIGS, MODEL_NAMES, TransformerConfig
from tests.toys import TINY_MODELS


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


def test_registry_matches_the_config_union_and_the_toys():
    """Every registered model has a config class in the ``model:`` union and a toy; no config
    class or toy names an unregistered model."""
    assert list(MODELS) == list(MODEL_NAMES)
    for name, cfg_cls in zip(MODEL_NAMES, MODEL_CONFIGS, strict=True):
        assert validate_config({"model": {"name": name}}).model.__class__ is cfg_cls
        assert any(type(toy) is cfg_cls for toy in TINY_MODELS.values()), f"no toy for {name}"
        assert isinstance(MODELS[name].has_attention, bool)
    assert {toy.name for toy in TINY_MODELS.values()} <= set(MODELS)

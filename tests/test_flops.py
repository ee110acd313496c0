"""The model-FLOP count that bench-train and gpu_check report (seq2seq/flops.py).

Expected numbers are worked out by hand from the toy architectures in tests/toys.py.
"""

from __future__ import annotations

import pytest
import torch

from seq2seq.models.flops import count_weights, step_flops
from tests.toys import TINY_MODELS, tiny_model


def test_transformer_weights_per_token_by_hand():
    # d_model 32, d_ff 64, 2 + 2 layers, target vocabulary 45, output tied to the embedding.
    # source: 2 x (4·32² + 2·32·64) in the encoder + 2 x 2·32² cross-attention keys and values
    # target: 2 x (4·32² + 2·32² + 2·32·64) in the decoder + 32·45 output projection
    w = count_weights(tiny_model("transformer"), TINY_MODELS["transformer"])
    assert (w.src, w.tgt) == (20_480, 21_920)


def test_bahdanau_weights_per_token_and_attention_by_hand():
    # GRU encoder 2 x (3·12·16 + 3·12·12) + U_a 24·20 = 2,496 per source token;
    # W_a 24·20 + GRU 3·24·40 + 3·24·24 + pre-output 64·20 + output 10·45 = 6,818 per target token;
    # attention 3·(2·20 score + 2·24 context) = 264 per (target, source) pair.
    model, cfg = tiny_model("bahdanau"), TINY_MODELS["bahdanau"]
    w = count_weights(model, cfg)
    assert (w.src, w.tgt) == (2_496, 6_818)
    src, tgt = torch.tensor([5, 3]), torch.tensor([4, 2])
    expected = 6 * (2_496 * 8 + 6_818 * 6) + 264 * (4 * 5 + 2 * 3)
    assert step_flops(model, cfg, src, tgt) == pytest.approx(expected)


def test_transformer_attention_matmuls_by_hand():
    model, cfg = tiny_model("transformer"), TINY_MODELS["transformer"]
    src, tgt = torch.tensor([5]), torch.tensor([4])
    dense = 6 * (20_480 * 5 + 21_920 * 4)
    attention = 12 * 32 * (2 * 25 + 2 * (16 + 20))
    assert step_flops(model, cfg, src, tgt) == pytest.approx(dense + attention)


@pytest.mark.parametrize("name", list(TINY_MODELS))
def test_every_parameter_is_placed_once(name):
    model, cfg = tiny_model(name), TINY_MODELS[name]
    w = count_weights(model, cfg)
    placed = [n.split("[")[0] for side in w.names.values() for n in side if "(as the" not in n]
    params = [n for n, _ in model.named_parameters()]
    # the Transformer's cross-attention in_proj is split between source (K, V) and target (Q)
    split = [n for n in params if ".cross_attn.in_proj.weight" in n]
    assert sorted(placed) == sorted(params + split)
    assert w.src > 0 and w.tgt > 0

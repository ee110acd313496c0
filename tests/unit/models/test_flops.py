"""The model-FLOP count that bench-train and gpu_check report (seq2seq/models/flops.py).

Expected numbers are worked out by hand from the toy architectures in tests/toys/models.py.
"""

from __future__ import annotations

import pytest
import torch

from seq2seq.models.flops import count_weights, formula, step_flops
from tests.toys import TINY_MODELS, tiny_model


def test_transformer_weights_per_token_by_hand():
    # d_model 32, d_ff 64, 2 + 2 layers, target vocabulary 45, output tied to the embedding.
    # source: 2 x (4·32² + 2·32·64) in the encoder + 2 x 2·32² cross-attention keys and values
    # target: 2 x (4·32² + 2·32² + 2·32·64) in the decoder + 32·45 output projection
    w = count_weights(tiny_model("transformer"))
    assert (w.src, w.tgt) == (20_480, 21_920)


def test_bahdanau_weights_per_token_and_attention_by_hand():
    # GRU encoder 2 x (3·12·16 + 3·12·12) + U_a 24·20 = 2,496 per source token;
    # W_a 24·20 + GRU 3·24·40 + 3·24·24 + pre-output 64·20 + output 10·45 = 6,818 per target token;
    # attention 3·(2·20 score + 2·24 context) = 264 per (target, source) pair.
    model = tiny_model("bahdanau")
    w = count_weights(model)
    assert (w.src, w.tgt) == (2_496, 6_818)
    src, tgt = torch.tensor([5, 3]), torch.tensor([4, 2])
    expected = 6 * (2_496 * 8 + 6_818 * 6) + 264 * (4 * 5 + 2 * 3)
    assert step_flops(model, src, tgt) == pytest.approx(expected)
    assert formula(model) == "6·(2,496·ΣS + 6,818·ΣT) + 264·Σ(T·S)"


def test_luong_general_keys_run_per_source_token():
    # unidirectional GRU encoder 3·24·16 + 3·24·24 + W_a 24·24 (applied to the keys) = 3,456;
    # attention 3·(2·24 score + 2·24 context) = 288 per pair.
    model = tiny_model("luong_general_uni")
    assert count_weights(model).src == 3_456
    assert model.attention_flops().per_pair == 288


def test_transformer_attention_matmuls_by_hand():
    model = tiny_model("transformer")
    src, tgt = torch.tensor([5]), torch.tensor([4])
    dense = 6 * (20_480 * 5 + 21_920 * 4)
    attention = 12 * 32 * (2 * 25 + 2 * (16 + 20))
    assert step_flops(model, src, tgt) == pytest.approx(dense + attention)


def test_fixed_vector_model_has_no_attention_cost():
    model = tiny_model("rnn")
    src, tgt = torch.tensor([5]), torch.tensor([4])
    w = count_weights(model)
    assert step_flops(model, src, tgt) == pytest.approx(6 * (w.src * 5 + w.tgt * 4))
    assert "Σ(T·S)" not in formula(model)


@pytest.mark.parametrize("name", list(TINY_MODELS))
def test_every_parameter_is_placed_once(name):
    model = tiny_model(name)
    w = count_weights(model)
    placed = [label.split("[")[0] for side in w.names.values() for label in side]
    params = {n: p for n, p in model.named_parameters()}
    # a weight split between sides (the Transformer's fused cross-attention [Q; K; V]) is named
    # once per side, with its rows
    assert set(placed) == set(params)
    for side in w.names.values():
        assert len(side) == len({label.split("[")[0] for label in side})
    split = {n for n in params if placed.count(n) > 1}
    assert all(params[n].dim() == 2 for n in split)
    assert w.src > 0 and w.tgt > 0


@pytest.mark.parametrize("name", list(TINY_MODELS))
def test_flop_sides_name_existing_weights(name):
    """A key naming no parameter (a renamed module) would silently move weights to the target
    side; every key must name a parameter or a module that holds one."""
    model = tiny_model(name)
    params = [n for n, _ in model.named_parameters()]
    for key in model.flop_sides():
        assert any(n == key or n.startswith(key + ".") for n in params), key

"""Invariants every model in the registry must hold (equations: the models' docstrings)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from seq2seq.config import ConfigError, validate_config
from seq2seq.decoding.search import greedy_search
from seq2seq.models import MODELS
from seq2seq.models.configs import MODEL_CONFIGS, MODEL_NAMES
from seq2seq.models.transformer import attention

from .toys import TINY_MODELS, tiny_model

PAD = 0


def _batch(seed: int = 0):
    """3 sources of lengths 7, 4, 2 (right-padded) and 3 targets of length 5."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 40, (3, 7), generator=g)
    src[1, 4:] = PAD
    src[2, 2:] = PAD
    tgt = torch.randint(4, 45, (3, 5), generator=g)
    tgt[:, 0] = 2  # BOS
    return src, src != PAD, tgt


def test_registry_matches_the_config_union_and_the_toys():
    """Every registered model has a config class in the ``model:`` union and a toy; no config
    class or toy names an unregistered model."""
    assert list(MODELS) == list(MODEL_NAMES)
    for name, cfg_cls in zip(MODEL_NAMES, MODEL_CONFIGS, strict=True):
        assert validate_config({"model": {"name": name}}).model.__class__ is cfg_cls
        assert any(type(toy) is cfg_cls for toy in TINY_MODELS.values()), f"no toy for {name}"
        assert isinstance(MODELS[name].has_attention, bool)
    assert {toy.name for toy in TINY_MODELS.values()} <= set(MODELS)


@pytest.mark.parametrize("name", TINY_MODELS)
def test_has_attention_says_whether_decode_step_returns_weights(name):
    model = tiny_model(name)
    src, mask, tgt = _batch()
    state = model.init_state(model.encode(src, mask))
    _, attn, _ = model.decode_step(tgt[:, 0], state, need_attention=True)
    assert (attn is not None) == model.has_attention
    _, attn = model.forward_attention(src, mask, tgt)
    assert (attn is not None) == model.has_attention


@pytest.mark.parametrize("name", TINY_MODELS)
def test_shapes_and_attention_rows(name):
    model = tiny_model(name)
    src, mask, tgt = _batch()
    logits, attn = model.forward_attention(src, mask, tgt)
    assert logits.shape == (3, 5, 45)
    assert torch.isfinite(logits).all()
    if not model.has_attention:
        assert attn is None
        return
    assert attn.shape == (3, 5, 7)
    torch.testing.assert_close(attn.sum(-1), torch.ones(3, 5), atol=1e-6, rtol=0)
    assert (attn.masked_select(~mask[:, None, :].expand_as(attn)) == 0).all()


@pytest.mark.parametrize("name", TINY_MODELS)
def test_padding_invariance(name):
    """A sentence's encoder states, attention and logits do not change when it is batched with
    longer sentences (and so padded)."""
    model = tiny_model(name)
    src, mask, tgt = _batch()
    logits, attn = model.forward_attention(src, mask, tgt)
    enc = model.encode(src, mask)["enc_out"]
    for i in range(3):
        n = int(mask[i].sum())
        alone_src, alone_mask = src[i : i + 1, :n], mask[i : i + 1, :n]
        l1, a1 = model.forward_attention(alone_src, alone_mask, tgt[i : i + 1])
        torch.testing.assert_close(l1[0], logits[i], atol=1e-5, rtol=0)
        e1 = model.encode(alone_src, alone_mask)["enc_out"]
        torch.testing.assert_close(e1[0], enc[i, :n], atol=1e-5, rtol=0)
        if a1 is not None:
            torch.testing.assert_close(a1[0], attn[i, :, :n], atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", TINY_MODELS)
def test_greedy_output_padding_invariant(name):
    model = tiny_model(name)
    src, mask, _ = _batch()
    batched = greedy_search(model, src, mask, max_len_a=1.0, max_len_b=4)
    for i in range(3):
        n = int(mask[i].sum())
        alone = greedy_search(model, src[i : i + 1, :n], mask[i : i + 1, :n], 1.0, 4)[0]
        assert alone.tokens == batched[i].tokens
        assert math.isclose(alone.score, batched[i].score, abs_tol=1e-4)


@pytest.mark.parametrize("name", TINY_MODELS)
def test_causality(name):
    """Changing target tokens after position t changes no logit at positions <= t."""
    model = tiny_model(name)
    src, mask, tgt = _batch()
    base = model(src, mask, tgt)
    for t in range(tgt.shape[1] - 1):
        changed = tgt.clone()
        changed[:, t + 1 :] = (changed[:, t + 1 :] + 7) % 41 + 4
        out = model(src, mask, changed)
        torch.testing.assert_close(out[:, : t + 1], base[:, : t + 1], atol=1e-5, rtol=0)
        assert not torch.allclose(out[:, t + 1 :], base[:, t + 1 :])


@pytest.mark.parametrize("name", TINY_MODELS)
def test_incremental_decoding_matches_teacher_forcing(name):
    model = tiny_model(name)
    src, mask, tgt = _batch()
    logits, attn = model.forward_attention(src, mask, tgt)
    state = model.init_state(model.encode(src, mask))
    steps, attns = [], []
    for t in range(tgt.shape[1]):
        step_logits, a, state = model.decode_step(tgt[:, t], state, need_attention=True)
        steps.append(step_logits)
        attns.append(a)
    torch.testing.assert_close(
        torch.log_softmax(torch.stack(steps, 1), -1),
        torch.log_softmax(logits, -1),
        atol=1e-5,
        rtol=0,
    )
    if attn is not None:
        torch.testing.assert_close(torch.stack(attns, 1), attn, atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", TINY_MODELS)
def test_cross_attention_maps_hold_every_layer_and_head(name):
    """(B, L, H, T, S) maps: rows are distributions over the real source positions, and the
    alignment forward_attention returns is their last layer's mean over heads."""
    model = tiny_model(name)
    src, mask, tgt = _batch()
    maps = model.cross_attention_maps(src, mask, tgt)
    _, attn = model.forward_attention(src, mask, tgt)
    if attn is None:
        assert maps is None
        return
    cfg = TINY_MODELS[name]
    layers, heads = (cfg.n_decoder_layers, cfg.n_heads) if cfg.name == "transformer" else (1, 1)
    assert maps.shape == (3, layers, heads, 5, 7)
    torch.testing.assert_close(maps.sum(-1), torch.ones(3, layers, heads, 5), atol=1e-5, rtol=0)
    assert (maps.masked_select(~mask[:, None, None, None, :].expand_as(maps)) == 0).all()
    torch.testing.assert_close(maps[:, -1].mean(1), attn, atol=1e-6, rtol=0)
    if heads > 1:  # the heads are the model's own, not one map repeated
        assert not torch.allclose(maps[:, -1, 0], maps[:, -1, 1])


@pytest.mark.parametrize("name", TINY_MODELS)
def test_reorder_state_moves_rows(name):
    """Decoding after reorder_state(index) equals decoding rows in that order."""
    model = tiny_model(name)
    src, mask, tgt = _batch()
    # Give every row the same source so a permutation stays within "one sentence".
    src, mask = src[:1].expand(3, -1), mask[:1].expand(3, -1)
    state = model.init_state(model.encode(src, mask))
    _, _, state = model.decode_step(tgt[:, 0], state)
    _, _, state = model.decode_step(tgt[:, 1], state)
    index = torch.tensor([2, 0, 0])
    moved = model.reorder_state(state, index)
    out, _, _ = model.decode_step(tgt[index, 2], moved)
    ref, _, _ = model.decode_step(tgt[:, 2], state)
    torch.testing.assert_close(out, ref[index], atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", TINY_MODELS)
def test_bottleneck(name):
    """Overwrite the encoder states h_1..h_{S-1} with noise, keeping the final state: a model
    without attention (``rnn``) must not change its logits (the fixed vector is all it sees);
    attention models' must."""
    model = tiny_model(name)
    src, mask, tgt = _batch()
    enc = model.encode(src, mask)
    noisy = dict(enc)
    noisy["enc_out"] = enc["enc_out"] + torch.randn_like(enc["enc_out"]) * mask[..., None]
    outs = []
    for e in (enc, noisy):
        state = model.init_state(e)
        logits = []
        for t in range(tgt.shape[1]):
            step, _, state = model.decode_step(tgt[:, t], state)
            logits.append(step)
        outs.append(torch.stack(logits, 1))
    if not model.has_attention:
        torch.testing.assert_close(outs[0], outs[1], atol=0, rtol=0)
    else:
        assert not torch.allclose(outs[0], outs[1], atol=1e-4)


@pytest.mark.parametrize(
    "pair", [("rnnencdec", "bahdanau"), ("rnnencdec_lstm_2l", "bahdanau_lstm_2l")]
)
def test_rnnencdec_is_bahdanau_without_attention(pair):
    """The ablation keeps every weight of RNNsearch at its shape; only the attention's are gone."""
    ablation, search = (tiny_model(n).state_dict() for n in pair)
    shapes = {k: v.shape for k, v in search.items() if not k.startswith("attention.")}
    assert {k: v.shape for k, v in ablation.items()} == shapes
    assert len(shapes) < len(search)  # bahdanau had attention weights to drop


@pytest.mark.parametrize("name", ["bahdanau", "bahdanau_lstm_2l", "luong_general_uni", "luong_dot"])
def test_attention_query_is_previous_state_for_bahdanau_current_for_luong(name):
    """Bahdanau attends with s_{t-1}: the weights at step t do not depend on y_{t-1}, the token fed
    at step t. Luong attends with s_t, which already read y_{t-1}: its weights at step t do."""
    model = tiny_model(name)
    src, mask, tgt = _batch()
    _, attn = model.forward_attention(src, mask, tgt)
    changed = tgt.clone()
    changed[:, 2] = (changed[:, 2] + 5) % 41 + 4
    _, attn2 = model.forward_attention(src, mask, changed)
    torch.testing.assert_close(attn2[:, :2], attn[:, :2])
    if name.startswith("bahdanau"):
        torch.testing.assert_close(attn2[:, 2], attn[:, 2], atol=1e-7, rtol=0)
        assert not torch.allclose(attn2[:, 3], attn[:, 3])
    else:
        assert not torch.allclose(attn2[:, 2], attn[:, 2])


def test_scaled_dot_product_matches_the_formula():
    """softmax(QKᵀ/√d_k + mask) V computed by hand equals both attention paths."""
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 3, 4, 8, generator=g) for _ in range(3))
    mask = torch.ones(2, 1, 1, 4, dtype=torch.bool)
    mask[1, ..., 3:] = False
    scores = torch.einsum("bhtd,bhsd->bhts", q, k) / math.sqrt(8)
    scores = scores.masked_fill(~mask, float("-inf"))
    by_hand = torch.einsum("bhts,bhsd->bhtd", torch.softmax(scores, -1), v)
    sdpa, _ = attention(q, k, v, mask, causal=False, dropout=0.0, need_weights=False)
    explicit, w = attention(q, k, v, mask, causal=False, dropout=0.0, need_weights=True)
    torch.testing.assert_close(sdpa, by_hand, atol=1e-6, rtol=0)
    torch.testing.assert_close(explicit, by_hand, atol=1e-6, rtol=0)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 4))
    causal, _ = attention(q, k, v, None, causal=True, dropout=0.0, need_weights=False)
    causal_w, wc = attention(q, k, v, None, causal=True, dropout=0.0, need_weights=True)
    torch.testing.assert_close(causal, causal_w, atol=1e-6, rtol=0)
    assert (wc.triu(1) == 0).all()
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(causal, ref)


@pytest.mark.parametrize("name", ["transformer", "transformer_prenorm_learned"])
def test_transformer_weights_path_equals_sdpa_path(name):
    model = tiny_model(name)
    src, mask, tgt = _batch()
    fast = model(src, mask, tgt)
    slow, attn = model.forward_attention(src, mask, tgt, need_attention=True)
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=0)
    assert attn is not None


def test_transformer_empty_source_row_is_finite():
    model = tiny_model("transformer")
    src, mask, tgt = _batch()
    src[2] = PAD
    mask = src != PAD
    enc = model.encode(src, mask)["enc_out"]
    assert enc.shape == (3, 7, 32)
    assert torch.isfinite(model(src, mask, tgt)).all()
    model.train()
    assert torch.isfinite(model(src, mask, tgt)).all()


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

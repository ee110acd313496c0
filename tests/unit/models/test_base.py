"""Invariants every model in the registry must hold, the protocol of ``seq2seq/models/base.py``
(equations: the models' docstrings)."""

from __future__ import annotations

import math

import pytest
import torch

from seq2seq.data.batch import pad_sequences
from seq2seq.data.tokenizer import PAD
from seq2seq.decoding.search import greedy_search
from tests.toys import TINY_MODELS, tiny_model, toy_batch
from tests.unit.decoding.limits import limits


@pytest.mark.parametrize("mode", ["eval", "train"])
@pytest.mark.parametrize("name", list(TINY_MODELS))
def test_every_encoder_keeps_shape_and_stays_finite_on_empty_rows(name, mode):
    model = tiny_model(name).train(mode == "train")
    src = pad_sequences([[], [5, 6, 7], [], [8]])
    for mask in (src != PAD, torch.zeros_like(src, dtype=torch.bool)):
        enc = model.encode(src, mask)["enc_out"]
        assert enc.shape[:2] == (4, 3) and torch.isfinite(enc).all()


@pytest.mark.parametrize("name", TINY_MODELS)
def test_has_attention_says_whether_decode_step_returns_weights(name):
    model = tiny_model(name)
    src, mask, tgt = toy_batch()
    state = model.init_state(model.encode(src, mask))
    _, attn, _ = model.decode_step(tgt[:, 0], state, need_attention=True)
    assert (attn is not None) == model.has_attention
    _, attn = model.forward_attention(src, mask, tgt)
    assert (attn is not None) == model.has_attention


@pytest.mark.parametrize("name", TINY_MODELS)
def test_shapes_and_attention_rows(name):
    model = tiny_model(name)
    src, mask, tgt = toy_batch()
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
    src, mask, tgt = toy_batch()
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
    src, mask, _ = toy_batch()
    batched = greedy_search(model, src, mask, limits(max_len_a=1.0, max_len_b=4))
    for i in range(3):
        n = int(mask[i].sum())
        alone = greedy_search(
            model, src[i : i + 1, :n], mask[i : i + 1, :n], limits(max_len_a=1.0, max_len_b=4)
        )[0]
        assert alone.tokens == batched[i].tokens
        assert math.isclose(alone.score, batched[i].score, abs_tol=1e-4)


@pytest.mark.parametrize("name", TINY_MODELS)
def test_causality(name):
    """Changing target tokens after position t changes no logit at positions <= t."""
    model = tiny_model(name)
    src, mask, tgt = toy_batch()
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
    src, mask, tgt = toy_batch()
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
    src, mask, tgt = toy_batch()
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
    src, mask, tgt = toy_batch()
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
    attention models' must, and so must the mean-pool design's, whose one vector is the mean of
    every h_i (what it does see: tests/unit/models/test_rnn_encdec.py)."""
    model = tiny_model(name)
    src, mask, tgt = toy_batch()
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
    if getattr(model.cfg, "context", None) == "mean":  # the mean-pool design: see below
        assert not torch.allclose(outs[0], outs[1], atol=1e-4)
    elif not model.has_attention:
        torch.testing.assert_close(outs[0], outs[1], atol=0, rtol=0)
    else:
        assert not torch.allclose(outs[0], outs[1], atol=1e-4)

"""``seq2seq/models/transformer.py``: positions, input scaling and attention as in the paper, and
an empty source row."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from seq2seq.data.tokenizer import PAD
from seq2seq.models import build_model
from seq2seq.models.configs import TransformerConfig
from seq2seq.models.transformer import attention, sinusoidal_positions
from tests.toys import tiny_model, toy_batch


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


def test_bf16_attention_on_the_cpu_is_computed_in_fp32_and_trains():
    """Under bf16 autocast on the CPU the attention of bf16 heads is fp32 attention of the same
    (bf16) values, handed back in bf16, with gradients for q, k and v."""
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(3, 2, 5, 8, generator=g).bfloat16().requires_grad_() for _ in range(3))
    mask = torch.ones(3, 1, 1, 5, dtype=torch.bool)
    mask[2, ..., 4:] = False
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, _ = attention(q, k, v, mask, causal=False, dropout=0.0, need_weights=False)
        causal, _ = attention(q, k, v, None, causal=True, dropout=0.0, need_weights=False)
    assert out.dtype == causal.dtype == torch.bfloat16
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask)
    torch.testing.assert_close(out, ref.bfloat16(), atol=0, rtol=0)
    ref_c = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    torch.testing.assert_close(causal, ref_c.bfloat16(), atol=0, rtol=0)
    (out.float().sum() + causal.float().sum()).backward()
    for x in (q, k, v):
        assert x.grad is not None and x.grad.dtype == torch.bfloat16 and x.grad.abs().sum() > 0


@pytest.mark.parametrize("name", ["transformer", "transformer_prenorm_learned"])
def test_transformer_weights_path_equals_sdpa_path(name):
    model = tiny_model(name)
    src, mask, tgt = toy_batch()
    fast = model(src, mask, tgt)
    slow, attn = model.forward_attention(src, mask, tgt, need_attention=True)
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=0)
    assert attn is not None


def test_transformer_empty_source_row_is_finite():
    model = tiny_model("transformer")
    src, mask, tgt = toy_batch()
    src[2] = PAD
    mask = src != PAD
    enc = model.encode(src, mask)["enc_out"]
    assert enc.shape == (3, 7, 32)
    assert torch.isfinite(model(src, mask, tgt)).all()
    model.train()
    assert torch.isfinite(model(src, mask, tgt)).all()

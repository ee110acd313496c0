"""``seq2seq/training/loss.py``: label-smoothed cross-entropy."""

from __future__ import annotations

import pytest
import torch

from seq2seq.training.loss import token_loss_sum


def test_label_smoothed_loss_matches_the_formula():
    """ε-smoothed cross-entropy: -(1-ε)·log p_y - (ε/V)·Σ_v log p_v per real token; PAD ignored."""
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(2, 3, 7, generator=g)
    tgt_out = torch.tensor([[4, 5, 0], [6, 0, 0]])  # three real tokens, three PAD
    logp = logits.log_softmax(-1)
    eps, expected = 0.1, 0.0
    for b, t in ((0, 0), (0, 1), (1, 0)):
        y = tgt_out[b, t]
        expected += -(1 - eps) * logp[b, t, y] - eps / 7 * logp[b, t].sum()
    assert float(token_loss_sum(logits, tgt_out, eps)) == pytest.approx(float(expected), rel=1e-6)
    plain = -sum(logp[b, t, tgt_out[b, t]] for b, t in ((0, 0), (0, 1), (1, 0)))
    assert float(token_loss_sum(logits, tgt_out)) == pytest.approx(float(plain), rel=1e-6)

"""``seq2seq/training/loss.py``: label-smoothed cross-entropy."""

from __future__ import annotations

import pytest
import torch

from seq2seq.training.loss import SmoothedCrossEntropy, token_loss_sum


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


def _reference(logits, gold, eps):
    return torch.nn.functional.cross_entropy(
        logits.float(), gold, ignore_index=0, label_smoothing=eps, reduction="sum"
    )


@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("rows", [None, 1, 3])
def test_the_chunked_loss_and_its_gradient_equal_cross_entropy(eps, rows):
    """Training's chunked loss (any chunk size, chunks that do not divide N) gives
    F.cross_entropy's value and gradient, with PAD rows contributing neither; the upstream
    gradient scales the result."""
    g = torch.Generator().manual_seed(5)
    logits = (3 * torch.randn(10, 11, generator=g, dtype=torch.float64)).float()
    gold = torch.randint(1, 11, (10,), generator=g)
    gold[[2, 7]] = 0  # PAD
    x1, x2 = logits.clone().requires_grad_(), logits.clone().requires_grad_()
    loss = SmoothedCrossEntropy.apply(x1, gold, eps, rows)
    ref = _reference(x2, gold, eps)
    assert float(loss.detach()) == pytest.approx(float(ref.detach()), rel=1e-6)
    (loss * 0.37).backward()
    (ref * 0.37).backward()
    torch.testing.assert_close(x1.grad, x2.grad, rtol=1e-5, atol=1e-7)
    assert not x1.grad[[2, 7]].any()


def test_token_loss_sum_in_bf16_matches_the_float32_formula_and_keeps_the_dtype():
    """bf16 logits (autocast): the loss is computed in float32 (the upcast reference's value)
    and the gradient comes back in bf16 within bf16 rounding of the reference's."""
    g = torch.Generator().manual_seed(6)
    logits = (3 * torch.randn(4, 9, 300, generator=g)).bfloat16()
    tgt = torch.randint(0, 300, (4, 9), generator=g)
    x1, x2 = logits.clone().requires_grad_(), logits.clone().requires_grad_()
    loss = token_loss_sum(x1, tgt, 0.1)
    ref = _reference(x2.reshape(-1, 300), tgt.reshape(-1), 0.1)
    assert loss.dtype == torch.float32
    assert float(loss.detach()) == pytest.approx(float(ref.detach()), rel=1e-5)
    (loss / 36).backward()
    (ref / 36).backward()
    assert x1.grad.dtype == torch.bfloat16
    torch.testing.assert_close(x1.grad.float(), x2.grad.float(), rtol=2**-7, atol=1e-6)


def test_fp16_logits_keep_the_gradient_in_float32_until_it_is_scaled():
    """A softmax probability below fp16's smallest subnormal survives: GradScaler's scale is
    applied before the cast back to fp16."""
    logits = torch.tensor([[0.0, -15.0, 10.0]], dtype=torch.float16, requires_grad=True)
    gold = torch.tensor([2])
    SmoothedCrossEntropy.apply(logits, gold, 0.0).backward(torch.tensor(2.0**16))
    assert logits.grad.dtype == torch.float16
    assert logits.grad[0, 1] > 0  # p ~ 1.4e-11 (0 in fp16), x 65536 ~ 9e-7


def test_the_chunked_loss_refuses_a_second_backward():
    x = torch.randn(3, 5, requires_grad=True)
    loss = SmoothedCrossEntropy.apply(x, torch.tensor([1, 2, 3]), 0.1)
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="runs once"):
        loss.backward()

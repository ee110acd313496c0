"""``seq2seq/models/base.Dropout``: inverted dropout from 16 random bits an element on the CPU."""

from __future__ import annotations

import pytest
import torch

from seq2seq.models.base import Dropout


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_dropout_zeroes_a_share_p_and_scales_the_rest_so_the_mean_is_kept(p):
    """On 1,000,003 elements (odd: the last 64-bit draw is partly used) the dropped share is p
    within 6 standard deviations of a binomial, kept elements are scaled by 1/(1-p), and the
    mean of ones stays 1 within the same margin."""
    torch.manual_seed(0)
    n = 1_000_003
    drop = Dropout(p).train()
    y = drop(torch.ones(n))
    dropped = float((y == 0).float().mean())
    sd = (p * (1 - p) / n) ** 0.5
    assert abs(dropped - p) < 6 * sd
    assert torch.allclose(y[y != 0], torch.tensor(1 / (1 - p)), rtol=1e-4)
    assert abs(float(y.mean()) - 1.0) < 6 * sd / (1 - p)


def test_dropout_masks_are_independent_of_position_and_vary_between_calls():
    """Neighbouring elements (which share a 64-bit draw) are dropped independently: the share of
    dropped pairs is p^2; two calls draw different masks; a seed repeats a mask."""
    torch.manual_seed(1)
    drop, x = Dropout(0.5).train(), torch.ones(400_000)
    a, b = drop(x) == 0, drop(x) == 0
    both = float((a[0::2] & a[1::2]).float().mean())
    assert abs(both - 0.25) < 6 * (0.25 * 0.75 / 200_000) ** 0.5
    assert not torch.equal(a, b)
    torch.manual_seed(7)
    c = drop(x)
    torch.manual_seed(7)
    assert torch.equal(c, drop(x))


def test_dropout_gradient_is_the_mask_times_the_scale_and_eval_is_the_identity():
    torch.manual_seed(2)
    x = torch.randn(3, 5, 7, dtype=torch.bfloat16, requires_grad=True)
    drop = Dropout(0.25).train()
    y = drop(x)
    assert y.dtype == torch.bfloat16 and y.shape == x.shape
    y.sum().backward()
    kept = y != 0
    assert torch.equal(x.grad[kept], torch.full_like(x.grad[kept], 1 / 0.75))
    assert not x.grad[~kept].any()
    x2 = torch.randn(4, 6)
    assert drop.eval()(x2) is x2
    assert Dropout(0.0).train()(x2) is x2

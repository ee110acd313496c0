"""Alignment accuracy of attention maps: exact shares on hand-made maps, what is not counted, one
number per layer and head."""

from __future__ import annotations

import pytest
import torch

from seq2seq.study.reverse import alignment_accuracy, best_head


def one_hot_attention(argmaxes: list[list[int]], s: int) -> torch.Tensor:
    """(B, T, S) rows peaked (0.7) at the given positions, the rest spread evenly."""
    b, t = len(argmaxes), len(argmaxes[0])
    att = torch.full((b, t, s), 0.3 / (s - 1))
    for i, row in enumerate(argmaxes):
        for j, k in enumerate(row):
            att[i, j, k] = 0.7
    return att


def test_alignment_accuracy_counts_exactly_the_gold_positions():
    att = one_hot_attention([[0, 1, 2, 3], [2, 2, 0, 1]], s=4)
    gold = torch.tensor([[0, 1, 3, -1], [2, 0, 0, 3]])
    mask = torch.tensor([[True, True, True, True], [True, True, True, False]])
    # counted: sentence 0 positions 0-2 (3 has no gold), sentence 1 positions 0-2 (3 is padding)
    # hits: (0,0) (0,1) and (1,0) (1,2): 4 of 6
    acc = alignment_accuracy(att, gold, mask)
    assert acc.shape == () and acc.item() == pytest.approx(4 / 6)
    # a padded position or one without gold is never counted, whatever its attention
    gold[1, 3] = 1  # the padding's argmax is 1: would be a hit if counted
    assert alignment_accuracy(att, gold, mask).item() == pytest.approx(4 / 6)
    mask[1, 3] = True
    assert alignment_accuracy(att, gold, mask).item() == pytest.approx(5 / 7)


def test_alignment_accuracy_per_layer_and_head():
    n_layers, n_heads, s = 3, 4, 6
    gold = torch.tensor([[0, 1, 2, 3, 4], [5, 4, 3, -1, -1]])
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    right = one_hot_attention(gold.clamp(min=0).tolist(), s)  # every counted position a hit
    wrong = one_hot_attention(((gold.clamp(min=0) + 1) % s).tolist(), s)  # none a hit
    maps = wrong[:, None, None].repeat(1, n_layers, n_heads, 1, 1).clone()
    maps[:, 1, 2] = right  # layer 1, head 2 aligns perfectly
    maps[0, 2, 0] = right[0]  # layer 2, head 0: sentence 0 only (5 of 8 positions)
    acc = alignment_accuracy(maps, gold, mask)
    assert acc.shape == (n_layers, n_heads)
    want = torch.zeros(n_layers, n_heads)
    want[1, 2], want[2, 0] = 1.0, 5 / 8
    assert torch.allclose(acc, want)
    assert best_head(acc) == (1, 2, 1.0)
    assert alignment_accuracy(maps[:, 1, 2], gold, mask).shape == ()  # (B, T, S): one number


def test_best_head_breaks_ties_towards_the_first():
    acc = torch.tensor([[0.2, 0.5], [0.5, 0.1]])
    assert best_head(acc) == (0, 1, 0.5)
    with pytest.raises(ValueError, match="expected"):
        best_head(torch.tensor([0.5]))


@pytest.mark.parametrize(
    ("gold", "mask", "needle"),
    [
        (torch.full((1, 2), -1), torch.ones(1, 2, dtype=torch.bool), "no target position"),
        (torch.tensor([[0, 3]]), torch.ones(1, 2, dtype=torch.bool), "past the source length"),
        (torch.tensor([[0, 1, 2]]), torch.ones(1, 3, dtype=torch.bool), "gold of shape"),
    ],
)
def test_alignment_accuracy_refuses_what_it_cannot_count(gold, mask, needle):
    with pytest.raises(ValueError, match=needle):
        alignment_accuracy(torch.rand(1, 2, 3), gold, mask)

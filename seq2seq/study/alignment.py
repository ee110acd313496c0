"""Alignment accuracy of attention: how often a target word's strongest attention falls on the
source word it translates.

For each counted target position t (a real token with a gold source position), the attention
row's argmax over the source, argmax_s a[t, s], is compared with the gold position g[t]; the
accuracy is the share of counted positions where they agree, over every sentence of the batch,
for each layer and head separately when the attention has them. This is the hard-alignment
reading of attention that Bahdanau et al. (2015, Figure 3) show as pictures; on a word-for-word
synthetic task the gold alignment is known exactly.

Shape notation: B batch, L decoder layers, H heads, T target length, S source length.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["alignment_accuracy", "best_head"]


def alignment_accuracy(attention: Tensor, gold: Tensor, tgt_mask: Tensor) -> Tensor:
    """Share of counted target positions whose attention argmax over the source is the gold one.

    Args:
        attention: (B, ..., T, S) weights: (B, L, H, T, S) from ``cross_attention_maps``, or
            (B, T, S) from an RNN attention model's ``forward_attention``. Ties go to the first
            (leftmost) source position, as ``torch.argmax``.
        gold: (B, T) integer gold source position of each target position, in 0..S-1; -1 where a
            target position has none (e.g. EOS), which is not counted.
        tgt_mask: (B, T) bool, True at real target tokens; padding is not counted.

    Returns:
        A float tensor of the leading dims between B and T, e.g. (L, H) per layer and head, or a
        0-dim tensor for (B, T, S) attention: accuracy as a fraction in [0, 1].

    Raises:
        ValueError: the shapes disagree, a gold position is S or more, or no position is counted
            (an accuracy over zero positions has no value).
    """
    if attention.dim() < 3:
        raise ValueError(f"attention of shape {tuple(attention.shape)}: expected (B, ..., T, S)")
    b, t, s = attention.shape[0], attention.shape[-2], attention.shape[-1]
    for name, x in (("gold", gold), ("tgt_mask", tgt_mask)):
        if tuple(x.shape) != (b, t):
            raise ValueError(
                f"{name} of shape {tuple(x.shape)}: expected (B, T) = ({b}, {t}) as the attention"
            )
    counted = tgt_mask.bool() & (gold >= 0)
    if int(counted.sum()) == 0:
        raise ValueError("no target position has a gold source position: nothing to count")
    if int(gold[counted].max()) >= s:
        raise ValueError(
            f"gold position {int(gold[counted].max())} is past the source length S = {s}"
        )
    inner = attention.dim() - 3  # the dims between B and T
    shape = (b,) + (1,) * inner + (t,)
    hits = (attention.argmax(-1) == gold.view(shape)) & counted.view(shape)  # (B, ..., T)
    dims = (0, attention.dim() - 2)  # B and T
    return hits.sum(dims).float() / counted.sum().float()


def best_head(acc: Tensor) -> tuple[int, int, float]:
    """The layer and head of highest alignment accuracy, as (layer, head, accuracy), counted from
    0; a tie goes to the lowest layer, then the lowest head.

    Args:
        acc: (L, H) accuracies, as ``alignment_accuracy`` returns them for (B, L, H, T, S).

    Raises:
        ValueError: ``acc`` is not 2-dimensional, or empty.
    """
    if acc.dim() != 2 or acc.numel() == 0:
        raise ValueError(f"accuracies of shape {tuple(acc.shape)}: expected (L, H), not empty")
    flat = int(torch.argmax(acc.reshape(-1)))
    layer, head = divmod(flat, acc.shape[1])
    return layer, head, float(acc[layer, head])

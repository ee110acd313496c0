"""Label-smoothed cross-entropy ignoring padding (Szegedy et al. 2016; Vaswani et al. 2017 §5.4).

Shape notation: B batch, T target length, V vocabulary.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from seq2seq.data.tokenizer import PAD


def token_loss_sum(logits: Tensor, tgt_out: Tensor, label_smoothing: float = 0.0) -> Tensor:
    """Summed loss over real target tokens; divide by their count (or by the count over all the
    batches of an accumulated update) for the per-token loss.

    Args:
        logits: (B, T, V) unnormalised scores.  tgt_out: (B, T) gold ids, PAD where absent.
        label_smoothing: ε: the target distribution is (1-ε) one-hot + ε uniform over V.

    Returns:
        A scalar: Σ over non-PAD positions of the (smoothed) cross-entropy, in nats, in float32.
    """
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(),
        tgt_out.reshape(-1),
        ignore_index=PAD,
        label_smoothing=label_smoothing,
        reduction="sum",
    )


def row_loss_sums(logits: Tensor, tgt_out: Tensor) -> Tensor:
    """Un-smoothed loss summed over each row's real target tokens (``token_loss_sum`` row by
    row, with no label smoothing): a sequence's own loss, whatever else shares its batch.

    Args:
        logits: (B, T, V) unnormalised scores.  tgt_out: (B, T) gold ids, PAD where absent.

    Returns:
        (B,) float32: Σ over the row's non-PAD positions of the cross-entropy, in nats.
    """
    return F.cross_entropy(
        logits.float().transpose(1, 2), tgt_out, ignore_index=PAD, reduction="none"
    ).sum(dim=1)

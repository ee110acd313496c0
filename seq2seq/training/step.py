"""One training update: teacher forcing (or scheduled sampling) under DDP, gradient accumulation,
clipping, and skipping non-finite updates.

Shape notation: B batch, S source length, T target length, V target vocabulary.

Everything here is a function of its arguments (plus torch's RNG for dropout and scheduled
sampling), so each piece is tested on its own; ``loop`` strings them together.
"""

from __future__ import annotations

import contextlib
import math

import torch
from torch import nn

from seq2seq.config import TrainConfig
from seq2seq.data.batch import Batch
from seq2seq.models import Seq2SeqModel
from seq2seq.runtime import autocast
from seq2seq.training.distributed import DistInfo, all_reduce_sum
from seq2seq.training.loss import token_loss_sum


class TeacherForcing(nn.Module):
    """What DDP wraps: teacher-forced logits, or scheduled sampling (Bengio et al. 2015, §2.4) when
    ``ratio`` < 1: each step, per sentence, feeds the gold previous token with probability
    ``ratio`` and the model's own argmax otherwise (no gradient flows through that choice).

    Args:
        src: (B, S) ids.  src_mask: (B, S) bool.  tgt_in: (B, T) BOS y_1 ... y_{T-1}.

    Returns:
        (B, T, V) logits.
    """

    def __init__(self, model: Seq2SeqModel):
        super().__init__()
        self.model = model

    def forward(self, src, src_mask, tgt_in, ratio: float = 1.0):
        if ratio >= 1.0:
            return self.model(src, src_mask, tgt_in)
        state = self.model.init_state(self.model.encode(src, src_mask))
        prev, outs = tgt_in[:, 0], []
        for t in range(tgt_in.shape[1]):
            logits, _, state = self.model.decode_step(prev, state)
            outs.append(logits)
            if t + 1 < tgt_in.shape[1]:
                gold = torch.rand(prev.shape[0], device=prev.device) < ratio
                prev = torch.where(gold, tgt_in[:, t + 1], logits.argmax(-1))
        return torch.stack(outs, 1)


def train_step(
    wrapper: nn.Module,
    optimizer: torch.optim.Optimizer,
    scaler,
    batches: list[Batch],
    cfg: TrainConfig,
    lr: float,
    device: torch.device,
    info: DistInfo,
    tf_ratio: float = 1.0,
) -> dict | None:
    """One update from ``batches`` (``update_freq`` of them).

    The summed token loss of every batch is divided by the target tokens of all of them (over all
    ranks), so accumulating b + b equals one batch of 2b. Returns None, changing no weight, when
    the loss or the gradient norm is not finite on any rank.

    Returns:
        {"loss": per-token training loss, "grad_norm": before clipping, "tokens": target tokens}.
    """
    n_tokens = all_reduce_sum(sum(b.n_tokens for b in batches), info, device)
    optimizer.zero_grad(set_to_none=True)
    loss_sum = 0.0
    for i, b in enumerate(batches):
        sync = i == len(batches) - 1 or not info.enabled
        with contextlib.nullcontext() if sync else wrapper.no_sync():
            with autocast(device, cfg.precision):
                logits = wrapper(b.src, b.src_mask, b.tgt_in, tf_ratio)
            loss = token_loss_sum(logits, b.tgt_out, cfg.label_smoothing)
            # DDP averages gradients over ranks; scaling by world restores the global token sum.
            scaler.scale(loss * (info.world / n_tokens)).backward()
        loss_sum += float(loss.detach())
    loss_sum = all_reduce_sum(loss_sum, info, device)  # NaN anywhere -> NaN on every rank
    scaler.unscale_(optimizer)
    params = [p for g in optimizer.param_groups for p in g["params"]]
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.clip_norm or float("inf")))
    if not (math.isfinite(loss_sum) and math.isfinite(grad_norm)):
        optimizer.zero_grad(set_to_none=True)
        scaler.update()
        return None
    for g in optimizer.param_groups:
        g["lr"] = lr
    scaler.step(optimizer)
    scaler.update()
    return {"loss": loss_sum / n_tokens, "grad_norm": grad_norm, "tokens": n_tokens}

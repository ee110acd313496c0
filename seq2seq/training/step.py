"""One training update: teacher forcing (or scheduled sampling) under DDP, gradient accumulation,
clipping, and skipping non-finite updates; and ``build_optimizer`` (setup, the precision probe,
``scripts/bench_train.py``). Shapes: B batch, S source length, T target length, V target vocabulary.
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from seq2seq.config import TrainConfig
from seq2seq.data.batch import Batch
from seq2seq.models import Seq2SeqModel
from seq2seq.runtime import autocast
from seq2seq.training.distributed import DistInfo, all_reduce_sum
from seq2seq.training.loss import token_loss_sum


def build_optimizer(model: nn.Module, t: TrainConfig) -> torch.optim.Optimizer:
    """``train.optimizer`` (adam or adamw) over ``model``'s parameters with ``t``'s rate, betas and
    weight decay; fused: one kernel for all parameters, and it can skip a non-finite update on the
    device (``train_step``)."""
    opt = torch.optim.AdamW if t.optimizer == "adamw" else torch.optim.Adam
    return opt(model.parameters(), lr=t.lr, betas=t.betas, weight_decay=t.weight_decay, fused=True)


class TeacherForcing(nn.Module):
    """What DDP wraps: teacher-forced logits, or scheduled sampling (Bengio et al. 2015, §2.4) when
    ``ratio`` < 1: each step, per sentence, feeds the gold previous token with probability
    ``ratio`` and the model's own argmax otherwise (no gradient flows through that choice).
    Inputs as ``Seq2SeqModel.forward`` (tgt_in (B, T): BOS y_1 ... y_{T-1}); returns (B, T, V)."""

    def __init__(self, model: Seq2SeqModel):
        super().__init__()
        self.model = model

    def forward(self, src, src_mask, tgt_in, ratio: float = 1.0, src_lengths=None):
        if ratio >= 1.0:
            return self.model(src, src_mask, tgt_in, src_lengths=src_lengths)
        state = self.model.init_state(self.model.encode(src, src_mask, src_lengths))
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
) -> dict[str, torch.Tensor]:
    """One update from ``batches`` (``update_freq`` of them), without waiting for the device.

    The summed token loss of every batch is divided by the target tokens of all of them (over all
    ranks), so accumulating b + b equals one batch of 2b. A loss or gradient norm not finite on any
    rank skips the update on the device: a fused optimizer's found-inf flag (as GradScaler uses
    it) leaves weights, moments and step count unchanged; any other optimizer syncs to decide.
    Returns 0-dim float tensors on ``device``: "loss" (per target token), "grad_norm" (before
    clipping), "tokens" (target tokens over all ranks), "skipped" (1.0 or 0.0)."""
    n_tokens = all_reduce_sum(
        torch.full((), float(sum(b.n_tokens for b in batches)), device=device), info
    )
    optimizer.zero_grad(set_to_none=True)
    loss_sum = torch.zeros((), device=device)
    for i, b in enumerate(batches):
        sync = i == len(batches) - 1 or not info.enabled
        with contextlib.nullcontext() if sync else wrapper.no_sync():
            with autocast(device, cfg.precision):
                logits = wrapper(b.src, b.src_mask, b.tgt_in, tf_ratio, b.src_lengths)
            loss = token_loss_sum(logits, b.tgt_out, cfg.label_smoothing)
            # DDP averages gradients over ranks; scaling by world restores the global token sum.
            scaler.scale(loss * (info.world / n_tokens)).backward()
        loss_sum = loss_sum + loss.detach().float()
    loss_sum = all_reduce_sum(loss_sum, info)  # NaN anywhere -> NaN on every rank
    scaler.unscale_(optimizer)
    params = [p for g in optimizer.param_groups for p in g["params"]]
    grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.clip_norm or float("inf"))
    skipped = (~(torch.isfinite(loss_sum) & torch.isfinite(grad_norm))).float()
    for g in optimizer.param_groups:
        g["lr"] = lr
    _step_unless(optimizer, skipped)
    scaler.update()  # fp16: halves the scale after an overflow (found by ``unscale_``)
    return {
        "loss": loss_sum / n_tokens,
        "grad_norm": grad_norm.detach().float(),
        "tokens": n_tokens,
        "skipped": skipped,
    }


def _step_unless(optimizer: torch.optim.Optimizer, skipped: torch.Tensor) -> None:
    """``optimizer.step()`` unless ``skipped`` (a 0-dim float32 tensor on the parameters'
    device) is 1: decided on the device by a fused optimizer, on the host by any other."""
    if all(g.get("fused") for g in optimizer.param_groups):
        optimizer.grad_scale, optimizer.found_inf = None, skipped
        try:
            optimizer.step()
        finally:
            del optimizer.grad_scale, optimizer.found_inf
    elif not skipped.item():
        optimizer.step()

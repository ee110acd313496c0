"""Label-smoothed cross-entropy ignoring padding (Szegedy et al. 2016; Vaswani et al. 2017 §5.4).

Training computes it in row chunks that fit in cache, with the gradient (softmax minus the smoothed
target) written during the forward pass: one read of the logits and one write of their gradient,
where ``F.cross_entropy`` on upcast logits made a dozen passes over (B·T, V) floats (a quarter to
40% of a bf16 Transformer step on an 8k vocabulary: docs/results/README.md, training speed). Same
formula in float32, only summed in another order. Shapes: B batch, T target length, V vocabulary."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from seq2seq.data.tokenizer import PAD

CHUNK_ELEMENTS = 2**20  # float32 elements of one chunk of logit rows (4 MB)


def token_loss_sum(logits: Tensor, tgt_out: Tensor, label_smoothing: float = 0.0) -> Tensor:
    """Σ over non-PAD positions of the (smoothed) cross-entropy, in nats: a float32 scalar (divide
    by the target tokens of all the batches of an update for the per-token loss), from logits
    (B, T, V) and tgt_out (B, T) gold ids, PAD where absent; ``label_smoothing`` ε: the target is
    (1-ε) one-hot + ε uniform over V. ``SmoothedCrossEntropy`` in training, else F.cross_entropy."""
    flat, gold = logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1)
    if torch.is_grad_enabled() and logits.requires_grad:
        return SmoothedCrossEntropy.apply(flat, gold, label_smoothing)
    return F.cross_entropy(
        flat.float(), gold, ignore_index=PAD, label_smoothing=label_smoothing, reduction="sum"
    )


class SmoothedCrossEntropy(torch.autograd.Function):
    """Σ over rows whose gold id is not PAD of lse(x) - (1-ε)·x_y - ε·mean_v(x_v), which is
    ``F.cross_entropy(x.float(), y, ignore_index=PAD, label_smoothing=ε, reduction="sum")``;
    its gradient, softmax(x) - (1-ε)·onehot(y) - ε/V on those rows and 0 on PAD rows, is computed
    with the loss, chunk by chunk in float32, and stored in the logits' dtype (float32 for float16).

    Args (``apply``):
        logits: (N, V) in any float dtype.  gold: (N,) ids, PAD where absent.  eps: ε.
        rows: rows per chunk (default: ``CHUNK_ELEMENTS`` // V on the CPU, all N elsewhere).

    Returns:
        A 0-dim float32 tensor. Its backward may run once (the stored gradient is scaled in place).
    """

    @staticmethod
    def forward(ctx, logits: Tensor, gold: Tensor, eps: float, rows: int | None = None):
        n, v = logits.shape
        if rows is None:  # one chunk off the CPU: no cache to fit, and fewer kernel launches
            rows = max(1, CHUNK_ELEMENTS // v) if logits.device.type == "cpu" else max(n, 1)
        # fp16 keeps the gradient in float32 until it is scaled (GradScaler's point: no underflow)
        grad = torch.empty_like(
            logits, dtype=torch.float32 if logits.dtype == torch.float16 else None
        )
        total = torch.zeros((), dtype=torch.float32, device=logits.device)
        for i in range(0, n, rows):
            x = logits[i : i + rows].to(torch.float32, copy=True)  # (C, V), in cache
            y = gold[i : i + rows, None]
            keep = (y != PAD).to(torch.float32)
            lse = torch.logsumexp(x, 1, keepdim=True)
            loss = lse - (1 - eps) * x.gather(1, y) - eps * x.mean(1, keepdim=True)
            total += (loss * keep).sum()
            p = x.sub_(lse).exp_().sub_(eps / v)  # softmax - ε/V
            p.scatter_add_(1, y, torch.full_like(lse, eps - 1)).mul_(keep)
            grad[i : i + rows].copy_(p)
        ctx.grad, ctx.dtype = grad, logits.dtype
        return total

    @staticmethod
    def backward(ctx, g: Tensor):
        grad, ctx.grad = ctx.grad, None
        if grad is None:
            raise RuntimeError(
                "SmoothedCrossEntropy's backward runs once (retain_graph is not supported)"
            )
        return grad.mul_(g).to(ctx.dtype), None, None, None


def row_loss_sums(logits: Tensor, tgt_out: Tensor) -> Tensor:
    """``token_loss_sum`` row by row, without label smoothing: (B,) float32 nats, a sequence's own
    loss whatever else shares its batch (logits (B, T, V), tgt_out (B, T) with PAD)."""
    return F.cross_entropy(
        logits.float().transpose(1, 2), tgt_out, ignore_index=PAD, reduction="none"
    ).sum(dim=1)

"""The one interface that training and search use, for every model family.

Shape notation: B batch, S source length, T target length, D model/hidden size, V vocabulary.

A decoding *state* is a ``dict[str, Tensor]`` whose tensors all have the batch on dim 0, so search
can expand, select and reorder it without knowing the model. Entries that depend only on the source
(encoder states, projected keys, the source mask) are named in ``static_state_keys``; moving a beam
inside the same sentence never changes them, so ``reorder_state`` leaves them alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

State = dict[str, Tensor]
# (B,) real source lengths kept on the host: a numpy array (or a CPU tensor).
Lengths = np.ndarray | Tensor

# Where a training step applies a weight matrix, for the FLOP count (flops.py): once per source
# token, once per target token, once per (target, source) pair, or not per token at all.
FlopSide = Literal["src", "tgt", "pair", "uncounted"]


@dataclass(frozen=True)
class AttentionFlops:
    """Training FLOPs (forward + backward) of a model's attention matmuls, the scores and the
    weighted sums, for one sentence of S source and T target tokens:
    ``per_pair``·T·S + ``per_src_square``·S² + ``per_tgt_square``·T²."""

    per_pair: float = 0.0
    per_src_square: float = 0.0
    per_tgt_square: float = 0.0


class Dropout(nn.Module):
    """Inverted dropout (Srivastava et al. 2014, §2): in training each element is zeroed with
    probability p and the others scaled by 1 / (1 - p); the identity in eval mode. On the CPU the
    mask is drawn as 16 random bits an element, four to each 64-bit draw of torch's generator (so p
    is rounded to a multiple of 2^-16): ``F.dropout``'s one serial draw an element took 14% of a
    bf16 Transformer step (docs/results/README.md, training speed). Elsewhere it is ``F.dropout``.
    Shapes: any; the output has the input's."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def extra_repr(self) -> str:
        return f"p={self.p}"

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0:
            return x
        if x.device.type != "cpu":
            return F.dropout(x, self.p, True)
        n, dropped = x.numel(), min(round(self.p * 65536), 65535)  # p < 1 stays < 1
        bits = torch.empty((n + 3) // 4, dtype=torch.int64).random_(-(2**63), None)  # 64 bits
        drop = bits.view(torch.int16)[:n].view(x.shape) < dropped - 32768
        return x.mul(65536 / (65536 - dropped)).masked_fill_(drop, 0)


def masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """Softmax of ``scores`` (B, ..., S) over S where ``mask`` (B, S) is True (real positions,
    broadcast over the middle dims): (B, ..., S) weights, rows summing to 1, exactly 0 at masked
    positions; a row with no real position gets uniform weights, not NaN (none reaches here)."""
    shape = (mask.shape[0],) + (1,) * (scores.dim() - 2) + (mask.shape[-1],)
    fill = torch.finfo(scores.dtype).min
    return torch.softmax(scores.masked_fill(~mask.view(shape), fill), dim=-1)


class Seq2SeqModel(nn.Module):
    """Encoder-decoder protocol: built as ``cls(cfg, src_vocab, tgt_vocab, joint_vocab)``
    (``registry.MODELS``); declares ``has_attention`` and implements the methods that raise here."""

    # True when decode_step and forward_attention return cross-attention weights (B, [T,] S).
    has_attention: ClassVar[bool]
    static_state_keys: frozenset[str] = frozenset({"src_mask"})
    src_vocab_size: int
    tgt_vocab_size: int
    max_positions: int | None = None  # longest sequence the model can embed (None: unbounded)

    def forward(
        self, src: Tensor, src_mask: Tensor, tgt_in: Tensor, src_lengths: Lengths | None = None
    ) -> Tensor:
        """Teacher-forced logits (B, T, V) for src (B, S) ids, src_mask (B, S) bool (True = real
        token) and tgt_in (B, T) decoder input ids, BOS first. ``src_lengths``: (B,) int64 real
        source lengths on the host (numpy, so DDP leaves them there), or None: a model that needs
        them (packed RNNs) then reads them from ``src_mask``, a device-to-host copy."""
        return self.forward_attention(
            src, src_mask, tgt_in, need_attention=False, src_lengths=src_lengths
        )[0]

    def forward_attention(
        self,
        src: Tensor,
        src_mask: Tensor,
        tgt_in: Tensor,
        need_attention: bool = True,
        src_lengths: Lengths | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Teacher-forced logits (B, T, V) and cross-attention weights (B, T, S) (None if the model
        has none, or when ``need_attention`` is False and computing them costs extra)."""
        raise NotImplementedError

    def cross_attention_maps(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> Tensor | None:
        """Teacher-forced cross-attention of every decoder layer and head, for inspection (inputs
        as ``forward``): (B, L, H, T, S) weights, rows summing to 1 over the real source
        positions, or None without attention. The RNN decoders give L = H = 1, their
        ``forward_attention`` map (the Transformer's is the mean of its last layer's heads)."""
        _, attn = self.forward_attention(src, src_mask, tgt_in, need_attention=True)
        return None if attn is None else attn[:, None, None]

    def encode(self, src: Tensor, src_mask: Tensor, src_lengths: Lengths | None = None) -> State:
        """Run the encoder (``src_lengths`` as in ``forward``); returns the static part of the
        decoding state."""
        raise NotImplementedError

    def init_state(self, enc: State) -> State:
        """The decoder's state before the first step, given ``encode``'s output."""
        raise NotImplementedError

    def decode_step(
        self, prev_tokens: Tensor, state: State, need_attention: bool = False
    ) -> tuple[Tensor, Tensor | None, State]:
        """One decoder step from ``prev_tokens`` (B,) (BOS first) and ``init_state``'s or the last
        step's state: logits (B, V), cross-attention weights (B, S) or None, the next state."""
        raise NotImplementedError

    def reorder_state(self, state: State, index: Tensor) -> State:
        """Reorder beams: row i of the result is row ``index[i]``; rows only move within their own
        sentence, so source-side (static) entries are kept as they are."""
        return {
            k: v if k in self.static_state_keys else v.index_select(0, index)
            for k, v in state.items()
        }

    @staticmethod
    def select_state(state: State, index: Tensor) -> State:
        """Select or repeat rows of every entry (expand to beams, drop finished sentences)."""
        return {k: v.index_select(0, index) for k, v in state.items()}

    def flop_sides(self) -> dict[str, FlopSide | tuple[FlopSide, ...]]:
        """Where a training step applies each weight matrix, for ``flops.py``: keys name a module
        or a parameter (the longest naming a weight wins); a tuple splits its rows into equal
        blocks, one side each (a fused [W^Q; W^K; W^V]). Weights under no key count per target
        token; vectors and embedding tables only when their own name is a key."""
        raise NotImplementedError

    def attention_flops(self) -> AttentionFlops:
        """Training FLOPs of the attention matmuls per sentence, by source and target length."""
        raise NotImplementedError

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

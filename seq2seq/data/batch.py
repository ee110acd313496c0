"""A training batch; the teacher-forcing shift happens here, once.

Shape notation: B batch, S source length, T target length (EOS included).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from seq2seq.data.tokenizer import BOS, EOS, PAD


def pad_sequences(seqs: Sequence[Sequence[int]], pad: int = PAD) -> torch.Tensor:
    """List of id lists -> (B, L_max) long tensor, right-padded."""
    width = max((len(s) for s in seqs), default=0)
    out = torch.full((len(seqs), width), pad, dtype=torch.long)
    for i, s in enumerate(seqs):
        if len(s):
            out[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
    return out


@dataclass
class Batch:
    """Teacher-forced batch.

    Attributes:
        src: (B, S) source ids, right-padded with PAD.
        src_mask: (B, S) bool, True at real tokens.
        tgt_in: (B, T) BOS y_1 ... y_{n}: the decoder input.
        tgt_out: (B, T) y_1 ... y_n EOS: what the decoder must predict; PAD beyond.
        n_tokens: number of real target tokens (EOS included), the loss normaliser.
    """

    src: torch.Tensor
    src_mask: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    n_tokens: int

    @classmethod
    def from_ids(cls, src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]]) -> Batch:
        src_t = pad_sequences(src)
        tgt_in = pad_sequences([[BOS, *t] for t in tgt])
        tgt_out = pad_sequences([[*t, EOS] for t in tgt])
        return cls(src_t, src_t != PAD, tgt_in, tgt_out, int((tgt_out != PAD).sum()))

    def to(self, device: torch.device | str) -> Batch:
        nb = device != "cpu" and torch.device(device).type == "cuda"
        return Batch(
            self.src.to(device, non_blocking=nb),
            self.src_mask.to(device, non_blocking=nb),
            self.tgt_in.to(device, non_blocking=nb),
            self.tgt_out.to(device, non_blocking=nb),
            self.n_tokens,
        )

"""Batching: length-bucketed batches of example indices, one rule for every backend, and the
teacher-forced ``Batch`` (the teacher-forcing shift happens there, once).

Shape notation: B batch, S source length, T target length (EOS included).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from seq2seq.data.text import DataError
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


def cut_runs(runs: Iterable[tuple[int, int]], batch_tokens: int) -> list[int]:
    """Batch sizes for examples sorted by length, given as runs of (width, count): a batch grows
    while n_sentences x widest <= ``batch_tokens``. Costs O(runs + batches), not O(examples).

    Raises:
        DataError: one example alone exceeds the budget.
    """
    sizes: list[int] = []
    size = width = 0
    for need, k in runs:
        if need > batch_tokens:
            raise DataError(
                f"one example has {need} tokens, more than batch_tokens {batch_tokens}: raise "
                "train.batch_tokens or lower data.max_len"
            )
        while k:
            w = max(width, need)
            if size and w * (size + 1) > batch_tokens:
                sizes.append(size)
                size = width = 0
                continue
            m = min(k, batch_tokens // w - size)
            size, k, width = size + m, k - m, w
    if size:
        sizes.append(size)
    return sizes


def length_batches(
    src_lens: Sequence[int] | np.ndarray,
    tgt_lens: Sequence[int] | np.ndarray,
    batch_tokens: int,
    seed: int = 0,
    epoch: int = 0,
    shuffle: bool = True,
    part: int = 0,
) -> list[np.ndarray]:
    """Length-bucketed batches of example indices, each within ``batch_tokens`` padded tokens.

    The padded size of a batch is n_sentences x max(longest source, longest target + 1), the +1 for
    the BOS/EOS shift. Examples are shuffled, then sorted by (target, source) length with ties left
    shuffled -- the target first, because the decoder and the output layer cost most -- cut into
    batches, and the batch order is shuffled: a pure function of (seed, epoch), so a resumed run
    sees the same batches. ``part`` numbers independent draws within an epoch (stream buffers).
    Memory: a few bytes an example.

    Raises:
        DataError: one example alone exceeds the budget.
    """
    src_lens, tgt_lens = np.asarray(src_lens), np.asarray(tgt_lens)
    rng = np.random.default_rng([seed % 2**63, epoch, part])
    idx = rng.permutation(len(src_lens)) if shuffle else np.arange(len(src_lens))
    idx = idx[np.lexsort((src_lens[idx], tgt_lens[idx]))]  # stable: ties stay shuffled
    need = np.maximum(src_lens[idx], tgt_lens[idx] + 1)
    starts = np.flatnonzero(np.diff(need, prepend=-1))
    counts = np.diff(np.append(starts, len(need)))
    sizes = cut_runs(zip(need[starts].tolist(), counts.tolist(), strict=True), batch_tokens)
    batches = np.split(idx, np.cumsum(sizes)[:-1]) if sizes else []
    return [batches[i] for i in rng.permutation(len(batches))] if shuffle else batches


def token_batches(
    src_lens: Sequence[int],
    tgt_lens: Sequence[int],
    batch_tokens: int,
    seed: int = 0,
    epoch: int = 0,
    shuffle: bool = True,
) -> list[list[int]]:
    """``length_batches`` as lists of ints."""
    return [
        b.tolist() for b in length_batches(src_lens, tgt_lens, batch_tokens, seed, epoch, shuffle)
    ]

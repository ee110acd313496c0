"""Batching: length-bucketed batches of example indices (one rule for every backend), the
teacher-forced ``Batch`` (where the shift happens, once), and ``target_vocab_mask`` (every
backend's ``target_vocab``). Shapes: B batch, S source length, T target length (EOS included), V
target vocabulary.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from seq2seq.data import DataError
from seq2seq.data.tokenizer import BOS, EOS, PAD


def pad_sequences(seqs: Sequence[Sequence[int]], pad: int = PAD) -> torch.Tensor:
    """List of id lists -> (B, L_max) long tensor, right-padded."""
    lens = np.fromiter(map(len, seqs), np.int64, len(seqs))
    out = np.full((len(seqs), int(lens.max(initial=0))), pad, dtype=np.int64)
    _fill(out, seqs, lens)
    return torch.from_numpy(out)


def _fill(out: np.ndarray, seqs: Sequence[Sequence[int]], lens: np.ndarray) -> None:
    """Write row i of ``seqs`` into the first ``lens[i]`` columns of ``out`` (B, L), at once: the
    row-major order of a boolean mask is the order of the concatenated rows."""
    flat = np.fromiter(itertools.chain.from_iterable(seqs), np.int64, int(lens.sum()))
    out[np.arange(out.shape[1]) < lens[:, None]] = flat


def padded_width(width: int, multiple: int = 1, cap: int | None = None) -> int:
    """``width`` rounded up to a multiple of ``multiple`` (so a GPU sees few distinct shapes),
    but never past ``cap`` (a model's position limit) unless ``width`` itself is."""
    rounded = -(-width // multiple) * multiple
    return rounded if cap is None else max(width, min(rounded, cap))


@dataclass
class Batch:
    """Teacher-forced batch.

    Attributes:
        src: (B, S) source ids, right-padded with PAD.
        src_mask: (B, S) bool, True at real tokens.
        tgt_in: (B, T) BOS y_1 ... y_{n}: the decoder input.
        tgt_out: (B, T) y_1 ... y_n EOS: what the decoder must predict; PAD beyond.
        n_tokens: number of real target tokens (EOS included), the loss normaliser.
        src_lengths: (B,) int64 numpy array of real source lengths, on the host (what
            ``pack_padded_sequence`` needs, known without reading the device), or None.
    """

    src: torch.Tensor
    src_mask: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    n_tokens: int
    src_lengths: np.ndarray | None = None
    _flat: torch.Tensor | None = field(default=None, repr=False)

    @classmethod
    def from_ids(
        cls,
        src: Sequence[Sequence[int]],
        tgt: Sequence[Sequence[int]],
        pad_multiple: int = 1,
        max_width: int | None = None,
        pin: bool = False,
    ) -> Batch:
        """Pad with numpy into one (pinned, if ``pin``) host buffer holding src, tgt_in and
        tgt_out, so ``to`` copies once. Widths are rounded up to ``pad_multiple`` (at most
        ``max_width``); the extra columns are PAD, masked like any padding.
        """
        b = len(src)
        src_len = np.fromiter(map(len, src), np.int64, b)
        tgt_len = np.fromiter(map(len, tgt), np.int64, b)
        s = padded_width(int(src_len.max(initial=0)), pad_multiple, max_width)
        t = padded_width(int(tgt_len.max(initial=0)) + 1, pad_multiple, max_width)
        flat = torch.empty(b * (s + 2 * t), dtype=torch.long)
        flat = flat.pin_memory() if pin else flat
        buf = flat.numpy()
        buf.fill(PAD)
        src_np, tin, tout = _views(buf, b, s, t)
        _fill(src_np, src, src_len)
        tin[:, 0] = BOS
        _fill(tin[:, 1:], tgt, tgt_len)
        _fill(tout, tgt, tgt_len)
        tout[np.arange(b), tgt_len] = EOS
        src_t, tin_t, tout_t = _views(flat, b, s, t)
        n_tokens = int(tgt_len.sum()) + b
        return cls(src_t, src_t != PAD, tin_t, tout_t, n_tokens, src_len, flat)

    def to(self, device: torch.device | str) -> Batch:
        """This batch on ``device``: one copy of the host buffer (asynchronous from pinned
        memory), split into views there; the mask is computed on the device."""
        device = torch.device(device)
        if self.src.device == device:
            return self
        (b, s), t = self.src.shape, self.tgt_in.shape[1]
        flat = self._flat
        if flat is None:
            flat = torch.cat([x.reshape(-1) for x in (self.src, self.tgt_in, self.tgt_out)])
        flat = flat.to(device, non_blocking=flat.is_pinned())
        src, tgt_in, tgt_out = _views(flat, b, s, t)
        return Batch(src, src != PAD, tgt_in, tgt_out, self.n_tokens, self.src_lengths, flat)


def _views(flat, b: int, s: int, t: int):
    """A flat buffer of B·S + 2·B·T ids -> its (B, S), (B, T), (B, T) views."""
    return (
        flat[: b * s].reshape(b, s),
        flat[b * s : b * (s + t)].reshape(b, t),
        flat[b * (s + t) :].reshape(b, t),
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


def shard(batches: Sequence, rank: int, world: int) -> Sequence:
    """This rank's share of an epoch's batches: every ``world``-th from ``rank`` on, after dropping
    the remainder so every rank gets the same number."""
    return batches[rank : len(batches) - len(batches) % world : world]


def target_vocab_mask(id_arrays: Iterable[np.ndarray], vocab_size: int) -> torch.Tensor:
    """The pieces a search may emit (``decode.target_vocab_mask``): (V,) bool, True for every id
    in ``id_arrays`` (target ids of the kept training pairs, no BOS/EOS, in any number of (N_i,)
    integer arrays) and EOS; PAD and BOS False.

    Raises:
        ValueError: an id outside [0, V).
    """
    seen = np.zeros(vocab_size, dtype=bool)
    for ids in id_arrays:
        ids = np.asarray(ids)
        if not ids.size:
            continue
        low, high = int(ids.min()), int(ids.max())
        if low < 0 or high >= vocab_size:
            bad = high if high >= vocab_size else low
            raise ValueError(f"target id {bad} is outside a vocabulary of {vocab_size} pieces")
        seen[ids] = True
    seen[[PAD, BOS]] = False
    seen[EOS] = True
    return torch.from_numpy(seen)

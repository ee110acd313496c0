"""``seq2seq/data/batch.py``: one length-batching rule (every example once, within the token
budget), ``Batch``: one padded buffer, padding to a multiple that changes no real position, and
``target_vocab_mask``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seq2seq.data.batch import (
    Batch,
    cut_runs,
    length_batches,
    padded_width,
    target_vocab_mask,
)
from seq2seq.data.text import DataError
from seq2seq.data.tokenizer import BOS, EOS, PAD
from seq2seq.training.loss import token_loss_sum
from tests.toys import TINY_MODELS, tiny_model


def _reference(src, tgt):
    """The teacher-forced batch, row by row."""

    def pad(rows):
        width = max(len(r) for r in rows)
        return torch.tensor([r + [PAD] * (width - len(r)) for r in rows])

    return pad(src), pad([[BOS, *t] for t in tgt]), pad([[*t, EOS] for t in tgt])


def _rand_pairs(n: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)

    def ids(lo, hi, vocab):
        return torch.randint(
            4, vocab, (int(torch.randint(lo, hi, (1,), generator=g)),), generator=g
        )

    return [ids(2, 11, 40).tolist() for _ in range(n)], [ids(1, 12, 45).tolist() for _ in range(n)]


def test_length_batches_cover_each_example_once_within_budget():
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(1, 60, 500), rng.integers(1, 60, 500)
    batches = length_batches(src, tgt, 400, seed=1, epoch=0)
    assert sorted(np.concatenate(batches).tolist()) == list(range(500))
    for b in batches:
        assert np.maximum(src[b], tgt[b] + 1).max() * len(b) <= 400
    again = length_batches(src, tgt, 400, seed=1, epoch=0)
    assert all(np.array_equal(a, b) for a, b in zip(again, batches, strict=True))
    other = length_batches(src, tgt, 400, seed=1, epoch=1)
    assert [b.tolist() for b in other] != [b.tolist() for b in batches]
    # the stream backend counts the batches from a histogram of (target, source) lengths alone
    pairs, counts = np.unique(np.stack([tgt, src], 1), axis=0, return_counts=True)
    widths = np.maximum(pairs[:, 1], pairs[:, 0] + 1)
    assert len(cut_runs(zip(widths.tolist(), counts.tolist(), strict=True), 400)) == len(batches)
    with pytest.raises(DataError, match="raise train.batch_tokens or lower data.max_len"):
        length_batches(np.array([10, 500]), np.array([10, 10]), 100)


def test_length_batches_of_lists_respect_budget_and_cover_every_example_once():
    import random

    rng = random.Random(0)
    src = [rng.randint(1, 60) for _ in range(500)]
    tgt = [rng.randint(1, 60) for _ in range(500)]
    batches = [b.tolist() for b in length_batches(src, tgt, batch_tokens=400, seed=1, epoch=0)]
    assert sorted(i for b in batches for i in b) == list(range(500))
    for b in batches:
        width = max(max(src[i], tgt[i] + 1) for i in b)
        assert width * len(b) <= 400
    again = [b.tolist() for b in length_batches(src, tgt, batch_tokens=400, seed=1, epoch=0)]
    assert again == batches  # a pure function of (seed, epoch): resumable
    other = length_batches(src, tgt, batch_tokens=400, seed=1, epoch=1)
    assert [b.tolist() for b in other] != batches


def test_example_over_budget_is_a_clear_error():
    with pytest.raises(DataError, match="raise train.batch_tokens or lower data.max_len"):
        length_batches([10, 500], [10, 10], batch_tokens=100)


def test_padded_width():
    assert [padded_width(w, 8) for w in (1, 8, 9, 16)] == [8, 8, 16, 16]
    assert padded_width(13, 8, cap=14) == 14  # never past a model's position limit
    assert padded_width(20, 8, cap=14) == 20  # ... unless the sentence itself is
    assert padded_width(5) == 5


def test_from_ids_pads_into_one_buffer():
    src, tgt = [[5, 6, 7], [], [8]], [[9], [10, 11, 12], []]
    b = Batch.from_ids(src, tgt)
    for got, want in zip((b.src, b.tgt_in, b.tgt_out), _reference(src, tgt), strict=True):
        assert torch.equal(got, want)
    assert torch.equal(b.src_mask, b.src != PAD) and b.n_tokens == 7
    assert b.src_lengths.tolist() == [3, 0, 1]
    ptrs = {x.untyped_storage().data_ptr() for x in (b.src, b.tgt_in, b.tgt_out)}
    assert len(ptrs) == 1  # one host buffer, so one copy to the device
    wide = Batch.from_ids(src, tgt, pad_multiple=8)
    assert wide.src.shape == wide.tgt_in.shape == (3, 8) and wide.n_tokens == 7
    assert torch.equal(wide.src[:, :3], b.src) and not wide.src[:, 3:].any()
    assert torch.equal(wide.tgt_out[:, :4], b.tgt_out) and not wide.tgt_out[:, 4:].any()


@pytest.mark.parametrize("name", list(TINY_MODELS))
def test_padding_to_a_multiple_changes_no_real_position(name):
    """Padding invariance: lengths rounded up to 8 give the same logits at real positions, the
    same loss and the same gradients."""
    src, tgt = _rand_pairs(5)
    results = []
    for multiple in (1, 8):
        model = tiny_model(name)
        b = Batch.from_ids(src, tgt, pad_multiple=multiple)
        logits = model(b.src, b.src_mask, b.tgt_in, src_lengths=b.src_lengths)
        loss = token_loss_sum(logits, b.tgt_out, 0.1)
        loss.backward()
        real = b.tgt_out != PAD
        grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
        results.append((logits[real], loss, grads))
    (a, loss_a, grads_a), (b, loss_b, grads_b) = results
    assert torch.allclose(a, b, atol=1e-5)
    assert torch.allclose(loss_a, loss_b, atol=1e-4)
    for ga, gb in zip(grads_a, grads_b, strict=True):
        assert torch.allclose(ga, gb, atol=1e-5)


def test_target_vocab_mask_is_the_ids_seen_and_eos_never_pad_or_bos():
    mask = target_vocab_mask([np.array([5, 7, 5]), np.array([], dtype=np.int32), [PAD, BOS, 4]], 9)
    assert mask.dtype == torch.bool and mask.nonzero().squeeze(1).tolist() == [EOS, 4, 5, 7]
    for bad in (9, -1):
        with pytest.raises(ValueError, match=f"target id {bad} is outside a vocabulary of 9"):
            target_vocab_mask([np.array([4, bad])], 9)

"""What a run resolves per device (precision, padding) and what GPU-friendly batches keep: the
same numbers on real positions, whatever the padding."""

from __future__ import annotations

import pytest
import torch

from seq2seq.config import ConfigError, TrainConfig, validate_config
from seq2seq.data.batch import Batch, padded_width
from seq2seq.data.tokenizer import BOS, EOS, PAD
from seq2seq.runtime import resolve_pad_multiple, resolve_precision
from seq2seq.training.loss import token_loss_sum

from .toys import TINY_MODELS, tiny_model

CPU, CUDA = torch.device("cpu"), torch.device("cuda")


def test_auto_resolves_per_device():
    assert TrainConfig(max_steps=1).precision == "auto"
    assert (resolve_precision("auto", CUDA), resolve_precision("auto", CPU)) == ("bf16", "fp32")
    assert resolve_precision("bf16", CPU) == "bf16" and resolve_precision("fp32", CUDA) == "fp32"
    assert (resolve_pad_multiple("auto", CUDA), resolve_pad_multiple("auto", CPU)) == (8, 1)
    assert resolve_pad_multiple(4, CPU) == 4
    with pytest.raises(ConfigError, match="data.pad_multiple"):
        validate_config({"data": {"pad_multiple": 0}, "train": {"max_steps": 1}})


def test_padded_width():
    assert [padded_width(w, 8) for w in (1, 8, 9, 16)] == [8, 8, 16, 16]
    assert padded_width(13, 8, cap=14) == 14  # never past a model's position limit
    assert padded_width(20, 8, cap=14) == 20  # ... unless the sentence itself is
    assert padded_width(5) == 5


def _reference(src, tgt):
    """The teacher-forced batch, row by row."""

    def pad(rows):
        width = max(len(r) for r in rows)
        return torch.tensor([r + [PAD] * (width - len(r)) for r in rows])

    return pad(src), pad([[BOS, *t] for t in tgt]), pad([[*t, EOS] for t in tgt])


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


def _rand_pairs(n: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)

    def ids(lo, hi, vocab):
        return torch.randint(
            4, vocab, (int(torch.randint(lo, hi, (1,), generator=g)),), generator=g
        )

    return [ids(2, 11, 40).tolist() for _ in range(n)], [ids(1, 12, 45).tolist() for _ in range(n)]


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


def test_batches_built_ahead_give_the_same_run(tmp_path, monkeypatch):
    """The background thread CUDA uses to build batches ahead changes nothing a run computes."""
    from seq2seq.checkpoint import load_checkpoint
    from seq2seq.training import loop

    from .test_sync import _reverse_corpus, sync_test_config

    _reverse_corpus(tmp_path, 200)
    weights = []
    for ahead in (False, True):
        monkeypatch.setattr(loop, "builds_ahead", lambda device, ahead=ahead: ahead)
        cfg = sync_test_config(tmp_path, "transformer", log_every=3, max_steps=7, update_freq=2)
        loop.train(cfg, tmp_path / f"run{ahead}")
        weights.append(load_checkpoint(tmp_path / f"run{ahead}" / "last.pt")["model"])
    assert all(torch.equal(w, weights[1][k]) for k, w in weights[0].items())

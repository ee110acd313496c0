"""``seq2seq/training/step.py``: one update -- gradient accumulation, scheduled sampling, skipping a
non-finite update, clipping."""

from __future__ import annotations

import math

import pytest
import torch

from seq2seq.config import TrainConfig
from seq2seq.data.batch import Batch
from seq2seq.training.distributed import DistInfo
from seq2seq.training.step import TeacherForcing, train_step
from tests.toys import tiny_model


def _rand_ids(g, n, lo, hi, vocab):
    return [
        torch.randint(
            4, vocab, (int(torch.randint(lo, hi, (1,), generator=g)),), generator=g
        ).tolist()
        for _ in range(n)
    ]


@pytest.mark.parametrize("name", ["transformer", "bahdanau", "rnn"])
def test_update_freq_2_equals_one_double_batch(name):
    """b + b accumulated equals one batch of 2b: the loss is normalised by all target tokens."""
    g = torch.Generator().manual_seed(0)
    src, tgt = _rand_ids(g, 6, 3, 12, 40), _rand_ids(g, 6, 2, 14, 45)
    halves = [Batch.from_ids(src[:2], tgt[:2]), Batch.from_ids(src[2:], tgt[2:])]
    assert halves[0].n_tokens != halves[1].n_tokens  # per-batch normalisation would differ
    whole = [Batch.from_ids(src, tgt)]
    t = TrainConfig(max_steps=1, label_smoothing=0.1, clip_norm=1.0)
    weights, results = [], []
    for batches, freq in ((halves, 2), (whole, 1)):
        model = tiny_model(name).train()
        opt = torch.optim.SGD(model.parameters(), lr=1.0)
        cfg = t.model_copy(update={"update_freq": freq})
        scaler = torch.amp.GradScaler("cpu", enabled=False)
        out = train_step(
            TeacherForcing(model), opt, scaler, batches, cfg, 0.5, torch.device("cpu"), DistInfo()
        )
        results.append({k: float(v) for k, v in out.items()})
        weights.append(model.state_dict())
    assert results[0]["tokens"] == results[1]["tokens"] == whole[0].n_tokens
    assert results[0]["loss"] == pytest.approx(results[1]["loss"], abs=1e-6)
    assert results[0]["grad_norm"] == pytest.approx(results[1]["grad_norm"], rel=1e-5)
    initial = tiny_model(name).state_dict()
    for k, w in weights[0].items():
        assert torch.allclose(w, weights[1][k], atol=1e-5), k
    assert any(not torch.equal(w, initial[k]) for k, w in weights[0].items())


@pytest.mark.parametrize("name", ["bahdanau", "luong_general_uni", "rnn"])
def test_scheduled_sampling_wrapper(name):
    """ratio 1 is the teacher-forced forward; ratio 0 feeds back its own argmax at every step."""
    model = tiny_model(name)
    g = torch.Generator().manual_seed(1)
    b = Batch.from_ids(_rand_ids(g, 3, 3, 9, 40), _rand_ids(g, 3, 4, 9, 45))
    wrap = TeacherForcing(model)
    assert torch.equal(wrap(b.src, b.src_mask, b.tgt_in, 1.0), model(b.src, b.src_mask, b.tgt_in))
    free = wrap(b.src, b.src_mask, b.tgt_in, 0.0)
    fed = torch.cat([b.tgt_in[:, :1], free.argmax(-1)[:, :-1]], 1)
    assert not torch.equal(fed, b.tgt_in)
    assert torch.allclose(free, model(b.src, b.src_mask, fed), atol=1e-5)
    free.logsumexp(-1).sum().backward()
    assert all(p.grad is not None for p in model.encoder.parameters())


@pytest.mark.parametrize("fused", [True, False])
def test_a_non_finite_update_is_skipped(fused):
    """NaN logits: the optimizer changes no weight, moment or step count; the step says so. A
    fused optimizer decides on the device, any other on the host."""
    g = torch.Generator().manual_seed(0)
    batch = Batch.from_ids(_rand_ids(g, 4, 3, 10, 40), _rand_ids(g, 4, 2, 12, 45))
    model = tiny_model("transformer").train()
    opt = torch.optim.Adam(model.parameters(), lr=0.01, fused=fused)
    cfg = TrainConfig(max_steps=1)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    cpu, wrapper = torch.device("cpu"), TeacherForcing(model)
    first = train_step(wrapper, opt, scaler, [batch], cfg, 0.01, cpu, DistInfo())
    assert float(first["skipped"]) == 0.0
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    moments = {k: v.clone() for k, v in opt.state[next(model.parameters())].items()}

    class NaN(torch.nn.Module):
        def forward(self, *args):
            return wrapper(*args) * float("nan")

    out = train_step(NaN(), opt, scaler, [batch], cfg, 0.01, cpu, DistInfo())
    assert float(out["skipped"]) == 1.0 and not math.isfinite(float(out["loss"]))
    assert all(torch.equal(v, weights[k]) for k, v in model.state_dict().items())
    state = opt.state[next(model.parameters())]
    assert all(torch.equal(state[k], v) for k, v in moments.items())
    assert int(state["step"]) == 1


def test_gradient_clipping_bounds_the_update():
    """With SGD, the weight change is lr x the gradient rescaled to norm clip_norm."""
    g = torch.Generator().manual_seed(0)
    batch = Batch.from_ids(_rand_ids(g, 4, 3, 10, 40), _rand_ids(g, 4, 2, 12, 45))
    model = tiny_model("bahdanau").train()
    before = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    cfg = TrainConfig(max_steps=1, clip_norm=0.01)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    out = train_step(
        TeacherForcing(model), opt, scaler, [batch], cfg, 0.5, torch.device("cpu"), DistInfo()
    )
    assert float(out["grad_norm"]) > 0.1  # logged before clipping
    moved = [(p.detach() - b).pow(2).sum() for p, b in zip(model.parameters(), before, strict=True)]
    step = torch.sqrt(sum(moved))
    assert float(step) == pytest.approx(0.5 * 0.01, rel=1e-4)

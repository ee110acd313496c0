"""The training loop's pieces and behaviour: schedules, gradient accumulation, scheduled sampling,
non-finite updates, early stopping and best-k checkpoints, precision, TensorBoard, averaging.

Runs are in-process on a 200-pair slice of Multi30k with toy models; validation is scripted where
only its numbers matter.
"""

from __future__ import annotations

import json
import logging
import math
import re

import pytest
import torch

from seq2seq.atomic import atomic_write_bytes
from seq2seq.checkpoint import (
    CheckpointError,
    load_checkpoint,
    load_for_inference,
    save_checkpoint,
)
from seq2seq.config import ConfigError, DecodeConfig, TrainConfig, validate_config
from seq2seq.data.batch import Batch
from seq2seq.data.prepare import epoch_batches, prepare_data
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decoding.translate import translate_sentences
from seq2seq.models import build_model
from seq2seq.training.average import average_checkpoints, average_run
from seq2seq.training.distributed import DistInfo
from seq2seq.training.loop import train
from seq2seq.training.loss import token_loss_sum
from seq2seq.training.monitor import attention_heatmap, note_short_update
from seq2seq.training.schedules import lr_at, teacher_forcing_at
from seq2seq.training.state import TrainingError, TrainState, book_score, stop_reason
from seq2seq.training.step import TeacherForcing, train_step

from .toys import tiny_model

RNN = {
    "name": "bahdanau",
    "emb_size": 16,
    "hidden_size": 24,
    "attention_size": 16,
    "maxout_size": 16,
    "dropout": 0.0,
}


def config(slice_dir, model=None, **train_cfg):
    raw = {
        "name": "t",
        "data": {
            "train": str(slice_dir / "train"),
            "valid": str(slice_dir / "val"),
            "max_len": 60,
            "max_train_pairs": 200,
            "max_valid_pairs": 20,
        },
        "tokenizer": {"vocab_size": 400},
        "model": model or RNN,
        "train": {
            "max_steps": 6,
            "batch_tokens": 800,
            "valid_every": 1000,
            "lr": 0.003,
            "seed": 1,
            "log_every": 1,
            "num_threads": 1,
            **train_cfg,
        },
        "decode": {"batch_size": 50},
    }
    return validate_config(raw)


def log_lines(run_dir):
    return [json.loads(x) for x in (run_dir / "train_log.jsonl").read_text().splitlines()]


# ---- schedules: pure functions of the step ----------------------------------------------------


def test_lr_schedules():
    t = TrainConfig(max_steps=110, lr=1.0, schedule="noam", warmup_steps=100)
    assert lr_at(100, t) == pytest.approx(1.0)  # the peak is lr, at warmup
    assert lr_at(25, t) == pytest.approx(0.25)
    assert lr_at(400, t) == pytest.approx(0.5)  # (warmup / step)^0.5
    t = TrainConfig(max_steps=110, lr=1.0, min_lr=0.1, schedule="cosine", warmup_steps=10)
    assert lr_at(5, t) == pytest.approx(0.5)
    assert lr_at(10, t) == pytest.approx(1.0)
    assert lr_at(60, t) == pytest.approx(0.55)  # halfway between lr and min_lr
    assert lr_at(110, t) == pytest.approx(0.1)
    t = TrainConfig(
        max_steps=110, lr=1.0, min_lr=0.1, schedule="cosine", warmup_steps=10, decay_steps=60
    )
    assert lr_at(35, t) == pytest.approx(0.55)  # halfway to decay_steps
    assert lr_at(60, t) == lr_at(61, t) == lr_at(110, t) == pytest.approx(0.1)  # then it holds
    with pytest.raises(ValueError, match=r"warmup_steps \(10\) must be below decay_steps \(10\)"):
        TrainConfig(max_steps=110, schedule="cosine", warmup_steps=10, decay_steps=10)
    t = TrainConfig(max_steps=10, lr=1.0, min_lr=0.1, schedule="plateau", warmup_steps=4)
    assert lr_at(2, t, plateau_scale=0.5) == pytest.approx(0.25)
    assert lr_at(8, t, plateau_scale=0.5) == pytest.approx(0.5)
    assert lr_at(8, t, plateau_scale=0.01) == pytest.approx(0.1)  # floored at min_lr
    assert lr_at(3, TrainConfig(max_steps=9, lr=2.0)) == 2.0


def test_teacher_forcing_schedules():
    tf = TrainConfig(max_steps=1).teacher_forcing
    assert tf.always and teacher_forcing_at(10**6, tf) == 1.0
    linear = {"schedule": "linear", "start": 1.0, "end": 0.2, "decay_steps": 100}
    tf = TrainConfig(max_steps=1, teacher_forcing=linear).teacher_forcing
    assert teacher_forcing_at(50, tf) == pytest.approx(0.6)
    assert teacher_forcing_at(500, tf) == pytest.approx(0.2)
    tf = TrainConfig(
        max_steps=1, teacher_forcing={"schedule": "exponential", "k": 0.99, "end": 0.1}
    ).teacher_forcing
    assert teacher_forcing_at(100, tf) == pytest.approx(0.99**100)
    assert teacher_forcing_at(10_000, tf) == pytest.approx(0.1)
    tf = TrainConfig(max_steps=1, teacher_forcing={"schedule": "inverse_sigmoid", "k": 10})
    tf = tf.teacher_forcing
    assert teacher_forcing_at(0, tf) == pytest.approx(10 / 11)
    assert teacher_forcing_at(23.026, tf) == pytest.approx(0.5, rel=1e-4)  # exp(i/k) = k
    assert teacher_forcing_at(10**9, tf) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(
    ("train_cfg", "model", "needle"),
    [
        ({"teacher_forcing": {"schedule": "linear"}}, None, "needs decay_steps"),
        ({"teacher_forcing": {"schedule": "exponential", "k": 2}}, None, "k between 0 and 1"),
        (
            {"teacher_forcing": {"schedule": "constant", "start": 0.5}},
            {"name": "transformer", "d_model": 32, "n_heads": 2},
            "scheduled sampling is for the models rnn, .*; remove it for transformer",
        ),
        ({"teacher_forcing": {"kk": 1}}, None, "train.teacher_forcing.kk: unknown key"),
        ({"precision": "fp16", "device": "cpu"}, None, "fp16 needs CUDA"),
    ],
)
def test_train_config_rejects(synth_corpus, train_cfg, model, needle):
    with pytest.raises(ConfigError, match=needle):
        config(synth_corpus, model, **train_cfg)


# ---- one update ---------------------------------------------------------------------------------


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


def test_update_freq_groups_stop_at_the_epoch_end_and_the_start_says_so(
    tmp_path, caplog, synth_corpus, synth_tokenizer
):
    """update_freq 3 over two epochs of N batches (N not a multiple of 3): each epoch takes
    ceil(N / 3) updates, its last one short, and one INFO line at the start says so."""
    from .toys import synth_run_config

    cfg = synth_run_config(synth_corpus, max_epochs=2, update_freq=3, batch_tokens=2000)
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        summary = train(cfg, tmp_path / "run", tokenizer=synth_tokenizer)
    notes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("update_freq")]
    assert len(notes) == 1, notes
    found = re.fullmatch(
        r"update_freq 3: an epoch of (\d+) batches ends with an update of (\d) batch(es)? "
        r"\(groups do not span epochs\)",
        notes[0],
    )
    assert found, notes[0]
    n, tail = int(found[1]), int(found[2])
    assert tail == n % 3 != 0
    assert summary["epochs"] == 2 and summary["steps"] == 2 * math.ceil(n / 3)


def test_update_freq_note_only_when_an_epoch_ends_with_a_short_update(caplog):
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        note_short_update(4, 3)
        note_short_update(6, 3)
        note_short_update(5, 1)
        note_short_update(1, 3)
        note_short_update(4, 3, main=False)  # another rank than the first: no line
    assert [r.getMessage() for r in caplog.records] == [
        "update_freq 3: an epoch of 4 batches ends with an update of 1 batch (groups do not span "
        "epochs)",
        "update_freq 3: an epoch of 1 batch ends with an update of 1 batch (groups do not span "
        "epochs)",
    ]


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


def test_epoch_batches_are_sharded_per_rank(synth_corpus, synth_tokenizer):
    from seq2seq.data.text import TokenizedPairs

    lines = (synth_corpus / "train.de").read_text().splitlines()[:300]
    ids = synth_tokenizer.encode_src(lines)
    pairs = TokenizedPairs(ids, ids, list(range(len(ids))))
    t = TrainConfig(max_steps=1, batch_tokens=500)
    whole = epoch_batches(pairs, t, 3, DistInfo())
    r0, r1 = (epoch_batches(pairs, t, 3, DistInfo(rank=r, world=2)) for r in (0, 1))
    assert len(r0) == len(r1) == len(whole) // 2
    assert r0 == whole[0 : 2 * len(r0) : 2] and r1 == whole[1 : 2 * len(r1) : 2]
    assert not {i for b in r0 for i in b} & {i for b in r1 for i in b}


# ---- the loop ----------------------------------------------------------------------------------


def _nan_on_calls(monkeypatch, calls):
    """Make TeacherForcing return NaN logits on the given (1-based) forward calls."""
    original, count = TeacherForcing.forward, {"n": 0}

    def forward(self, *args):
        count["n"] += 1
        out = original(self, *args)
        return out * float("nan") if calls(count["n"]) else out

    monkeypatch.setattr(TeacherForcing, "forward", forward)


@pytest.mark.e2e  # a training run on the Multi30k slice
@pytest.mark.parametrize("log_every", [1, 3])
def test_a_nan_loss_is_skipped_and_counted(multi30k_slice, tmp_path, monkeypatch, log_every):
    """The skipped update takes a step number and logs no line; it is counted when read."""
    _nan_on_calls(monkeypatch, lambda n: n == 3)
    summary = train(config(multi30k_slice, max_steps=5, log_every=log_every), tmp_path / "run")
    assert summary["steps"] == 5 and summary["nonfinite_skipped"] == 1
    steps = [r for r in log_lines(tmp_path / "run") if "loss" in r]
    assert [r["step"] for r in steps] == [1, 2, 4, 5]
    assert all(math.isfinite(r["loss"]) for r in steps)
    ckpt = load_checkpoint(tmp_path / "run" / "last.pt")
    state = ckpt["train_state"]
    assert state["batch_in_epoch"] == 5  # the skipped batch is consumed, not retried
    assert state["nonfinite_total"] == 1 and state["nonfinite_in_row"] == 0
    assert all(torch.isfinite(t).all() for t in ckpt["model"].values() if t.is_floating_point())


@pytest.mark.e2e  # a training run on the Multi30k slice
@pytest.mark.parametrize("log_every", [1, 4])
def test_nan_in_a_row_stops_with_one_error_and_keeps_the_checkpoint(
    multi30k_slice, tmp_path, monkeypatch, log_every
):
    """Skips leave the weights as they were; too many in a row stop at a log point or before a
    checkpoint, whichever reads them first, so no checkpoint lies past the limit."""
    _nan_on_calls(monkeypatch, lambda n: n > 4)
    cfg = config(
        multi30k_slice,
        max_steps=50,
        checkpoint_every=2,
        keep_last=3,
        max_nonfinite=3,
        log_every=log_every,
    )
    with pytest.raises(TrainingError, match="3 non-finite losses in a row at steps 5-7"):
        train(cfg, tmp_path / "run")
    ckpt = load_checkpoint(tmp_path / "run" / "last.pt")
    assert ckpt["train_state"]["step"] == 6 and ckpt["train_state"]["nonfinite_in_row"] == 2
    assert all(torch.isfinite(t).all() for t in ckpt["model"].values() if t.is_floating_point())
    before = load_checkpoint(tmp_path / "run" / "step4.pt")
    for k, w in ckpt["model"].items():
        assert torch.equal(w, before["model"][k]), k  # the skipped steps changed no weight
    assert torch.equal(  # nor the optimizer's step count
        ckpt["optimizer"]["state"][0]["step"], before["optimizer"]["state"][0]["step"]
    )


@pytest.mark.e2e  # a training run on the Multi30k slice
def test_max_epochs_stops_at_the_epoch_end_and_resume_checks_the_model(multi30k_slice, tmp_path):
    summary = train(config(multi30k_slice, max_steps=None, max_epochs=1), tmp_path / "run")
    assert (summary["stopped"], summary["epochs"]) == ("max_epochs", 1)
    cfg, run = config(multi30k_slice), tmp_path / "run"
    data = prepare_data(cfg, run, Tokenizer.load(run), DistInfo())
    assert summary["steps"] == len(epoch_batches(data.train, cfg.train, 0, DistInfo()))
    other = {**RNN, "hidden_size": 32}
    with pytest.raises(ConfigError, match="model section differs from the checkpoint's"):
        train(config(multi30k_slice, other, max_steps=20), tmp_path / "run", resume=True)


def test_save_checkpoint_refuses_non_finite_weights(tmp_path):
    model = tiny_model("rnn")
    save_checkpoint(tmp_path / "c.pt", {"model": model.state_dict()})
    before = (tmp_path / "c.pt").read_bytes()
    bad = {k: v.clone() for k, v in model.state_dict().items()}
    next(iter(bad.values()))[0] = float("inf")
    with pytest.raises(CheckpointError, match="is not finite"):
        save_checkpoint(tmp_path / "c.pt", {"model": bad})
    assert (tmp_path / "c.pt").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]


def _scripted_validation(monkeypatch, metric, values):
    seq = iter(values)

    def validate(*args):
        v = next(seq)
        loss = v if metric == "loss" else 3.0
        return {
            "loss": loss,
            "ppl": math.exp(loss),
            "bleu": v if metric == "bleu" else 1.0,
            "chrf": v if metric == "chrf" else 1.0,
        }

    monkeypatch.setattr("seq2seq.training.loop.validate", validate)
    monkeypatch.setattr("seq2seq.training.loop.attention_heatmap", lambda *args: None)


SCHEDULES = {
    "constant": {},
    "noam": {"warmup_steps": 4},
    "plateau": {"plateau_patience": 0},
    "cosine": {},
}


@pytest.mark.e2e  # a training run on the Multi30k slice
@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_early_stopping_on_bleu_with_every_schedule(
    multi30k_slice, tmp_path, monkeypatch, schedule
):
    _scripted_validation(monkeypatch, "bleu", [10.0, 12.0, 11.0, 11.5, 99.0])
    cfg = config(
        multi30k_slice,
        max_steps=40,
        valid_every=2,
        patience=2,
        schedule=schedule,
        **SCHEDULES[schedule],
    )
    summary = train(cfg, tmp_path / "run")
    assert summary["stopped"] == "early_stopping"
    assert (summary["steps"], summary["best_step"], summary["best_score"]) == (8, 4, 12.0)
    assert load_checkpoint(tmp_path / "run" / "best.pt")["train_state"]["step"] == 4


@pytest.mark.e2e  # a training run on the Multi30k slice
@pytest.mark.parametrize(
    ("metric", "values", "best"),
    [("chrf", [5.0, 4.0, 6.0, 5.5], 6.0), ("loss", [5.0, 4.0, 6.0, 4.5], 4.0)],
)
def test_keep_best_k_by_metric_and_average(
    multi30k_slice, tmp_path, monkeypatch, metric, values, best
):
    _scripted_validation(monkeypatch, metric, values)
    cfg = config(multi30k_slice, max_steps=8, valid_every=2, keep_best=2, best_metric=metric)
    summary = train(cfg, tmp_path / "run")
    assert summary["best_score"] == best
    ranked = {
        "chrf": ["best-step6.pt", "best-step8.pt"],
        "loss": ["best-step4.pt", "best-step8.pt"],
    }[metric]
    kept = sorted(p.name for p in (tmp_path / "run").glob("best-step*.pt"))
    assert kept == sorted(ranked)
    state = load_checkpoint(tmp_path / "run" / "last.pt")["train_state"]
    assert [name for _, name in state["best_k"]] == ranked

    paths = average_run(tmp_path / "run", tmp_path / "avg.pt", best=2)
    assert [p.name for p in paths] == ranked
    a, b = (load_checkpoint(p)["model"] for p in paths)
    avg = load_checkpoint(tmp_path / "avg.pt")["model"]
    assert any(not torch.equal(a[k], b[k]) for k in a)
    for k in a:
        assert torch.allclose(avg[k], (a[k] + b[k]) / 2, atol=1e-7), k
    model, tok, _ = load_for_inference(tmp_path / "avg.pt")
    out = translate_sentences(model, tok, ["Ein Hund läuft."], DecodeConfig(max_len_b=5))
    assert out[0].hypotheses


def test_average_rejects_checkpoints_of_different_models(tmp_path, synth_tokenizer):
    v = synth_tokenizer.src_vocab_size
    for name, hidden in (("a.pt", 24), ("b.pt", 32)):
        cfg = validate_config(
            {
                "train": {"max_steps": 1},
                "model": {"name": "rnn", "emb_size": 8, "hidden_size": hidden},
            }
        )
        model = build_model(cfg.model, v, v, True)
        save_checkpoint(
            tmp_path / name,
            {
                "config": cfg.model_dump(mode="json"),
                "model": model.state_dict(),
                "tokenizer": synth_tokenizer.state_dict(),
            },
        )
    with pytest.raises(CheckpointError, match="a different model"):
        average_checkpoints([tmp_path / "a.pt", tmp_path / "b.pt"])


def test_book_score_plateau_and_patience():
    t = TrainConfig(max_steps=1, schedule="plateau", plateau_patience=1, plateau_factor=0.5)
    st = TrainState()
    for step, score in enumerate([1.0, 2.0, 1.5, 1.5, 1.5, 3.0], start=1):
        st.step = step
        book_score(st, score, t)
        if step == 5:
            assert (st.bad_validations, st.plateau_scale) == (3, 0.5)
    assert (st.best_score, st.best_step, st.bad_validations) == (3.0, 6, 0)


def test_stop_reason_is_a_function_of_the_state():
    t = TrainConfig(max_steps=10, max_epochs=3, max_time=1.0, max_tokens=500, patience=2)
    assert stop_reason(TrainState(), t) == ""
    short = TrainState(step=9, epoch=2, train_seconds=59.9, target_tokens=499, bad_validations=1)
    assert stop_reason(short, t) == ""
    assert stop_reason(TrainState(step=10), t) == "max_steps"
    assert stop_reason(TrainState(epoch=3), t) == "max_epochs"
    assert stop_reason(TrainState(train_seconds=60.0), t) == "max_time"
    assert stop_reason(TrainState(target_tokens=500), t) == "max_tokens"
    assert stop_reason(TrainState(bad_validations=2), t) == "early_stopping"
    # several at once: the first of interrupted, steps, epochs, time, tokens, patience
    every = TrainState(step=10, epoch=3, train_seconds=60.0, target_tokens=500, bad_validations=2)
    assert stop_reason(every, t) == "max_steps"
    assert stop_reason(every, t, interrupted=True) == "interrupted"
    # without the clock (ranks under torchrun between log points): no signal, no time
    assert stop_reason(TrainState(train_seconds=60.0), t, interrupted=True, clock=False) == ""
    assert stop_reason(every, t, interrupted=True, clock=False) == "max_steps"
    # a budget left unset never stops a run
    only_tokens = TrainConfig(max_tokens=500)
    assert stop_reason(TrainState(step=10**6, epoch=99, train_seconds=1e9), only_tokens) == ""


@pytest.mark.e2e  # a training run on the Multi30k slice
def test_a_run_logs_and_checkpoints_everything(multi30k_slice, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tf = {"schedule": "linear", "start": 1.0, "end": 0.5, "decay_steps": 4}
    summary = train(
        config(multi30k_slice, max_steps=4, valid_every=4, teacher_forcing=tf), tmp_path / "run"
    )
    assert summary["steps"] == 4
    steps = [r for r in log_lines(tmp_path / "run") if "loss" in r]
    assert [r["tf_ratio"] for r in steps] == pytest.approx([0.875, 0.75, 0.625, 0.5])
    assert all(r["grad_norm"] > 0 and r["tokens_per_s"] > 0 for r in steps)
    ea = EventAccumulator(str(tmp_path / "run" / "tensorboard"), size_guidance={"tensors": 0})
    ea.Reload()
    for tag in (
        "train/loss",
        "train/lr",
        "train/grad_norm",
        "train/target_tokens_per_s",
        "train/teacher_forcing_ratio",
        "valid/bleu",
        "valid/chrf",
        "valid/loss",
    ):
        assert len(ea.Scalars(tag)) == (1 if tag.startswith("valid") else 4), tag
    assert ea.Images("valid/attention")
    assert "valid/sample0/text_summary" in ea.Tags()["tensors"]
    assert (tmp_path / "run" / "attention.png").stat().st_size > 1000

    ckpt = load_checkpoint(tmp_path / "run" / "last.pt")
    assert {"config", "model", "tokenizer", "optimizer", "scaler", "train_state", "rng"} <= set(
        ckpt
    )
    assert set(ckpt["rng"]) == {"python", "numpy", "torch", "cuda"}
    assert ckpt["optimizer"]["state"]  # Adam moments, not a fresh optimizer
    st = ckpt["train_state"]
    assert (st["step"], st["epoch"], st["best_step"], st["bad_validations"]) == (4, 0, 4, 0)
    assert st["batch_in_epoch"] == 4 and st["best_score"] is not None
    assert ckpt["config"]["train"]["teacher_forcing"]["decay_steps"] == 4  # resolved config


def test_atomic_write_keeps_the_old_file_on_a_crash(tmp_path, monkeypatch):
    target = tmp_path / "last.pt"
    atomic_write_bytes(target, b"old")

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("seq2seq.atomic.os.replace", crash)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["last.pt"]  # no temporary file left


def test_attention_heatmap_only_for_attention_models(synth_tokenizer):
    v = synth_tokenizer.src_vocab_size
    img = attention_heatmap(tiny_model("bahdanau", v, v), synth_tokenizer, "Ein Hund.", "cpu")
    assert img.ndim == 3 and img.shape[2] == 3 and img.dtype.name == "uint8"
    assert attention_heatmap(tiny_model("rnn", v, v), synth_tokenizer, "Ein Hund.", "cpu") is None


@pytest.mark.e2e  # a training run on the Multi30k slice
def test_bf16_autocast_on_cpu_trains(multi30k_slice, tmp_path):
    summary = train(config(multi30k_slice, max_steps=3, precision="bf16"), tmp_path / "run")
    losses = [r["loss"] for r in log_lines(tmp_path / "run") if "loss" in r]
    assert summary["steps"] == 3 and summary["nonfinite_skipped"] == 0
    assert len(losses) == 3 and all(math.isfinite(x) for x in losses)


def test_fp16_without_cuda_is_a_config_error(synth_corpus, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ConfigError, match="fp16 needs CUDA"):
        train(config(synth_corpus, precision="fp16"), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_label_smoothed_loss_matches_the_formula():
    """ε-smoothed cross-entropy: -(1-ε)·log p_y - (ε/V)·Σ_v log p_v per real token; PAD ignored."""
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(2, 3, 7, generator=g)
    tgt_out = torch.tensor([[4, 5, 0], [6, 0, 0]])  # three real tokens, three PAD
    logp = logits.log_softmax(-1)
    eps, expected = 0.1, 0.0
    for b, t in ((0, 0), (0, 1), (1, 0)):
        y = tgt_out[b, t]
        expected += -(1 - eps) * logp[b, t, y] - eps / 7 * logp[b, t].sum()
    assert float(token_loss_sum(logits, tgt_out, eps)) == pytest.approx(float(expected), rel=1e-6)
    plain = -sum(logp[b, t, tgt_out[b, t]] for b, t in ((0, 0), (0, 1), (1, 0)))
    assert float(token_loss_sum(logits, tgt_out)) == pytest.approx(float(plain), rel=1e-6)


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

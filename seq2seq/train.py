"""The training loop: setup -> loop of train_step / validate / save -> cleanup.

Steps count optimizer updates. Everything a resumed run needs (weights, optimizer, schedule state,
RNG states, the epoch and the batch within it, best score, patience) is in ``last.pt``; batches are a
pure function of (seed, epoch), so ``--resume`` continues exactly where the run stopped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .batch import Batch
from .checkpoint import config_of, load_checkpoint, save_checkpoint
from .config import Config, ConfigError, TrainConfig, to_yaml
from .console import console
from .corpus import Corpus
from .data import DataError, ParallelText, TokenizedPairs, load_split, token_batches, tokenize_pairs
from .distributed import DistInfo, all_reduce_sum, barrier, broadcast_flag, init_distributed, shutdown
from .loss import token_loss_sum
from .metrics import corpus_score
from .models import Seq2SeqModel, build_model
from .run_info import write_run_info
from .tokenizer import Tokenizer
from .translate import translate_sentences

log = logging.getLogger("seq2seq")


class TrainingError(RuntimeError):
    """Training cannot go on (one line; the last good checkpoint stays on disk)."""


@dataclass
class TrainState:
    """The loop's position and bookkeeping; saved in every checkpoint."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_score: float | None = None
    best_step: int = 0
    bad_validations: int = 0
    plateau_scale: float = 1.0
    plateau_bad: int = 0
    nonfinite_in_row: int = 0
    nonfinite_total: int = 0
    tokens_seen: int = 0
    train_seconds: float = 0.0
    best_k: list[tuple[float, str]] = field(default_factory=list)


def lr_at(step: int, t: TrainConfig, plateau_scale: float = 1.0) -> float:
    """Learning rate for update ``step`` (from 1): a pure function of the step.

    - constant / plateau: ``lr``, after linear warmup; plateau multiplies by ``plateau_scale``.
    - noam (Vaswani et al. 2017, eq. 3): d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), rescaled
      so its peak, at ``warmup_steps``, is ``lr``: lr · min(step / warmup, (warmup / step)^0.5).
    - cosine: warmup, then ``lr`` -> ``min_lr`` along half a cosine until ``max_steps``.
    """
    w = t.warmup_steps
    if t.schedule == "noam":
        return t.lr * min(step / w, math.sqrt(w / step))
    warm = min(1.0, step / w) if w else 1.0
    if t.schedule == "cosine":
        progress = min(1.0, max(0, step - w) / max(1, (t.max_steps or step) - w))
        return warm * (t.min_lr + (t.lr - t.min_lr) * 0.5 * (1 + math.cos(math.pi * progress)))
    return max(t.min_lr, t.lr * warm * plateau_scale) if t.schedule == "plateau" else t.lr * warm


class TeacherForcing(nn.Module):
    """What DDP wraps: teacher-forced logits, or scheduled sampling (Bengio et al. 2015) when
    ``ratio`` < 1, where each step feeds the gold previous token with probability ``ratio`` and the
    model's own argmax otherwise. Returns logits (B, T, V)."""

    def __init__(self, model: Seq2SeqModel):
        super().__init__()
        self.model = model

    def forward(self, src, src_mask, tgt_in, ratio: float = 1.0):
        if ratio >= 1.0:
            return self.model(src, src_mask, tgt_in)
        state = self.model.init_state(self.model.encode(src, src_mask))
        prev, outs = tgt_in[:, 0], []
        for t in range(tgt_in.shape[1]):
            logits, _, state = self.model.decode_step(prev, state)
            outs.append(logits)
            if t + 1 < tgt_in.shape[1]:
                gold = torch.rand(prev.shape[0], device=prev.device) < ratio
                prev = torch.where(gold, tgt_in[:, t + 1], logits.argmax(-1))
        return torch.stack(outs, 1)


def pick_device(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise TrainingError("--device cuda was asked for but torch sees no CUDA device")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


def autocast(device: torch.device, precision: str):
    if precision == "fp32":
        return contextlib.nullcontext()
    if precision == "fp16" and device.type != "cuda":
        raise TrainingError("precision fp16 needs CUDA; use bf16 or fp32 on the CPU")
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device.type, dtype=dtype)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def rng_states() -> dict:
    np_state = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": [np_state[0], torch.from_numpy(np_state[1].copy()), *np_state[2:]],
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_states(s: dict) -> None:
    random.setstate((s["python"][0], tuple(s["python"][1]), s["python"][2]))
    np.random.set_state((s["numpy"][0], s["numpy"][1].numpy(), *s["numpy"][2:]))
    torch.set_rng_state(s["torch"])
    if s["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(s["cuda"])


@dataclass
class Data:
    tok: Tokenizer
    train: TokenizedPairs | Corpus
    valid: TokenizedPairs
    valid_text: ParallelText


def prepare_data(cfg: Config, run_dir: Path, tok: Tokenizer | None, info: DistInfo) -> Data:
    """Read and clean both splits, train (or reuse) the tokenizer, encode, filter by max_len.
    With ``data.backend`` arrow or stream the training split stays on disk (corpus.py)."""
    if cfg.data.backend != "memory":
        from .corpus import prepare_corpus

        tok, corpus = prepare_corpus(cfg, run_dir, tok, info.is_main, lambda: barrier(info))
        valid_text = load_split(cfg.data, "valid")
        if cfg.data.max_valid_pairs:
            _truncate(valid_text, cfg.data.max_valid_pairs)
        valid = tokenize_pairs(valid_text, tok.encode_src, tok.encode_tgt, 10**9, "valid")
        return Data(tok, corpus, valid, valid_text)
    train_text = load_split(cfg.data, "train")
    if cfg.data.max_train_pairs:
        _truncate(train_text, cfg.data.max_train_pairs)
    valid_text = load_split(cfg.data, "valid")
    if cfg.data.max_valid_pairs:
        _truncate(valid_text, cfg.data.max_valid_pairs)
    if not len(train_text):
        raise DataError(f"{train_text.origin}: no usable training pairs")
    if tok is None:
        if info.is_main:
            log.info("training %s sentencepiece model(s), vocab %d", cfg.tokenizer.type,
                     cfg.tokenizer.vocab_size)
            Tokenizer.train(train_text.src, train_text.tgt, cfg.tokenizer).save(run_dir)
        barrier(info)
        tok = Tokenizer.load(run_dir)
    train = tokenize_pairs(train_text, tok.encode_src, tok.encode_tgt, cfg.data.max_len, "train")
    valid = tokenize_pairs(valid_text, tok.encode_src, tok.encode_tgt, 10**9, "valid")
    if cfg.data.concat_k > 1:
        from .data import concat_pairs

        train = concat_pairs(train, cfg.data.concat_k, cfg.train.seed)
    return Data(tok, train, valid, valid_text)


def _truncate(text: ParallelText, n: int) -> None:
    del text.src[n:], text.tgt[n:], text.line_no[n:]


def epoch_batches(pairs: TokenizedPairs | Corpus, t: TrainConfig, epoch: int, info: DistInfo):
    """This rank's share of the epoch's batches (every rank gets the same number). An Arrow or
    stream corpus (``data.backend``, corpus.py) cuts its own batches by the same rule."""
    if not isinstance(pairs, TokenizedPairs):
        return pairs.epoch_batches(t.batch_tokens, t.seed, epoch, info.rank, info.world)
    src_lens = [len(s) for s in pairs.src]
    tgt_lens = [len(s) for s in pairs.tgt]
    order = token_batches(src_lens, tgt_lens, t.batch_tokens, t.seed, epoch)
    usable = len(order) - len(order) % info.world
    return order[info.rank : usable : info.world]


def make_batch(pairs: TokenizedPairs | Corpus, idx, device: torch.device) -> Batch:
    if not isinstance(pairs, TokenizedPairs):
        return pairs.batch(idx).to(device)
    return Batch.from_ids([pairs.src[i] for i in idx], [pairs.tgt[i] for i in idx]).to(device)


@torch.no_grad()
def validate(model: Seq2SeqModel, data: Data, cfg: Config, device: torch.device) -> dict:
    """Validation loss (un-smoothed, per token), perplexity, and greedy BLEU / chrF."""
    model.eval()
    total, n = 0.0, 0
    lens = [len(s) for s in data.valid.src], [len(s) for s in data.valid.tgt]
    for idx in token_batches(*lens, cfg.train.batch_tokens, shuffle=False):
        b = make_batch(data.valid, idx, device)
        total += float(token_loss_sum(model(b.src, b.src_mask, b.tgt_in), b.tgt_out))
        n += b.n_tokens
    out = {"loss": total / max(n, 1), "ppl": math.exp(min(total / max(n, 1), 50))}
    if cfg.train.valid_bleu:
        kept = set(data.valid.line_no)
        rows = [i for i, ln in enumerate(data.valid_text.line_no) if ln in kept]
        srcs = [data.valid_text.src[i] for i in rows]
        refs = [data.valid_text.tgt[i] for i in rows]
        greedy = cfg.decode.model_copy(update={"beam_size": 1})
        hyps = [t.text for t in translate_sentences(model, data.tok, srcs, greedy, device)]
        out["bleu"] = corpus_score("bleu", hyps, [refs], cfg.data.tgt_lang).score
        out["chrf"] = corpus_score("chrf", hyps, [refs]).score
        out["samples"] = list(zip(srcs[:3], hyps[:3], refs[:3], strict=True))
    model.train()
    return out


def metric_value(metrics: dict, name: str) -> float:
    """Higher is better."""
    return -metrics["loss"] if name == "loss" else metrics[name]


def train_step(
    wrapper: nn.Module, optimizer: torch.optim.Optimizer, scaler, batches: list[Batch],
    cfg: TrainConfig, lr: float, device: torch.device, info: DistInfo,
) -> dict | None:
    """One update from ``batches`` (``update_freq`` of them), the loss normalised by all their
    target tokens (on every rank). Returns None, changing nothing, when the loss or the gradient is
    not finite."""
    n_tokens = all_reduce_sum(sum(b.n_tokens for b in batches), info, device)
    optimizer.zero_grad(set_to_none=True)
    loss_sum = 0.0
    for i, b in enumerate(batches):
        sync = i == len(batches) - 1 or not info.enabled
        with contextlib.nullcontext() if sync else wrapper.no_sync():
            with autocast(device, cfg.precision):
                logits = wrapper(b.src, b.src_mask, b.tgt_in, cfg.teacher_forcing_ratio)
            loss = token_loss_sum(logits, b.tgt_out, cfg.label_smoothing)
            # DDP averages gradients over ranks; scaling by world restores the global token sum.
            scaler.scale(loss * (info.world / n_tokens)).backward()
        loss_sum += float(loss.detach())
    scaler.unscale_(optimizer)
    params = [p for g in optimizer.param_groups for p in g["params"]]
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.clip_norm or float("inf")))
    if not (math.isfinite(loss_sum) and math.isfinite(grad_norm)):
        optimizer.zero_grad(set_to_none=True)
        scaler.update()
        return None
    for g in optimizer.param_groups:
        g["lr"] = lr
    scaler.step(optimizer)
    scaler.update()
    return {"loss": all_reduce_sum(loss_sum, info, device) / n_tokens, "grad_norm": grad_norm,
            "tokens": n_tokens}


class Run:
    """Everything the loop touches, built by ``setup``; the loop itself is ``train``."""

    def __init__(self, cfg: Config, run_dir: Path, resume: bool, overwrite: bool = False):
        self.run_dir, self.cfg = run_dir, cfg
        t = cfg.train
        if not resume and not overwrite and (run_dir / "last.pt").exists():
            raise TrainingError(
                f"{run_dir} already holds a run (last.pt): continue it with --resume {run_dir}, "
                "or pass --overwrite, or choose another --run-dir"
            )
        if t.num_threads:
            torch.set_num_threads(t.num_threads)
        self.device = pick_device(t.device)
        self.info = init_distributed(self.device.type)
        if self.device.type == "cuda":
            self.device = torch.device("cuda", self.info.local_rank)
            torch.cuda.set_device(self.device)
        ckpt = self._resume_checkpoint(cfg) if resume else None
        if self.info.is_main:
            run_dir.mkdir(parents=True, exist_ok=True)
        barrier(self.info)
        seed_everything(t.seed)
        tok = Tokenizer.from_state_dict(ckpt["tokenizer"]) if ckpt else None
        self.data = prepare_data(cfg, run_dir, tok, self.info)
        self.model = build_model(cfg.model, self.data.tok.src_vocab_size,
                                 self.data.tok.tgt_vocab_size, self.data.tok.joint).to(self.device)
        wrapper = TeacherForcing(self.model)
        if self.info.enabled:
            ids = [self.info.local_rank] if self.device.type == "cuda" else None
            wrapper = nn.parallel.DistributedDataParallel(wrapper, device_ids=ids)
        self.wrapper = wrapper
        opt = torch.optim.AdamW if t.optimizer == "adamw" else torch.optim.Adam
        self.optimizer = opt(self.model.parameters(), lr=t.lr, betas=t.betas,
                             weight_decay=t.weight_decay)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=t.precision == "fp16")
        self.state = TrainState()
        if ckpt:
            self.model.load_state_dict(ckpt["model"])
            self.optimizer.load_state_dict(ckpt["optimizer"])
            self.scaler.load_state_dict(ckpt["scaler"])
            self.state = TrainState(**ckpt["train_state"])
            set_rng_states(ckpt["rng"])
        self.writer = None
        if self.info.is_main:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(run_dir / "tensorboard"))
            write_run_info(run_dir, cfg, self.data, self.model)
            self._trim_log()

    def _resume_checkpoint(self, cfg: Config) -> dict:
        path = self.run_dir / "last.pt"
        if not path.is_file():
            raise TrainingError(f"{path}: nothing to resume (no last.pt in the run directory)")
        ckpt = load_checkpoint(path)
        old = config_of(ckpt, str(path))
        for section in ("data", "tokenizer", "model"):
            if getattr(old, section) != getattr(cfg, section):
                raise ConfigError(
                    f"--resume {self.run_dir}: the config's {section} section differs from the "
                    "checkpoint's; resume with the run's own config.yaml"
                )
        return ckpt

    def _trim_log(self) -> None:
        """Drop log lines past the checkpoint a resumed run starts from (a killed run wrote them)."""
        path = self.run_dir / "train_log.jsonl"
        if path.exists():
            keep = [ln for ln in path.read_text().splitlines()
                    if ln and json.loads(ln).get("step", 0) <= self.state.step]
            path.write_text("".join(ln + "\n" for ln in keep))

    def payload(self) -> dict:
        return {
            "config": self.cfg.model_dump(mode="json"),
            "model": self.model.state_dict(),
            "tokenizer": self.data.tok.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
            "train_state": asdict(self.state),
            "rng": rng_states(),
        }

    def save(self, name: str) -> None:
        if self.info.is_main:
            save_checkpoint(self.run_dir / name, self.payload())

    def validate_and_save(self) -> dict:
        """Validate (rank 0), update best / best-k / plateau / patience, write last.pt."""
        st, t = self.state, self.cfg.train
        metrics: dict = {}
        if self.info.is_main:
            metrics = validate(self.model, self.data, self.cfg, self.device)
            score = metric_value(metrics, t.best_metric)
            improved = st.best_score is None or score > st.best_score
            if improved:
                st.best_score, st.best_step, st.bad_validations, st.plateau_bad = score, st.step, 0, 0
            else:
                st.bad_validations += 1
                st.plateau_bad += 1
                if t.schedule == "plateau" and st.plateau_bad > t.plateau_patience:
                    st.plateau_scale *= t.plateau_factor
                    st.plateau_bad = 0
            self.save("last.pt")
            if improved:
                self.save("best.pt")
            self._keep_best(score)
            self._log_validation(metrics)
        return metrics

    def _keep_best(self, score: float) -> None:
        k = self.cfg.train.keep_best
        if k <= 1:
            return
        name = f"best-step{self.state.step}.pt"
        ranked = sorted([*self.state.best_k, (score, name)], reverse=True)
        if (score, name) in ranked[:k]:
            self.save(name)
        for _, old in ranked[k:]:
            (self.run_dir / old).unlink(missing_ok=True)
        self.state.best_k = ranked[:k]

    def _log_validation(self, m: dict) -> None:
        st = self.state
        parts = [f"valid step {st.step}: loss {m['loss']:.3f} ppl {m['ppl']:.2f}"]
        if "bleu" in m:
            parts.append(f"BLEU {m['bleu']:.2f} chrF {m['chrf']:.2f}")
        parts.append(f"(best {self.cfg.train.best_metric} at step {st.best_step})")
        log.info(" ".join(parts))
        for key in ("loss", "ppl", "bleu", "chrf"):
            if key in m:
                self.writer.add_scalar(f"valid/{key}", m[key], st.step)
        for i, (s, h, r) in enumerate(m.get("samples", [])):
            self.writer.add_text(f"valid/sample{i}", f"src: {s}  \nhyp: {h}  \nref: {r}", st.step)
        self.writer.flush()
        self._append_log({"step": st.step, "valid": {k: v for k, v in m.items() if k != "samples"}})

    def _append_log(self, record: dict) -> None:
        with open(self.run_dir / "train_log.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")

    def log_step(self, r: dict, lr: float, tok_per_s: float) -> None:
        st = self.state
        self._append_log({"step": st.step, "loss": r["loss"], "lr": lr,
                          "grad_norm": r["grad_norm"], "tokens": r["tokens"]})
        if st.step % self.cfg.train.log_every == 0:
            w = self.writer
            w.add_scalar("train/loss", r["loss"], st.step)
            w.add_scalar("train/ppl", math.exp(min(r["loss"], 50)), st.step)
            w.add_scalar("train/lr", lr, st.step)
            w.add_scalar("train/grad_norm", r["grad_norm"], st.step)
            w.add_scalar("train/target_tokens_per_s", tok_per_s, st.step)
            w.add_scalar("train/teacher_forcing_ratio", self.cfg.train.teacher_forcing_ratio,
                         st.step)

    def should_stop(self, started: float) -> bool:
        st, t = self.state, self.cfg.train
        stop = (t.max_steps is not None and st.step >= t.max_steps) or (
            t.max_time is not None and st.train_seconds + time.time() - started >= t.max_time * 60
        ) or (t.patience is not None and st.bad_validations >= t.patience)
        return broadcast_flag(stop, self.info, self.device)


def train(
    cfg: Config, run_dir: str | Path | None = None, resume: bool = False, overwrite: bool = False
) -> dict:
    """Train ``cfg`` into ``run_dir`` (default ``cfg.run_dir`` or ``runs/<name>``).

    Returns:
        A summary: steps, epochs, target tokens/s, wall seconds, best metric and step.

    Raises:
        ConfigError, DataError, CheckpointError, TrainingError: one-line, user-facing problems.
    """
    run_dir = Path(run_dir or cfg.run_dir or f"runs/{cfg.name}")
    run = Run(cfg, run_dir, resume, overwrite)
    t, st, info = cfg.train, run.state, run.info
    log.info("model %s: %s parameters; %d training pairs; device %s%s", cfg.model.name,
             f"{run.model.num_parameters():,}", len(run.data.train), run.device,
             f" x {info.world} ranks" if info.enabled else "")
    started, tokens0, time0 = time.time(), st.tokens_seen, 0.0
    last_valid, stop = st.step, run.should_stop(started)
    progress = _progress(t, info)
    with progress, _interruptible() as interrupted:
        task = progress.add_task("train", total=t.max_steps, completed=st.step, stats="")
        run.model.train()
        while not stop:
            batches = epoch_batches(run.data.train, t, st.epoch, info)
            while st.batch_in_epoch < len(batches) and not stop:
                group = batches[st.batch_in_epoch : st.batch_in_epoch + t.update_freq]
                tick = time.perf_counter()
                lr = lr_at(st.step + 1, t, st.plateau_scale)
                r = train_step(run.wrapper, run.optimizer, run.scaler,
                               [make_batch(run.data.train, g, run.device) for g in group],
                               t, lr, run.device, info)
                st.batch_in_epoch += len(group)
                time0 += time.perf_counter() - tick
                if r is None:
                    st.nonfinite_in_row += 1
                    st.nonfinite_total += 1
                    log.warning("step %d: non-finite loss or gradient, update skipped (%d in a row)",
                                st.step + 1, st.nonfinite_in_row)
                    if st.nonfinite_in_row >= t.max_nonfinite:
                        raise TrainingError(
                            f"{st.nonfinite_in_row} non-finite losses in a row at step {st.step}: "
                            "lower train.lr, use precision fp32, or check the data; last.pt holds "
                            "the last finite weights")
                    continue
                st.step += 1
                st.nonfinite_in_row = 0
                st.tokens_seen += int(r["tokens"])
                tok_s = (st.tokens_seen - tokens0) / max(time0, 1e-9)
                if info.is_main:
                    run.log_step(r, lr, tok_s)
                stats = f"epoch {st.epoch + 1} loss {r['loss']:.3f} lr {lr:.2e} {tok_s:,.0f} tok/s"
                progress.update(task, completed=st.step, stats=stats)
                if info.is_main and not console.is_terminal and st.step % t.log_every == 0:
                    log.info("step %d %s", st.step, stats)  # a log file gets no progress bar
                if st.step % t.valid_every == 0:
                    run.validate_and_save()
                    last_valid = st.step
                elif t.checkpoint_every and st.step % t.checkpoint_every == 0:
                    run.save("last.pt")
                stop = run.should_stop(started) or broadcast_flag(interrupted(), info, run.device)
            if st.batch_in_epoch >= len(batches):
                st.epoch, st.batch_in_epoch = st.epoch + 1, 0
                stop = stop or (t.max_epochs is not None and st.epoch >= t.max_epochs)
        st.train_seconds += time.time() - started
        if interrupted():
            log.warning("interrupted: saving last.pt at step %d", st.step)
            run.save("last.pt")
        elif last_valid != st.step:
            run.validate_and_save()
    summary = {"steps": st.step, "epochs": st.epoch, "train_seconds": round(st.train_seconds, 1),
               "target_tokens_per_s": round((st.tokens_seen - tokens0) / max(time0, 1e-9), 1),
               "best_metric": t.best_metric, "best_score": st.best_score, "best_step": st.best_step,
               "nonfinite_skipped": st.nonfinite_total, "run_dir": str(run_dir)}
    if run.writer is not None:
        run.writer.close()
    shutdown(info)
    return summary


def _progress(t: TrainConfig, info: DistInfo):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TextColumn("{task.fields[stats]}"), console=console,
                    disable=not info.is_main, transient=False)


@contextlib.contextmanager
def _interruptible():
    """First Ctrl-C asks the loop to stop after the current step (and save); a second one aborts."""
    import signal

    flag = {"hit": False}

    def handler(signum, frame):
        if flag["hit"]:
            raise KeyboardInterrupt
        flag["hit"] = True
        log.warning("Ctrl-C: finishing this step, then saving (press again to abort)")

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread
        previous = None
    try:
        yield lambda: flag["hit"]
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)

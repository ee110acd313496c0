"""The training loop: setup -> loop of updates, validations and checkpoints -> cleanup.

Steps count optimizer updates. Everything a resumed run needs is in ``last.pt``: weights, optimizer,
scaler, every RNG state, the epoch and the batch within it, the step, best score, patience and
plateau counters (the learning rate is a pure function of the step and the plateau scale, see
``schedules``) and the resolved config. Batches are a pure function of (seed, epoch), so
``--resume`` continues exactly where the run stopped, mid-epoch included.

Under ``torchrun`` every rank runs this loop on its own shard of each epoch's batches inside
DistributedDataParallel; only rank 0 validates, logs and writes files.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from seq2seq.checkpoint import (
    CheckpointError,
    config_of,
    link_checkpoint,
    load_checkpoint,
    save_checkpoint,
    weights_digest,
)
from seq2seq.config import Config, ConfigError
from seq2seq.console import console
from seq2seq.data.corpus import Corpus
from seq2seq.data.text import (
    DataError,
    ParallelText,
    TokenizedPairs,
    drop_long_sources,
    load_split,
    tokenize_pairs,
)
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.models import build_model
from seq2seq.runtime import pick_device, rng_states, seed_everything, set_rng_states
from seq2seq.training.distributed import (
    DistInfo,
    barrier,
    broadcast_int,
    broadcast_object,
    gather_objects,
    init_distributed,
    shutdown,
)
from seq2seq.training.monitor import Monitor, attention_heatmap
from seq2seq.training.run_info import write_run_info
from seq2seq.training.schedules import lr_at, teacher_forcing_at
from seq2seq.training.step import (
    TeacherForcing,
    TrainingError,
    TrainState,
    book_score,
    epoch_batches,
    make_batch,
    metric_value,
    train_step,
    validate,
)

__all__ = ["Run", "TrainState", "TrainingError", "lr_at", "train", "train_step"]

log = logging.getLogger("seq2seq")

RESUME_KEYS = ("model", "optimizer", "scaler", "train_state", "rng", "tokenizer")


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
        from seq2seq.data.backends import prepare_corpus

        tok, corpus = prepare_corpus(cfg, run_dir, tok, info.is_main, lambda: barrier(info))
        valid_text = load_split(cfg.data, "valid")
        if cfg.data.max_valid_pairs:
            _truncate(valid_text, cfg.data.max_valid_pairs)
        valid = tokenize_pairs(
            valid_text, tok.encode_src, tok.encode_tgt, cfg.data.max_len, "valid"
        )
        return Data(tok, corpus, valid, valid_text)
    train_text = load_split(cfg.data, "train")
    if cfg.data.max_train_pairs:
        _truncate(train_text, cfg.data.max_train_pairs)
    if cfg.data.max_src_words:
        drop_long_sources(train_text, cfg.data.max_src_words)
    valid_text = load_split(cfg.data, "valid")
    if cfg.data.max_valid_pairs:
        _truncate(valid_text, cfg.data.max_valid_pairs)
    if not len(train_text):
        raise DataError(f"{train_text.origin}: no usable training pairs")
    if tok is None:
        if info.is_main:
            log.info(
                "training %s sentencepiece model(s), vocab %d",
                cfg.tokenizer.type,
                cfg.tokenizer.vocab_size,
            )
            Tokenizer.train(train_text.src, train_text.tgt, cfg.tokenizer).save(run_dir)
        barrier(info)
        tok = Tokenizer.load(run_dir)
    train = tokenize_pairs(train_text, tok.encode_src, tok.encode_tgt, cfg.data.max_len, "train")
    valid = tokenize_pairs(valid_text, tok.encode_src, tok.encode_tgt, cfg.data.max_len, "valid")
    if cfg.data.concat_k > 1:
        from seq2seq.data.text import concat_pairs

        train = concat_pairs(train, cfg.data.concat_k, cfg.train.seed)
    return Data(tok, train, valid, valid_text)


def _truncate(text: ParallelText, n: int) -> None:
    """Keep the first ``n`` pairs; lines past the last kept one count as not read."""
    if len(text) <= n:
        return
    last = text.line_no[n - 1]
    del text.src[n:], text.tgt[n:], text.line_no[n:]
    text.n_read = last
    text.dropped = {k: [i for i in v if i <= last] for k, v in text.dropped.items()}
    text.dropped = {k: v for k, v in text.dropped.items() if v}


STOP_REASONS = ("", "max_steps", "max_epochs", "max_time", "early_stopping", "interrupted")


RUN_FILES = (
    "*.pt",
    "spm*.model",
    "train_log.jsonl",
    "config.yaml",
    "run_info.json",
    "attention.png",
)


def clear_run(run_dir: Path) -> None:
    """``--overwrite``: remove what an earlier run wrote (checkpoints, tokenizer, logs, TensorBoard
    events), so nothing of it mixes with the new run; other files in the folder are left alone."""
    import shutil

    for pattern in RUN_FILES:
        for path in run_dir.glob(pattern):
            path.unlink()
    shutil.rmtree(run_dir / "tensorboard", ignore_errors=True)


class Run:
    """Everything the loop touches, built once (setup); ``_loop`` below is the loop itself."""

    def __init__(
        self,
        cfg: Config,
        run_dir: Path,
        resume: bool,
        overwrite: bool = False,
        tokenizer: Tokenizer | None = None,
    ):
        self.run_dir, self.cfg = run_dir, cfg
        t = cfg.train
        if not resume and not overwrite and (run_dir / "last.pt").exists():
            raise TrainingError(
                f"{run_dir} already holds a run (last.pt): continue it with --resume {run_dir}, "
                "or pass --overwrite, or choose another --run-dir"
            )
        if t.num_threads:
            torch.set_num_threads(t.num_threads)
        self.device = pick_device(t.device, t.precision)
        self.info = init_distributed(self.device.type)
        if self.device.type == "cuda":
            self.device = torch.device("cuda", self.info.local_rank)
            torch.cuda.set_device(self.device)
        ckpt = self._resume_checkpoint() if resume else None
        if self.info.is_main:
            if overwrite and not resume:
                clear_run(run_dir)
            run_dir.mkdir(parents=True, exist_ok=True)
        barrier(self.info)
        seed_everything(t.seed)
        tok = Tokenizer.from_state_dict(ckpt["tokenizer"]) if ckpt else tokenizer
        self.data = prepare_data(cfg, run_dir, tok, self.info)
        self.model = build_model(
            cfg.model,
            self.data.tok.src_vocab_size,
            self.data.tok.tgt_vocab_size,
            self.data.tok.joint,
        ).to(self.device)
        opt = torch.optim.AdamW if t.optimizer == "adamw" else torch.optim.Adam
        self.optimizer = opt(
            self.model.parameters(), lr=t.lr, betas=t.betas, weight_decay=t.weight_decay
        )
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=t.precision == "fp16")
        self.state = TrainState()
        if ckpt:
            self._restore(ckpt)
        self.wrapper: nn.Module = TeacherForcing(self.model)
        if self.info.enabled:  # DDP broadcasts rank 0's weights here
            ids = [self.info.local_rank] if self.device.type == "cuda" else None
            self.wrapper = nn.parallel.DistributedDataParallel(self.wrapper, device_ids=ids)
        self.last_valid, self.stopped = self.state.step, ""
        self.tokens0, self.busy = self.state.tokens_seen, 0.0
        self.monitor: Monitor | None = None
        if self.info.is_main:
            write_run_info(run_dir, cfg, self.data, self.model)
            self.monitor = Monitor(run_dir, self.state.step, t.log_every)

    def _resume_checkpoint(self) -> dict:
        path = self.run_dir / "last.pt"
        if not path.is_file():
            raise TrainingError(f"{path}: nothing to resume (no last.pt in the run directory)")
        ckpt = load_checkpoint(path)
        missing = [k for k in RESUME_KEYS if k not in ckpt]
        if missing:
            raise CheckpointError(
                f"{path}: holds no {missing[0]} state, so it can translate but not resume training"
            )
        old = config_of(ckpt, str(path))
        for section in ("data", "tokenizer", "model"):
            if getattr(old, section) != getattr(self.cfg, section):
                raise ConfigError(
                    f"--resume {self.run_dir}: the config's {section} section differs from the "
                    "checkpoint's; resume with the run's own config.yaml"
                )
        return ckpt

    def _restore(self, ckpt: dict) -> None:
        try:
            self.model.load_state_dict(ckpt["model"])
            self.optimizer.load_state_dict(ckpt["optimizer"])
            if ckpt["scaler"]:  # empty when the run was not fp16
                self.scaler.load_state_dict(ckpt["scaler"])
            self.state = TrainState(**ckpt["train_state"])
            set_rng_states(ckpt["rng"])
        except (RuntimeError, ValueError, TypeError, KeyError) as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
            raise CheckpointError(
                f"{self.run_dir / 'last.pt'}: cannot resume from it ({first})"
            ) from None

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
        """Write ``name`` (rank 0 only); non-finite weights stop training and write nothing."""
        if not self.info.is_main:
            return
        try:
            save_checkpoint(self.run_dir / name, self.payload())
        except CheckpointError as e:
            raise TrainingError(
                f"{e}: training diverged; lower train.lr or use precision fp32 "
                "(the previous checkpoint is kept)"
            ) from None

    def save_last(self) -> None:
        """``last.pt``; with ``keep_last`` k > 1 also ``step<N>.pt`` for the newest k."""
        st, k = self.state, self.cfg.train.keep_last
        name = f"step{st.step}.pt"
        dropped: list[str] = []
        if k > 1:  # bookkeeping first, so last.pt records the list it belongs to
            names = [n for n in st.last_k if n != name] + [name]
            st.last_k, dropped = names[-k:], names[:-k]
        self.save("last.pt")
        if k > 1 and self.info.is_main:
            link_checkpoint(self.run_dir / "last.pt", self.run_dir / name)
            for old in dropped:
                (self.run_dir / old).unlink(missing_ok=True)

    def validate_and_save(self) -> None:
        """Validate (rank 0), update best / best-k / plateau / patience, write the checkpoints."""
        st, t = self.state, self.cfg.train
        self.last_valid = st.step
        if self.info.is_main:
            try:
                metrics = validate(self.model, self.data, self.cfg, self.device)
            except Exception:
                self.save_last()  # whatever went wrong, the updates so far are kept
                raise
            improved, kept, dropped = book_score(st, metric_value(metrics, t.best_metric), t)
            self._log_validation(metrics)
            self.save_last()
            if improved:
                link_checkpoint(self.run_dir / "last.pt", self.run_dir / "best.pt")
            if kept:
                link_checkpoint(self.run_dir / "last.pt", self.run_dir / kept)
            for old in dropped:
                (self.run_dir / old).unlink(missing_ok=True)
        shared = broadcast_object(
            {
                "plateau_scale": st.plateau_scale,
                "best_score": st.best_score,
                "best_step": st.best_step,
                "bad_validations": st.bad_validations,
            },
            self.info,
        )
        for key, value in shared.items():
            setattr(st, key, value)

    def _log_validation(self, m: dict) -> None:
        st = self.state
        parts = [f"valid step {st.step}: loss {m['loss']:.3f} ppl {m['ppl']:.2f}"]
        if "bleu" in m:
            parts.append(f"BLEU {m['bleu']:.2f} chrF {m['chrf']:.2f}")
        parts.append(f"(best {self.cfg.train.best_metric} at step {st.best_step})")
        log.info(" ".join(parts))
        heatmap = None
        if self.data.valid_text.src:
            heatmap = attention_heatmap(
                self.model,
                self.data.tok,
                self.data.valid_text.src[0],
                self.device,
                self.run_dir / "attention.png",
            )
        self.monitor.validation(st.step, m, heatmap)

    def update(self, group: list[list[int]]) -> str | None:
        """One optimizer update from ``group`` (up to ``update_freq`` batches of pair indices),
        logged. Returns a progress line, or None when the update was skipped as non-finite.

        Raises:
            TrainingError: ``max_nonfinite`` skipped updates in a row.
        """
        st, t = self.state, self.cfg.train
        lr = lr_at(st.step + 1, t, st.plateau_scale)
        ratio = teacher_forcing_at(st.step + 1, t.teacher_forcing)
        tick = time.perf_counter()
        batches = [make_batch(self.data.train, g, self.device) for g in group]
        r = train_step(
            self.wrapper, self.optimizer, self.scaler, batches, t, lr, self.device, self.info, ratio
        )
        st.batch_in_epoch += len(group)
        self.busy += time.perf_counter() - tick
        if r is None:
            st.nonfinite_in_row += 1
            st.nonfinite_total += 1
            log.warning(
                "step %d: non-finite loss or gradient, update skipped (%d in a row)",
                st.step + 1,
                st.nonfinite_in_row,
            )
            if st.nonfinite_in_row >= t.max_nonfinite:
                raise TrainingError(
                    f"{st.nonfinite_in_row} non-finite losses in a row at step {st.step}: lower "
                    "train.lr, use precision fp32, or check the data; last.pt holds the last "
                    "finite weights"
                )
            return None
        st.step += 1
        st.nonfinite_in_row = 0
        st.tokens_seen += int(r["tokens"])
        tok_s = (st.tokens_seen - self.tokens0) / max(self.busy, 1e-9)
        stats = f"epoch {st.epoch + 1} loss {r['loss']:.3f} lr {lr:.2e} {tok_s:,.0f} tok/s"
        if self.monitor is not None:
            self.monitor.train_step(
                st.step,
                {"epoch": st.epoch, **r, "lr": lr, "tokens_per_s": tok_s, "tf_ratio": ratio},
            )
            if not console.is_terminal and st.step % t.log_every == 0:
                log.info("step %d %s", st.step, stats)  # a log file gets no progress bar
        return stats

    def checkpoint_if_due(self) -> None:
        st, t = self.state, self.cfg.train
        if st.step % t.valid_every == 0:
            self.validate_and_save()
        elif t.checkpoint_every and st.step % t.checkpoint_every == 0:
            self.save_last()

    def should_stop(self, started: float, interrupted: bool) -> str:
        """Rank 0's reason to stop now (one of STOP_REASONS; '' = go on), on every rank."""
        st, t = self.state, self.cfg.train
        elapsed = st.train_seconds + time.time() - started
        checks = {
            "interrupted": interrupted,
            "max_steps": t.max_steps is not None and st.step >= t.max_steps,
            "max_epochs": t.max_epochs is not None and st.epoch >= t.max_epochs,
            "max_time": t.max_time is not None and elapsed >= t.max_time * 60,
            "early_stopping": t.patience is not None and st.bad_validations >= t.patience,
        }
        reason = next((k for k, hit in checks.items() if hit), "")
        return STOP_REASONS[broadcast_int(STOP_REASONS.index(reason), self.info, self.device)]

    def summary(self) -> dict:
        st, t = self.state, self.cfg.train
        best = st.best_score if t.best_metric != "loss" or st.best_score is None else -st.best_score
        tok_s = (st.tokens_seen - self.tokens0) / max(self.busy, 1e-9)
        out = {
            "steps": st.step,
            "epochs": st.epoch,
            "stopped": self.stopped,
            "train_seconds": round(st.train_seconds, 1),
            "target_tokens_per_s": round(tok_s, 1),
            "best_metric": t.best_metric,
            "best_score": best,
            "best_step": st.best_step,
            "nonfinite_skipped": st.nonfinite_total,
            "run_dir": str(self.run_dir),
        }
        if self.info.enabled:  # proof that DDP kept every replica identical
            digests = gather_objects(weights_digest(self.model.state_dict()), self.info)
            out["rank_weights_sha256"] = digests
            if len(set(digests)) > 1:
                log.error("ranks hold different weights after training: %s", digests)
        return out

    def close(self) -> None:
        if self.monitor is not None:
            self.monitor.close()
        shutdown(self.info)


def train(
    cfg: Config,
    run_dir: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    tokenizer: Tokenizer | None = None,
) -> dict:
    """Train ``cfg`` into ``run_dir`` (default ``cfg.run_dir`` or ``runs/<name>``).

    ``tokenizer`` (optional) is used instead of training one, so several runs can share it
    (``seq2seq compare``); a resumed run always keeps its checkpoint's own.

    Returns:
        A summary: steps, epochs, why it stopped, target tokens/s, best metric and step, skipped
        updates (and, under torchrun, every rank's weight digest).

    Raises:
        ConfigError, DataError, CheckpointError, TrainingError: one-line, user-facing problems.
    """
    run = Run(cfg, Path(run_dir or cfg.run_dir or f"runs/{cfg.name}"), resume, overwrite, tokenizer)
    try:
        _loop(run)
        return run.summary()
    finally:
        run.close()


def _loop(run: Run) -> None:
    """Epochs of this rank's batches, ``update_freq`` at a time, until a stop; then save."""
    t, st, info = run.cfg.train, run.state, run.info
    log.info(
        "model %s: %s parameters; %d training pairs; device %s%s",
        run.cfg.model.name,
        f"{run.model.num_parameters():,}",
        len(run.data.train),
        run.device,
        f" x {info.world} ranks" if info.enabled else "",
    )
    started = time.time()
    run.stopped = run.should_stop(started, False)
    with _progress(info) as progress, _interruptible() as interrupted:
        task = progress.add_task("train", total=t.max_steps, completed=st.step, stats="")
        run.model.train()
        while not run.stopped:
            batches = epoch_batches(run.data.train, t, st.epoch, info)
            if not batches:
                raise DataError(
                    f"{t.batch_tokens}-token batches of {len(run.data.train)} pairs "
                    f"give no batch for each of {info.world} ranks; lower batch_tokens"
                )
            while st.batch_in_epoch < len(batches) and not run.stopped:
                stats = run.update(batches[st.batch_in_epoch : st.batch_in_epoch + t.update_freq])
                if stats is not None:
                    progress.update(task, completed=st.step, stats=stats)
                    run.checkpoint_if_due()
                run.stopped = run.should_stop(started, interrupted())
            if st.batch_in_epoch >= len(batches):
                st.epoch, st.batch_in_epoch = st.epoch + 1, 0
                if not run.stopped and t.max_epochs is not None and st.epoch >= t.max_epochs:
                    run.stopped = "max_epochs"
        st.train_seconds += time.time() - started
        if run.stopped == "interrupted":
            log.warning("interrupted: saving last.pt at step %d", st.step)
            run.save_last()
        elif run.last_valid != st.step:
            run.validate_and_save()
    if run.stopped == "early_stopping":
        log.info(
            "early stopping: no %s gain in %d validations (best at step %d)",
            t.best_metric,
            t.patience,
            st.best_step,
        )


def _progress(info: DistInfo):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[bold]train"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[stats]}"),
        console=console,
        disable=not info.is_main,
        transient=False,
    )


@contextlib.contextmanager
def _interruptible():
    """First Ctrl-C (SIGINT) or SIGTERM (``kill``, ``timeout``, a scheduler's preemption) asks the
    loop to stop after the current step and save ``last.pt``; a second one aborts."""
    import signal

    flag = {"hit": False}

    def handler(signum, frame):
        if flag["hit"]:
            raise KeyboardInterrupt
        flag["hit"] = True
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        log.warning(f"{name}: finishing this step, then saving (press Ctrl-C again to abort)")

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread
            pass
    try:
        yield lambda: flag["hit"]
    finally:
        for sig, handler_before in previous.items():
            signal.signal(sig, handler_before)

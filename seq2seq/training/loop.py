"""The training loop: setup -> loop of updates, validations and checkpoints -> cleanup.

Steps count optimizer updates, a skipped non-finite one included. Nothing in an update waits for
the device: its loss, gradient norm, tokens and skip flag stay there, and are read once every
``log_every`` updates, and before every checkpoint (``Run.flush``), which counts the skipped ones.
Everything a resumed run needs is in ``last.pt``: weights, optimizer, scaler, every RNG state, the
epoch and the batch within it, the step, the target tokens and training seconds so far (the
current stretch's included, so a resumed run's time and ``max_time`` count every stretch), best
score, patience and plateau counters (the learning rate is a pure function of the step and the
plateau scale, see ``schedules``) and the resolved config. Batches are a pure function of (seed,
epoch), so ``--resume`` continues exactly where the run stopped, mid-epoch included.

Target tokens (``train.max_tokens``) are counted on the host, from the batches as they are built,
so the token budget needs no wait for the device either. A new run with ``train.init_from`` starts
from another run's weights (``warm_start``).

Under ``torchrun`` every rank runs this loop on its own shard of each epoch's batches inside
DistributedDataParallel; only rank 0 validates, logs and writes files.

The pieces live beside this module: ``data`` (splits, tokenizer, batches), ``step`` (one update),
``validate``, ``state`` (bookkeeping), ``checkpoints`` (resume and rotation), ``distributed``,
``signals`` (Ctrl-C / SIGTERM) and ``monitor`` (logs, TensorBoard).
"""

from __future__ import annotations

import gc
import json
import logging
import time
from dataclasses import asdict
from pathlib import Path

import torch

from seq2seq.atomic import atomic_write_text
from seq2seq.checkpoint import weights_digest
from seq2seq.config import Config
from seq2seq.console import console
from seq2seq.data.batch import Batch
from seq2seq.data.text import DataError
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.models import build_model
from seq2seq.runtime import (
    configure_device,
    pick_device,
    resolve_pad_multiple,
    resolve_precision,
    rng_states,
    seed_everything,
)
from seq2seq.training import distributed as dist
from seq2seq.training.checkpoints import (
    RunCheckpoints,
    check_run_dir,
    clear_run,
    load_resume,
    restore,
)
from seq2seq.training.data import epoch_batches, make_batch, prepare_data
from seq2seq.training.monitor import Monitor, RunLog, attention_heatmap
from seq2seq.training.prefetch import Ahead
from seq2seq.training.run_info import write_run_info
from seq2seq.training.schedules import lr_at, teacher_forcing_at
from seq2seq.training.signals import interruptible
from seq2seq.training.state import (
    SHARED_AFTER_VALIDATION,
    NonFiniteStop,
    TrainState,
    book_score,
    metric_value,
)
from seq2seq.training.step import TeacherForcing, train_step
from seq2seq.training.validate import validate
from seq2seq.training.warm_start import load_warm_start

__all__ = ["Run", "train"]

log = logging.getLogger("seq2seq")

STOP_REASONS = (
    "",
    "max_steps",
    "max_epochs",
    "max_time",
    "max_tokens",
    "early_stopping",
    "interrupted",
)


def train(
    cfg: Config,
    run_dir: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    tokenizer: Tokenizer | None = None,
) -> dict:
    """Train ``cfg`` into ``run_dir`` (default ``cfg.run_dir`` or ``runs/<name>``).

    ``tokenizer`` (optional) is used instead of training one, so several runs can share it
    (``seq2seq compare``); a resumed run always keeps its checkpoint's own, and a warm-started one
    (``train.init_from``) takes its checkpoint's (a given ``tokenizer`` must be that one).

    Rank 0 writes the summary to ``train_summary.json`` (rewritten by a resumed run) and the
    ``seq2seq`` logger's INFO lines of the run to ``train.log`` (appended across resumes).

    Returns:
        A summary: steps, epochs, why it stopped, training seconds and target tokens (both over
        resumed runs too) and target tokens/s, best metric and step, skipped updates (and, under
        torchrun, every rank's weight digest).

    Raises:
        ConfigError, DataError, CheckpointError, TrainingError: one-line, user-facing problems.
    """
    path = Path(run_dir or cfg.run_dir or f"runs/{cfg.name}")
    with RunLog() as run_log:
        run = Run(cfg, path, resume, overwrite, tokenizer, run_log)
        try:
            _loop(run)
            summary = run.summary()
            run.write_summary(summary)
            return summary
        except NonFiniteStop:
            raise  # last.pt stays the last save before the non-finite run: nothing past it is kept
        except BaseException:
            run.save_unsaved()  # whatever else stopped the run, the updates so far are kept
            raise
        finally:
            run.close()


def _loop(run: Run) -> None:
    """Epochs of this rank's batches, ``update_freq`` at a time, until a stop; then save."""
    t, st, info = run.cfg.train, run.state, run.info
    run.log_start()
    run.start_clock()
    run.stopped = run.should_stop(False)
    noted_tail = False
    with _progress(info) as progress, interruptible() as interrupted:
        task = progress.add_task("train", total=t.max_steps, completed=st.step, stats="")
        run.model.train()
        while not run.stopped:
            batches = epoch_batches(run.data.train, t, st.epoch, info)
            if not batches:
                raise DataError(
                    f"{t.batch_tokens}-token batches of {len(run.data.train)} pairs "
                    f"give no batch for each of {info.world} ranks; lower batch_tokens"
                )
            if not noted_tail:
                noted_tail = True
                note_short_update(len(batches), t.update_freq, run.info.is_main)
            groups = range(st.batch_in_epoch, len(batches), t.update_freq)
            groups = [batches[i : i + t.update_freq] for i in groups]
            with Ahead(run.make_batches, groups, run.ahead) as built:
                for group in built:
                    run.update(group)
                    at_log = st.step % t.log_every == 0
                    stats = run.flush() if at_log else ""
                    progress.update(task, completed=st.step, **({"stats": stats} if stats else {}))
                    run.checkpoint_if_due()
                    run.stopped = run.should_stop(interrupted(), at_log)
                    if run.stopped:
                        break
            if st.batch_in_epoch >= len(batches):
                st.epoch, st.batch_in_epoch = st.epoch + 1, 0
                if not run.stopped and t.max_epochs is not None and st.epoch >= t.max_epochs:
                    run.stopped = "max_epochs"
        run.flush()
        run.sync_target_tokens()
        run.note_time()
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


def note_short_update(n_batches: int, update_freq: int, main: bool = True) -> None:
    """Log, once at the start, that an epoch's last update takes fewer than ``update_freq``
    batches: groups of ``update_freq`` batches do not span epochs (see ``TrainConfig``)."""
    tail = n_batches % update_freq
    if tail and main:
        log.info(
            "update_freq %d: an epoch of %d %s ends with an update of %d %s (groups do not span "
            "epochs)",
            update_freq,
            n_batches,
            _batches(n_batches),
            tail,
            _batches(tail),
        )


def _batches(n: int) -> str:
    return "batch" if n == 1 else "batches"


class Run:
    """Everything the loop touches, built once (setup); ``_loop`` above is the loop itself."""

    def __init__(
        self,
        cfg: Config,
        run_dir: Path,
        resume: bool,
        overwrite: bool = False,
        tokenizer: Tokenizer | None = None,
        run_log: RunLog | None = None,
    ):
        """``run_log`` (``train`` passes one) is opened on ``run_dir/train.log`` by rank 0 once
        the run directory is settled (after ``--overwrite`` cleared it)."""
        check_run_dir(run_dir, resume, overwrite)
        if cfg.train.num_threads:
            torch.set_num_threads(cfg.train.num_threads)
        device = pick_device(cfg.train.device, cfg.train.precision)
        self.info = dist.init_distributed(device.type)
        self.device = dist.rank_device(device, self.info)
        configure_device(self.device, cfg.train.cudnn_sdp)
        # the run records (config.yaml, checkpoints) the precision it used, not "auto"
        precision = resolve_precision(cfg.train.precision, self.device)
        cfg = cfg.model_copy(
            update={"train": cfg.train.model_copy(update={"precision": precision})}
        )
        self.run_dir, self.cfg, t = run_dir, cfg, cfg.train
        self.pad_multiple = resolve_pad_multiple(cfg.data.pad_multiple, self.device)
        self.ahead = builds_ahead(self.device)
        ckpt = load_resume(run_dir, cfg) if resume else None
        # a warm start is read before --overwrite clears the run directory (it may be the source)
        warm = None
        if t.init_from and resume:
            log.info("resume: train.init_from ignored (the run continues from its own last.pt)")
        elif t.init_from:
            warm = load_warm_start(t.init_from, cfg, tokenizer)
        if self.info.is_main:
            if overwrite and not resume:
                clear_run(run_dir)
            run_dir.mkdir(parents=True, exist_ok=True)
            if run_log is not None:
                run_log.open(run_dir / "train.log")
        elif run_log is not None:
            run_log.discard()
        dist.barrier(self.info)
        seed_everything(t.seed)
        if ckpt:
            tok = Tokenizer.from_state_dict(ckpt["tokenizer"])
        else:
            tok = warm.tokenizer if warm else tokenizer
        self.data = prepare_data(cfg, run_dir, tok, self.info)
        vocab = (self.data.tok.src_vocab_size, self.data.tok.tgt_vocab_size, self.data.tok.joint)
        self.model = build_model(cfg.model, *vocab).to(self.device)
        if warm is not None:
            warm.load_weights(self.model)
        opt = torch.optim.AdamW if t.optimizer == "adamw" else torch.optim.Adam
        # fused: one kernel for all parameters, and it can skip a non-finite update on the device
        self.optimizer = opt(
            self.model.parameters(),
            lr=t.lr,
            betas=t.betas,
            weight_decay=t.weight_decay,
            fused=True,
        )
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=t.precision == "fp16")
        self.state = TrainState()
        if ckpt:
            self.state = restore(ckpt, self.model, self.optimizer, self.scaler, run_dir / "last.pt")
            _keep_fused(self.optimizer)
        self.wrapper = dist.wrap(TeacherForcing(self.model), self.info, self.device)
        self.checkpoints = RunCheckpoints(run_dir, t.keep_last, self.info.is_main)
        self.last_valid, self.stopped, self.saved_step = self.state.step, "", self.state.step
        self.tokens0, self.busy = self.state.tokens_seen, 0.0
        # this stretch's clock (start_clock): train_seconds = seconds0 + time since clock0
        self.clock0: float | None = None
        self.seconds0 = self.state.train_seconds
        self.unsynced_tokens = 0  # torchrun: this rank's target tokens not yet in the state
        # per update not yet read from the device: (step, epoch, lr, tf ratio, busy seconds so
        # far) and a (4,) tensor of loss, grad norm, tokens, skipped
        self.pending: list[tuple[int, int, float, float, float, torch.Tensor]] = []
        self.monitor: Monitor | None = None
        if self.info.is_main:
            runtime = {
                "device": str(self.device),
                "precision": precision,
                "pad_multiple": self.pad_multiple,
                "cudnn_sdp": t.cudnn_sdp,
            }
            write_run_info(run_dir, cfg, self.data, self.model, runtime)
            self.monitor = Monitor(run_dir, self.state.step, t.log_every)

    def log_start(self) -> None:
        log.info(
            "model %s: %s parameters; %d training pairs; device %s%s",
            self.cfg.model.name,
            f"{self.model.num_parameters():,}",
            len(self.data.train),
            self.device,
            f" x {self.info.world} ranks" if self.info.enabled else "",
        )

    def start_clock(self) -> None:
        """Start this stretch's training clock (setup before it is not training time)."""
        self.clock0, self.seconds0 = time.time(), self.state.train_seconds

    def elapsed(self) -> float:
        """Training seconds over every stretch so far: the earlier ones (from last.pt) and this."""
        if self.clock0 is None:
            return self.seconds0
        return self.seconds0 + time.time() - self.clock0

    def note_time(self) -> None:
        """Book the training time so far into the state: every checkpoint records it, so a
        resumed run (its summary, ``max_time``) counts the stretches before it."""
        self.state.train_seconds = self.elapsed()

    def payload(self) -> dict:
        """The checkpoint dict: everything ``--resume`` needs, and the config to translate."""
        return {
            "config": self.cfg.model_dump(mode="json"),
            "model": self.model.state_dict(),
            "tokenizer": self.data.tok.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
            "train_state": asdict(self.state),
            "rng": rng_states(),
        }

    def save_last(self) -> None:
        self.flush()  # the counters a checkpoint holds include every update so far
        self.note_time()
        self.checkpoints.save_last(self.state, self.payload)
        self.saved_step = self.state.step

    def save_unsaved(self) -> None:
        """After an error: ``last.pt`` for the updates not yet saved, so ``--resume`` can go on.
        A failure to save (non-finite weights, a full disk) is logged; the first error stands."""
        if self.state.step == self.saved_step:
            return
        try:
            self.save_last()
            log.warning("stopped by an error: last.pt saved at step %d", self.state.step)
        except Exception as e:
            log.error("stopped by an error, and last.pt could not be saved: %s", e)

    def validate_and_save(self) -> None:
        """Validate (rank 0), update best / best-k / plateau / patience, write the checkpoints."""
        self.flush()
        self.sync_target_tokens()
        st, t = self.state, self.cfg.train
        self.last_valid = st.step
        if self.info.is_main:
            d = self.data
            metrics = validate(self.model, d.tok, d.valid, d.valid_text, self.cfg, self.device)
            improved, kept, dropped = book_score(st, metric_value(metrics, t.best_metric), t)
            self._log_validation(metrics)
            self.save_last()
            self.checkpoints.keep_validated(improved, kept, dropped)
        dist.broadcast_fields(st, SHARED_AFTER_VALIDATION, self.info)

    def _log_validation(self, m: dict) -> None:
        st = self.state
        parts = [f"valid step {st.step}: loss {m['loss']:.3f} ppl {m['ppl']:.2f}"]
        if "bleu" in m:
            parts.append(f"BLEU {m['bleu']:.2f} chrF {m['chrf']:.2f}")
        parts.append(f"(best {self.cfg.train.best_metric} at step {st.best_step})")
        log.info(" ".join(parts))
        # Side outputs (the attention plot, samples, TensorBoard) use the run's own decode
        # settings; a failure there is a warning, never the end of the run.
        heatmap = None
        try:
            first, png = self.data.valid_text.src[0], self.run_dir / "attention.png"
            heatmap = attention_heatmap(
                self.model, self.data.tok, first, self.device, png, self.cfg.decode
            )
        except Exception as e:
            log.warning("step %d: attention plot skipped: %s", st.step, _one_line(e))
        try:
            self.monitor.validation(st.step, m, heatmap)
        except Exception as e:
            log.warning("step %d: validation log or samples skipped: %s", st.step, _one_line(e))

    def make_batches(self, group: list[list[int]]) -> list[Batch]:
        """``group`` (up to ``update_freq`` batches of pair indices) as Batches on the device;
        built inline, its time counts as training time (ahead, it overlaps the device's work)."""
        tick, cap = time.perf_counter(), self.model.max_positions
        out = [make_batch(self.data.train, g, self.device, self.pad_multiple, cap) for g in group]
        if not self.ahead:
            self.busy += time.perf_counter() - tick
        return out

    def update(self, batches: list[Batch]) -> None:
        """One optimizer update from ``batches`` (``make_batches``); its results stay on the
        device until ``flush``. A skipped non-finite update takes a step number too (its weights
        are the previous step's)."""
        st, t = self.state, self.cfg.train
        lr = lr_at(st.step + 1, t, st.plateau_scale)
        ratio = teacher_forcing_at(st.step + 1, t.teacher_forcing)
        tick = time.perf_counter()
        r = train_step(
            self.wrapper, self.optimizer, self.scaler, batches, t, lr, self.device, self.info, ratio
        )
        st.batch_in_epoch += len(batches)
        st.step += 1
        n_tokens = sum(b.n_tokens for b in batches)  # host ints, known when the batch was built
        if self.info.enabled:
            self.unsynced_tokens += n_tokens
        else:
            st.target_tokens += n_tokens
        self.busy += time.perf_counter() - tick
        values = torch.stack([r["loss"], r["grad_norm"], r["tokens"], r["skipped"]])
        self.pending.append((st.step, st.epoch, lr, ratio, self.busy, values))

    def flush(self) -> str:
        """Read the pending updates' results from the device (one copy: the only wait for it
        between log points), count skipped updates and log one line per applied one.

        Returns:
            A progress line for the last applied update ('' if none).

        Raises:
            TrainingError: ``max_nonfinite`` skipped updates in a row.
        """
        if not self.pending:
            return ""
        st, t = self.state, self.cfg.train
        tick = time.perf_counter()
        values = torch.stack([p[-1] for p in self.pending]).tolist()
        self.busy += time.perf_counter() - tick  # the wait is the device's time for them
        pending, self.pending = self.pending, []
        records, error = [], None
        for i, ((step, epoch, lr, ratio, busy, _), (loss, gnorm, tokens, skipped)) in enumerate(
            zip(pending, values, strict=True)
        ):
            if skipped:
                error = self._skipped(step)
                if error:
                    break
                continue
            st.nonfinite_in_row = 0
            st.tokens_seen += round(tokens)
            busy = self.busy if i == len(pending) - 1 else busy
            tok_s = (st.tokens_seen - self.tokens0) / max(busy, 1e-9)
            records.append(
                {
                    "step": step,
                    "epoch": epoch,
                    "loss": loss,
                    "grad_norm": gnorm,
                    "tokens": round(tokens),
                    "lr": lr,
                    "tokens_per_s": tok_s,
                    "tf_ratio": ratio,
                }
            )
        if self.monitor is not None and records:
            self.monitor.train_steps(records)
        if error:
            raise NonFiniteStop(error)
        if not records:
            return ""
        r = records[-1]
        stats = f"epoch {r['epoch'] + 1} loss {r['loss']:.3f} lr {r['lr']:.2e} "
        stats += f"{r['tokens_per_s']:,.0f} tok/s"
        if self.monitor is not None and not console.is_terminal and st.step % t.log_every == 0:
            log.info("step %d %s", st.step, stats)  # a log file gets no progress bar
        return stats

    def _skipped(self, step: int) -> str:
        """Count a skipped non-finite update; returns the error when too many came in a row."""
        st = self.state
        st.nonfinite_in_row += 1
        st.nonfinite_total += 1
        log.warning(
            "step %d: non-finite loss or gradient, update skipped (%d in a row)",
            step,
            st.nonfinite_in_row,
        )
        if st.nonfinite_in_row < self.cfg.train.max_nonfinite:
            return ""
        return (
            f"{st.nonfinite_in_row} non-finite losses in a row at steps "
            f"{step - st.nonfinite_in_row + 1}-{step}: lower train.lr, use precision fp32, or "
            "check the data; last.pt holds finite weights"
        )

    def sync_target_tokens(self) -> None:
        """Under torchrun: add every rank's target tokens since the last call to the state (one
        all-reduce, so every rank calls it at the same points: log points, checkpoints and the
        end; a save after an error misses the ones since). Alone, ``update`` counts them at
        once and this does nothing."""
        if not self.info.enabled:
            return
        mine = torch.tensor(self.unsynced_tokens, dtype=torch.long, device=self.device)
        self.state.target_tokens += int(dist.all_reduce_sum(mine, self.info).item())
        self.unsynced_tokens = 0

    def checkpoint_if_due(self) -> None:
        """Validate and save, or only save, when the step says so (a skipped step too: its
        weights are the last applied update's)."""
        st, t = self.state, self.cfg.train
        if st.step % t.valid_every == 0:
            self.validate_and_save()
        elif t.checkpoint_every and st.step % t.checkpoint_every == 0:
            self.sync_target_tokens()
            self.save_last()

    def should_stop(self, interrupted: bool, at_log: bool = True) -> str:
        """Rank 0's reason to stop now (one of STOP_REASONS; '' = go on), on every rank.

        Steps, epochs and validations are the same on every rank; the clock and signals are not,
        so under torchrun those two are heeded only ``at_log`` points, where rank 0's reason is
        broadcast (a message that waits for every rank, kept out of the other steps). The ranks'
        target tokens are summed there too, so ``max_tokens`` takes effect at a log point; alone,
        at the first update that reaches it.
        """
        st, t = self.state, self.cfg.train
        if at_log:
            self.sync_target_tokens()
        elapsed = self.elapsed()
        shared = at_log or not self.info.enabled
        checks = {
            "interrupted": shared and interrupted,
            "max_steps": t.max_steps is not None and st.step >= t.max_steps,
            "max_epochs": t.max_epochs is not None and st.epoch >= t.max_epochs,
            "max_time": shared and t.max_time is not None and elapsed >= t.max_time * 60,
            "max_tokens": t.max_tokens is not None and st.target_tokens >= t.max_tokens,
            "early_stopping": t.patience is not None and st.bad_validations >= t.patience,
        }
        reason = next((k for k, hit in checks.items() if hit), "")
        if not at_log:
            return reason
        return dist.broadcast_choice(reason, STOP_REASONS, self.info, self.device)

    def summary(self) -> dict:
        st, t = self.state, self.cfg.train
        best = st.best_score if t.best_metric != "loss" or st.best_score is None else -st.best_score
        tok_s = (st.tokens_seen - self.tokens0) / max(self.busy, 1e-9)
        out = {
            "steps": st.step,
            "epochs": st.epoch,
            "stopped": self.stopped,
            "train_seconds": round(st.train_seconds, 1),
            "target_tokens": st.target_tokens,
            "target_tokens_per_s": round(tok_s, 1),
            "best_metric": t.best_metric,
            "best_score": best,
            "best_step": st.best_step,
            "nonfinite_skipped": st.nonfinite_total,
            "run_dir": str(self.run_dir),
        }
        if self.info.enabled:  # proof that DDP kept every replica identical
            digests = dist.gather_objects(weights_digest(self.model.state_dict()), self.info)
            out["rank_weights_sha256"] = digests
            if len(set(digests)) > 1:
                log.error("ranks hold different weights after training: %s", digests)
        return out

    def write_summary(self, summary: dict) -> None:
        """``train_summary.json`` (rank 0, atomically): what ``train`` prints, kept with the run."""
        if self.info.is_main:
            text = json.dumps(summary, indent=2) + "\n"
            atomic_write_text(self.run_dir / "train_summary.json", text)

    def close(self) -> None:
        """Close the monitor and, under torchrun, the process group. DistributedDataParallel holds
        the group (and gloo's worker threads) alive: it is dropped first, so the group is torn
        down here rather than while the interpreter exits, where gloo can abort the process."""
        if self.monitor is not None:
            self.monitor.close()
        if self.info.enabled:
            self.wrapper = None
            gc.collect()
        dist.shutdown(self.info)


def builds_ahead(device: torch.device) -> bool:
    """Whether a background thread builds batches ahead (``prefetch``): on CUDA, where the host is
    otherwise idle while the GPU works; not on the CPU, where it would take cores from torch."""
    return device.type == "cuda"


def _keep_fused(optimizer: torch.optim.Optimizer) -> None:
    """A checkpoint of an unfused optimizer restores its groups' ``fused: False``; the fused step
    wants that flag back, and its step counts as float32 on the parameters' device."""
    for group in optimizer.param_groups:
        group["fused"] = True
        for p in group["params"]:
            state = optimizer.state.get(p, {})
            if "step" in state:
                state["step"] = state["step"].to(p.device, torch.float32)


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


def _progress(info: dist.DistInfo):
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

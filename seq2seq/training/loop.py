"""The training loop: setup (``setup.RunSetup``) -> updates, validations and checkpoints -> cleanup.

``last.pt`` holds everything ``--resume`` needs (weights, optimizer, scaler, RNG states, the epoch
and batch within it, counters, the resolved config); batches are a pure function of (seed, epoch),
the learning rate of the step (``state.lr_at``), so a resume is exact, mid-epoch included. Under
``torchrun`` every rank trains its shard inside DDP; only rank 0 validates, logs and writes files.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
from collections.abc import Callable, Iterator
from dataclasses import asdict
from functools import partial
from pathlib import Path

from seq2seq.atomic import atomic_write_text
from seq2seq.checkpoint import pack_target_vocab, weights_digest
from seq2seq.config import Config
from seq2seq.console import console
from seq2seq.data.prepare import epoch_batches
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.runtime import STOP_SIGNALS, ended_like_ctrl_c, handling_signals, rng_states
from seq2seq.training import distributed as dist
from seq2seq.training.monitor import RunLog, attention_heatmap, note_short_update, progress_bar
from seq2seq.training.run_lock import RunLock
from seq2seq.training.setup import RunSetup
from seq2seq.training.state import (
    SHARED_AFTER_VALIDATION,
    STOP_REASONS,
    NonFiniteStop,
    book_score,
    nothing_left,
    run_length,
    stop_reason,
    unreached_peak,
)
from seq2seq.training.updates import Updates, builds_ahead, built_ahead
from seq2seq.training.validate import validate

log = logging.getLogger("seq2seq")


@contextlib.contextmanager
def interruptible() -> Iterator[Callable[[], bool]]:
    """Within the block, SIGINT, SIGTERM and SIGHUP set a flag instead of ending the process;
    yields a function that says whether one arrived.

    Raises:
        KeyboardInterrupt: a second signal while the first is being handled.
    """
    flag = {"hit": False}

    def handler(signum, frame):
        if flag["hit"]:
            raise KeyboardInterrupt
        flag["hit"] = True
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        again = " (press Ctrl-C again to abort)" if signum == signal.SIGINT else ""
        log.warning(f"{name}: finishing this step, then saving{again}")

    with handling_signals(handler, STOP_SIGNALS):
        yield lambda: flag["hit"]


def train(
    cfg: Config,
    run_dir: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    tokenizer: Tokenizer | None = None,
) -> dict:
    """Train ``cfg`` into ``run_dir`` (default ``cfg.run_dir`` or ``runs/<name>``).

    ``tokenizer``, when given, is used instead of training one (``seq2seq compare`` shares one); a
    resumed run keeps its checkpoint's, a warm-started one takes its checkpoint's. Rank 0 holds the
    folder's lock (``run_lock``) throughout, writes ``train_summary.json`` and appends the run's
    INFO lines to ``train.log``. A run that fails before its first checkpoint leaves nothing.
    Returns the summary (``Run.summary``), also written to ``train_summary.json``.

    Raises:
        ConfigError, DataError, CheckpointError, TrainingError (``RunFolderBusy`` among them).
    """
    path = Path(run_dir or cfg.run_dir or f"runs/{cfg.name}")
    main = dist.launched_as_main()  # under torchrun rank 0 alone writes, so it alone locks
    with ended_like_ctrl_c(), RunLog() as run_log, RunLock(path, enabled=main):
        run = Run(cfg, path, resume, overwrite, tokenizer, run_log)  # setup
        try:
            _loop(run)
            summary = run.summary()
            if run.info.is_main:  # what ``train`` prints, kept with the run
                atomic_write_text(path / "train_summary.json", json.dumps(summary, indent=2) + "\n")
            return summary
        except NonFiniteStop:
            raise  # last.pt stays the last save before the non-finite run: nothing past it is kept
        except BaseException as e:
            run.save_unsaved(e)  # whatever else stopped the run, the updates so far are kept
            raise
        finally:
            run.close()  # cleanup


def _loop(run: Run) -> None:
    """Epochs of this rank's batches, ``update_freq`` at a time, until a stop; then save."""
    t, st, info = run.cfg.train, run.state, run.info
    ranks = f" x {info.world} ranks" if info.enabled else ""
    log.info(
        f"model {run.cfg.model.name}: {run.model.num_parameters():,} parameters; "
        f"{len(run.data.train)} training pairs; device {run.device}{ranks}"
    )
    run.updates.start_clock()
    run.stopped = run.should_stop(False)
    if run.stopped and info.is_main:  # a resume of a run that had already stopped
        log.warning("--resume %s: %s", run.run_dir, nothing_left(run.stopped, st, t))
    noted_tail = False
    with progress_bar(info.is_main) as progress, interruptible() as interrupted:
        task = progress.add_task("train", total=t.max_steps, completed=st.step, stats="")
        run.model.train()
        while not run.stopped:
            batches = epoch_batches(run.data.train, t, st.epoch, info)
            run.batches_in_epoch = len(batches)
            if not noted_tail and info.is_main:
                note_short_update(len(batches), t.update_freq)
                if short := unreached_peak(t, run_length(t, -(-len(batches) // t.update_freq))):
                    log.warning(short)
            noted_tail = True
            groups = range(st.batch_in_epoch, len(batches), t.update_freq)
            groups = [batches[i : i + t.update_freq] for i in groups]
            with built_ahead(run.updates.make_batches, groups, run.updates.ahead) as built:
                for group in built:
                    run.updates.update(group)
                    at_log = st.step % t.log_every == 0
                    stats = run.updates.flush() if at_log else run.updates.heartbeat()
                    progress.update(task, completed=st.step, **({"stats": stats} if stats else {}))
                    if st.step % t.valid_every == 0:  # a skipped step too: its weights are kept
                        run.validate_and_save()
                    elif t.checkpoint_every and st.step % t.checkpoint_every == 0:
                        run.updates.sync_target_tokens()
                        run.save_last()
                    run.stopped = run.should_stop(interrupted(), at_log)
                    if run.stopped:
                        break
            if st.batch_in_epoch >= len(batches):
                st.epoch, st.batch_in_epoch = st.epoch + 1, 0
                # only the epoch count is new here; it is the same on every rank
                run.stopped = run.stopped or stop_reason(st, t, clock=False)
        run.updates.flush()
        run.updates.sync_target_tokens()
        run.updates.note_time()
        if run.stopped == "interrupted":
            log.warning("interrupted: saving last.pt at step %d", st.step)
            run.save_last()
        elif run.last_valid != st.step:
            run.validate_and_save()
    if run.stopped == "early_stopping":
        log.info(
            f"early stopping: no {t.best_metric} gain in {t.patience} validations (best at step "
            f"{st.best_step})"
        )


class Run(RunSetup):
    """The loop's operations on what ``RunSetup`` built: its updates (``updates``), validation,
    checkpoints, the stop rule and the summary."""

    def __init__(self, *args, **kwargs):
        """As ``RunSetup``; then the loop's own counters, from the (fresh or resumed) state."""
        super().__init__(*args, **kwargs)
        self.updates = Updates(self, builds_ahead(self.device))
        self.last_valid, self.stopped, self.saved_step = self.state.step, "", self.state.step
        self.batches_in_epoch = 0  # this rank's batches in the epoch under way (known in _loop)

    def payload(self) -> dict:
        """The checkpoint dict: what ``--resume`` needs, the config, the target vocabulary."""
        return {
            "config": self.cfg.model_dump(mode="json"),
            "model": self.model.state_dict(),
            "tokenizer": self.data.tok.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
            "train_state": asdict(self.state),
            "rng": rng_states(),
            **pack_target_vocab(self.data.target_vocab),
        }

    def save_last(self) -> None:
        self.updates.flush()  # the counters a checkpoint holds include every update so far
        self.updates.note_time()
        self.checkpoints.save_last(self.state, self.payload)
        self.saved_step = self.state.step

    def save_unsaved(self, error: BaseException) -> None:
        """After an error or a second Ctrl-C: ``last.pt`` for the updates not yet saved; a failure
        to save is logged, the first error stands."""
        if self.state.step == self.saved_step:
            return
        ctrl_c = isinstance(error, KeyboardInterrupt)
        why = "aborted by a second Ctrl-C" if ctrl_c else "stopped by an error"
        try:
            self.save_last()
            log.warning(
                f"{why}: last.pt saved at step {self.state.step}; seq2seq train CONFIG --resume "
                f"{self.run_dir} goes on"
            )
        except Exception as e:
            log.error("%s, and last.pt could not be saved: %s", why, e)

    def validate_and_save(self) -> None:
        """Validate (rank 0), update best / best-k / plateau / patience, write the checkpoints."""
        self.updates.flush()
        self.updates.sync_target_tokens()
        st, t = self.state, self.cfg.train
        self.last_valid = st.step
        if self.info.is_main:
            d = self.data
            if not console.is_terminal:  # a sign of life in a log file while it decodes
                log.info("validating at step %d on %s pairs", st.step, f"{len(d.valid):,}")
            metrics = validate(self.model, d.tok, d.valid, d.valid_text, self.cfg, self.device)
            score = -metrics["loss"] if t.best_metric == "loss" else metrics[t.best_metric]
            improved, kept, dropped = book_score(st, score, t)
            self._log_validation(metrics)
            self.save_last()
            self.checkpoints.keep_validated(improved, kept, dropped)
        dist.broadcast_fields(st, SHARED_AFTER_VALIDATION, self.info)

    def _log_validation(self, m: dict) -> None:
        st = self.state
        bleu = f" BLEU {m['bleu']:.2f} chrF {m['chrf']:.2f}" if "bleu" in m else ""
        log.info(
            f"valid step {st.step}: loss {m['loss']:.3f} ppl {m['ppl']:.2f}{bleu} (best "
            f"{self.cfg.train.best_metric} at step {st.best_step})"
        )
        # the attention plot of the first validation sentence (the set is never empty)
        d, png, dec = self.data, self.run_dir / "attention.png", self.cfg.decode
        first = d.valid_text.src[0]
        draw = partial(attention_heatmap, self.model, d.tok, first, self.device, png, dec)
        self.monitor.side_outputs(st.step, m, draw)

    def should_stop(self, interrupted: bool, at_log: bool = True) -> str:
        """Rank 0's reason to stop now (``state.stop_reason``; '' = go on), on every rank. Under
        torchrun the clock, signals and summed target tokens (``max_tokens``), which ranks see
        differently, are heeded only ``at_log`` points, where rank 0's reason is broadcast."""
        if at_log:
            self.updates.sync_target_tokens()
        self.updates.note_time()
        reason = stop_reason(
            self.state, self.cfg.train, interrupted, at_log or not self.info.enabled
        )
        if not at_log:
            return reason
        return dist.broadcast_choice(reason, STOP_REASONS, self.info, self.device)

    def summary(self) -> dict:
        """Steps, epochs, why it stopped, seconds, target tokens and tokens/s (over resumed
        stretches too), best metric and step, skipped updates (under torchrun: weight digests)."""
        st, t = self.state, self.cfg.train
        best = st.best_score if t.best_metric != "loss" or st.best_score is None else -st.best_score
        out = {
            "steps": st.step,
            "epochs": self.epochs_trained(),
            "stopped": self.stopped,
            "train_seconds": round(st.train_seconds, 1),
            "target_tokens": st.target_tokens,
            "target_tokens_per_s": round(self.updates.tokens_per_s(), 1),
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

    def epochs_trained(self) -> float:
        """Epochs trained, to 2 decimals (1.5 half-way through what the log calls "epoch 2")."""
        st = self.state
        if st.batch_in_epoch and not self.batches_in_epoch:  # resumed mid-epoch, stopped at once
            self.batches_in_epoch = len(
                epoch_batches(self.data.train, self.cfg.train, st.epoch, self.info)
            )
        return round(st.epoch + st.batch_in_epoch / max(self.batches_in_epoch, 1), 2)

"""This stretch's optimizer updates (from the start, or a resume, to the stop): each one run on the
device (``step.train_step``), its results left there until ``Updates.flush`` reads them all at
once (the only wait for the device between log points); target tokens counted on the host; the
training clock (monotonic: a wall clock that jumps, NTP or a suspended laptop, moves no budget).
``built_ahead`` builds batches on a background thread on CUDA, inline on the CPU (where a thread
would take cores from torch); building a batch draws no random number: the run stays exact.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

from seq2seq.console import console
from seq2seq.data.batch import Batch
from seq2seq.data.prepare import make_batch
from seq2seq.training import distributed as dist
from seq2seq.training.setup import RunSetup
from seq2seq.training.speed import SpeedWatch
from seq2seq.training.state import NonFiniteStop, lr_at, teacher_forcing_at
from seq2seq.training.step import train_step

log = logging.getLogger("seq2seq")

Group = TypeVar("Group")
Built = TypeVar("Built")


@contextlib.contextmanager
def built_ahead(
    build: Callable[[Group], Built], groups: Sequence[Group], ahead: bool, depth: int = 2
) -> Iterator[Iterator[Built]]:
    """``build(group)`` for each of ``groups`` in order: inline, or with ``ahead`` up to ``depth``
    ahead of the consumer on a background thread (pinned-memory batches padded while the GPU
    works); leaving the context cancels the builds not started and waits for the one under way."""
    if not ahead:
        yield map(build, groups)
        return
    pool, pending = ThreadPoolExecutor(1, thread_name_prefix="batches"), collections.deque()

    def results() -> Iterator[Built]:  # an error in a build is raised here, in its turn
        for group in groups:
            pending.append(pool.submit(build, group))
            if len(pending) > depth:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

    try:
        yield results()
    finally:
        pool.shutdown(cancel_futures=True)


def builds_ahead(device: torch.device) -> bool:
    """Whether ``built_ahead`` builds batches on a background thread: on CUDA only."""
    return device.type == "cuda"


# Output to a file (no progress bar) gets a step line at least this often (between log points).
HEARTBEAT_SECONDS = 30.0


class Updates:
    """The updates of one stretch of ``run``, booked into ``run.state`` as they are read.

    Attributes:
        busy: seconds spent on updates this stretch (building batches inline and waiting for the
            device included): what tokens/s divides by.
        pending: per update not yet read from the device, (step, epoch, lr, tf ratio, busy
            seconds so far) and a (4,) tensor of loss, grad norm, tokens, skipped.
    """

    def __init__(self, run: RunSetup, ahead: bool):
        self.run, self.state, self.t, self.ahead = run, run.state, run.cfg.train, ahead
        self.tokens0, self.busy = self.state.tokens_seen, 0.0
        # the stretches before this one (from last.pt): their busy seconds and tokens
        self.busy_before = (self.state.busy_seconds, self.state.busy_tokens)
        # this stretch's monotonic clock (start_clock): train_seconds = seconds0 + time since clock0
        self.clock0: float | None = None
        self.seconds0 = self.state.train_seconds
        self.unsynced_tokens = 0  # torchrun: this rank's target tokens not yet in the state
        self.pending: list[tuple[int, int, float, float, float, torch.Tensor]] = []
        self.said_at = time.monotonic()  # when a step line was last logged (heartbeat)
        self.speed = SpeedWatch(run.device)

    def start_clock(self) -> None:
        """Start this stretch's training clock (setup before it is not training time)."""
        self.clock0, self.seconds0 = time.monotonic(), self.state.train_seconds
        self.said_at = time.monotonic()

    def elapsed(self) -> float:
        """Training seconds over every stretch so far: the earlier ones (from last.pt) and this,
        each measured on the monotonic clock (what ``max_time`` budgets)."""
        if self.clock0 is None:
            return self.seconds0
        return self.seconds0 + time.monotonic() - self.clock0

    def note_time(self) -> None:
        """Book the training time, busy time and its tokens so far into the state (and so into
        every checkpoint: a resumed run counts the stretches before it)."""
        st = self.state
        st.train_seconds = self.elapsed()
        st.busy_seconds = self.busy_before[0] + self.busy
        st.busy_tokens = self.busy_before[1] + st.tokens_seen - self.tokens0

    def make_batches(self, group: list[list[int]]) -> list[Batch]:
        """``group`` (up to ``update_freq`` batches) as Batches on the device; built inline (not
        ``ahead``: ``built_ahead``), its time counts as busy time."""
        r, tick, cap = self.run, time.perf_counter(), self.run.model.max_positions
        out = [make_batch(r.data.train, g, r.device, r.pad_multiple, cap) for g in group]
        if not self.ahead:
            self.busy += time.perf_counter() - tick
        return out

    def update(self, batches: list[Batch]) -> None:
        """One optimizer update from ``batches``; its results stay on the device until ``flush``.
        A skipped non-finite update takes a step number too."""
        st, t = self.state, self.t
        lr = lr_at(st.step + 1, t, st.plateau_scale)
        ratio = teacher_forcing_at(st.step + 1, t.teacher_forcing)
        tick, r = time.perf_counter(), self.run
        out = train_step(r.wrapper, r.optimizer, r.scaler, batches, t, lr, r.device, r.info, ratio)
        st.batch_in_epoch += len(batches)
        st.step += 1
        n_tokens = sum(b.n_tokens for b in batches)  # host ints, known when the batch was built
        if self.run.info.enabled:
            self.unsynced_tokens += n_tokens
        else:
            st.target_tokens += n_tokens
        self.busy += time.perf_counter() - tick
        values = torch.stack([out["loss"], out["grad_norm"], out["tokens"], out["skipped"]])
        self.pending.append((st.step, st.epoch, lr, ratio, self.busy, values))

    def heartbeat(self) -> str:
        """Between log points, with output to a file and no step line for ``HEARTBEAT_SECONDS``:
        a step line (alone, ``flush``'s; under torchrun rank 0's step and clock only, as the
        device's results wait for the log points every rank reaches). Returns ``flush``'s progress
        line, or ''."""
        if self.run.monitor is None or console.is_terminal:
            return ""
        if time.monotonic() - self.said_at < HEARTBEAT_SECONDS:
            return ""
        if not self.run.info.enabled:
            return self.flush(say=True)
        self.said_at = time.monotonic()
        log.info(
            f"step {self.state.step}, {self.elapsed() / 60:.1f} min trained (loss and rate every "
            f"{self.t.log_every} steps, train.log_every)"
        )
        return ""

    def flush(self, say: bool = False) -> str:
        """Read the pending updates' results from the device (one copy), count skipped updates and
        log one line per applied one; with output to a file, also a step line at a log point (or
        with ``say``). Returns a progress line for the last applied update ('' if none).

        Raises:
            NonFiniteStop: ``max_nonfinite`` skipped updates in a row.
        """
        if not self.pending:
            return ""
        st, t = self.state, self.t
        tick = time.perf_counter()
        values = torch.stack([p[-1] for p in self.pending]).tolist()
        self.busy += time.perf_counter() - tick  # the wait is the device's time for them
        pending, self.pending = self.pending, []
        records, error = [], None
        for i, ((step, epoch, lr, ratio, busy, _), (loss, gnorm, tokens, skipped)) in enumerate(
            zip(pending, values, strict=True)
        ):
            if skipped:
                if error := self._skipped(step):
                    break
                continue
            st.nonfinite_in_row = 0
            st.tokens_seen += round(tokens)
            busy = self.busy if i == len(pending) - 1 else busy
            tok_s = (st.tokens_seen - self.tokens0) / max(busy, 1e-9)
            records.append(
                {
                    "step": step,
                    "epoch": epoch + 1,  # the N-th pass over the data, as train.log says
                    "loss": loss,
                    "grad_norm": gnorm,
                    "tokens": round(tokens),
                    "lr": lr,
                    "tokens_per_s": tok_s,
                    "tf_ratio": ratio,
                }
            )
        if self.run.monitor is not None and records:
            self.run.monitor.train_steps(records)
        if error:
            raise NonFiniteStop(error)
        if not records:
            return ""
        r = records[-1]
        if self.run.monitor is not None:
            self.speed.window(st.step, st.tokens_seen - self.tokens0, self.busy)
        stats = f"epoch {r['epoch']} loss {r['loss']:.3f} lr {r['lr']:.2e} "
        stats += f"{r['tokens_per_s']:,.0f} tok/s"
        if self.run.monitor is not None and not console.is_terminal:
            if say or st.step % t.log_every == 0:  # a log file gets no progress bar
                log.info("step %d %s", st.step, stats)
                self.said_at = time.monotonic()
        return stats

    def _skipped(self, step: int) -> str:
        """Count a skipped non-finite update; returns the error when too many came in a row."""
        st = self.state
        st.nonfinite_in_row += 1
        st.nonfinite_total += 1
        why = f"non-finite loss or gradient, update skipped ({st.nonfinite_in_row} in a row)"
        log.warning(f"step {step}: {why}")
        if st.nonfinite_in_row < self.t.max_nonfinite:
            return ""
        return (
            f"{st.nonfinite_in_row} non-finite losses in a row at steps "
            f"{step - st.nonfinite_in_row + 1}-{step}: lower train.lr, use precision fp32, or "
            "check the data; last.pt holds finite weights"
        )

    def sync_target_tokens(self) -> None:
        """Under torchrun: add every rank's target tokens since the last call to the state (an
        all-reduce: every rank calls it at log points, checkpoints and the end); alone, nothing."""
        if not self.run.info.enabled:
            return
        mine = torch.tensor(self.unsynced_tokens, dtype=torch.long, device=self.run.device)
        self.state.target_tokens += int(dist.all_reduce_sum(mine, self.run.info).item())
        self.unsynced_tokens = 0

    def tokens_per_s(self) -> float:
        """Target tokens/s of the applied updates over their busy time, every stretch so far."""
        seconds0, tokens0 = self.busy_before
        tokens = tokens0 + self.state.tokens_seen - self.tokens0
        return tokens / max(seconds0 + self.busy, 1e-9)

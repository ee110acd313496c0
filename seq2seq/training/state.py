"""The training loop's position and bookkeeping (saved in every checkpoint), how a validation
score is booked into it, and when it says training stops (``stop_reason``); and the schedules,
pure functions of the update number: the learning rate and the teacher-forcing ratio (the plateau
schedule's current scale lives in the state). No torch here."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from seq2seq.config import TeacherForcingConfig, TrainConfig


class TrainingError(RuntimeError):
    """Training cannot go on (one line; the last good checkpoint stays on disk)."""


class NonFiniteStop(TrainingError):
    """``max_nonfinite`` non-finite updates in a row: training stops, ``last.pt`` stays as it was
    last saved (skipped updates change no weight, so nothing is lost)."""


@dataclass
class TrainState:
    """The loop's position and bookkeeping; saved in every checkpoint.

    ``best_k``: (score, file name) of the kept best checkpoints, best first, scores higher-is-better
    (the negated loss). ``last_k``: the kept ``step<N>.pt`` names, oldest first. ``tokens_seen``:
    target tokens of the applied updates, read from the device; ``target_tokens``: those of every
    update, counted on the host (what ``max_tokens`` budgets). ``train_seconds``: the training time,
    the sum of each stretch's monotonic time (what ``max_time`` budgets). The summary's tokens/s is
    ``busy_tokens`` / ``busy_seconds``, over every stretch (0 in older checkpoints).
    ``batch_in_epoch`` counts each process's own batches; ``world``: the processes (torchrun
    ranks) that trained them (1 in older checkpoints), so the epoch's first ``world`` x
    ``batch_in_epoch`` batches are trained (``reshard``)."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    world: int = 1
    best_score: float | None = None
    best_step: int = 0
    bad_validations: int = 0
    plateau_scale: float = 1.0
    plateau_bad: int = 0
    nonfinite_in_row: int = 0
    nonfinite_total: int = 0
    tokens_seen: int = 0
    target_tokens: int = 0
    train_seconds: float = 0.0
    busy_seconds: float = 0.0
    busy_tokens: int = 0
    best_k: list[tuple[float, str]] = field(default_factory=list)
    last_k: list[str] = field(default_factory=list)


# What validation decides on rank 0 and every rank needs (the learning rate and the stop rule).
SHARED_AFTER_VALIDATION = ("plateau_scale", "best_score", "best_step", "bad_validations")

# Why a run stopped ('' = it goes on), as ``train_summary.json`` names it; first match wins.
STOP_REASONS = (
    "",
    "max_steps",
    "max_epochs",
    "max_time",
    "max_tokens",
    "early_stopping",
    "interrupted",
)


def stop_reason(
    st: TrainState, t: TrainConfig, interrupted: bool = False, clock: bool = True
) -> str:
    """Why training stops at ``st`` (one of ``STOP_REASONS``, checked in their order; '' = go on).
    ``clock`` False leaves out the signal and the time, which ranks under torchrun see differently
    (``loop.Run.should_stop``)."""
    checks = (
        ("interrupted", clock and interrupted),
        ("max_steps", t.max_steps is not None and st.step >= t.max_steps),
        ("max_epochs", t.max_epochs is not None and st.epoch >= t.max_epochs),
        ("max_time", clock and t.max_time is not None and st.train_seconds >= t.max_time * 60),
        ("max_tokens", t.max_tokens is not None and st.target_tokens >= t.max_tokens),
        ("early_stopping", t.patience is not None and st.bad_validations >= t.patience),
    )
    return next((reason for reason, hit in checks if hit), "")


def reshard(st: TrainState, world: int, batches: int) -> tuple[bool, str]:
    """Carry ``st``'s position in its epoch from the ``st.world`` processes that saved it to
    ``world`` (``batches``: each one's batches of the epoch now). Rank r of W trains every W-th
    batch from r on, so W x ``batch_in_epoch`` is the epoch's batches trained: W' processes go on
    exactly from W x b / W' each when that divides (or the epoch is done); otherwise the epoch's
    order restarts (``batch_in_epoch`` 0). Returns (exact, the log line, '' when W' = W)."""
    old, done, e = st.world, st.batch_in_epoch * st.world, st.epoch + 1
    st.world = world
    if old == world:
        return True, ""
    said = f"last.pt was saved by {_processes(old)} (torchrun ranks), this resume has {world}: "
    if done % world == 0 or done // world >= batches:
        st.batch_in_epoch = min(done // world, batches)
        return True, f"{said}epoch {e} goes on exactly after the {done} batches it has trained"
    st.batch_in_epoch = 0
    return False, (
        f"{said}the {done} batches epoch {e} has trained cannot be shared evenly by {world} "
        f"processes taking turns batch by batch, so epoch {e} restarts from its first batch and "
        f"those {done} are seen again; resume with {_processes(old)} (or a number that divides "
        f"{done}) to go on exactly"
    )


def _processes(n: int) -> str:
    return f"{n} process" if n == 1 else f"{n} processes"


def nothing_left(reason: str, st: TrainState, t: TrainConfig) -> str:
    """Why a resumed run at ``st`` stops before its first update (``reason``, from
    ``stop_reason``), in words, with the option that lets it go on."""
    if reason == "max_steps":
        return (
            f"already at step {st.step}, and train.max_steps is {t.max_steps}: nothing to train; "
            f"--max-steps above {st.step} continues it"
        )
    if reason == "max_epochs":
        return (
            f"already {st.epoch} epochs trained, and train.max_epochs is {t.max_epochs}: nothing "
            f"to train; --max-epochs above {st.epoch} continues it"
        )
    if reason == "max_time":
        return (
            f"already {st.train_seconds / 60:.3g} min trained, and train.max_time is "
            f"{t.max_time:g} min: nothing to train; --max-time above {st.train_seconds / 60:.3g} "
            "(minutes, counted over every stretch of the run) continues it"
        )
    if reason == "max_tokens":
        return (
            f"already {st.target_tokens:,} target tokens trained, and train.max_tokens is "
            f"{t.max_tokens:,}: nothing to train; --set train.max_tokens=N above "
            f"{st.target_tokens} continues it"
        )
    return (
        f"already stopped early ({st.bad_validations} validations without a gain, train.patience "
        f"{t.patience}): nothing to train; --set train.patience=N above {st.bad_validations} "
        "continues it"
    )


def book_score(st: TrainState, score: float, t: TrainConfig) -> tuple[bool, str | None, list[str]]:
    """Book one validation ``score`` (higher is better: the loss negated) into ``st``: best score
    and step, patience counter, plateau scale, and the best-k list (``best-step<N>.pt`` names).
    Returns (improved, the best-k file this validation should write or None, files to delete)."""
    improved = st.best_score is None or score > st.best_score
    if improved:
        st.best_score, st.best_step, st.bad_validations, st.plateau_bad = score, st.step, 0, 0
    else:
        st.bad_validations += 1
        st.plateau_bad += 1
        if t.schedule == "plateau" and st.plateau_bad > t.plateau_patience:
            st.plateau_scale *= t.plateau_factor
            st.plateau_bad = 0
    if t.keep_best <= 1:
        return improved, None, []
    name = f"best-step{st.step}.pt"
    # a stable sort on the score alone: on a tie the earlier checkpoint stays ahead
    ranked = sorted([*st.best_k, (score, name)], key=lambda x: -x[0])
    st.best_k = ranked[: t.keep_best]
    kept = name if (score, name) in st.best_k else None
    return improved, kept, [n for _, n in ranked[t.keep_best :]]


def book_last(st: TrainState, keep_last: int) -> tuple[str | None, list[str]]:
    """Book a ``last.pt`` save into ``st.last_k`` (before the save, so last.pt records the list it
    belongs to). Returns (the ``step<N>.pt`` name to link to last.pt, None when ``keep_last`` <= 1;
    names to delete)."""
    if keep_last <= 1:
        return None, []
    name = f"step{st.step}.pt"
    names = [n for n in st.last_k if n != name] + [name]
    st.last_k = names[-keep_last:]
    return name, names[:-keep_last]


def lr_at(step: int, t: TrainConfig, plateau_scale: float = 1.0) -> float:
    """Learning rate for update ``step`` (from 1).

    - constant: ``lr`` after a linear warmup of ``warmup_steps``.
    - plateau: the same, times ``plateau_scale`` (halved, by default, each time validation stalls
      for more than ``plateau_patience`` validations), never below ``min_lr``.
    - noam (Vaswani et al. 2017, eq. 3): d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), rescaled
      so its peak, at ``warmup_steps``, is ``lr``: lr · min(step / warmup, (warmup / step)^0.5).
    - cosine: warmup, then ``lr`` -> ``min_lr`` along half a cosine until ``decay_steps``
      (default ``max_steps``), then ``min_lr``."""
    w = t.warmup_steps
    if t.schedule == "noam":
        return t.lr * min(step / w, math.sqrt(w / step))
    warm = min(1.0, step / w) if w else 1.0
    if t.schedule == "cosine":
        end = t.decay_steps or t.max_steps or step
        progress = min(1.0, max(0, step - w) / max(1, end - w))
        return warm * (t.min_lr + (t.lr - t.min_lr) * 0.5 * (1 + math.cos(math.pi * progress)))
    if t.schedule == "plateau":
        return t.lr * warm * max(plateau_scale, t.min_lr / t.lr)
    return t.lr * warm


def epoch_number(state: dict[str, Any]) -> int | None:
    """The epoch of a saved ``TrainState``'s last update, counted from 1 as every log does: a
    state at an epoch's boundary (``batch_in_epoch`` 0) finished the epoch before it; None before
    the first update, or for a state that records no epoch (an export's)."""
    if not state.get("step") or "epoch" not in state:
        return None
    return state.get("epoch", 0) + (1 if state.get("batch_in_epoch") else 0)


def run_length(t: TrainConfig, updates_per_epoch: int) -> int | None:
    """The updates a run makes when ``max_steps`` or ``max_epochs`` (of ``updates_per_epoch``)
    says so, the smaller of the two; None when only the clock, tokens or patience end it."""
    bounds = [t.max_steps, t.max_epochs * updates_per_epoch if t.max_epochs else None]
    return min((b for b in bounds if b is not None), default=None)


def unreached_peak(t: TrainConfig, total: int | None) -> str:
    """A warning when a warmup of ``warmup_steps`` is longer than the ``total`` updates of the
    run, whatever the schedule (each warms up linearly to ``lr``): the rate it ends at and the
    peak it never reaches; '' otherwise."""
    if total is None or t.warmup_steps <= total:
        return ""
    return (
        f"train.warmup_steps {t.warmup_steps} is longer than the run ({total} updates): the "
        f"learning rate rises to {lr_at(total, t):.2e} at the last update and never reaches its "
        f"peak, train.lr {t.lr:g}; lower warmup_steps or train longer"
    )


def teacher_forcing_at(step: int, tf: TeacherForcingConfig) -> float:
    """ε for update ``step`` (from 1): the probability of feeding the gold previous token
    (scheduled sampling, Bengio et al. 2015, §2.4; the formulas are in ``TeacherForcingConfig``)."""
    if tf.schedule == "constant":
        return tf.start
    if tf.schedule == "linear":
        return max(tf.end, tf.start - (tf.start - tf.end) * step / tf.decay_steps)
    if tf.schedule == "exponential":
        return max(tf.end, tf.start * tf.k**step)
    # inverse sigmoid: k / (k + exp(i / k)); exp overflows past i/k ~ 709, where the ratio is 0.
    decay = tf.k / (tf.k + math.exp(min(step / tf.k, 700.0)))
    return tf.end + (tf.start - tf.end) * decay

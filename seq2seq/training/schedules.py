"""Schedules as pure functions of the update number: the learning rate and the teacher-forcing
ratio. Nothing here holds state; the plateau schedule's current scale lives in the training state
(and so in every checkpoint).
"""

from __future__ import annotations

import math

from seq2seq.config import TeacherForcingConfig, TrainConfig


def lr_at(step: int, t: TrainConfig, plateau_scale: float = 1.0) -> float:
    """Learning rate for update ``step`` (from 1).

    - constant: ``lr`` after a linear warmup of ``warmup_steps``.
    - plateau: the same, times ``plateau_scale`` (halved, by default, each time validation stalls
      for more than ``plateau_patience`` validations), never below ``min_lr``.
    - noam (Vaswani et al. 2017, eq. 3): d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), rescaled
      so its peak, at ``warmup_steps``, is ``lr``: lr · min(step / warmup, (warmup / step)^0.5).
    - cosine: warmup, then ``lr`` -> ``min_lr`` along half a cosine until ``decay_steps``
      (default ``max_steps``), then ``min_lr``.
    """
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

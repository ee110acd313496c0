"""``train.precision: auto``, settled once per run: bf16 autocast on CUDA; on the CPU, bf16 only
where it pays. CPU bf16 needs native bf16 arithmetic (``cpu_features.BF16_FLAGS``) and even then
may lose (0.86x fp32's speed on a Xeon with AMX, small Transformer), so a short probe trains a
copy of the run's model on its first batches in both precisions and picks bf16 only at
``BF16_MIN_GAIN`` times fp32's target tokens/s; a model too small, or a run too short, gets fp32
without a probe. The choice goes into the run's config and ``run_info.json``; a resume keeps it."""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from seq2seq.config import Config, TrainConfig
from seq2seq.cpu_features import BF16_FLAGS, cpu_flags, native_bf16
from seq2seq.data.batch import Batch
from seq2seq.runtime import resolve_precision, rng_states, set_rng_states
from seq2seq.training import distributed as dist
from seq2seq.training.step import TeacherForcing, build_optimizer, train_step

log = logging.getLogger("seq2seq")

PRECISIONS = ("fp32", "bf16", "fp16")
BF16_MIN_GAIN = 1.05  # bf16 must be this much faster: a smaller gain is noise, not worth rounding
MIN_PROBE_PARAMETERS = 1_000_000  # below: casts cost more than bf16 matmuls save; no probe
MIN_PROBE_STEPS = 100  # a run of fewer max_steps cannot repay the probe's ~10 steps
PROBE_BATCHES = 3  # the run's first batches of epoch 0, cycled
PROBE_SECONDS = 2.0  # timed seconds (both precisions) after which the probe stops
PROBE_MAX_ROUNDS = 6  # rounds of one timed step in each precision, at most


@dataclass(frozen=True)
class PrecisionChoice:
    """What ``auto`` became (``precision``), the log line saying why, and the probe's target
    tokens/s by precision when one ran."""

    precision: str
    line: str
    probe: dict[str, float] | None = None


def choose_cpu_precision(
    flags: frozenset[str],
    parameters: int,
    max_steps: int | None,
    probe: Callable[[], dict[str, float]],
) -> PrecisionChoice:
    """``auto`` on the CPU, as the module says; ``probe()`` -> target tokens/s for "fp32" and
    "bf16"."""
    if not native_bf16(flags):
        why = f"this CPU has no native bf16: no {' or '.join(BF16_FLAGS)} flag"
        return PrecisionChoice("fp32", f"precision auto: fp32 ({why}; no probe)")
    if parameters < MIN_PROBE_PARAMETERS:
        why = f"{parameters:,} parameters, too few for bf16 to pay"
        return PrecisionChoice("fp32", f"precision auto: fp32 ({why}; no probe)")
    if max_steps is not None and max_steps < MIN_PROBE_STEPS:
        why = f"max_steps {max_steps}, too few to repay a probe"
        return PrecisionChoice("fp32", f"precision auto: fp32 ({why})")
    speeds = probe()
    bf16, fp32 = speeds["bf16"], speeds["fp32"]
    choice = "bf16" if bf16 >= BF16_MIN_GAIN * fp32 else "fp32"
    short = (
        f", under the {BF16_MIN_GAIN:.2f}x bf16 needs" if choice == "fp32" and bf16 > fp32 else ""
    )
    speeds_said = f"{bf16:,.0f} tok/s bf16 against {fp32:,.0f} fp32{short}"
    line = f"precision auto: {choice} (probe: {speeds_said})"
    return PrecisionChoice(choice, line, {"bf16": round(bf16, 1), "fp32": round(fp32, 1)})


def probe_speeds(
    model: nn.Module,
    t: TrainConfig,
    batches: list[Batch],
    device: torch.device,
    seconds: float = PROBE_SECONDS,
    max_rounds: int = PROBE_MAX_ROUNDS,
) -> dict[str, float]:
    """Target tokens/s of the run's own update (``step.train_step``) in fp32 and in bf16
    autocast, on a copy of ``model``: a warm-up step in each, then rounds of one timed step in
    each (order alternating by round) over ``batches`` in turn, until ``seconds`` of timed steps
    or ``max_rounds`` rounds. ``model`` and every RNG are left as they were. 1.3-1.7 s for a 44k-
    or a 1.2M-parameter Transformer on one busy Zen 4 thread."""
    saved = rng_states()
    twin = copy.deepcopy(model).train()
    wrapper, optimizer = TeacherForcing(twin), build_optimizer(twin, t)
    scaler = torch.amp.GradScaler(device.type, enabled=False)
    cfgs = {p: t.model_copy(update={"precision": p, "update_freq": 1}) for p in ("fp32", "bf16")}
    alone = dist.DistInfo()

    def step(precision: str, batch: Batch) -> float:
        start = time.perf_counter()
        out = train_step(wrapper, optimizer, scaler, [batch], cfgs[precision], t.lr, device, alone)
        float(out["loss"])  # waits for the device
        return time.perf_counter() - start

    try:
        for precision in cfgs:
            step(precision, batches[0])
        spent, tokens = dict.fromkeys(cfgs, 0.0), dict.fromkeys(cfgs, 0)
        for r in range(max_rounds):
            batch = batches[r % len(batches)]
            for precision in list(cfgs)[:: 1 if r % 2 == 0 else -1]:
                spent[precision] += step(precision, batch)
                tokens[precision] += batch.n_tokens
            if sum(spent.values()) >= seconds:
                break
        return {p: tokens[p] / spent[p] for p in cfgs}
    finally:
        set_rng_states(saved)  # the copy and its optimizer go when this returns


def settle_precision(
    cfg: Config,
    device: torch.device,
    info: dist.DistInfo,
    resumed: Config | None,
    probe: Callable[[], dict[str, float]],
    parameters: int,
) -> tuple[Config, PrecisionChoice | None]:
    """``cfg`` with ``train.precision`` resolved, and the choice ``auto`` made (None when the
    config named one): a resumed run (``resumed``, its ``last.pt``'s config) keeps its own; else
    bf16 on CUDA, and on the CPU ``choose_cpu_precision``. All ranks take rank 0's choice (logged).
    """
    t = cfg.train
    if t.precision != "auto":
        return cfg, None
    kept = resumed.train.precision if resumed is not None else "auto"
    if kept != "auto" and (kept != "fp16" or device.type == "cuda"):
        choice = PrecisionChoice(kept, f"precision auto: {kept} (kept from the run's last.pt)")
    elif device.type != "cpu":
        precision = resolve_precision("auto", device)
        choice = PrecisionChoice(precision, f"precision auto: {precision} ({device.type})")
    else:
        choice = choose_cpu_precision(cpu_flags(), parameters, t.max_steps, probe)
    precision = dist.broadcast_choice(choice.precision, PRECISIONS, info, device)
    if precision != choice.precision:
        choice = PrecisionChoice(precision, f"precision auto: {precision} (rank 0's choice)")
    if info.is_main:
        log.info(choice.line)
    return cfg.model_copy(update={"train": t.model_copy(update={"precision": precision})}), choice

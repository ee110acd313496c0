"""A run's speed against its own start: on a CPU other work shares, torch's default of one thread
per core can train several times slower than fewer threads; ``SpeedWatch`` says so, once."""

from __future__ import annotations

import logging
import os
import statistics
from collections.abc import Callable

import torch

log = logging.getLogger("seq2seq")

FIRST_WINDOWS = 3  # the log windows a run's later speed is measured against
COLLAPSE = 0.5  # a window under this share of their median rate has collapsed


def cpu_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class SpeedWatch:
    """Target tokens/s per log window (between two ``window`` calls); when one falls under
    ``COLLAPSE`` of the run's first ``FIRST_WINDOWS`` while the load average exceeds the cores,
    and torch trains on more than one thread of the CPU, a one-line warning (once a run)."""

    def __init__(
        self, device: torch.device, load: Callable[[], float] = lambda: os.getloadavg()[0]
    ):
        self.on = device.type == "cpu"
        self.load = load
        self.first: list[float] = []
        self.last: tuple[int, float] | None = None

    def window(self, step: int, tokens: int, seconds: float) -> None:
        """At a log point: ``tokens`` and busy ``seconds`` so far this stretch."""
        if not self.on:
            return
        last, self.last = self.last, (tokens, seconds)
        if last is None or seconds <= last[1]:
            return
        rate = (tokens - last[0]) / (seconds - last[1])
        if len(self.first) < FIRST_WINDOWS:
            self.first.append(rate)
            return
        base, threads, cores = statistics.median(self.first), torch.get_num_threads(), cpu_cores()
        if rate < COLLAPSE * base and threads > 1 and (load := self.load()) > cores:
            self.on = False
            log.warning(
                f"step {step}: {rate:,.0f} target tokens/s, under {COLLAPSE:.0%} of this run's "
                f"first windows' {base:,.0f}, while the load average ({load:.1f}) exceeds the "
                f"{cores} CPU cores: other work competes for them, and train.num_threads=1 "
                f"(now {threads}; --set train.num_threads=1 on --resume) may train faster"
            )

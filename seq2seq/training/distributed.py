"""``torch.distributed`` plumbing for ``torchrun``; nothing here reaches model code.
``torchrun --nproc_per_node N -m seq2seq train CONFIG`` sets RANK / WORLD_SIZE / LOCAL_RANK /
MASTER_ADDR / MASTER_PORT (and TORCHELASTIC_RUN_ID); each rank then trains on its own shard of
every epoch's batches inside DistributedDataParallel (NCCL on GPUs, gloo on CPU), and only rank 0
logs, validates and writes files. Those variables without torchrun (left in a shell), or half
set, are refused (``launch_env``); the ranks wait ``SEQ2SEQ_RENDEZVOUS_TIMEOUT`` seconds (default
300) for each other to join, not torch's 30 minutes."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from seq2seq.training.state import TrainingError

TORCHRUN_VARS = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
RENDEZVOUS_ENV, RENDEZVOUS_SECONDS = "SEQ2SEQ_RENDEZVOUS_TIMEOUT", 300.0
COLLECTIVE_TIMEOUT = timedelta(minutes=30)  # once joined: rank 0 validates while the others wait


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world > 1


def launch_env() -> DistInfo:
    """This process's place among the run's, from torchrun's environment (known before the
    process group is joined): alone when none of ``TORCHRUN_VARS`` is set.

    Raises:
        TrainingError: one of them is set without a torchrun parent (no TORCHELASTIC_RUN_ID: left
            in the shell), or under torchrun one is missing or they do not fit together (one
            line naming the variables and their values).
    """
    env = os.environ
    given = [v for v in TORCHRUN_VARS if v in env]
    if not given:
        return DistInfo()
    said = ", ".join(f"{v}={env[v]}" for v in given)
    fix = f"unset {' '.join(given)} in this shell, or launch with torchrun --nproc_per_node N -m "
    fix += "seq2seq train CONFIG"
    if "TORCHELASTIC_RUN_ID" not in env:
        raise TrainingError(f"{said} set, but this process was not started by torchrun: {fix}")
    try:
        rank, world, local, _ = (
            int(env[v]) for v in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT")
        )
        fits = 0 <= rank < world and 0 <= local <= rank and bool(env["MASTER_ADDR"])
    except (KeyError, ValueError):
        fits = False
    if not fits:
        raise TrainingError(
            f"torchrun's variables are half set or do not fit together ({said}): {fix}"
        )
    return DistInfo(rank, world, local)


def launched_as_main() -> bool:
    """Whether this process is rank 0 (or alone). Raises TrainingError as ``launch_env``."""
    return launch_env().is_main


def rendezvous_seconds() -> float:
    """How long the ranks wait for each other to join: ``SEQ2SEQ_RENDEZVOUS_TIMEOUT`` seconds,
    default ``RENDEZVOUS_SECONDS``. Raises TrainingError for a value that is not a number > 0."""
    value = os.environ.get(RENDEZVOUS_ENV, str(RENDEZVOUS_SECONDS))
    with contextlib.suppress(ValueError):
        if (seconds := float(value)) > 0:
            return seconds
    raise TrainingError(f"{RENDEZVOUS_ENV}={value}: give a number of seconds above 0, e.g. 300")


def init_distributed(device_type: str) -> DistInfo:
    """Join the process group when launched by torchrun with more than one process, waiting
    ``rendezvous_seconds`` for every rank; once joined, collectives wait ``COLLECTIVE_TIMEOUT``.

    Raises:
        TrainingError: as ``launch_env``; or the ranks did not all join in time (names the
            endpoint, the wait and what to do).
    """
    info = launch_env()
    if not info.enabled:
        return DistInfo()
    if not dist.is_initialized():
        seconds = rendezvous_seconds()
        # binding the GPU lets NCCL connect eagerly
        gpu = {"device_id": torch.device("cuda", info.local_rank)} if device_type == "cuda" else {}
        try:
            wait = timedelta(seconds=seconds)
            dist.init_process_group("nccl" if gpu else "gloo", timeout=wait, **gpu)
        except (RuntimeError, ValueError) as e:  # torch's DistStoreError is a RuntimeError
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
            where = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
            raise TrainingError(
                f"torchrun: rank {info.rank} of {info.world} could not join the others at {where} "
                f"within {seconds:g} s ({first}); start every node's torchrun with the same "
                f"--nnodes and rendezvous endpoint, or wait longer with {RENDEZVOUS_ENV}=SECONDS"
            ) from None
        dist.distributed_c10d._set_pg_timeout(COLLECTIVE_TIMEOUT)  # torch >= 2.4
    return DistInfo(dist.get_rank(), dist.get_world_size(), info.local_rank)


def wrap(module: nn.Module, info: DistInfo, device: torch.device) -> nn.Module:
    """``module`` inside DistributedDataParallel under torchrun (which broadcasts rank 0's
    weights here), else ``module`` itself. Gradients are views into DDP's buckets, which saves
    a copy and the memory of a second set of gradients."""
    if not info.enabled:
        return module
    ids = [info.local_rank] if device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(module, device_ids=ids, gradient_as_bucket_view=True)


def all_reduce_sum(value: torch.Tensor, info: DistInfo) -> torch.Tensor:
    """The sum of ``value`` (a tensor on this rank's device) over ranks, left on the device:
    nothing waits for it on the host."""
    if info.enabled:
        value = value.clone()
        dist.all_reduce(value)
    return value


def broadcast_choice(value: str, choices: Sequence[str], info: DistInfo, device) -> str:
    """Rank 0's ``value``, one of ``choices`` (e.g. a reason to stop training), on every rank."""
    if not info.enabled:
        return value
    t = torch.tensor([choices.index(value)], dtype=torch.long, device=device)
    dist.broadcast(t, 0)
    return choices[int(t.item())]


def broadcast_fields(obj: Any, names: Sequence[str], info: DistInfo) -> None:
    """Set the attributes ``names`` of ``obj`` to rank 0's values on every rank (e.g. the
    training state that only rank 0's validation updates)."""
    if not info.enabled:
        return
    box = [{n: getattr(obj, n) for n in names}]
    dist.broadcast_object_list(box, 0)
    for name, value in box[0].items():
        setattr(obj, name, value)


def gather_objects(obj: Any, info: DistInfo) -> list[Any]:
    """Every rank's ``obj``, in rank order, on every rank."""
    if not info.enabled:
        return [obj]
    out: list[Any] = [None] * info.world
    dist.all_gather_object(out, obj)
    return out


def barrier(info: DistInfo) -> None:
    if info.enabled:
        dist.barrier()


def shutdown(info: DistInfo) -> None:
    """Leave the process group once every rank is done with it: a rank that tears gloo down while
    another still talks to it can abort ("terminate called without an active exception")."""
    if info.enabled and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()

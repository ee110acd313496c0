"""``torch.distributed`` plumbing for ``torchrun``; nothing here reaches model code.
``torchrun --nproc_per_node N -m seq2seq train CONFIG`` sets RANK / WORLD_SIZE / LOCAL_RANK; each
rank then trains on its own shard of every epoch's batches inside DistributedDataParallel (NCCL on
GPUs, gloo on CPU), and only rank 0 logs, validates and writes files."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn


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


def launched_as_main() -> bool:
    """Whether this process is rank 0 (or alone), from torchrun's environment: known before
    the process group is joined."""
    return os.environ.get("RANK", "0") == "0"


def init_distributed(device_type: str) -> DistInfo:
    """Join the process group when launched by torchrun with more than one process."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        if device_type == "cuda":  # binding the GPU lets NCCL connect eagerly
            dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
        else:
            dist.init_process_group("gloo")
    return DistInfo(dist.get_rank(), dist.get_world_size(), local_rank)


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

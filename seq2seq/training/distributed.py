"""``torch.distributed`` plumbing for ``torchrun``; nothing here reaches model code.

``torchrun --nproc_per_node N -m seq2seq train CONFIG`` sets RANK / WORLD_SIZE / LOCAL_RANK; each
rank then trains on its own shard of every epoch's batches inside DistributedDataParallel (NCCL on
GPUs, gloo on CPU), and only rank 0 logs, validates and writes files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


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


def init_distributed(device_type: str) -> DistInfo:
    """Join the process group when launched by torchrun with more than one process."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device_type == "cuda" else "gloo")
    return DistInfo(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")))


def all_reduce_sum(value: float, info: DistInfo, device: torch.device) -> float:
    if not info.enabled:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return float(t.item())


def broadcast_int(value: int, info: DistInfo, device: torch.device) -> int:
    """Rank 0's ``value`` (e.g. a reason to stop training) on every rank."""
    if not info.enabled:
        return value
    t = torch.tensor([value], dtype=torch.long, device=device)
    dist.broadcast(t, 0)
    return int(t.item())


def broadcast_object(obj: Any, info: DistInfo) -> Any:
    """Rank 0's ``obj`` (picklable) on every rank, e.g. the training state after validation."""
    if not info.enabled:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, 0)
    return box[0]


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
    if info.enabled and dist.is_initialized():
        dist.destroy_process_group()

"""Batches built ahead: a background thread pads the next updates' batches into pinned host
memory while the GPU works on the current one, so the device never waits for the host's numpy.

On the CPU the same thread would compete with torch's own threads for the cores, so the loop
builds batches inline there. Either way the batches and their order are the same: building a
batch draws no random number, so the run (and ``--resume``) stays exact.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

import torch

Group = TypeVar("Group")
Built = TypeVar("Built")

_DONE = object()


class Ahead(Generic[Group, Built]):
    """``build(group)`` for each of ``groups`` in order, up to ``depth`` ahead of the consumer on a
    background thread (``ahead``), else inline. Use as a context manager: leaving it stops the
    thread, whether or not every group was consumed.
    """

    def __init__(
        self, build: Callable[[Group], Built], groups: Sequence[Group], ahead: bool, depth: int = 2
    ):
        self.build, self.groups, self.ahead = build, groups, ahead
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Ahead[Group, Built]:
        if self.ahead:
            self._thread = threading.Thread(target=self._produce, name="batches", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            while self._thread.is_alive():  # free a producer blocked on a full queue
                try:
                    self._queue.get(timeout=0.05)
                except queue.Empty:
                    pass
            self._thread.join()

    def __iter__(self) -> Iterator[Built]:
        if not self.ahead:
            yield from map(self.build, self.groups)
            return
        while True:
            item = self._queue.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def _produce(self) -> None:
        try:
            for group in self.groups:
                if self._stop.is_set():
                    return
                self._put(self.build(group))
        except BaseException as e:  # handed to the consumer, raised there
            self._put(e)
            return
        self._put(_DONE)

    def _put(self, item) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return
            except queue.Full:
                continue


def builds_ahead(device: torch.device) -> bool:
    """Whether a background thread builds batches ahead: on CUDA, where the host is otherwise idle
    while the GPU works; not on the CPU, where it would take cores from torch."""
    return device.type == "cuda"

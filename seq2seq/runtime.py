"""Where and how computation runs, shared by training and inference: the device, autocast, seeding,
the RNG states a checkpoint carries, and what SIGTERM and SIGHUP do."""

from __future__ import annotations

import contextlib
import os
import platform
import random
import signal
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch

from seq2seq.config import ConfigError

TRAIN_DEVICE = "train.device (from the config, --set or --device)"

# SIGHUP does not exist on Windows
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def handling_signals(handler: Callable, signals: tuple[signal.Signals, ...]) -> Iterator[None]:
    """``handler`` for each of ``signals`` within the block, the previous handlers back on exit.
    An ignored signal stays ignored (``nohup``); outside the main thread, where handlers cannot be
    set, signals keep their usual effect."""
    previous = {}
    for sig in signals:
        with contextlib.suppress(ValueError):  # not the main thread
            if signal.getsignal(sig) is not signal.SIG_IGN:
                previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, handler_before in previous.items():
            signal.signal(sig, handler_before)


@contextlib.contextmanager
def ended_like_ctrl_c() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise KeyboardInterrupt, as Ctrl-C does, so the
    block's cleanup runs (``cli.main`` runs every command within it: ``export`` removes its
    temporary folder, ``translate`` keeps its finished lines; training's ``interruptible`` inside
    it handles them its own way)."""

    def handler(signum, frame):
        raise KeyboardInterrupt

    with handling_signals(handler, tuple(s for s in STOP_SIGNALS if s != signal.SIGINT)):
        yield


def pick_device(name: str, precision: str, said: str = TRAIN_DEVICE) -> torch.device:
    """``auto`` -> cuda when torch sees one, else cpu. Raises ConfigError for an unknown name, cuda
    asked for but absent, or fp16 without CUDA, naming where ``name`` came from (``said``:
    ``--device``, a checkpoint's ``train.device``, or by default a training run's)."""
    if name not in ("auto", "cpu", "cuda"):
        raise ConfigError(f"{said} {name!r}: choose auto, cpu or cuda")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"{said} is cuda, but torch sees no CUDA device on this machine; "
            "give --device cpu (or auto)"
        )
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if precision == "fp16" and name != "cuda":
        raise ConfigError("train.precision fp16 needs CUDA (no GPU here); use bf16 or fp32")
    return torch.device(name)


def describe_machine() -> str:
    """The hardware, in words, for reports: the GPU, else the CPU, its cores and torch threads."""
    if torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)} (CUDA), torch {torch.__version__}"
    return (
        f"{platform.machine()} CPU, {os.cpu_count()} cores (torch threads: "
        f"{torch.get_num_threads()}), torch {torch.__version__}"
    )


def resolve_precision(precision: str, device: torch.device) -> str:
    """``auto`` without a probe -> bf16 on CUDA, fp32 on the CPU (bf16 autocast is often slower
    there: 0.86x on a Xeon with AMX, 7-25x slower on a Zen 3; a training run's probe may still
    choose it, ``training.precision``); other names are kept."""
    if precision != "auto":
        return precision
    return "bf16" if device.type == "cuda" else "fp32"


def resolve_pad_multiple(pad_multiple: int | str, device: torch.device) -> int:
    """``auto`` -> 8 on CUDA (few distinct shapes, tensor-core friendly), 1 on the CPU (where a
    padded position costs as much as a real one)."""
    if pad_multiple != "auto":
        return int(pad_multiple)
    return 8 if device.type == "cuda" else 1


def configure_device(device: torch.device, cudnn_sdp: bool = False) -> None:
    """CUDA settings for speed: TF32 for fp32 matmuls, and cuDNN attention on or off
    (``train.cudnn_sdp``: its plans are built per shape, which length-bucketed batches change
    every step). Nothing changes on the CPU."""
    if device.type != "cuda":
        return
    torch.set_float32_matmul_precision("high")
    torch.backends.cuda.enable_cudnn_sdp(cudnn_sdp)


def inference_device(name: str, said: str = "--device") -> torch.device:
    """``auto | cpu | cuda`` for decoding, configured (``configure_device``, no cuDNN attention);
    raises ConfigError as ``pick_device`` does."""
    device = pick_device(name, "fp32", said)
    configure_device(device)
    return device


def autocast(device: torch.device, precision: str):
    """bf16 autocast on CUDA or CPU, fp16 on CUDA (with a GradScaler), nothing for fp32; ``auto``
    as ``resolve_precision`` says."""
    precision = resolve_precision(precision, device)
    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device.type, dtype=dtype)


def seed_everything(seed: int) -> None:
    """Seed python's, numpy's and torch's (CPU and CUDA) generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def rng_states() -> dict[str, Any]:
    """Every RNG state a run draws from, in a form ``torch.load(weights_only=True)`` reads."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": [kind, torch.from_numpy(keys.copy()), pos, has_gauss, gauss],
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_states(s: dict[str, Any]) -> None:
    """Restore what ``rng_states`` captured (CUDA states only where CUDA is present)."""
    version, internal, gauss = s["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, gauss = s["numpy"]
    np.random.set_state((kind, keys.numpy(), pos, has_gauss, gauss))
    torch.set_rng_state(s["torch"])
    if s["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(s["cuda"])

"""What the CPU offers for low precision: its model name and its bf16, VNNI and AMX flags, for
``train.precision: auto`` (``training.precision``) and beside every benchmark figure."""

from __future__ import annotations

import functools
import os
import platform
from pathlib import Path

import torch

# Native bf16 arithmetic: AVX-512 BF16 (Intel Cooper Lake+, AMD Zen 4+) or AMX-BF16 (Intel
# Sapphire Rapids+). Without one, bf16 autocast emulates the format and runs slower than fp32.
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
# int8 dot products, which dynamic int8 inference (``--quantize int8``) runs on.
VNNI_FLAGS = ("avx512_vnni", "avx_vnni")
AMX_FLAGS = ("amx_tile", "amx_bf16", "amx_int8")
REPORTED_FLAGS = tuple(dict.fromkeys((*BF16_FLAGS, *VNNI_FLAGS, *AMX_FLAGS)))


def _proc_cpuinfo() -> dict[str, str]:
    """The first processor's ``key: value`` lines of /proc/cpuinfo; {} where there is none."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out.setdefault(key.strip(), value.strip())
    return out


def _torch_capabilities() -> dict:
    """``torch.cpu.get_capabilities()`` (torch 2.6+), else {}."""
    query = getattr(torch.cpu, "get_capabilities", None)
    try:
        return dict(query()) if query else {}
    except Exception:  # a torch whose query fails must not stop a run
        return {}


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags, lowercase (``avx512_bf16``, ``amx_bf16`` ...), from /proc/cpuinfo's
    ``flags`` (what the kernel enables) and torch's query (``torch.cpu.get_capabilities``, cpuinfo's
    view, also off Linux): a flag either names counts."""
    flags = set(_proc_cpuinfo().get("flags", "").lower().split())
    flags |= {k.lower() for k, v in _torch_capabilities().items() if v is True}
    return frozenset(flags)


@functools.cache
def cpu_model() -> str:
    """The CPU's model name, e.g. ``AMD EPYC 9R14 96-Core Processor``; the architecture when
    nothing names it."""
    name = _proc_cpuinfo().get("model name") or _torch_capabilities().get("cpu_name")
    return str(name or platform.processor() or platform.machine() or "unknown CPU")


def native_bf16(flags: frozenset[str] | None = None) -> bool:
    """Whether ``flags`` (default: this CPU's) include native bf16 arithmetic (``BF16_FLAGS``)."""
    flags = cpu_flags() if flags is None else flags
    return any(f in flags for f in BF16_FLAGS)


def cpu_report() -> dict:
    """The CPU for a benchmark's JSON: model name, cores, and each reported flag true or false."""
    flags = cpu_flags()
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "native_bf16": native_bf16(flags),
        "flags": {f: f in flags for f in REPORTED_FLAGS},
    }


def cpu_line() -> str:
    """The CPU in one line, printed beside benchmark figures, e.g.
    ``CPU: AMD EPYC (2 cores); bf16: avx512_bf16; VNNI: avx512_vnni; AMX: none``."""
    flags = cpu_flags()

    def have(names: tuple[str, ...]) -> str:
        return ", ".join(f for f in names if f in flags) or "none"

    return (
        f"CPU: {cpu_model()} ({os.cpu_count()} cores); bf16: {have(BF16_FLAGS)}; "
        f"VNNI: {have(VNNI_FLAGS)}; AMX: {have(AMX_FLAGS)}"
    )

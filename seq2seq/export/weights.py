"""``seq2seq export RUN -o DIR``: the weights and tokenizer of a run's checkpoint, nothing else,
as ``DIR/model.pt`` (``export_payload``). fp16 or bf16 weights are widened back to fp32 when
loaded, so decoding computes in fp32 with rounded weights (docs/overview.md)."""

from __future__ import annotations

from pathlib import Path

import torch

from seq2seq.checkpoint import EXPORT_FILE, save_checkpoint
from seq2seq.export import ExportError
from seq2seq.export.folder import Exported, read_source, size, write_export

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def check_dtype(dtype: str) -> torch.dtype:
    """Raises ExportError for a dtype other than fp32, fp16, bf16."""
    if dtype not in DTYPES:
        raise ExportError(f"--dtype {dtype}: choose fp32, fp16 or bf16")
    return DTYPES[dtype]


def cast_weights(weights: dict[str, torch.Tensor], dtype: str) -> dict[str, torch.Tensor]:
    """The floating-point tensors of a state dict in ``dtype`` (others as they are); tensors that
    share storage (tied embeddings) are cast once and stay shared. Raises ExportError for a
    weight with values beyond ``dtype``'s range (fp16's 65504), which would become inf."""
    target = check_dtype(dtype)
    done: dict[tuple[int, int, tuple[int, ...], tuple[int, ...]], torch.Tensor] = {}
    out = {}
    for name, t in weights.items():
        if not t.is_floating_point() or t.dtype == target:
            out[name] = t
            continue
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t.stride())
        if key not in done:
            cast = t.to(target)
            if not torch.isfinite(cast).all() and torch.isfinite(t).all():
                limit = torch.finfo(target).max
                raise ExportError(
                    f"--dtype {dtype}: weight {name} has values beyond {dtype}'s range "
                    f"(+-{limit:g}); export with --dtype bf16 or fp32"
                )
            done[key] = cast
        out[name] = done[key]
    return out


def export_payload(ckpt: dict, source: Path, dtype: str) -> dict:
    """The checkpoint dict of an export: a checkpoint like any other (config, weights in ``dtype``,
    tokenizer protos, the target vocabulary when ``ckpt`` has one) without what only a resume
    needs (optimizer, gradient scaler, RNG states, training position); ``exported_from`` records
    the checkpoint read, its step and the weights' dtype."""
    state = ckpt.get("train_state") or {}
    return {
        "config": ckpt["config"],
        "model": cast_weights(ckpt["model"], dtype),
        "tokenizer": ckpt["tokenizer"],
        **({"target_vocab": ckpt["target_vocab"]} if "target_vocab" in ckpt else {}),
        "exported_from": {
            "checkpoint": str(source),
            "step": state.get("step", (ckpt.get("exported_from") or {}).get("step")),
            "dtype": dtype,
            **({"averaged_from": ckpt["averaged_from"]} if "averaged_from" in ckpt else {}),
        },
    }


def export_checkpoint(
    run: str | Path, out: str | Path, dtype: str = "fp32", overwrite: bool = False
) -> Exported:
    """Write ``out/model.pt`` (and the run's decode.yaml) from ``run``, atomically; raises as
    ``read_source``, ``check_dtype`` and ``cast_weights``."""
    check_dtype(dtype)
    source, ckpt, _ = read_source(run, Path(out), overwrite)
    payload = export_payload(ckpt, source, dtype)
    del ckpt
    tokenizer = sum(len(b) for b in payload["tokenizer"].values() if b is not None)
    what = (
        f"{EXPORT_FILE}: {dtype} weights {size(weight_bytes(payload['model']))}, "
        f"tokenizer {size(tokenizer)}"
    )

    def fill(folder: Path) -> None:
        save_checkpoint(folder / EXPORT_FILE, payload)

    return write_export(source, Path(out), fill, lambda files: what)


def weight_bytes(weights: dict[str, torch.Tensor]) -> int:
    """Bytes of the tensors of a state dict, a storage shared by several names counted once."""
    seen: dict[int, int] = {}
    for t in weights.values():
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())

"""Self-describing, atomic checkpoints.

A checkpoint is one ``torch.save`` dict: format tag, resolved config, model weights, tokenizer
protos, and (for resuming) optimizer, scheduler, scaler, RNG states and the training position. It is
written to a temporary file in the same folder, flushed and fsync'ed, then renamed over the target,
so a crash leaves either the old file or the new one, never half of one.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import Any

import torch

from .config import Config, ConfigError, validate_config
from .models import Seq2SeqModel, build_model
from .tokenizer import Tokenizer

FORMAT = "seq2seq-checkpoint"
VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt or from an incompatible version (one line)."""


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, rename, fsync the folder)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> None:
    """Atomically save ``payload`` (adds the format tag and version).

    Raises:
        ValueError: a floating-point tensor of the model holds NaN or inf (never written).
    """
    for name, t in payload.get("model", {}).items():
        if t.is_floating_point() and not torch.isfinite(t).all():
            raise ValueError(f"refusing to write {path}: model weight {name} is not finite")
    buf = io.BytesIO()
    torch.save({"format": FORMAT, "version": VERSION, **payload}, buf)
    atomic_write_bytes(path, buf.getvalue())


def resolve_checkpoint(path: str | Path) -> Path:
    """A run directory means its ``best.pt`` (else ``last.pt``); a file means itself.

    Raises:
        CheckpointError: nothing usable at ``path``.
    """
    p = Path(path)
    if p.is_dir():
        for name in ("best.pt", "last.pt"):
            if (p / name).is_file():
                return p / name
        raise CheckpointError(f"{p}: run directory holds no best.pt or last.pt; train first")
    if not p.is_file():
        raise CheckpointError(f"{p}: no such checkpoint or run directory")
    return p


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load and check a checkpoint.

    Raises:
        CheckpointError: missing, truncated/corrupt, not ours, or from a newer format version.
    """
    p = resolve_checkpoint(path)
    try:
        ckpt = torch.load(p, map_location=map_location, weights_only=True)
    except Exception as e:  # torch raises many types for a damaged file
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
        raise CheckpointError(f"{p}: cannot read checkpoint (corrupt or truncated?): {first}") from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        raise CheckpointError(f"{p}: not a seq2seq checkpoint")
    if ckpt.get("version", 0) > VERSION:
        raise CheckpointError(
            f"{p}: checkpoint format version {ckpt['version']} is newer than this seq2seq "
            f"({VERSION}); upgrade seq2seq"
        )
    return ckpt


def config_of(ckpt: dict[str, Any], source: str = "checkpoint") -> Config:
    try:
        return validate_config(ckpt["config"], source)
    except ConfigError as e:
        raise CheckpointError(f"incompatible checkpoint config: {e}") from None


def model_from_checkpoint(ckpt: dict[str, Any], source: str = "checkpoint") -> tuple[
    Seq2SeqModel, Tokenizer, Config
]:
    """Rebuild model (in eval mode, on CPU) and tokenizer from a loaded checkpoint.

    Raises:
        CheckpointError: the weights do not fit the architecture in the checkpoint's config.
    """
    cfg = config_of(ckpt, source)
    tok = Tokenizer.from_state_dict(ckpt["tokenizer"])
    model = build_model(cfg.model, tok.src_vocab_size, tok.tgt_vocab_size, tok.joint)
    try:
        model.load_state_dict(ckpt["model"])
    except RuntimeError as e:
        first = str(e).strip().splitlines()[0]
        raise CheckpointError(f"{source}: weights do not match the model config ({first})") from None
    return model.eval(), tok, cfg


def load_for_inference(
    path: str | Path, device: str | torch.device = "cpu"
) -> tuple[Seq2SeqModel, Tokenizer, Config]:
    """Checkpoint file or run directory -> (model on ``device`` in eval mode, tokenizer, config)."""
    p = resolve_checkpoint(path)
    model, tok, cfg = model_from_checkpoint(load_checkpoint(p), str(p))
    return model.to(device), tok, cfg

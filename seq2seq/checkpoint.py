"""Self-describing checkpoints, written atomically (``atomic.py``): one ``torch.save`` dict of
format tag, resolved config, model weights, tokenizer protos, the target vocabulary (sorted ids of
the pieces seen in the training targets, and EOS; older checkpoints have none and decode
unmasked) and, for resuming, optimizer, scaler, RNG states and the training position."""

from __future__ import annotations

import hashlib
import io
import os
import re
import warnings
from pathlib import Path
from typing import Any

import torch
import yaml
from pydantic import ValidationError

from seq2seq.atomic import atomic_write_bytes
from seq2seq.config import Config, ConfigError, _one_line, load_yaml, validate_config
from seq2seq.data.batch import target_vocab_mask
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.models import Seq2SeqModel, build_model

FORMAT = "seq2seq-checkpoint"
VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt or from an incompatible version (one line)."""


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> None:
    """Atomically save ``payload`` (adds the format tag and version); raises CheckpointError for a
    model weight that holds NaN or inf (never written: the file at ``path`` stays as it was)."""
    for name, t in payload.get("model", {}).items():
        if t.is_floating_point() and not torch.isfinite(t).all():
            raise CheckpointError(f"refusing to write {path}: model weight {name} is not finite")
    buf = io.BytesIO()
    torch.save({"format": FORMAT, "version": VERSION, **payload}, buf)
    atomic_write_bytes(path, buf.getvalue())


def link_checkpoint(src: Path, dst: Path) -> None:
    """Make ``dst`` another name for ``src``'s current content, atomically (hard link, or a copy
    where the file system has none). ``src`` is later replaced, never rewritten, so they stay
    independent."""
    tmp = dst.with_name(f".{dst.name}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)
    except OSError:
        atomic_write_bytes(tmp, Path(src).read_bytes())  # no hard links here: a synced copy
    os.replace(tmp, dst)


# An export folder's checkpoint (``export/weights.py``), and the file that says a folder is a
# CTranslate2 export (``export/ctranslate2.py``).
EXPORT_FILE = "model.pt"
CTRANSLATE2_META = "seq2seq_export.json"
CTRANSLATE2_FORMAT, CTRANSLATE2_VERSION = "seq2seq-ctranslate2", 1  # that file's format and version


def resolve_checkpoint(path: str | Path) -> Path:
    """A run directory means its ``best.pt`` (else ``last.pt``), an export folder its
    ``model.pt``, a file itself; raises CheckpointError for nothing usable at ``path`` (of a
    CTranslate2 export it says that only ``translate`` reads it; a config or JSON file is named)."""
    p = Path(path)
    if p.is_dir():
        for name in ("best.pt", "last.pt", EXPORT_FILE):
            if (p / name).is_file():
                return p / name
        if (p / CTRANSLATE2_META).is_file():
            raise CheckpointError(
                f"{p}: a CTranslate2 export (seq2seq export --format ctranslate2), which only "
                f"`seq2seq translate -c {p}` reads; score its output with `seq2seq eval --hyp`, "
                "or export the run without --format for eval and serve"
            )
        raise CheckpointError(
            f"{p}: run directory holds no best.pt or last.pt (nor an export's {EXPORT_FILE}); "
            "train first"
        )
    if not p.is_file():
        raise CheckpointError(f"{p}: no such checkpoint or run directory")
    if p.suffix in (".yaml", ".yml", ".json"):
        raise CheckpointError(
            f"{p}: a {p.suffix[1:].upper()} file, not a checkpoint; give the run folder it "
            "belongs to, or its best.pt"
        )
    return p


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load and check a checkpoint (``torch.load(weights_only=True)``: tensors and plain Python
    values only, no code run).

    Raises:
        CheckpointError: missing, truncated or corrupt, not ours, from a newer format version, or
            holding an object the safe loader refuses (its type named, with how to re-save the
            file with tensors only).
    """
    p = resolve_checkpoint(path)
    try:
        with warnings.catch_warnings():  # a damaged file makes torch warn before it raises
            warnings.simplefilter("ignore")
            ckpt = torch.load(p, map_location=map_location, weights_only=True)
    except Exception as e:  # torch raises many types, with long messages, for a damaged file
        raise _unreadable(p, e) from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        raise CheckpointError(f"{p}: not a seq2seq checkpoint")
    if ckpt.get("version", 0) > VERSION:
        raise CheckpointError(
            f"{p}: checkpoint format version {ckpt['version']} is newer than this seq2seq "
            f"({VERSION}); upgrade seq2seq"
        )
    return ckpt


def _unreadable(p: Path, e: Exception) -> CheckpointError:
    """Why ``torch.load`` refused ``p``: an object the safe loader refuses (the file is not
    damaged: re-save it), else damage (naming the run's other checkpoint when there is one)."""
    if found := re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(e)):
        return CheckpointError(
            f"{p}: holds a Python object that safe loading (torch.load weights_only=True) refuses, "
            f"{found.group(1)}; the file is not corrupt: re-save it with tensors only (the "
            "one-liner in docs/training.md, Checkpoints with other objects), then run the "
            "command again"
        )
    fix = "pass a checkpoint that was written whole, or train again"
    for other in (p.with_name(n) for n in ("best.pt", "last.pt") if n != p.name):
        if other.is_file():
            fix = f"pass {other} instead (another checkpoint of the run), or retrain"
            break
    return CheckpointError(
        f"{p}: cannot read this checkpoint ({type(e).__name__}): not a PyTorch file, or "
        f"corrupt or truncated; {fix}"
    )


def config_of(ckpt: dict[str, Any], source: str = "checkpoint") -> Config:
    try:
        return validate_config(ckpt["config"], source)
    except ConfigError as e:
        raise CheckpointError(f"incompatible checkpoint config: {e}") from None


def model_from_checkpoint(
    ckpt: dict[str, Any], source: str = "checkpoint"
) -> tuple[Seq2SeqModel, Tokenizer, Config]:
    """Rebuild model (in eval mode, on CPU) and tokenizer from a loaded checkpoint; the model
    carries the target vocabulary as the plain attribute ``model.target_vocab`` ((V,) bool on the
    CPU, or None; ``to()`` leaves it, the searches move it). Raises CheckpointError for weights
    that do not fit the architecture in the checkpoint's config."""
    cfg = config_of(ckpt, source)
    tok = Tokenizer.from_state_dict(ckpt["tokenizer"])
    model = build_model(cfg.model, tok.src_vocab_size, tok.tgt_vocab_size, tok.joint)
    try:
        model.load_state_dict(ckpt["model"])
    except RuntimeError as e:
        first = str(e).strip().splitlines()[0]
        msg = f"{source}: weights do not match the model config ({first})"
        raise CheckpointError(msg) from None
    model.target_vocab = unpack_target_vocab(ckpt, tok.tgt_vocab_size, source)
    return model.eval(), tok, cfg


def pack_target_vocab(mask: torch.Tensor | None) -> dict[str, list[int]]:
    """A (V,) bool target vocabulary (``data.prepare.TrainData.target_vocab``) as a checkpoint's
    entry: ``{"target_vocab": its True ids, sorted}``, or {} for None."""
    return {} if mask is None else {"target_vocab": mask.nonzero().squeeze(1).tolist()}


def unpack_target_vocab(ckpt: dict[str, Any], vocab_size: int, source: str) -> torch.Tensor | None:
    """A checkpoint's target vocabulary as the (V,) bool mask the searches read from
    ``model.target_vocab``; None without one (the searches then allow every piece). Raises
    CheckpointError for an id outside the tokenizer's target vocabulary."""
    if (ids := ckpt.get("target_vocab")) is None:
        return None
    try:
        return target_vocab_mask([torch.as_tensor(ids, dtype=torch.long).numpy()], vocab_size)
    except ValueError as e:
        raise CheckpointError(
            f"{source}: its target_vocab does not fit its tokenizer ({e})"
        ) from None


DECODE_FILE = "decode.yaml"  # a run's tuned search (seq2seq tune-decode), beside its checkpoints


def with_tuned_decode(cfg: Config, run_dir: Path) -> Config:
    """``cfg`` with the decode settings of ``run_dir/decode.yaml`` (written by ``seq2seq
    tune-decode``) on top of its own, when that file exists; raises CheckpointError for a file
    that is not valid YAML or holds invalid decode settings."""
    path = run_dir / DECODE_FILE
    if not path.is_file():
        return cfg
    try:
        tuned = load_yaml(path.read_text(encoding="utf-8")) or {}  # a key twice: refused
        if not isinstance(tuned, dict):
            raise ValueError("expected decode keys, e.g. method: beam")
        decode = cfg.decode.with_method(tuned.pop("method", cfg.decode.method), **tuned)
    except (yaml.YAMLError, ValueError) as e:  # a pydantic ValidationError is a ValueError
        said = f"{path}: not valid decode settings ({str(e).strip().splitlines()[0]})"
        if isinstance(e, ValidationError):
            said = _one_line(e, str(path))
        raise CheckpointError(f"{said}; delete it and rerun seq2seq tune-decode") from None
    return cfg.model_copy(update={"decode": decode})


def weights_digest(state_dict: dict[str, torch.Tensor]) -> str:
    """sha256 over every tensor's name, dtype, shape and bytes: equal digests, equal weights."""
    h = hashlib.sha256()
    for name, t in state_dict.items():
        t = t.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()

"""An export's output folder: checked before anything is read or converted, written whole into a
temporary folder beside it, then swapped into place, so ``DIR`` is never half written."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seq2seq.atomic import _UMASK, fsync_folder
from seq2seq.checkpoint import (
    CTRANSLATE2_META,
    DECODE_FILE,
    EXPORT_FILE,
    load_checkpoint,
    model_from_checkpoint,
    resolve_checkpoint,
)
from seq2seq.export import ExportError

MB = 1e6  # sizes are printed in MB of 10^6 bytes, as ls -h --si and most registries show them


@dataclass
class Exported:
    """What an export read and wrote: the checkpoint file and its size, the folder and each
    file's size in bytes."""

    source: Path
    source_bytes: int
    out: Path
    files: dict[str, int] = field(default_factory=dict)
    what: str = ""  # what the files hold, e.g. "model.pt: fp16 weights 104 kB, tokenizer 245 kB"

    @property
    def out_bytes(self) -> int:
        return sum(self.files.values())


def read_source(run: str | Path, out: Path, overwrite: bool) -> tuple[Path, dict, Any]:
    """The checkpoint ``run`` names, once ``out`` is known to be writable: its path, its dict
    and its (model, tokenizer, config). Raises CheckpointError for nothing readable at ``run``
    (or weights that misfit its config), ExportError as ``check_output``."""
    source = resolve_checkpoint(run)
    check_output(out, source, overwrite)
    ckpt = load_checkpoint(source)
    return source, ckpt, model_from_checkpoint(ckpt, str(source))


def write_export(
    source: Path, out: Path, fill: Callable[[Path], None], what: Callable[[dict], str]
) -> Exported:
    """``write_folder(out)`` with ``fill``'s files and the run's decode.yaml, if any; ``what``
    describes the files written (name -> bytes)."""
    decode_file = source.parent / DECODE_FILE

    def fill_all(folder: Path) -> None:
        fill(folder)
        if decode_file.is_file():
            shutil.copyfile(decode_file, folder / DECODE_FILE)

    files = write_folder(out, fill_all)
    return Exported(source, source.stat().st_size, out, files, what(files))


def check_output(out: Path, source: Path, overwrite: bool) -> None:
    """Refuse, in one line (ExportError), an output folder the export may not write: ``out`` is a
    file; it exists and ``overwrite`` is not given; with ``overwrite`` it holds something other
    than an earlier export (it is never emptied for us); or the checkpoint being exported lies
    inside it (the run folder itself)."""
    if out.exists() and not out.is_dir():
        raise ExportError(f"-o {out}: is a file; give a folder for the export")
    if out.is_dir() and source.resolve().is_relative_to(out.resolve()):
        raise ExportError(
            f"-o {out}: holds the checkpoint being exported ({source}); give a new folder"
        )
    if not out.exists():
        return
    if not overwrite:
        raise ExportError(
            f"-o {out}: already exists; give --overwrite to replace it, or another folder"
        )
    earlier = (out / EXPORT_FILE).is_file() or (out / CTRANSLATE2_META).is_file()
    if any(out.iterdir()) and not earlier:
        raise ExportError(
            f"-o {out}: --overwrite replaces only an earlier export, and this folder holds other "
            "files; remove it yourself or give another folder"
        )


def write_folder(out: Path, fill: Callable[[Path], None]) -> dict[str, int]:
    """Make ``out`` with ``fill(tmp)``: a new folder beside it that ``fill`` writes into, every
    file fsync'ed, then renamed to ``out`` (an earlier ``out`` is moved aside first and removed
    after). An error in ``fill`` removes the temporary folder and leaves ``out`` as it was.
    Returns each file's name (relative to ``out``) and size in bytes."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    old = None
    try:
        os.chmod(tmp, 0o777 & ~_UMASK)  # mkdtemp makes it 0700; give it mkdir's mode
        fill(tmp)
        files = {}
        for f in sorted(p for p in tmp.rglob("*") if p.is_file()):
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
            files[str(f.relative_to(tmp))] = f.stat().st_size
        fsync_folder(tmp)
        if out.exists():
            old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".old"))
            os.replace(out, old / out.name)
        os.replace(tmp, out)
        fsync_folder(out.parent)
    except BaseException:
        if old is not None and not out.exists():
            os.replace(old / out.name, out)  # the earlier export back in its place
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return files


def megabytes(n: int) -> str:
    """``n`` bytes as ``12.3 MB`` (two decimals under 10 MB: a toy's sizes stay readable)."""
    return f"{n / MB:.2f} MB" if n < 10 * MB else f"{n / MB:.1f} MB"


def size(n: int) -> str:
    """``n`` bytes as ``512 B``, ``104 kB`` or ``12.3 MB`` (one file of an export)."""
    if n < 1e3:
        return f"{n} B"
    return f"{n / 1e3:.0f} kB" if n < MB else f"{n / MB:.1f} MB"

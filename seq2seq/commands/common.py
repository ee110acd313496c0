"""What every command shares: the one-line user error and its printing, library errors mapped to
it, and the output paths checked before the work (``check_writable``, ``check_not_input``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

from seq2seq.atomic import is_stdout, replaced_path
from seq2seq.console import console


class UserError(Exception):
    """A problem with what the user gave us; printed as one line."""


def fail(msg: str, code: int = 2) -> None:
    """Print one error line on stderr and exit with ``code``; 130 (the user's Ctrl-C or SIGTERM)
    is headed "stopped:", in yellow."""
    warn(msg, ("stopped: ", "bold yellow") if code == 130 else ("error: ", "bold red"))
    sys.exit(code)


def warn(msg: str, head: tuple[str, str] = ("warning: ", "bold yellow")) -> None:
    """Print one line on stderr, headed by ``head`` (its text and style)."""
    from rich.text import Text

    console.print(Text.assemble(head, msg), highlight=False, soft_wrap=True)


# Config fields whose option has another name; every other field ``x_y`` is ``--x-y``.
OPTION_OF_FIELD = {"beam_size": "beam"}


def flag_of(field: str) -> str:
    """A config field's option: ``beam_size`` -> ``--beam``, ``top_k`` -> ``--top-k``."""
    return "--" + OPTION_OF_FIELD.get(field, field).replace("_", "-")


@contextmanager
def user_errors():
    """Bad user input found by the library becomes a one-line ``UserError``: a ValueError's message,
    or a pydantic ValidationError's naming its option (``--beam: ...``) and a number's range."""
    from pydantic import ValidationError

    from seq2seq.config import RANGE_ERRORS, valid_range

    try:
        yield
    except ValidationError as e:
        err = e.errors()[0]
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] in RANGE_ERRORS and (valid := valid_range(e.title, err["loc"])):
            msg += f", not {err['input']} (valid: {valid})"
        raise UserError(f"{flag_of(str(err['loc'][0]))}: {msg}") from None
    except ValueError as e:
        raise UserError(str(e)) from None


def no_stdout(path: Path | str | None, option: str, what: str) -> None:
    """``-`` means standard output, which cannot hold a folder or a binary file."""
    if is_stdout(path):
        raise UserError(f"{option} -: {what} cannot go to standard output; give a path")


def no_stdin(path: Path | str | None, option: str) -> None:
    """``-`` as an input read whole (or more than once) is refused."""
    if path is not None and str(path) == "-":
        raise UserError(f"{option} -: standard input is not read here; give a file")


def one_run(checkpoints: list[Path], command: str) -> Path:
    """The one ``-c`` of a command that takes one run (click would keep the last of several)."""
    if len(checkpoints) > 1:
        raise UserError(
            f"-c given {len(checkpoints)} times: {command} takes one run (several -c make an "
            "ensemble in translate and eval only); give one -c"
        )
    return checkpoints[0]


ANOTHER_PATH = "give a path in a folder you can write to"
# what loading a run reads, and its training record
RUN_FILES = ("config.yaml", "decode.yaml", "run_info.json", "train_summary.json", "train.log")


def check_writable(
    path: str | Path | None, option: str, *, folder: bool = False, fix: str = ANOTHER_PATH
) -> None:
    """Refuse in one line (``option`` ... ``fix``) an output the command could not write (a folder
    if ``folder``): a folder where a file goes or the reverse, a file on the way, or the nearest
    existing folder not writable. None and ``-`` pass; creates nothing (that is the writer's)."""
    if path is None or is_stdout(path):
        return
    p = Path(path)
    if not folder and replaced_path(p) is None:  # a device, a FIFO: written through
        if not os.access(p, os.W_OK):
            raise UserError(f"{option} {path}: cannot write there: not writable; {fix}")
        return
    if folder and p.exists() and not p.is_dir():
        raise UserError(f"{option} {path}: is a file, not a folder; give a folder to write into")
    if not folder and p.is_dir():
        raise UserError(f"{option} {path}: is a folder; give a file name to write")
    nearest = p if folder else p.parent
    while not nearest.exists() and not nearest.is_symlink() and nearest != nearest.parent:
        nearest = nearest.parent  # missing folders are made by the writer
    if not nearest.is_dir():
        kind = "a file, not a folder" if nearest.is_file() else "not a folder"
        raise UserError(f"{option} {path}: cannot write there: {nearest} is {kind}; {fix}")
    if not _can_write(nearest):
        raise UserError(
            f"{option} {path}: cannot write there: folder {nearest} is not writable; {fix}"
        )


def check_not_input(
    path: str | Path | None,
    option: str,
    inputs: Sequence[tuple[str, str | Path | None]] = (),
    runs: Sequence[str | Path] = (),
    checkpoints: bool = True,
    outputs: Sequence[tuple[str, str | Path | None]] = (),
) -> None:
    """Refuse in one line (UserError) an output ``path`` of ``option`` that is one of ``inputs``
    or ``outputs`` ((option, path) each), or a checkpoint (``*.pt``, unless ``checkpoints`` is
    False), tokenizer, ``train_log.jsonl`` or one of ``RUN_FILES`` of ``runs``. None and ``-``
    pass."""
    if path is None or is_stdout(path):
        return
    out = Path(path).resolve()

    def same(given: str | Path | None) -> bool:
        return given is not None and not is_stdout(given) and Path(given).resolve() == out

    for opt, given in outputs:
        if same(given):
            raise UserError(f"{option} {path} is also the {opt} file; give each output its own")
    for opt, given in inputs:
        if same(given):
            raise UserError(
                f"{option} {path} is the {opt} file: writing it would replace what is read; "
                "write to another file"
            )
    for run in runs:
        folder = Path(run).resolve()
        folder = folder if folder.is_dir() else folder.parent
        run_file = (checkpoints and out.suffix == ".pt") or out.name in RUN_FILES
        run_file = run_file or out.name.startswith("spm") or out.name == "train_log.jsonl"
        if out.parent == folder and (run_file or out == Path(run).resolve()):
            raise UserError(
                f"{option} {path}: would overwrite the run's own {out.name}; write to a file "
                f"that is not one of the run's checkpoints, tokenizers or {', '.join(RUN_FILES)}"
            )


def _can_write(folder: Path) -> bool:
    """New files can be made in ``folder`` (its permissions, a read-only file system)."""
    return os.access(folder, os.W_OK | os.X_OK)

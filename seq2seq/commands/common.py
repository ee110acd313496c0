"""What every command shares: the one-line user error, its printing, and the mapping of library
errors, ``-`` paths, ``--device`` and ``--checkpoint`` to what the commands need."""

from __future__ import annotations

import sys
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seq2seq.console import console


class UserError(Exception):
    """A problem with what the user gave us; printed as one line."""


def fail(msg: str, code: int = 2) -> None:
    """Print one error line on stderr and exit with ``code``. Code 130 is the user's own Ctrl-C
    (or SIGTERM), which is no error: its line is headed "stopped:", in yellow."""
    from rich.text import Text

    head = ("stopped: ", "bold yellow") if code == 130 else ("error: ", "bold red")
    console.print(Text.assemble(head, msg), highlight=False, soft_wrap=True)
    sys.exit(code)


def warn(msg: str) -> None:
    """Print one warning line on stderr."""
    from rich.text import Text

    console.print(Text.assemble(("warning: ", "bold yellow"), msg), highlight=False, soft_wrap=True)


# Config fields whose option has another name; every other field ``x_y`` is ``--x-y``.
OPTION_OF_FIELD = {"beam_size": "beam"}


@contextmanager
def user_errors():
    """Bad user input found by the library becomes a one-line ``UserError``: a ValueError keeps its
    message; a pydantic ValidationError of a config section names the option it came from
    (``decode.beam_size`` -> ``--beam: ...``), and a number out of range the range it may take."""
    from pydantic import ValidationError

    from seq2seq.config import RANGE_ERRORS, valid_range

    try:
        yield
    except ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][0])
        option = OPTION_OF_FIELD.get(field, field).replace("_", "-")
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] in RANGE_ERRORS and (valid := valid_range(e.title, err["loc"])):
            msg += f", not {err['input']} (valid: {valid})"
        raise UserError(f"--{option}: {msg}") from None
    except ValueError as e:
        raise UserError(str(e)) from None


def no_stdout(path: Path | str | None, option: str, what: str) -> None:
    """``-`` means standard output, which cannot hold a folder or a binary file."""
    from seq2seq.atomic import is_stdout

    if is_stdout(path):
        raise UserError(f"{option} -: {what} cannot go to standard output; give a path")


def inference_device(name: str) -> str:
    """``--device`` for inference (``runtime.inference_device``) as a string."""
    from seq2seq.runtime import inference_device as pick

    return str(pick(name))


# Where a decode setting of translate or eval came from (eval --json's decode_source).
FROM_CONFIG = "config"
FROM_DECODE_FILE = "decode.yaml (tune-decode)"
FROM_COMMAND_LINE = "command line"


@dataclass
class LoadedRun:
    """A checkpoint loaded for decoding, with what says how its output is made.

    Attributes:
        cfg: the run's config, its decode section with ``decode.yaml`` applied.
        checkpoint: the checkpoint file read (a run folder's best.pt, else last.pt).
        step: the update it was saved at (its train_state, or an export's exported_from), None
            for one without (averaged).
        config_decode: the decode settings of the checkpoint's own config.
        decode_file: the run's ``decode.yaml`` when it exists, and ``decode_file_keys`` the
            settings it names.
    """

    model: Any
    tok: Any
    cfg: Any
    device: str
    checkpoint: Path
    step: int | None
    config_decode: Any
    decode_file: Path | None = None
    decode_file_keys: frozenset[str] = frozenset()

    def __iter__(self):
        """``model, tok, cfg, device = load_model(...)``."""
        return iter((self.model, self.tok, self.cfg, self.device))

    def decode_sources(self, final, given: set[str]) -> dict[str, str]:
        """Each setting of the DecodeConfig ``final`` -> where it came from: the command line
        (``given`` fields, or a value the command line's method changed), the run's decode.yaml,
        or the checkpoint's config."""
        tuned = self.cfg.decode
        out = {}
        for name in type(final).model_fields:
            value = getattr(final, name)
            if name in given or value != getattr(tuned, name):
                out[name] = FROM_COMMAND_LINE
            elif name in self.decode_file_keys or value != getattr(self.config_decode, name):
                out[name] = FROM_DECODE_FILE
            else:
                out[name] = FROM_CONFIG
        return out

    def decode_file_line(self, final, sources: dict[str, str]) -> str | None:
        """One line for stderr when decode.yaml changed the settings ``final`` decodes with,
        e.g. ``decoding with runs/x/decode.yaml (tune-decode): beam 5, alpha 1.0``; None when
        the run has none (or it changed nothing)."""
        if self.decode_file is None:
            return self.untuned_line(final, sources)
        used = [n for n, s in sources.items() if s == FROM_DECODE_FILE]
        if final.method == "greedy":  # greedy ranks nothing: its length penalty does not count
            used = [n for n in used if n != "length_penalty"]
        over = [n for n in sorted(self.decode_file_keys) if sources.get(n) == FROM_COMMAND_LINE]
        if used:
            line = f"decoding with {self.decode_file} (tune-decode): {describe_decode(final, used)}"
            if over:
                line += f"; the command line sets {describe_decode(final, over)}"
            return line
        if over:
            return (
                f"{self.decode_file} (tune-decode) not used: the command line sets "
                f"{describe_decode(final, over)}"
            )
        return None

    def untuned_line(self, final, sources: dict[str, str]) -> str | None:
        """For beam search in a run without decode.yaml: the beam and alpha it decodes with and
        the command that tunes them on validation; None for another search, or when the command
        line sets both."""
        if final.method != "beam":
            return None
        if {sources.get("beam_size"), sources.get("length_penalty")} == {FROM_COMMAND_LINE}:
            return None
        line = (
            f"decoding with {describe_decode(final, ['beam_size', 'length_penalty'])} (not tuned: "
            f"`seq2seq tune-decode -c {self.checkpoint.parent}` chooses beam size and alpha on "
            "validation)"
        )
        if final.length_penalty == 0 and sources.get("length_penalty") == FROM_CONFIG:
            line += (
                "; this alpha is stored in the run's config (runs configured before the default "
                "alpha became 1.0 store 0) and favours short outputs: --length-penalty 1 "
                "overrides it"
            )
        return line


def describe_decode(cfg, names) -> str:
    """Some settings of a DecodeConfig in words: ``beam 5, alpha 1.0``, ``greedy``,
    ``max_len_b 20``."""
    names = list(names)
    parts = []
    if "method" in names or "beam_size" in names:
        parts.append(f"beam {cfg.beam_size}" if cfg.method == "beam" else cfg.method)
    for name in names:
        if name in ("method", "beam_size"):
            continue
        label = "alpha" if name == "length_penalty" else name
        parts.append(f"{label} {getattr(cfg, name)}")
    return ", ".join(parts)


@contextmanager
def _quiet_info():
    """The ``seq2seq`` logger at WARNING for a moment: a note the caller words itself."""
    import logging

    logger = logging.getLogger("seq2seq")
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


def load_model(checkpoint: Path, device: str, say_decode_file: bool = True) -> LoadedRun:
    """``--checkpoint`` and ``--device`` -> the model in eval mode, its tokenizer, the run config
    and the device (``model, tok, cfg, dev = load_model(...)``), and which checkpoint and step
    were read and what the run's decode.yaml changed (``LoadedRun``). ``say_decode_file=False``
    leaves out ``checkpoint.with_tuned_decode``'s log line on decode.yaml, for a caller that words
    it itself (``LoadedRun.decode_file_line``).

    Raises:
        CheckpointError: a missing, damaged or incompatible checkpoint (``checkpoint.py``).
    """
    from seq2seq.checkpoint import (
        DECODE_FILE,
        load_checkpoint,
        model_from_checkpoint,
        resolve_checkpoint,
        with_tuned_decode,
    )
    from seq2seq.config import load_yaml

    dev = inference_device(device)
    path = resolve_checkpoint(checkpoint)
    ckpt = load_checkpoint(path)
    model, tok, cfg = model_from_checkpoint(ckpt, str(path))
    step = (ckpt.get("train_state") or ckpt.get("exported_from") or {}).get("step")
    del ckpt
    with nullcontext() if say_decode_file else _quiet_info():
        tuned = with_tuned_decode(cfg, path.parent)
    run = LoadedRun(model.to(dev), tok, tuned, dev, path, step, cfg.decode)
    decode_file = path.parent / DECODE_FILE
    if decode_file.is_file():  # read again for its keys; with_tuned_decode has checked it
        keys = load_yaml(decode_file.read_text(encoding="utf-8")) or {}
        run.decode_file, run.decode_file_keys = decode_file, frozenset(keys)
    return run

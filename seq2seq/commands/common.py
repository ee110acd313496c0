"""What every command shares: the one-line user error and its printing, and library errors mapped
to it."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

from seq2seq.atomic import is_stdout
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


def typed_options(ctx) -> set[str]:
    """The options given on the command line (``--alphas``), not left at their defaults (by the
    name of click's ParameterSource: typer brings its own copy of click)."""
    source = {p.opts[0]: ctx.get_parameter_source(p.name) for p in ctx.command.params}
    return {opt for opt, how in source.items() if getattr(how, "name", "") == "COMMANDLINE"}


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

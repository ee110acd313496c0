"""What every command shares: the one-line user error, its printing, and the mapping of library
errors and ``-`` paths to what the commands need."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

from seq2seq.console import console


class UserError(Exception):
    """A problem with what the user gave us; printed as one line."""


def fail(msg: str, code: int = 2) -> None:
    """Print one error line on stderr and exit with ``code``. Code 130 is the user's own Ctrl-C
    (or SIGTERM), which is no error: its line is headed "stopped:", in yellow."""
    warn(msg, ("stopped: ", "bold yellow") if code == 130 else ("error: ", "bold red"))
    sys.exit(code)


def warn(msg: str, head: tuple[str, str] = ("warning: ", "bold yellow")) -> None:
    """Print one line on stderr, headed by ``head`` (its text and style)."""
    from rich.text import Text

    console.print(Text.assemble(head, msg), highlight=False, soft_wrap=True)


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

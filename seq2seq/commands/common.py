"""What every command shares: the one-line user error and its printing, and library and click
errors mapped to it (after the SEQ2SEQ_DEBUG traceback)."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Collection
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


MOVED_PAIRED = (
    "eval --paired moved to its own command: seq2seq paired --hyp BASE --hyp B ... --ref FILE "
    "[--paired-method bs|ar] (see seq2seq paired -h)"
)


def click_error(e: Exception, commands: Collection[str]) -> None:
    """Exit on click's own errors (known by class name: typer bundles click): no arguments show
    the help, a usage error is one line naming the command's -h; returns for anything else."""
    kinds = {c.__name__ for c in type(e).__mro__}
    if "NoArgsIsHelpError" in kinds:
        e.show()
        sys.exit(e.exit_code)
    if "ClickException" in kinds:
        msg = " ".join(e.format_message().split())
        ctx = getattr(e, "ctx", None)
        # an option without its value comes without a context: the command is argv's
        named = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] in commands else None
        command = ctx.command.name if ctx is not None else named
        # the moved option, however its value was given
        if "UsageError" in kinds and command == "eval" and "--paired" in sys.argv:
            fail(MOVED_PAIRED, code=2)
        hint = option_hint(e.option_name, command) if "NoSuchOption" in kinds else ""
        if hint:  # ours, not click's spelling guess (--help for --lr)
            msg = e.message
        if "UsageError" in kinds:
            where = ctx.command_path if ctx is not None else f"seq2seq {named or ''}".strip()
            msg += f" (see {where} -h)"
        fail(msg + hint, code=e.exit_code)
    if "Abort" in kinds:  # end of input at a prompt
        fail("interrupted", code=130)


def debug_traceback(e: BaseException) -> bool:
    """With ``SEQ2SEQ_DEBUG`` set (and not 0): print ``e``'s traceback on stderr, with the errors
    it was raised from or while handling (a one-line error hides them: ``raise ... from None``),
    and return True; the caller prints the one line after it."""
    if os.environ.get("SEQ2SEQ_DEBUG", "") in ("", "0"):
        return False
    cause: BaseException | None = e
    while cause is not None:  # show what "from None" hid
        cause.__suppress_context__ = False
        cause = cause.__cause__ or cause.__context__
    traceback.print_exception(e, file=sys.stderr)
    return True


def option_hint(option: str, command: str | None) -> str:
    """For an unknown ``train`` option that names a config key (``--lr``), or another toolkit's
    name for one (``--learning-rate``, ``--warmup``): ``; did you mean --set train.lr=VALUE?``;
    for ``-c`` given to ``export`` or ``serve``, which take their runs as arguments: how."""
    from seq2seq.config.loading import config_key_for

    if command in ("export", "serve") and option in ("-c", "--checkpoint"):
        usage = "export RUN -o DIR" if command == "export" else "serve RUN [RUN ...]"
        return f"; {command} takes the run as an argument, without -c: seq2seq {usage}"
    key = config_key_for(option.lstrip("-").replace("-", "_")) if command == "train" else None
    return f"; did you mean --set {key}=VALUE?" if key else ""


def empty_value(args: list[str]) -> str | None:
    """The one-line error for an empty value (``-o ''``, ``--run-dir=``), or None: a path option
    would take it as the current folder (``train --run-dir ''`` wrote a run into it), and no
    option of ours means anything by it."""
    for i, arg in enumerate(args):
        option = args[i - 1] if arg == "" and i and args[i - 1].startswith("-") else None
        if arg.startswith("--") and arg.endswith("="):
            option = arg[:-1]
        if arg == "" or option:
            said = f"{option} ''" if option else "an empty argument ''"
            return f"{said}: give a value (no option takes an empty one)"
    return None

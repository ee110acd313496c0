"""The ``seq2seq`` command line: the typer app, its ``--version`` and ``-h``, and the registration
of every command (the commands live in ``commands/``). Every user-facing problem (bad config, data
or checkpoint) ends as one line on stderr and exit code 2; SEQ2SEQ_DEBUG=1 prints the traceback
(with the errors the line was raised from) before it."""

from __future__ import annotations

import codecs
import errno
import os
import sys
import traceback

import typer

from seq2seq.atomic import ESCAPE, OutputError
from seq2seq.commands import evaluate, export, serve, study, training, translate, tune
from seq2seq.commands.common import UserError, fail

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Neural machine translation: RNN encoder-decoder, Bahdanau and Luong attention, and the "
    "Transformer. Train, translate, evaluate, compare systems, average checkpoints, tune the "
    "search on validation, make synthetic corpora, compare models, export for deployment.",
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts say "[default: ...]": square brackets are not markup
    context_settings={"help_option_names": ["-h", "--help"]},  # every command's -h
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            said = version("seq2seq")
        except PackageNotFoundError:  # run from a source tree that was never installed
            from seq2seq import __version__ as said
        typer.echo(f"seq2seq {said}")
        raise typer.Exit()


@app.callback()
def _options(
    show_version: bool = typer.Option(
        False,
        "--version",
        callback=_version,
        is_eager=True,
        help="Print the version (seq2seq X.Y.Z) and exit.",
    ),
) -> None:
    pass


# Each command and its one-line summary in ``seq2seq --help``: short enough for an 80-column
# terminal (click cuts a longer first sentence mid-phrase with "...").
COMMANDS = {
    "train": (training.train, "Train a model into a run folder (checkpoints, logs)."),
    "translate": (translate.translate, "Translate text line by line with a trained model."),
    "eval": (evaluate.evaluate, "Score translations (BLEU, chrF, TER) with sacrebleu."),
    "paired": (evaluate.paired, "Compare systems with sacreBLEU's paired significance tests."),
    "average": (training.average, "Average a run's last or best checkpoints into one."),
    "tune-decode": (tune.tune_decode, "Choose beam size and length penalty on validation."),
    "compare": (study.compare, "The bottleneck-versus-attention study."),
    "synth": (study.synth, "Write a synthetic parallel corpus (copy, reverse, ...)."),
    "serve": (serve.serve, "Serve a local page and JSON API over trained runs."),
    "export": (export.export, "Write a run's weights and tokenizer for deployment."),
}
SUMMARIES = {name: summary for name, (_, summary) in COMMANDS.items()}


class _Command(typer.core.TyperCommand):
    """A command whose --help shows an argument as its name alone, without typer's label of its
    Python type (``CONFIG <list[Path]>``); the help text says what it takes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.param_type_name == "argument":
                param.display_type_rich = lambda ctx: None


for name, (command, summary) in COMMANDS.items():
    app.command(name, short_help=summary, cls=_Command)(command)


MOVED_PAIRED = (
    "eval --paired moved to its own command: seq2seq paired --hyp BASE --hyp B ... --ref FILE "
    "[--paired-method bs|ar] (see seq2seq paired -h)"
)


def _click_error(e: Exception) -> None:
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
        named = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] in SUMMARIES else None
        command = ctx.command.name if ctx is not None else named
        # the moved option, however its value was given
        if "UsageError" in kinds and command == "eval" and "--paired" in sys.argv:
            fail(MOVED_PAIRED, code=2)
        hint = _option_hint(e.option_name, command) if "NoSuchOption" in kinds else ""
        if hint:  # ours, not click's spelling guess (--help for --lr)
            msg = e.message
        if "UsageError" in kinds:
            where = ctx.command_path if ctx is not None else f"seq2seq {named or ''}".strip()
            msg += f" (see {where} -h)"
        fail(msg + hint, code=e.exit_code)
    if "Abort" in kinds:  # end of input at a prompt
        fail("interrupted", code=130)


def _debug_traceback(e: BaseException) -> bool:
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


def _option_hint(option: str, command: str | None) -> str:
    """For an unknown ``train`` option that names a config key (``--lr``), or another toolkit's
    name for one (``--learning-rate``, ``--warmup``): ``; did you mean --set train.lr=VALUE?``;
    for ``-c`` given to ``export`` or ``serve``, which take their runs as arguments: how."""
    from seq2seq.config.loading import config_key_for

    if command in ("export", "serve") and option in ("-c", "--checkpoint"):
        usage = "export RUN -o DIR" if command == "export" else "serve RUN [RUN ...]"
        return f"; {command} takes the run as an argument, without -c: seq2seq {usage}"
    key = config_key_for(option.lstrip("-").replace("-", "_")) if command == "train" else None
    return f"; did you mean --set {key}=VALUE?" if key else ""


def _empty_value(args: list[str]) -> str | None:
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


def utf8_streams() -> None:
    """Make standard input, output and error UTF-8 whatever the locale says (``LC_ALL=C``, Latin-1),
    so ``translate > FILE`` writes the bytes ``-o FILE`` does; a file name the locale could not
    decode is written as its UTF-8 text, or escaped (``ESCAPE``: ``\\udce9``), never an error."""
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None)
        if not hasattr(stream, "reconfigure") or encoding is None:
            continue  # closed, or replaced by something that is not a text file
        if stream is not sys.stdin:
            stream.reconfigure(encoding="utf-8", errors=ESCAPE)
        elif codecs.lookup(encoding).name != "utf-8":
            stream.reconfigure(encoding="utf-8", errors="surrogateescape")


def main() -> None:
    """Entry point: run the app, turning known errors into one line and exit code 2."""
    utf8_streams()
    try:  # these import torch, which takes a second or two: Ctrl-C may land here
        from seq2seq.checkpoint import CheckpointError
        from seq2seq.config import ConfigError
        from seq2seq.data.text import DataError
        from seq2seq.runtime import ended_like_ctrl_c
        from seq2seq.training.state import TrainingError
    except KeyboardInterrupt:
        fail("interrupted", code=130)

    if empty := _empty_value(sys.argv[1:]):
        fail(empty)
    try:
        # standalone_mode=False: click's usage errors come here (one line, not its usage block),
        # and a Ctrl-C that typer turned into exit code 130 is said, not silent; SIGTERM and
        # SIGHUP end every command as Ctrl-C does, its cleanup run
        with ended_like_ctrl_c():
            code = app(standalone_mode=False, prog_name="seq2seq")
    except (ConfigError, DataError, CheckpointError, TrainingError, UserError, OutputError) as e:
        _debug_traceback(e)
        fail(str(e))
    except KeyboardInterrupt:  # before training's own Ctrl-C handler, or a second Ctrl-C
        fail("interrupted", code=130)
    except OSError as e:  # a path that is a folder, exists already, is not writable, ...
        _debug_traceback(e)
        if e.filename is None:
            fail(str(e))
        fix = "free some space" if e.errno in (errno.ENOSPC, errno.EDQUOT) else "check the path"
        fail(f"{e.filename}: {e.strerror}; {fix} and try again")
    except Exception as e:
        _click_error(e)  # exits if it is one
        said = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"
        hint = "" if _debug_traceback(e) else " (set SEQ2SEQ_DEBUG=1 for the traceback)"
        fail(said + hint, code=1)
    if code == 130:  # typer's answer to a Ctrl-C it caught
        fail("interrupted", code=130)
    sys.exit(code if isinstance(code, int) else 0)  # typer.Exit(code) from a command, or 0

"""The ``seq2seq`` command line: the typer app, its ``--version`` and ``-h``, and the registration
of every command (the commands live in ``commands/``). Every user-facing problem (bad config, data
or checkpoint) ends as one line on stderr and exit code 2; SEQ2SEQ_DEBUG=1 prints the traceback
(with the errors the line was raised from) before it."""

from __future__ import annotations

import errno
import sys

import typer

from seq2seq.atomic import OutputError
from seq2seq.commands import evaluate, export, serve, study, training, translate, tune
from seq2seq.commands.common import UserError, click_error, debug_traceback, empty_value, fail
from seq2seq.console import utf8_streams

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

    if empty := empty_value(sys.argv[1:]):
        fail(empty)
    try:
        # standalone_mode=False: click's usage errors come here (one line, not its usage block),
        # and a Ctrl-C that typer turned into exit code 130 is said, not silent; SIGTERM and
        # SIGHUP end every command as Ctrl-C does, its cleanup run
        with ended_like_ctrl_c():
            code = app(standalone_mode=False, prog_name="seq2seq")
    except (ConfigError, DataError, CheckpointError, TrainingError, UserError, OutputError) as e:
        debug_traceback(e)
        fail(str(e))
    except KeyboardInterrupt:  # before training's own Ctrl-C handler, or a second Ctrl-C
        fail("interrupted", code=130)
    except OSError as e:  # a path that is a folder, exists already, is not writable, ...
        debug_traceback(e)
        if e.filename is None:
            fail(str(e))
        fix = "free some space" if e.errno in (errno.ENOSPC, errno.EDQUOT) else "check the path"
        fail(f"{e.filename}: {e.strerror}; {fix} and try again")
    except Exception as e:
        click_error(e, COMMANDS)  # exits if it is one
        said = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"
        hint = "" if debug_traceback(e) else " (set SEQ2SEQ_DEBUG=1 for the traceback)"
        fail(said + hint, code=1)
    if code == 130:  # typer's answer to a Ctrl-C it caught
        fail("interrupted", code=130)
    sys.exit(code if isinstance(code, int) else 0)  # typer.Exit(code) from a command, or 0

"""The ``seq2seq`` console script. Importing the command line (typer, rich, then torch) takes a
second or two; a Ctrl-C in that time ends with one "stopped:" line and exit code 130, not a
traceback. Everything after the import is ``cli.main``'s."""

from __future__ import annotations

import sys


def main() -> None:
    """Import ``seq2seq.cli`` under a Ctrl-C guard, then run its ``main``."""
    try:
        from seq2seq.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("stopped: interrupted while starting\n")
        raise SystemExit(130) from None
    cli_main()

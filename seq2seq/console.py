"""One rich console on stderr for progress bars and log lines, so they never garble stdout."""

from __future__ import annotations

import codecs
import logging
import sys

from rich.console import Console
from rich.logging import RichHandler

from seq2seq.atomic import ESCAPE, escaped

console = Console(stderr=True)


def setup_logging(verbose: bool = False) -> None:
    """Log ``seq2seq`` messages to stderr (INFO, or DEBUG when verbose): through rich on a
    terminal, as plain unwrapped lines ("HH:MM:SS LEVEL message") when stderr is a file or a pipe,
    so that logs stay one line a message for grep."""
    logger = logging.getLogger("seq2seq")
    logger.handlers.clear()
    handler: logging.Handler
    if console.is_terminal:
        handler = RichHandler(
            console=console, show_path=False, show_time=True, markup=False, rich_tracebacks=False
        )
        fmt = "%(message)s"
    else:
        handler = logging.StreamHandler(sys.stderr)
        fmt = "%(asctime)s %(levelname)s %(message)s"
    handler.setFormatter(logging.Formatter(fmt, datefmt="%H:%M:%S"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    logger.propagate = False
    if _escaped not in logger.filters:
        logger.addFilter(_escaped)


def _escaped(record: logging.LogRecord) -> bool:
    """A message quoting a file name the locale could not decode, escaped as every output is
    (``atomic.escaped``), so that each handler can write it (a run's UTF-8 train.log too)."""
    message = record.getMessage()
    if (text := escaped(message)) != message:
        record.msg, record.args = text, None
    return True


def counted(n: int, word: str, plural: str | None = None) -> str:
    """``3 lines``, ``1 line``: a count with its noun in the number it needs."""
    return f"{n} {word if n == 1 else plural or word + 's'}"


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

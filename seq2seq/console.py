"""One rich console on stderr for progress bars and log lines, so they never garble stdout."""

from __future__ import annotations

import logging

from rich.console import Console
from rich.logging import RichHandler

console = Console(stderr=True)


def setup_logging(verbose: bool = False) -> None:
    """Log ``seq2seq`` messages to stderr through rich (INFO, or DEBUG when verbose)."""
    logger = logging.getLogger("seq2seq")
    logger.handlers.clear()
    handler = RichHandler(
        console=console, show_path=False, show_time=True, markup=False, rich_tracebacks=False
    )
    handler.setFormatter(logging.Formatter("%(message)s", datefmt="%H:%M:%S"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    logger.propagate = False

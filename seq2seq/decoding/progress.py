"""The progress bar of the decoding commands (``translate``, ``eval``, ``tune-decode``): rich, on
stderr, shown only when stderr is a terminal (a log file or a pipe gets no bar), gone when done.

The bar counts whatever it is given (lines, settings) whether it is shown or not, so a command's
progress can be checked without a terminal.
"""

from __future__ import annotations

from types import TracebackType

from seq2seq.console import console


class ProgressBar:
    """``with ProgressBar("translating", total=M) as bar: ... bar.advance(n)``; ``describe``
    changes the text before the bar (e.g. "setting 3/19: beam 5"). ``done`` counts what was
    advanced, ``description`` is the text now shown."""

    def __init__(self, description: str, total: int | None):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.description = description
        self.total = total
        self.done = 0
        self._bar = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            "eta",
            TimeRemainingColumn(),
            console=console,
            disable=not console.is_terminal,
            transient=True,
        )
        self._task = self._bar.add_task(description, total=total)

    def __enter__(self) -> ProgressBar:
        self._bar.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._bar.__exit__(kind, error, tb)

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._bar.advance(self._task, n)

    def add_total(self, n: int) -> None:
        """``n`` more to do than the total said (e.g. settings added to a sweep)."""
        self.total = (self.total or 0) + n
        self._bar.update(self._task, total=self.total)

    def describe(self, description: str) -> None:
        self.description = description
        self._bar.update(self._task, description=description)

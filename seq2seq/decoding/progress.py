"""The progress bar of ``translate``, ``eval`` and ``tune-decode``: rich, on stderr, shown only
when it is a terminal, gone when done; it counts whether shown or not (tests read it)."""

from __future__ import annotations

from seq2seq.console import console


class ProgressBar:
    """``with ProgressBar("translating", total=M) as bar: ... bar.advance(n)``; ``done`` counts
    what was advanced, ``description`` is the text shown (``describe``)."""

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

    def __exit__(self, *exc: object) -> None:
        self._bar.__exit__(*exc)

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

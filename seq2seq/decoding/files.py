"""Line-oriented translation, as ``translate`` does it: for every input line, in order, one output
line (text, n-best TSV rows or JSON), a window of lines at a time (``window_sizes``), each
written and flushed before the next is read; and the progress bar of the decoding commands.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import select
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, BinaryIO

import torch

from seq2seq.atomic import (
    fsync_folder,
    gzip_writer,
    is_stdout,
    make_folders,
    named_errors,
    remove_empty,
    replaced_path,
)
from seq2seq.config import DecodeConfig
from seq2seq.console import console, counted
from seq2seq.data.text import decode_line, read_lines
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decoding.alignment_output import attach_layer_attention, has_attention, jsonl_record
from seq2seq.decoding.translate import Translation, TranslationReport, translate_sentences
from seq2seq.models import Seq2SeqModel

log = logging.getLogger("seq2seq")

WINDOW_BATCHES = 8  # the batches of every window after the first three (1, 2, 4 batches)


def window_sizes(batch_size: int) -> Iterator[int]:
    """Lines per window: ``batch_size`` times 1, 2, 4, then ``WINDOW_BATCHES``: the first lines are
    on disk within a batch's time, and later windows sort more lines into batches by length."""
    batches = 1
    while True:
        yield batch_size * batches
        batches = min(2 * batches, WINDOW_BATCHES)


def windows_of(lines: Sequence[str], batch_size: int) -> Iterator[tuple[int, Sequence[str]]]:
    """``lines`` cut into windows of ``window_sizes``: (index of the first line, the lines)."""
    start = 0
    for size in window_sizes(batch_size):
        if start >= len(lines):
            return
        yield start, lines[start : start + size]
        start += size


# Called with translations decoded with attention and the input line number of the first.
AttentionSink = Callable[[list[Translation], int], object]

# The n-best TSV's hypothesis field escapes backslash, tab, newline and carriage return as linear
# TSV and PostgreSQL's text format do, so every row has three fields and one line.
_TSV_ESCAPE = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def escape_tsv_field(text: str) -> str:
    """``text`` as one n-best TSV field: no tab, newline or carriage return, backslashes doubled."""
    return text.translate(_TSV_ESCAPE)


@dataclass
class LineTranslator:
    """One model and its settings, applied to numbered runs of input lines: input lines 1 to
    ``attention_n`` are decoded with attention and handed to ``plot``; ``report`` counts all;
    ``align_layer``: with ``jsonl``, align with this decoder layer (``attach_layer_attention``),
    not the search's attention."""

    model: Seq2SeqModel
    tok: Tokenizer
    cfg: DecodeConfig
    device: torch.device | str = "cpu"
    n_best: int = 1
    batch_tokens: int | None = None
    attention_n: int = 0
    plot: AttentionSink | None = None
    source_name: str = "input"
    report: TranslationReport = field(default_factory=TranslationReport)
    progress: Callable[[int], None] | None = None
    output_format: str = "text"  # what ``render`` writes: text | nbest | jsonl
    align_layer: int | None = None

    def translate(self, lines: Sequence[str], first_line_no: int = 1) -> list[Translation]:
        """Translate ``lines``, numbered from ``first_line_no``; lines up to ``attention_n`` are
        decoded with attention and plotted. Raises ConfigError as ``translate_sentences``."""
        n_att = 0
        if self.plot is not None:
            n_att = max(0, min(len(lines), self.attention_n - first_line_no + 1))
        head = self._translate(lines[:n_att], first_line_no, need_attention=True) if n_att else []
        if head and self.plot is not None:
            self.plot(head, first_line_no)
        # jsonl aligns every line with the attention the search returns
        jsonl = self.output_format == "jsonl"
        att = jsonl and self.align_layer is None and has_attention(self.model)
        tail = self._translate(lines[n_att:], first_line_no + n_att, att)
        self.report.add(head + tail)
        return head + tail

    def _translate(self, lines, first_line_no: int, need_attention: bool = False):
        return translate_sentences(
            self.model,
            self.tok,
            lines,
            self.cfg,
            self.device,
            n_best=self.n_best,
            need_attention=need_attention,
            progress=self.progress,
            first_line_no=first_line_no,
            batch_tokens=self.batch_tokens,
            source_name=self.source_name,
        )

    def render(self, lines: Sequence[str], first_line_no: int = 1) -> list[str]:
        """Output lines for ``lines`` by ``output_format``: the best translations; TSV rows
        ``line number, score, hypothesis`` (empty fields for a blank line); or ``jsonl_record``'s
        objects."""
        results = self.translate(lines, first_line_no)
        if self.output_format == "jsonl":
            if self.align_layer is not None and has_attention(self.model):
                attach_layer_attention(
                    self.model, results, self.align_layer, self.device, self.cfg.batch_size
                )
            att = has_attention(self.model)
            records = (
                jsonl_record(r, first_line_no + k, self.tok, self.n_best, att)
                for k, r in enumerate(results)
            )
            return [json.dumps(x, ensure_ascii=False, allow_nan=False) for x in records]
        if self.output_format == "text":
            return [r.text for r in results]
        out = []
        for k, r in enumerate(results):
            for h, text in zip(r.hypotheses, r.texts, strict=True):
                out.append(f"{first_line_no + k}\t{h.score:.4f}\t{escape_tsv_field(text)}")
            if not r.hypotheses:
                out.append(f"{first_line_no + k}\t\t")
        return out


class TranslationInterrupted(KeyboardInterrupt):
    """Ctrl-C during ``translate_io``; its message says how many lines were translated and where
    they are (the command prints it and exits 130)."""


def translate_io(tr: LineTranslator, input: str, output: str) -> None:
    """``translate -i INPUT -o OUTPUT`` (``-``: standard input / output): a file is read whole
    first, standard input as lines wait; a file output goes to ``OUTPUT.partial``, renamed to
    OUTPUT when every line is translated.

    Raises:
        TranslationInterrupted: Ctrl-C; the message counts the lines kept.
        DataError: the input is missing, unreadable or not UTF-8.
        ConfigError: as ``LineTranslator.translate``.
        OSError: the output cannot be written (e.g. it is a folder).
    """
    total: int | None = None
    if input == "-":
        windows: Iterable[Sequence[str]] = _stdin_windows(sys.stdin.buffer, tr.cfg.batch_size)
    else:
        lines = read_lines(input)
        total = len(lines)
        windows = (window for _, window in windows_of(lines, tr.cfg.batch_size))
    with _OutputLines(output, total, tr.output_format) as out, _progress(tr, total):
        for window in windows:
            out.write(tr.render(window, out.lines + 1), len(window))


def translate_lines(tr: LineTranslator, lines: Sequence[str]) -> list[Translation]:
    """``lines`` translated window by window as ``translate_io`` translates a file, so ``eval``
    gives ``translate``'s output (sampling included: its draws depend on the batch)."""
    out: list[Translation] = []
    with _progress(tr, len(lines)):
        for start, window in windows_of(lines, tr.cfg.batch_size):
            out += tr.translate(window, start + 1)
    return out


def partial_of(path: str | Path) -> Path | None:
    """Where ``translate`` writes the lines of ``path`` until they are all there (``OUT.partial``
    beside the file a link names), or None for standard output, a device or a FIFO."""
    target = None if is_stdout(path) else replaced_path(path)
    return None if target is None else Path(f"{target}.partial")


class _OutputLines:
    """Where ``translate_io`` writes: standard output for ``-``, else ``path.partial``, renamed
    to ``path`` when done (fsync'ed). ``lines``: the input lines whose output was written."""

    def __init__(self, path: str, total: int | None, fmt: str):
        self.path, self.total, self.format = path, total, fmt
        self.lines = 0
        self.target = None if is_stdout(path) else replaced_path(path)
        self.partial = partial_of(path)  # None: written through (stdout, a device, a FIFO)
        self._raw: IO[bytes] | None = None
        self._file: IO[str] | None = None
        self._made: list[Path] = []  # the folders __enter__ made for the output

    def __enter__(self) -> _OutputLines:
        if self.partial is not None:
            if self.partial.is_dir():
                why = f"is a folder where the lines go before they are renamed to {self.path}"
                raise IsADirectoryError(errno.EISDIR, f"{why}; move it away", str(self.partial))
            self._made = make_folders(self.partial.parent)  # removed if no line is written
        if not is_stdout(self.path):
            try:
                self._raw = open(self.partial or self.path, "wb")  # noqa: SIM115
            except OSError as e:  # name the user's --output, not its .partial
                raise OSError(e.errno, e.strerror, self.path) from None
            self._file = gzip_writer(self._raw, self.path)  # gzip for an output named .gz
        return self

    def write(self, rendered: Sequence[str], n_lines: int) -> None:
        f = self._file or sys.stdout
        with named_errors("standard output" if is_stdout(self.path) else self.path):
            f.write("".join(line + "\n" for line in rendered))
            f.flush()
        self.lines += n_lines

    def __exit__(self, kind, error, tb) -> None:
        with named_errors(self.path):  # closing flushes what a full disk refused, once more
            self._close(kind)
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            raise TranslationInterrupted(self.interrupted()) from None

    def _close(self, kind) -> None:
        f, raw, partial = self._file, self._raw, self.partial
        if f is not None and raw is not None and partial is not None:
            f.close()  # a gzip output's trailer: FILE.gz.partial is whole gzip too
            if kind is None:
                raw.flush()
                os.fsync(raw.fileno())
                raw.close()
                os.replace(partial, self.target)
                fsync_folder(self.target.parent)
                return
            raw.close()
            if self.lines == 0:
                partial.unlink(missing_ok=True)
                remove_empty(self._made)
            elif not issubclass(kind, KeyboardInterrupt):
                log.warning("%s holds the translations of the first %d lines", partial, self.lines)
        elif f is not None and raw is not None:
            f.close()
            raw.close()

    def interrupted(self) -> str:
        """The Ctrl-C message: how far it got, and what holds the lines translated."""
        of = "" if self.total is None else f" of {self.total}"
        noun = "line" if (self.lines if self.total is None else self.total) == 1 else "lines"
        said = f"interrupted after {self.lines}{of} {noun}"
        if self.lines == 0:
            return f"{said}: nothing written"
        where = "standard output" if is_stdout(self.path) else str(self.partial or self.path)
        what = {
            "text": f"the first {counted(self.lines, 'translation')}",
            "nbest": f"the n-best rows of the first {counted(self.lines, 'line')}",
            "jsonl": f"the JSON objects of the first {counted(self.lines, 'line')}",
        }[self.format]
        return f"{said}: {where} holds {what}"


def _stdin_windows(stdin: BinaryIO, batch_size: int) -> Iterator[list[str]]:
    """The lines waiting on ``stdin`` (up to the next of ``window_sizes``), decoded, until end of
    input. Raises DataError for a line that is not UTF-8 (named by its number)."""
    limits = window_sizes(batch_size)
    line_no = 1
    while batch := _waiting_lines(stdin, next(limits)):
        yield [decode_line(b.rstrip(b"\n"), "<stdin>", line_no + k) for k, b in enumerate(batch)]
        line_no += len(batch)


def _waiting_lines(stdin: BinaryIO, limit: int) -> list[bytes]:
    """One line (waiting for it), then up to ``limit`` in all of those already readable."""
    raw = stdin.readline()
    if not raw:
        return []
    batch = [raw]
    while len(batch) < limit and select.select([stdin], [], [], 0)[0]:
        nxt = stdin.readline()
        if not nxt:
            break
        batch.append(nxt)
    return batch


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


@contextmanager
def _progress(tr: LineTranslator, total: int | None) -> Iterator[None]:
    """A progress bar of ``total`` lines on stderr (when it is a terminal) fed through
    ``tr.progress``; nothing for an input of unknown length (standard input)."""
    if total is None:
        yield
        return
    with ProgressBar("translating", total) as bar:
        tr.progress = bar.advance
        try:
            yield
        finally:
            tr.progress = None

"""Line-oriented translation, as ``translate`` does it: a file or standard input in, and for every
input line, in order, one output line (or its N-best rows) out.

Standard input is translated as it arrives: whatever lines are waiting (up to a batch) are
translated and flushed before the next are read, so an interactive session gets each answer while
its input stays open. Lines are read by the same rules as files (``data.text.decode_line``).
"""

from __future__ import annotations

import re
import select
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, BinaryIO

import torch

from seq2seq.atomic import open_output, write_output
from seq2seq.config import DecodeConfig
from seq2seq.console import console
from seq2seq.data.text import decode_line, read_lines
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decoding.translate import Translation, TranslationReport, translate_sentences
from seq2seq.models import Seq2SeqModel

# Called with translations decoded with attention and the input line number of the first.
AttentionSink = Callable[[list[Translation], int], object]

# The n-best TSV's hypothesis field: a backslash, tab, newline or carriage return in it is written
# as \\, \t, \n, \r (the escaping of linear TSV and PostgreSQL's text format), so every row
# has exactly three fields and one line; ``unescape_tsv_field`` gives the hypothesis back.
_TSV_ESCAPE = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_TSV_UNESCAPE = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def escape_tsv_field(text: str) -> str:
    """``text`` as one n-best TSV field: no tab, newline or carriage return, backslashes doubled."""
    return text.translate(_TSV_ESCAPE)


def unescape_tsv_field(field: str) -> str:
    """The text an n-best TSV field holds (``escape_tsv_field`` reversed)."""
    return re.sub(r"\\([\\tnr])", lambda m: _TSV_UNESCAPE[m[1]], field)


@dataclass
class LineTranslator:
    """One model and its settings, applied to numbered runs of input lines.

    Attributes:
        n_best: hypotheses per line; above 1, ``render`` writes TSV rows.
        batch_tokens: batch by padded source tokens instead of ``cfg.batch_size`` sentences.
        attention_n: input lines 1..N are decoded with attention and handed to ``plot``.
        plot: receives those translations (None: nothing is decoded with attention).
        source_name: the input's name in warnings.
        report: counts over everything translated (``TranslationReport.summary``).
    """

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

    def translate(self, lines: Sequence[str], first_line_no: int = 1) -> list[Translation]:
        """Translate ``lines``, numbered from ``first_line_no``; lines up to ``attention_n`` are
        decoded with attention and plotted.

        Raises:
            ConfigError: the decode length limits leave no room within the model's positions.
        """
        n_att = 0
        if self.plot is not None:
            n_att = max(0, min(len(lines), self.attention_n - first_line_no + 1))
        head = self._translate(lines[:n_att], first_line_no, need_attention=True) if n_att else []
        if head and self.plot is not None:
            self.plot(head, first_line_no)
        tail = self._translate(lines[n_att:], first_line_no + n_att)
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
        """Output lines for ``lines``: the best translation of each or, with ``n_best`` > 1, TSV
        rows ``line number, score, hypothesis`` (one row with empty fields for a blank line; the
        hypothesis escaped by ``escape_tsv_field``)."""
        results = self.translate(lines, first_line_no)
        if self.n_best == 1:
            return [r.text for r in results]
        out = []
        for k, r in enumerate(results):
            for h, text in zip(r.hypotheses, r.texts, strict=True):
                out.append(f"{first_line_no + k}\t{h.score:.4f}\t{escape_tsv_field(text)}")
            if not r.hypotheses:
                out.append(f"{first_line_no + k}\t\t")
        return out


def translate_io(tr: LineTranslator, input: str, output: str) -> None:
    """``translate -i INPUT -o OUTPUT``: ``-`` is standard input / output. A file is read whole
    and translated with a progress bar (on a terminal); standard input is streamed. A file output
    is written atomically, so an error half-way leaves nothing behind.

    Raises:
        DataError: the input is missing, unreadable or not UTF-8.
        ConfigError: as ``LineTranslator.translate``.
        OSError: the output cannot be written (e.g. it is a folder).
    """
    if input == "-":
        with open_output(output) as out:
            translate_stream(tr, sys.stdin.buffer, out)
        return
    lines = read_lines(input)
    with _progress(tr, len(lines)):
        rendered = tr.render(lines, 1)
    write_output(output, "".join(line + "\n" for line in rendered))


def translate_stream(tr: LineTranslator, stdin: BinaryIO, out: IO[str]) -> None:
    """Translate whatever lines are waiting on ``stdin`` (up to ``cfg.batch_size``), write and
    flush their output, repeat until end of input.

    Raises:
        DataError: a line is not valid UTF-8 (named by its number).
    """
    line_no = 1
    while batch := _waiting_lines(stdin, tr.cfg.batch_size):
        lines = [decode_line(b.rstrip(b"\n"), "<stdin>", line_no + k) for k, b in enumerate(batch)]
        for text in tr.render(lines, line_no):
            out.write(text + "\n")
        out.flush()
        line_no += len(lines)


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


@contextmanager
def _progress(tr: LineTranslator, total: int) -> Iterator[None]:
    """A progress bar on stderr (when it is a terminal) fed through ``tr.progress``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    columns = (
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    with Progress(
        *columns, console=console, disable=not console.is_terminal, transient=True
    ) as bar:
        task = bar.add_task("translating", total=total)
        tr.progress = lambda n: bar.advance(task, n)
        try:
            yield
        finally:
            tr.progress = None

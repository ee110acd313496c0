"""What a run reports while it trains (rank 0 only): ``train_log.jsonl`` (one JSON line per
applied update, written every ``log_every`` updates, and one per validation), TensorBoard
(``tensorboard/``: the train scalars every ``log_every`` updates; validation scores, sample
translations and the attention heatmap, also ``attention.png``), ``train.log`` (``RunLog``) and
the terminal's ``progress_bar``. A resumed run first drops what a killed run logged past its
checkpoint, so each step appears once."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from logging.handlers import MemoryHandler
from pathlib import Path

import numpy as np
import torch
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from seq2seq.atomic import atomic_write_text
from seq2seq.config import DecodeConfig
from seq2seq.console import console, counted
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decoding.translate import translate_sentences
from seq2seq.evaluation.plots import figure_rgb, translation_figure
from seq2seq.models import Seq2SeqModel

log = logging.getLogger("seq2seq")

TRAIN_SCALARS = {
    "loss": "train/loss",
    "lr": "train/lr",
    "grad_norm": "train/grad_norm",
    "tokens_per_s": "train/target_tokens_per_s",
    "tf_ratio": "train/teacher_forcing_ratio",
}


class Monitor:
    """train_log.jsonl and TensorBoard for one run directory."""

    def __init__(self, run_dir: Path, start_step: int, log_every: int):
        from torch.utils.tensorboard import SummaryWriter

        self.run_dir, self.log_every = run_dir, log_every
        self.log_path = run_dir / "train_log.jsonl"
        if self.log_path.exists():  # drop what a killed run logged past its checkpoint
            keep = []
            for line in self.log_path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:  # a line cut short by a kill
                    continue
                if record.get("step", 0) <= start_step:
                    keep.append(line + "\n")
            atomic_write_text(self.log_path, "".join(keep))
        self._log = open(self.log_path, "a", encoding="utf-8")  # closed by close()
        # purge_step hides events a killed run wrote after its checkpoint.
        self.writer = SummaryWriter(
            str(run_dir / "tensorboard"), purge_step=start_step + 1 if start_step else None
        )

    def _append(self, records: list[dict]) -> None:
        self._log.write("".join(json.dumps(r) + "\n" for r in records))
        self._log.flush()

    def train_steps(self, records: list[dict]) -> None:
        """Log updates, one line each: a record holds step, epoch, loss, grad_norm, tokens, lr,
        tokens_per_s and tf_ratio; those at a multiple of ``log_every`` also go to TensorBoard."""
        self._append(records)
        for record in records:
            step = record["step"]
            if step % self.log_every:
                continue
            for key, tag in TRAIN_SCALARS.items():
                self.writer.add_scalar(tag, record[key], step)
            self.writer.add_scalar("train/ppl", math.exp(min(record["loss"], 50)), step)

    def side_outputs(self, step: int, metrics: dict, draw: Callable[[], np.ndarray | None]) -> None:
        """After a validation: the attention plot (``draw``: an HWC RGB array, e.g.
        ``attention_heatmap`` of the first validation sentence with the run's decode settings) and
        ``metrics`` (loss, ppl, bleu, chrf, samples) to TensorBoard, the scores to train_log.jsonl.
        A failure in either is a warning, never the end of the run."""
        heatmap = None
        try:
            heatmap = draw()
        except Exception as e:
            log.warning("step %d: attention plot skipped: %s", step, _one_line(e))
        try:
            for key in ("loss", "ppl", "bleu", "chrf"):
                if key in metrics:
                    self.writer.add_scalar(f"valid/{key}", metrics[key], step)
            for i, (s, h, r) in enumerate(metrics.get("samples", [])):
                self.writer.add_text(f"valid/sample{i}", f"src: {s}  \nhyp: {h}  \nref: {r}", step)
            if heatmap is not None:
                self.writer.add_image("valid/attention", heatmap, step, dataformats="HWC")
            self.writer.flush()
            scores = {k: v for k, v in metrics.items() if k != "samples"}
            self._append([{"step": step, "valid": scores}])
        except Exception as e:
            log.warning("step %d: validation log or samples skipped: %s", step, _one_line(e))

    def close(self) -> None:
        self._log.close()
        self.writer.close()


class RunLog:
    """``train.log`` for one ``train`` call, a context manager: the ``seq2seq`` logger's INFO
    records are held from its start until ``open`` writes them there (and every later one) or
    ``discard`` (ranks other than 0) drops them; on exit its handlers leave the logger."""

    FORMAT = "%(asctime)s %(levelname)s %(message)s"

    def __init__(self):
        self.logger = logging.getLogger("seq2seq")
        self.held: MemoryHandler | None = MemoryHandler(1_000_000, logging.CRITICAL + 1)
        self.held.setLevel(logging.INFO)
        self.file: logging.FileHandler | None = None

    def __enter__(self) -> RunLog:
        self.logger.addHandler(self.held)
        return self

    def open(self, path: Path) -> None:
        """Append the records so far, and every later one, to ``path`` (created when the first
        line is written)."""
        self.file = logging.FileHandler(path, mode="a", encoding="utf-8", delay=True)
        self.file.setLevel(logging.INFO)
        self.file.setFormatter(logging.Formatter(self.FORMAT, datefmt="%Y-%m-%d %H:%M:%S"))
        self.held.setTarget(self.file)
        self.discard()  # the held records go to the file first
        self.logger.addHandler(self.file)

    def discard(self) -> None:
        if self.held is not None:
            self.logger.removeHandler(self.held)
            self.held.close()  # with a target (``open``): writes the held records there
            self.held = None

    def __exit__(self, *exc) -> None:
        self.discard()
        if self.file is not None:
            self.logger.removeHandler(self.file)
            self.file.close()
            self.file = None


def note_short_update(n_batches: int, update_freq: int, main: bool = True) -> None:
    """Log, once at the start, that an epoch's last update takes fewer than ``update_freq``
    batches: groups of ``update_freq`` batches do not span epochs (see ``TrainConfig``)."""
    if (tail := n_batches % update_freq) and main:
        log.info(
            f"update_freq {update_freq}: an epoch of {counted(n_batches, 'batch', 'batches')} ends "
            f"with an update of {counted(tail, 'batch', 'batches')} (groups do not span epochs)"
        )


def progress_bar(show: bool) -> Progress:
    """The ``train`` progress bar (step of ``max_steps``, time, the last stats); ``show`` False
    (ranks other than 0) draws nothing."""
    bar = (TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    stats = TextColumn("{task.fields[stats]}")
    return Progress(*bar, stats, console=console, disable=not show, transient=False)


def attention_heatmap(
    model: Seq2SeqModel,
    tok: Tokenizer,
    sentence: str,
    device: torch.device | str,
    png: Path | None = None,
    decode: DecodeConfig | None = None,
) -> np.ndarray | None:
    """Greedy-translate ``sentence`` and draw its cross-attention (T, S) with ``plots``, source
    pieces across, output pieces down; written to ``png`` when given. ``decode``: the run's
    settings (length limits, the source cut), greedy; default ``DecodeConfig()``. Returns the
    picture as an (H, W, 3) uint8 RGB array, or None for a model without attention (``rnn``) or
    a sentence that translates to nothing."""
    greedy = (decode or DecodeConfig()).model_copy(update={"beam_size": 1})
    result = translate_sentences(
        model, tok, [sentence], greedy, device, need_attention=True, source_name="attention plot"
    )[0]
    if not result.hypotheses or result.hypotheses[0].attention is None:
        return None
    fig = translation_figure(result, tok)
    if png is not None:
        fig.savefig(png)
    return figure_rgb(fig)


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"

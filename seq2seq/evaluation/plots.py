"""Attention heatmaps, drawn with matplotlib's Agg canvas (no display, no global pyplot state).
Every text is drawn literally (``literal``): a ``$`` in a sentence, piece or name is no math.

Shape notation: T output tokens (rows), S source tokens (columns).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib
import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from seq2seq.data.text import clean_line

# each text made within a function it decorates takes $...$ as it is, not as mathtext (which
# drew $x$ in italics and raised for $x_$): data text is never parsed
literal = matplotlib.rc_context({"text.parse_math": False})

NO_ATTENTION = (
    "--attention-dir: this model has no attention to plot (the rnn bottleneck model has none)"
)


@literal
def translation_figure(result, tok, title: str | None = None) -> Figure:
    """The heatmap of a translation's best hypothesis's (T, S) cross-attention (weights in
    [0, 1]): source pieces across (x), output pieces down (y). Raises ValueError for a model that
    returned no attention (the ``rnn`` bottleneck has none), or pieces that misfit its shape.

    Args:
        result: a ``translate.Translation`` decoded with attention, not blank.
        tok: the ``Tokenizer`` that encoded the source (gives the source and output pieces).
    """
    h = result.hypotheses[0]
    if h.attention is None:
        raise ValueError(NO_ATTENTION)
    att = h.attention.detach().float().cpu().numpy()
    src_pieces = tok.src_pieces(clean_line(result.source))[: att.shape[1]]
    tgt_pieces = tok.tgt_pieces(h.tokens)
    if att.shape != (len(tgt_pieces), len(src_pieces)):
        raise ValueError(
            f"attention of shape {tuple(att.shape)} needs {att.shape[0]} output and "
            f"{att.shape[1]} source labels, got {len(tgt_pieces)} and {len(src_pieces)}"
        )
    size = (min(16.0, 2 + 0.35 * len(src_pieces)), min(16.0, 1.5 + 0.3 * len(tgt_pieces)))
    fig = Figure(figsize=size, dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    image = ax.imshow(att, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(src_pieces)), list(src_pieces), rotation=90, fontsize=8)
    ax.set_yticks(range(len(tgt_pieces)), list(tgt_pieces), fontsize=8)
    ax.set_xlabel("source")
    ax.set_ylabel("output")
    if title:
        ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.04)
    fig.tight_layout()
    return fig


def figure_rgb(fig: Figure) -> np.ndarray:
    """Render a figure to an (H, W, 3) uint8 RGB array (for TensorBoard's ``add_image``)."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


def plot_translations(results, tok, first_line_no: int, directory: str | Path) -> list[Path]:
    """One heatmap per translated line (``translation_figure``), ``<directory>/line<N>.png``;
    ``results[0]`` is input line ``first_line_no``, blank lines are skipped. Raises ValueError as
    ``translation_figure``."""
    paths = []
    for k, r in enumerate(results):
        if not r.hypotheses:
            continue
        title = f"line {first_line_no + k}: {r.text}"
        title = title if len(title) <= 80 else title[:77] + "..."
        path = Path(directory) / f"line{first_line_no + k:05d}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        translation_figure(r, tok, title).savefig(path)
        paths.append(path)
    return paths


def _save(fig: Figure, path: str | Path) -> Path:
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


@literal
def save_by_length_png(
    path: str | Path,
    buckets: Sequence[str],
    panels: dict[str, dict[str, Sequence[float | None]]],
    ylabel: str,
    dashed: Sequence[str] = (),
) -> Path:
    """Score against source length, one line per model and one panel per decoding (the analogue
    of Bahdanau et al. 2015, Figure 2).

    Args:
        buckets: x labels, shortest first (e.g. ``1-10``).
        panels: panel title -> model name -> one score per bucket (None: no sentence there).
        ylabel: the score's name.  dashed: models drawn dashed (the fixed-vector ones).
    """
    fig = Figure(figsize=(1.5 + 5.5 * len(panels), 4.5), dpi=100)
    FigureCanvasAgg(fig)
    x = np.arange(len(buckets))
    for k, (title, series) in enumerate(panels.items()):
        ax = fig.add_subplot(1, len(panels), k + 1)
        for name, ys in series.items():
            y = np.array([np.nan if v is None else v for v in ys], dtype=float)
            ax.plot(x, y, marker="o", linestyle="--" if name in dashed else "-", label=name)
        ax.set_xticks(x, list(buckets))
        ax.set_xlabel("source length (words)")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path)


@literal
def save_attention_panels_png(
    path: str | Path,
    panels: Sequence[tuple[str, torch.Tensor | np.ndarray, Sequence[str], Sequence[str]]],
    max_labels: int = 40,
) -> Path:
    """Several models' cross-attention over the same source, side by side.

    Args:
        panels: (title, (T, S) weights, S source pieces, T output pieces) per model; T may differ.
        max_labels: tick labels are drawn only on axes with at most this many pieces.
    """
    widest = max(len(p[2]) for p in panels)
    tallest = max(len(p[3]) for p in panels)
    side = min(9.0, 2.0 + 0.12 * max(widest, tallest))
    fig = Figure(figsize=(side * len(panels), side + 0.5), dpi=100)
    FigureCanvasAgg(fig)
    for k, (title, attention, src, out) in enumerate(panels):
        att = attention.detach().float().cpu().numpy() if torch.is_tensor(attention) else attention
        ax = fig.add_subplot(1, len(panels), k + 1)
        ax.imshow(att, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
        for labels, set_ticks in ((src, ax.set_xticks), (out, ax.set_yticks)):
            if len(labels) <= max_labels:
                set_ticks(range(len(labels)), list(labels), fontsize=7)
        ax.tick_params(axis="x", labelrotation=90)
        ax.set_xlabel(f"source ({len(src)} pieces)")
        ax.set_ylabel(f"output ({len(out)} pieces)")
        ax.set_title(title, fontsize=9)
    return _save(fig, path)

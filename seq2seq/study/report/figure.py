"""``bleu_by_k.png`` of the Multi30k study: greedy BLEU against k (top row) and retention, BLEU at
k over BLEU at k = 1 (bottom row). One line per model, its seed copies lighter in the same colour;
hollow markers for a model that is not competent (``verdict.competence``), dashed lines for the
fixed-vector ones. Drawn on matplotlib's Agg canvas and written atomically."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from seq2seq.atomic import atomic_write_bytes
from seq2seq.study import verdict
from seq2seq.study.report.common import cell_at, ks, missing

__all__ = ["marker_fill", "plot_by_k", "retention_by_k"]

SEED_ALPHA = 0.35  # seed copies are drawn this opaque, in their base model's colour


def marker_fill(model: dict) -> str:
    """matplotlib's ``fillstyle`` for a model's markers: "full" when it is competent, "none"
    (hollow) when it is not."""
    return "full" if verdict.competence(model)["competent"] else "none"


def _greedy(model: dict) -> list[dict]:
    return ((model.get("decodes") or {}).get("greedy") or {}).get("by_k") or []


def _values(model: dict, k_all: list[int], key: str) -> list[float]:
    cells = _greedy(model)
    out = []
    for k in k_all:
        c = cell_at(cells, k)
        out.append(np.nan if c is None or missing(c.get(key)) else float(c[key]))
    return out


def retention_by_k(model: dict, k_all: list[int]) -> list[float]:
    """Greedy BLEU at each k over BLEU at the first k, in percent (NaN where there is none)."""
    bleu = _values(model, k_all, "bleu")
    base = bleu[0] if bleu else np.nan
    if np.isnan(base) or base == 0:
        return [np.nan] * len(k_all)
    return [100.0 * b / base for b in bleu]


def _top(values: list[float], floor: float) -> float:
    finite = [v for v in values if np.isfinite(v)]
    return max([floor] + finite) * 1.08


def plot_by_k(results: dict, out: str | Path) -> Path:
    """Draw ``out/bleu_by_k.png`` (two rows: greedy BLEU by k, retention by k) and return it."""
    k_all = ks(results)
    x = np.array(k_all, dtype=float)
    fig = Figure(figsize=(10.0, 8.0), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.add_subplot(2, 1, 1), fig.add_subplot(2, 1, 2)
    colour = {}
    for m in results["models"]:
        if not m.get("copy"):
            colour[m["name"]] = f"C{len(colour) % 10}"
    highs, rets = [], []
    for m in results["models"]:
        copy = bool(m.get("copy"))
        fill = marker_fill(m)
        label = "_nolegend_" if copy else m["name"] + ("" if fill == "full" else " (not competent)")
        style = {
            "color": colour.get(m["name"]) or colour.get(m.get("base"), "C7"),
            "marker": "o",
            "fillstyle": fill,
            "linestyle": "-" if m.get("attention") else "--",
            "alpha": SEED_ALPHA if copy else 1.0,
            "linewidth": 1.0 if copy else 1.8,
            "label": label,
        }
        bleu, ret = _values(m, k_all, "bleu"), retention_by_k(m, k_all)
        top.plot(x, bleu, **style)
        bottom.plot(x, ret, **style)
        if not copy:
            low, high = _values(m, k_all, "low"), _values(m, k_all, "high")
            top.fill_between(x, low, high, color=style["color"], alpha=0.12, linewidth=0)
            highs += high
        highs += bleu
        rets += ret
    words = [cell_at(_greedy(results["models"][0]), k) for k in k_all]
    ticks = [
        f"k={k}" + ("" if c is None else f"\n{c['mean_src_words']:.0f} words")
        for k, c in zip(k_all, words, strict=True)
    ]
    top.set_ylim(0, _top(highs, 1.0))
    bottom.set_ylim(0, _top(rets, 100.0))
    bottom.axhline(100.0, color="0.6", linewidth=0.8)
    top.set_title("greedy BLEU by sentences joined (k), 95% intervals shaded", fontsize=10)
    bottom.set_title(f"retention: greedy BLEU at k over BLEU at k = {k_all[0]}", fontsize=10)
    top.set_ylabel("BLEU")
    bottom.set_ylabel(f"% of k = {k_all[0]} BLEU")
    for ax in (top, bottom):
        ax.set_xticks(x, ticks)
        ax.grid(alpha=0.3)
    bottom.set_xlabel("sentences joined (k) and mean source words")
    top.legend(
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        fontsize=8,
        title="hollow: not competent\ndashed: fixed vector\nlighter: seed copies",
        title_fontsize=8,
    )
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    path = Path(out) / "bleu_by_k.png"
    atomic_write_bytes(path, buf.getvalue())
    return path

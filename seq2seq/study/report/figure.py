"""``verdict_by_k.png`` of the Multi30k study: per test set (a row), rho (left, ``study.rho``)
and capped greedy retention (right) against k. One line per model (the mean over its seeds), the
band between its lowest and highest seed; attention models in blue, fixed-vector ones in red;
the controls' equivalence band (the ablation's mean rho +/- ``verdict.MARGIN``) in grey."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from seq2seq.atomic import atomic_write_bytes
from seq2seq.study import verdict
from seq2seq.study.report.common import missing

FIGURE = "verdict_by_k.png"
COLOURS = {
    True: ("tab:blue", "tab:cyan", "tab:purple", "navy"),
    False: ("tab:red", "tab:orange", "darkred", "tab:brown"),
}
MARKERS = ("o", "s", "^", "D", "v", "P")
PANELS = (
    ("rho", "rho: share of the source's information kept"),
    ("capped_retention", "capped greedy BLEU at k over k = 1"),
)


def seed_bands(results: dict, set_name: str, key: str) -> dict[str, dict]:
    """Base model -> {"k", "mean", "low", "high", "attention"} of a per-k statistic (``rho`` or
    ``capped_retention``, ``pairs.model_summary``) over the model's seeds on one set, in percent
    (NaN where undefined; rho is 100 at k = 1 by definition)."""
    summaries = (results.get("sets") or {}).get(set_name, {}).get("models", {})
    out: dict[str, dict] = {}
    for m in results["models"]:
        rows = (summaries.get(m["name"]) or {}).get("by_k") or []
        if not rows:
            continue
        ks = [r["k"] for r in rows]
        vals = [
            100.0
            if key == "rho" and r["k"] == 1
            else (np.nan if missing(r.get(key)) else 100.0 * r[key])
            for r in rows
        ]
        base = m.get("base", m["name"])
        entry = out.setdefault(base, {"k": ks, "runs": [], "attention": bool(m.get("attention"))})
        entry["runs"].append(vals)
    for entry in out.values():
        runs = np.array(entry.pop("runs"), dtype=float)
        seen = ~np.isnan(runs).all(0)  # a k no seed defines stays NaN (numpy would warn)
        for band, f in (("mean", np.nanmean), ("low", np.nanmin), ("high", np.nanmax)):
            entry[band] = np.full(runs.shape[1], np.nan)
            entry[band][seen] = f(runs[:, seen], 0)
        entry["seeds"] = len(runs)
    return out


def plot_by_k(results: dict, out: str | Path) -> Path | None:
    """Draw ``out/verdict_by_k.png`` (one row per scored test set) and return it; None when no
    set has per-model statistics. Names are drawn literally (a ``$`` is no math)."""
    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False}):
        return _plot_by_k(results, out)


def _plot_by_k(results: dict, out: str | Path) -> Path | None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    sets = [s for s, v in (results.get("sets") or {}).items() if v.get("models")]
    if not sets:
        return None
    fig = Figure(figsize=(11.0, 4.2 * len(sets)), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    mains = [m for m in results["models"] if not m.get("copy")]  # not the seed copies
    abl = [m["name"] for m in mains if m.get("role") == "ablation"][:1]
    margin = verdict.MARGIN
    for row, set_name in enumerate(sets):
        for col, (key, title) in enumerate(PANELS):
            ax = fig.add_subplot(len(sets), 2, 2 * row + col + 1)
            bands = seed_bands(results, set_name, key)
            used = {True: 0, False: 0}
            for i, (name, b) in enumerate(sorted(bands.items())):
                x = np.array(b["k"], dtype=float)
                colour = COLOURS[b["attention"]][used[b["attention"]] % 4]
                used[b["attention"]] += 1
                label = f"{name} ({b['seeds']} seed{'s' if b['seeds'] > 1 else ''})"
                ax.plot(
                    x,
                    b["mean"],
                    color=colour,
                    marker=MARKERS[i % len(MARKERS)],
                    linestyle="-" if b["attention"] else "--",
                    label=label,
                )
                ax.fill_between(x, b["low"], b["high"], color=colour, alpha=0.18, linewidth=0)
                if key == "rho" and name in abl and margin is not None:
                    ax.fill_between(
                        x,
                        b["mean"] - 100 * margin,
                        b["mean"] + 100 * margin,
                        color="0.5",
                        alpha=0.15,
                        linewidth=0,
                        label=f"controls' band: ablation +/- {margin:g}",
                    )
            ax.axhline(100.0, color="0.6", linewidth=0.8)
            ax.set_title(f"{set_name}: {title}", fontsize=10)
            ax.set_xlabel("captions joined (k)")
            ax.set_ylabel("%")
            ax.grid(alpha=0.3)
            if bands:
                ax.set_xticks(np.array(next(iter(bands.values()))["k"], dtype=float))
            if row == 0 and col == 1:
                ax.legend(
                    loc="upper left",
                    bbox_to_anchor=(1.02, 1.0),
                    fontsize=8,
                    title="blue: attention, red: fixed vector\nband: lowest to highest seed",
                    title_fontsize=8,
                )
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    path = Path(out) / FIGURE
    atomic_write_bytes(path, buf.getvalue())
    return path

"""Rule v3's report (``study.verdict_v3``; ``study.judge`` computes and writes it): ``verdict.md``,
``verdict.json`` and ``verdict_v3_by_k.png`` beside the per-line files of a study folder.

    python -m seq2seq.study.judge verdict docs/results/study/multi30k   (make study-verdict)

The first line is the verdict with its contrast; then the rule, the judged cells, the controls,
the dry run on the data seen, rho by k and by caption position, the setup, and rules v1 and v2
(the folder's results.json) as the exploratory section.
"""

from __future__ import annotations

import io
from pathlib import Path

from seq2seq.atomic import atomic_write_bytes
from seq2seq.study import verdict_v3 as v3
from seq2seq.study.report.common import interval, num, pct, points, table

FIGURE = "verdict_v3_by_k.png"
LIMIT = (
    "Joined captions test how much of a long input a fixed vector can carry on monotone, "
    "caption-by-caption inputs; they are not Figure 2's long natural sentences, whose "
    "reordering and long-range dependencies this study does not test."
)


def verdict_line(r: dict) -> str:
    """The verdict sentence with its contrast (README and docs/results quote it)."""
    j = r["judged"]
    if not r["chosen"]["feasible"]:
        return "No verdict: " + "; ".join(r["chosen"]["problems"]) + "; nothing was judged."
    if j is None:
        return (
            f"Not judged yet: rule v3 is not frozen (DELTA {r['delta']:.2f} and MARGIN "
            f"{r['margin']:.2f} proposed from the data seen)."
        )
    if len(j["heads"]) < len(v3.JUDGED_SEEDS):
        held = all(c["kind"] == "holds" for d in r["dry_run"].values() for c in d["controls"])
        return (
            f"Not judged yet: rule v3 is frozen (DELTA {r['delta']:.2f}, MARGIN "
            f"{r['margin']:.2f}; its dry run on seeds 1-6 held {'every' if held else 'not every'}"
            f" control), and {len(j['heads'])} of {len(v3.JUDGED_SEEDS)} headline cells on "
            f"{v3.JUDGED_SET} are scored (make study-confirm)."
        )
    words = j["overall"]["words"]
    heads = [h["rho"]["difference"] for h in j["heads"]]
    fixed = [c["interval"]["difference"] for c in j["controls"] if c["role"] == "negative"]
    if heads and fixed:
        words += (
            f" On {v3.JUDGED_SET}, attention's rho difference ranges {points(min(heads))} to "
            f"{points(max(heads))} points over all {len(heads)} seeds, excluded ones included; the"
            f" fixed-vector designs differ by {points(min(fixed))} to {points(max(fixed))} among "
            f"themselves (point estimates; DELTA {100 * r['delta']:g} points)."
        )
    return words


def rule_text(r: dict) -> str:
    f, c = r["frozen"], r["chosen"]
    when = "not frozen yet"
    if f["delta"] is not None:
        when = f"frozen in commit {f['commit']}" if f["commit"] else "frozen"
    shares = ", ".join(f"{s}: {num(p, 2)}%" for s, p in r["cap"]["train_share"].items())
    return (
        f"**Rule v3** ({when}; `seq2seq/study/verdict_v3.py`, whose docstring states it whole). "
        f"Statistic: rho at k = {v3.K_RULE}, paired bootstrap over the joined lines, "
        f"{v3.N_BOOTSTRAP} resamples. DELTA = {r['delta']:.2f}, MARGIN = {r['margin']:.2f}: "
        f"{c['why']}. A headline cell ({' vs '.join(v3.HEADLINE)}) passes when rho's 95% lower "
        f"bound is above DELTA and the capped retention difference's is above 0, fails when "
        "neither, makes no claim when they disagree, and is excluded and named when a model's "
        f"k = 1 greedy length ratio lies outside [0.9, 1.1] (the plateau gain is reported, not a "
        f"gate); fewer than {v3.MIN_COMPETENT} competent cells is no conclusion. Length cap slack "
        f"{v3.CAP_SLACK:g} (training references over the cap, by slack: {shares}). Negative "
        f"controls: every pair of {', '.join(v3.FIXED_VECTOR)} at each judged seed, holding when "
        "the 90% interval lies inside +/-DELTA; null controls: every seed pair of every design, "
        f"inside +/-MARGIN. Judged: {v3.JUDGED_SET} x seeds "
        f"{', '.join(map(str, v3.JUDGED_SEEDS))} only (sha256 "
        f"{', '.join(f'{k} {h[:12]}' for k, h in f['sha256'].items()) or 'fixed at the freeze'}"
        "). It reproduces when every competent cell passes, the 95% t-interval over their seeds "
        "is above DELTA and every control holds; it does not reproduce when the controls hold and "
        "that bound is not above DELTA; otherwise no conclusion. Pre-registered beside it: "
        f"whether the headline difference grows from k = {v3.K_GROWTH} to k = {v3.K_RULE}."
    )


def heads_table(rows) -> list[str]:
    out = []
    for h in rows:
        ratios = " / ".join(num(x, 3) for x in h["ratios"].values())
        short = " / ".join(
            f"{num(s['k1'])}%, {num(s[f'k{v3.K_RULE}'])}%" for s in h["shortened"].values()
        )
        rho = h["rho"]
        out.append(
            [
                str(h["seed"]),
                f"{pct(rho['a'])} / {pct(rho['b'])}",
                interval(rho),
                interval(h["capped"]),
                ratios,
                short,
                h.get("kind", "-"),
            ]
        )
    head = ["seed", "rho attention / ablation", "difference, points [95%]"]
    head += ["capped retention difference, points [95%]", "k = 1 length ratio, attention / "]
    head[-1] += "ablation"
    head += ["cap shortened, % of k = 1, k = 4 lines: attention / ablation"]
    return table(head + ["kind"], out)


def controls_table(rows) -> list[str]:
    body = [[c["role"], c["name"], interval(c["interval"]), c.get("kind", "-")] for c in rows]
    return table(["control", "pair", "rho difference, points [90%]", "kind"], body)


def judged_section(r: dict) -> list[str]:
    j = r["judged"]
    if j is None:
        return ["Nothing judged yet (rule v3 not frozen, or infeasible)."]
    return [
        f"### Judged cells: {v3.JUDGED_SET}",
        "",
        *heads_table(j["heads"]),
        "",
        j["overall"]["words"],
        "",
        growth_line(j),
        "",
        f"### Controls: {v3.JUDGED_SET}",
        "",
        *controls_table(j["controls"]),
    ]


def growth_line(d: dict) -> str:
    """The pre-registered side question's line, or that nothing is scored yet."""
    g, what = d["growth"], "Growth with k (pre-registered, not part of the verdict)"
    if not g["cells"]:
        return f"{what}: not scored yet."
    return f"{what}: {'grows' if g['grows'] else 'does not grow'}; {g['words']} points."


def dry_run_section(r: dict) -> list[str]:
    lines = [
        "## Dry run on the data seen (seeds 1-6, each set judged apart)",
        "",
        "The rule applied to every cell scored before the freeze, as it will be to the judged "
        "set: every control must hold here, or the rule could not pass anywhere.",
    ]
    for name, d in r["dry_run"].items():
        held = sum(c["kind"] == "holds" for c in d["controls"])
        lines += ["", f"### {name}", "", *heads_table(d["heads"]), ""]
        lines += ["Rule v3 on this set (data seen: a dry run, not the judgement): "]
        lines[-1] += d["overall"]["words"]
        lines += ["", growth_line(d), ""]
        lines += [f"Controls: {held} of {len(d['controls'])} hold.", ""]
        lines += controls_table(d["controls"])
    return lines


def tables_section(r: dict) -> list[str]:
    lines = ["## Rho by k and by caption position", ""]
    lines.append(
        "Per design, the mean over its seeds [lowest, highest], in percent. rho at k = 1 is "
        f"100 by definition. By position: rho of the captions at each place of the k = "
        f"{v3.K_RULE} join (1 first), what a bottleneck keeps of each."
    )
    return lines + rho_tables(r["tables"])


def rho_tables(tables: dict) -> list[str]:
    """Per set, rho by k and by caption position of each design (``rho.rho_spread``), in %."""
    lines = []
    for name, designs in tables.items():
        k_max = max(int(k) for t in designs.values() for k in t["by_k"])
        for key, label in (
            ("by_k", "rho by k"),
            ("by_position", f"rho by caption position, k = {k_max}"),
        ):
            cols = range(1, k_max + 1)
            body = [
                [d, ", ".join(map(str, t["seeds"]))]
                + [_spread(t[key].get(c) or t[key].get(str(c))) for c in cols]
                for d, t in designs.items()
            ]
            lines += ["", f"**{label}, {name}**", ""]
            lines += table(["design", "seeds", *(f"{k}" for k in cols)], body)
    return lines


def _spread(s: dict | None) -> str:
    if not s:
        return "-"
    return f"{num(100 * s['mean'])} [{num(100 * s['low'])}, {num(100 * s['high'])}]"


def runs_section(r: dict) -> list[str]:
    body = [
        [
            x["design"],
            str(x["seed"]),
            num(x["minutes"].get("single")),
            num(x["minutes"].get("joined")),
            num(x["plateau_gain"], 2),
        ]
        for x in r["runs"]
    ]
    head = ["design", "seed", "single stage, min", "joined stage, min", "plateau gain, BLEU"]
    return [
        "**Runs.** Minutes of training per stage (one torch thread, two runs at a time, on the "
        "2-core machine of the session that trained them: machines differ between sessions), "
        "and the single stage's plateau gain: validation BLEU at its last point minus that at "
        "75% of it (reported, not a gate).",
        "",
        *table(head, body),
    ]


def setup_section(r: dict, old: dict | None) -> list[str]:
    lines = ["## Setup", ""]
    for name, s in r["sets"].items():
        role = "judged once, after the freeze" if name == v3.JUDGED_SET else "seen before it"
        by_k = s["lines_by_k"]
        joined = ", ".join(f"{n} of k = {k}" for k, n in by_k.items() if k != "1")
        lines.append(
            f"- {name}: {s['origin']}, {by_k['1']} captions; lines of k captions joined: "
            f"{joined} (the rule reads k = {v3.K_RULE}; {role})."
        )
    if old:
        lines += ["", f"Recipe: {old['recipe']['words']}. Tokenizer: shared, sha256 "]
        lines[-1] += f"{old['tokenizer']['sha256'][:12]}."
    lines += ["", f"Limit: {LIMIT}", "", *runs_section(r)]
    return lines


def exploratory_section(old: dict | None) -> list[str]:
    lines = ["## Exploratory: rules v1 and v2", ""]
    if not old or "verdict" not in old:
        return lines + ["No results.json of rules v1 and v2 in this folder."]
    v = old.get("verdict") or {}
    lines.append(f"Rule v2 (report.md): {v['confirmation']['overall']['words']}")
    lines += ["", f"Rule v1: {v['exploratory']['v1']['overall']['words']}"]
    lines += ["", "Both are kept in [report.md](report.md) with every table; v3 replaced them."]
    return lines


def question(r: dict) -> str:
    """What the study asks and what its terms mean, in words, for a first reader."""
    return (
        "**The question.** Does an encoder-decoder with attention keep more of a long input than "
        "one that passes the source through a single fixed vector, as Bahdanau et al. (2015, "
        "*Neural Machine Translation by Jointly Learning to Align and Translate*, Figure 2) found "
        "for long sentences? Here k test captions (k = 1 to 4) are joined into one input line. "
        "**rho** at k is the share of what a caption's own source tells the model (its "
        "teacher-forced loss with a wrong source minus that with its own) that is left when the "
        "caption sits inside a line of k captions: 100% at k = 1, lower the more the long input "
        "costs. A **headline cell** is attention (bahdanau) against its fixed-vector ablation "
        "(rnnencdec) at one seed; it needs a rho difference above DELTA = "
        f"{r['delta']:.2f} ({100 * r['delta']:g} points). **Controls**: the fixed-vector "
        "designs against each other must differ by less than DELTA (negative controls), and two "
        f"seeds of one design by less than MARGIN = {r['margin']:.2f} "
        f"({100 * r['margin']:g} points; null controls). A cell is **competent** when both "
        "models' greedy output length at k = 1 is within 10% of the references'."
    )


def render(r: dict, old: dict | None = None) -> str:
    """verdict.md from ``judge.build``'s results (and the folder's v2 results.json)."""
    lines = ["# Bottleneck versus attention on Multi30k: rule v3", ""]
    lines += [f"**Verdict.** {verdict_line(r)}", "", question(r), "", f"![rho by k]({FIGURE})", ""]
    lines += ["## Rule v3", "", rule_text(r), "", "## Judged", "", *judged_section(r), ""]
    lines += [*dry_run_section(r), "", *tables_section(r), "", *setup_section(r, old), ""]
    lines += exploratory_section(old)
    return "\n".join(lines) + "\n"


def plot_by_k(tables: dict, path: Path, delta: float | None, reference: str | None) -> None:
    """rho against k per design of ``tables`` (set -> design -> ``rho.rho_spread`` and seeds;
    seeds as bands) on each set, and each design's rho minus that of the design ``reference``
    (none without it), with the +/-``delta`` band where one is given; text literal."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    sets = list(tables)
    designs = list(dict.fromkeys([*v3.FAMILIES, *(d for t in tables.values() for d in t)]))
    cycle = ("tab:blue", "tab:red", "tab:orange", "tab:brown", "tab:green", "tab:purple")
    colours = {d: cycle[i % len(cycle)] for i, d in enumerate(designs)}
    with matplotlib.rc_context({"text.parse_math": False}):
        fig = Figure(figsize=(11.0, 3.8 * len(sets)), dpi=90, layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(len(sets), 2, squeeze=False)
        for row, name in zip(axes, sets, strict=True):
            designs = tables[name]
            ref = designs.get(reference, {}).get("by_k", {})
            for design, t in designs.items():
                ks = sorted(int(k) for k in t["by_k"])
                s = [t["by_k"].get(k) or t["by_k"][str(k)] for k in ks]
                mean = [100 * x["mean"] for x in s]
                low, high = [100 * x["low"] for x in s], [100 * x["high"] for x in s]
                row[0].plot(ks, mean, marker="o", color=colours[design], label=design)
                row[0].fill_between(ks, low, high, color=colours[design], alpha=0.2)
                if ref:
                    base = [100 * (ref.get(k) or ref[str(k)])["mean"] for k in ks]
                    diff = [m - b for m, b in zip(mean, base, strict=True)]
                    row[1].plot(ks, diff, marker="o", color=colours[design], label=design)
            if delta is not None:
                band = 100 * delta
                row[1].axhspan(-band, band, color="grey", alpha=0.2, label=f"+/-DELTA ({band:g})")
            row[0].set(title=f"rho by k, {name}", xlabel="captions joined (k)", ylabel="rho (%)")
            row[1].set(
                title=f"rho minus {reference}'s, {name}" if ref else f"no ablation run, {name}",
                xlabel="captions joined (k)",
                ylabel="points",
            )
            for ax in row:
                ax.set_xticks(ks)  # k is a count of captions: no fractional ticks
                if ax.get_legend_handles_labels()[0]:  # an empty panel has nothing to name
                    ax.legend(fontsize=8)
                ax.grid(alpha=0.3)
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
    atomic_write_bytes(path, buf.getvalue())

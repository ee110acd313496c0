"""The later sections of the Multi30k report (``multi30k_report``): seeds, NLL by k, the zero-shot
length-generalisation control, the synthetic reversal and BLEU by length in words."""

from __future__ import annotations

import statistics

from seq2seq.study.multi30k_cells import (
    SHORT,
    by_name,
    cell,
    ci_text,
    diff_text,
    ks,
    name_cell,
    runs,
    verdict,
)
from seq2seq.study.report import _num, _row

MIN_BUCKET = 100  # by-length buckets with fewer lines are merged into the previous one


def seed_groups(results: dict) -> dict[str, list[dict]]:
    """Main run name -> [the main run, its seed runs by seed], for main runs with seed runs."""
    groups: dict[str, list[dict]] = {}
    for s in runs(results, "seed"):
        groups.setdefault(s["base"], []).append(s)
    return {
        base: [m for m in [by_name(results, base)] if m] + sorted(ss, key=lambda s: s["seed"])
        for base, ss in groups.items()
    }


def seed_stats(results: dict, group: list[dict]) -> dict[str, tuple[float, float | None]]:
    """(mean, sample std or None for one run) of k = 1 BLEU, k = K BLEU (greedy) and the greedy
    retention (a fraction) over the runs of ``group``; a run without a value (a retention over
    a k = 1 BLEU of 0) is left out, and (None, None) when none has one."""
    k1, kk = ks(results)[0], ks(results)[-1]
    values = {
        "k1": [cell(m, "greedy", k1)["bleu"] for m in group],
        "kk": [cell(m, "greedy", kk)["bleu"] for m in group],
        "retention": [m["retention"]["greedy"] for m in group],
    }
    out = {}
    for key, xs in values.items():
        xs = [x for x in xs if x is not None]
        out[key] = (
            statistics.mean(xs) if xs else None,
            statistics.stdev(xs) if len(xs) > 1 else None,
        )
    return out


def _ms(pair: tuple[float, float | None], scale: float = 1.0) -> str:
    mean, std = pair
    if mean is None:
        return "-"
    return f"{scale * mean:.2f} ± {_num(None if std is None else scale * std, 2)}"


def seeds_section(results: dict) -> tuple[list[str], str]:
    """Mean and std over seeds per model, then each attention seed against the reference run of
    the same seed; returns the lines and a one-line finding."""
    lines = ["## Seeds", ""]
    groups = seed_groups(results)
    if not groups:
        return lines + ["Not run (make study-seeds).", ""], "seeds not run"
    k1, kk = ks(results)[0], ks(results)[-1]
    head = ["model", "seeds", f"k={k1} BLEU mean ± std", f"k={kk} BLEU mean ± std"]
    head.append("kept (greedy) % mean ± std")
    lines += [
        "The main run counts as one seed; std is the sample standard deviation (n - 1).",
        "",
        _row(head),
        _row(["---"] * len(head)),
    ]
    for base, group in groups.items():
        st = seed_stats(results, group)
        seeds = ", ".join(str(m["seed"]) for m in group)
        row = [base, seeds, _ms(st["k1"]), _ms(st["kk"]), _ms(st["retention"], 100)]
        lines.append(_row(row))
    ref = results["reference"]
    refs = {m["seed"]: m for m in groups.get(ref) or [m for m in [by_name(results, ref)] if m]}
    attend = [b for b, g in groups.items() if b != ref and g[0]["attention"] and g[0]["learned"]]
    main_ref = by_name(results, ref)
    if main_ref is None or not main_ref["learned"]:
        text = f"No verdict by seed: the reference {ref} is not rated or not run."
        return lines + ["", text, ""], text
    if not attend:
        text = "No rated attention model has seed runs."
        return lines + ["", text, ""], text
    head = ["model", "seed", "run", "reference run", "difference greedy [95%]", "verdict"]
    head.append("NLL rise minus the reference's [95%]")
    lines += ["", _row(head), _row(["---"] * len(head))]
    sentences = []
    for base in attend:
        failed, nll_less = [], []
        for m in groups[base]:
            r = refs.get(m["seed"])
            if r is None:
                failed.append(f"{m['seed']} (no reference run with that seed)")
                lines.append(_row([base, str(m["seed"]), m["name"], "-", "-", "not tested", "-"]))
                continue
            nv = m.get("nll_vs_reference")
            if nv and nv.get("high") is not None and nv["high"] < 0:
                nll_less.append(str(m["seed"]))
            kind, words = verdict(results, m, r)
            if kind != "reproduces":
                failed.append(f"{m['seed']} ({words})")
            v = (m.get("vs_reference") or {}).get("greedy")
            cells = [base, str(m["seed"]), m["name"], r["name"], diff_text(v)]
            cells += [SHORT[kind], nll_diff_text(nv)]
            lines.append(_row(cells))
        if failed:
            sentences.append(f"{base}: not reproduced for seed " + "; seed ".join(failed) + ".")
        else:
            sentences.append(f"{base}: Figure 2 is reproduced for every seed.")
        if not any((m.get("nll_vs_reference") or {}).get("low") is not None for m in groups[base]):
            continue  # results from before the NLL interval: nothing to say
        if len(nll_less) == len(groups[base]):
            sentences.append(
                f"{base}: without search, its NLL rises less than the reference's for every "
                "seed (intervals below 0)."
            )
        else:
            sentences.append(
                f"{base}: without search, its NLL rises less than the reference's (interval "
                f"below 0) for seed {', '.join(nll_less) or 'none'} of "
                f"{', '.join(str(m['seed']) for m in groups[base])}."
            )
    lines += ["", "Each attention seed against the reference's run with the same seed:", ""]
    lines += [f"- {s}" for s in sentences]
    return lines + [""], " ".join(sentences)


def nll_section(results: dict) -> tuple[list[str], str]:
    """Teacher-forced NLL per target token by k (no search, so no length penalty or early end),
    which model's rises most from k = 1 to k = K, and for each rated attention model its rise
    minus the reference's with the paired interval. Returns the lines and the search-free
    finding (one sentence, "" when there is nothing to compare)."""
    ms = [m for m in runs(results, "main") if m.get("nll_by_k")]
    k1, kk = ks(results)[0], ks(results)[-1]
    ref = results.get("reference")
    head = ["model"] + [f"k={k}" for k in ks(results)] + [f"rise k={k1} to k={kk}"]
    head += [f"rise minus {ref}'s [95%]"]
    lines = [
        "## Search-free evidence: NLL per target token by k",
        "",
        "Teacher-forced negative log-likelihood of the references, in nats per target token: no "
        "search, so neither the beam nor an early end can move it, and no cell is refused for "
        f"short outputs. The last column: an attention model's rise minus {ref}'s, with the 95% "
        "paired-bootstrap interval over the same units as the retention (each joined line with "
        "its own sentences); below 0, its loss grows less on long inputs than the fixed-vector "
        "reference's.",
        "",
        _row(head),
        _row(["---"] * len(head)),
    ]
    rise = {}
    for m in ms:
        nll = {r["k"]: r["nll"] for r in m["nll_by_k"]}
        if m["learned"]:
            rise[m["name"]] = (nll[k1], nll[kk])
        lines.append(
            _row(
                [name_cell(m)]
                + [_num(nll.get(k), 3) for k in ks(results)]
                + [f"{nll[kk] - nll[k1]:+.3f}", nll_diff_text(m.get("nll_vs_reference"))]
            )
        )
    if not rise:
        return lines + ["", "No rated model has its NLL recorded.", ""], ""
    order = sorted(rise, key=lambda n: rise[n][1] - rise[n][0])
    top, low = order[-1], order[0]
    text = (
        f"Of the rated models, {top}'s NLL rises the most from k = {k1} to k = {kk} "
        f"({rise[top][0]:.3f} -> {rise[top][1]:.3f} nats, {rise[top][1] - rise[top][0]:+.3f})"
    )
    if low != top:
        text += (
            f", {low}'s the least ({rise[low][0]:.3f} -> {rise[low][1]:.3f}, "
            f"{rise[low][1] - rise[low][0]:+.3f})"
        )
    finding = nll_finding(results, ms)
    return lines + ["", text + ".", *(["", finding] if finding else []), ""], finding


def nll_diff_text(v: dict | None) -> str:
    """A rise difference in nats per token with its interval, or "-"."""
    if not v or v.get("low") is None:
        return "-"
    return f"{v['difference']:+.3f} [{v['low']:+.3f}, {v['high']:+.3f}]"


def nll_finding(results: dict, ms: list[dict]) -> str:
    """Which rated attention models' NLL rises less than the reference's (interval below 0),
    more (above 0), or not distinguishably; "" when no rated attention model has the interval."""
    ref = results.get("reference")
    k1, kk = ks(results)[0], ks(results)[-1]
    compared = [
        m
        for m in ms
        if m["attention"]
        and m["learned"]
        and (m.get("nll_vs_reference") or {}).get("low") is not None
    ]
    if not compared:
        return ""
    less = [m["name"] for m in compared if m["nll_vs_reference"]["high"] < 0]
    more = [m["name"] for m in compared if m["nll_vs_reference"]["low"] > 0]
    tied = [m["name"] for m in compared if m["name"] not in less + more]
    text = (
        f"Without search: the NLL of {len(less)} of {len(compared)} rated attention models "
        f"rises less than {ref}'s from k = {k1} to k = {kk} (interval below 0)"
        + (f": {', '.join(less)}" if less else "")
        + "."
    )
    if more:
        text += f" It rises more for {', '.join(more)} (interval above 0)."
    if tied:
        text += f" No difference is shown for {', '.join(tied)} (interval through 0)."
    ref_m = by_name(results, ref) if ref else None
    if not (ref_m and ref_m.get("nll_by_k")):
        return text
    fixed = [
        m
        for m in ms
        if not m["attention"] and m["learned"] and m["name"] != ref and m.get("nll_by_k")
    ]
    for m in fixed:  # a smaller rise is not attention's alone when a fixed-vector model has it
        nll, rn = ({r["k"]: r["nll"] for r in x["nll_by_k"]} for x in (m, ref_m))
        if nll[kk] - nll[k1] < rn[kk] - rn[k1]:
            text += (
                f" The fixed-vector {m['name']}'s rises less than {ref}'s too "
                f"({nll[kk] - nll[k1]:+.3f} against {rn[kk] - rn[k1]:+.3f} nats, from a k = "
                f"{k1} loss of {nll[k1]:.3f} against {rn[k1]:.3f}): a smaller rise alone does "
                "not single out attention"
                + (
                    f"; a model that already scores the references worse at k = {k1} has less "
                    "to lose."
                    if nll[k1] > rn[k1]
                    else "."
                )
            )
    return text


def control_section(results: dict) -> list[str]:
    """Models trained on single pairs only, decoded on joined inputs: a zero-shot control."""
    lines = ["## Length generalisation (a separate, zero-shot control)", ""]
    controls = runs(results, "control")
    if not controls:
        return lines + ["Not run.", ""]
    kk = ks(results)[-1]
    head = ["model", "family"] + [f"k={k} greedy BLEU" for k in ks(results)]
    head += [f"ratio k={kk}", f"early % k={kk}"]
    lines += [_row(head), _row(["---"] * len(head))]
    for m in controls:
        row = [m["name"], m["family"]] + [ci_text(cell(m, "greedy", k)) for k in ks(results)]
        c = cell(m, "greedy", kk)
        lines.append(_row(row + [f"{c['ratio']:.2f}", _num(c["early"])]))
    at_k = "; ".join(
        f"{m['name']} {cell(m, 'greedy', kk)['ratio']:.2f} of the reference length, "
        f"{_num(cell(m, 'greedy', kk)['early'])}% ended early"
        for m in controls
    )
    return lines + [
        "",
        f"These models were trained on single pairs only (train_concat_k = "
        f"{controls[0].get('train_concat_k', 1)}) and are not part of the bottleneck verdict: a "
        "model never trained on long inputs tends to end early, a length-generalisation failure, "
        f"not the bottleneck. At k = {kk}: {at_k}.",
        "",
    ]


def reverse_section(results: dict) -> list[str]:
    """The synthetic reversal (``make study-quick``), rendered by ``reverse_report``, or not run."""
    lines = ["## Synthetic reversal", ""]
    rev = results.get("reverse")
    if not rev:
        return lines + ["Not run (make study-quick).", ""]
    from seq2seq.study import reverse_report

    rev = {**rev, "findings": {**(rev.get("findings") or {})}}
    rev["findings"].setdefault("plateau", reverse_report.plateau_finding(rev))
    body = reverse_report.reverse_section(rev)
    return lines + ["#" + x if x.startswith("## ") else x for x in body] + [""]


def merge_tails(rows: list[dict], min_n: int = MIN_BUCKET) -> list[dict]:
    """Merge each by-length bucket with fewer than ``min_n`` lines into the previous one (the first
    into the next), so every bucket holds at least ``min_n`` unless all of them together do not.

    A merged bucket's label spans its parts (``21-30`` + ``31-40`` + ``41+`` -> ``21+``), its
    lines are summed and its ``bleu`` is the line-weighted mean of its parts' (corpus BLEU does not
    add up, so this is an approximation); ``merged`` says how many buckets it holds.
    """
    out: list[dict] = []
    for r in (dict(r, merged=1) for r in rows if r["sentences"]):
        if out and (r["sentences"] < min_n or out[-1]["sentences"] < min_n):
            out[-1] = _join(out[-1], r)
        else:
            out.append(r)
    return out


def _join(a: dict, b: dict) -> dict:
    n = a["sentences"] + b["sentences"]
    scores = [(x["bleu"], x["sentences"]) for x in (a, b) if x.get("bleu") is not None]
    end = b["bucket"] if b["bucket"].endswith("+") else "-" + b["bucket"].split("-")[-1]
    start = a["bucket"].split("-")[0].rstrip("+")
    return {
        "bucket": start + ("+" if end.endswith("+") else end),
        "sentences": n,
        "bleu": sum(y * w for y, w in scores) / sum(w for _, w in scores) if scores else None,
        "merged": a["merged"] + b["merged"],
    }


def by_length_section(results: dict) -> list[str]:
    """Greedy BLEU per source-length bucket (words) over every line, buckets of fewer than
    MIN_BUCKET lines merged into the previous one."""
    lines = ["## By length in words (greedy, all lines)", ""]
    table = {
        m["name"]: merge_tails(m["decodes"]["greedy"]["by_length"]) for m in runs(results, "main")
    }
    first = next(iter(table.values()), [])
    keep = [i for i, r in enumerate(first) if r["sentences"] >= MIN_BUCKET]
    if not keep:
        return lines + [f"No bucket holds {MIN_BUCKET} lines.", ""]
    head = ["model"] + [
        f"{first[i]['bucket']} (n={first[i]['sentences']}){'*' if first[i]['merged'] > 1 else ''}"
        for i in keep
    ]
    lines += [_row(head), _row(["---"] * len(head))]
    lines += [_row([n] + [_num(rows[i]["bleu"]) for i in keep]) for n, rows in table.items()]
    if any(first[i]["merged"] > 1 for i in keep):
        lines += [
            "",
            f"\\* merged from buckets of fewer than {MIN_BUCKET} lines: the line-weighted mean of "
            "their BLEU, not a corpus BLEU.",
        ]
    return lines + [""]


__all__ = [
    "by_length_section",
    "control_section",
    "merge_tails",
    "nll_section",
    "reverse_section",
    "seed_groups",
    "seed_stats",
    "seeds_section",
]

"""The Multi30k study's report (``write_report`` on ``study: multi30k``): rule v2's verdict first,
then the rule, the confirmation cells and controls, the maturity table, the exploratory seeds with
rule v1 beside rule v2 (a control that passes rule v1 making it invalid), the figure,
byte-identical renders from results.json, and the synthetic reverse report left as it was. A
fixture of numbers, rated by ``study.verdict`` and ``study.verdict_v1``; nothing is trained."""

from __future__ import annotations

import copy
import json
import math
import warnings

import pytest

from seq2seq.serve.runs import load_study
from seq2seq.study import verdict, verdict_v1
from seq2seq.study.report import write_report
from seq2seq.study.report.figure import FIGURE, seed_bands
from seq2seq.study.report.multi30k import LIMIT, report_markdown

LINES = {1: 1000, 2: 500, 3: 333, 4: 250}
WORDS = {1: 12.1, 2: 24.3, 3: 36.4, 4: 48.6}
ABLATION, HEADLINE = "study-rnnencdec", "study-bahdanau"
BAD_WORDS = ("refused", "not reproduced")


def cells(bleus, ratio1=1.0, ratio=0.98):
    return [
        {
            "k": k,
            "sentences": LINES[k],
            "bleu": b,
            "low": round(b - 1.3, 1),
            "high": round(b + 1.3, 1),
            "bp": round(min(1.0, math.exp(1 - 1 / (ratio1 if k == 1 else ratio))), 3),
            "bleu_nobp": b + 0.5,
            "ratio": ratio1 if k == 1 else ratio,
            "cut": 6.0 if k == 4 and ratio > 1.1 else 0.0,
            "early": 0.4,
            "mean_src_words": WORDS[k],
        }
        for k, b in zip(LINES, bleus, strict=True)
    ]


def curve(gain_last_quarter=0.3, steps=1200, points=12):
    """[[step, BLEU]]: rises, then gains ``gain_last_quarter`` over the last quarter."""
    every = steps // points
    out = []
    for i in range(1, points + 1):
        step = i * every
        bleu = 20.0 + 10.0 * min(1.0, step / (0.75 * steps))
        if step > 0.75 * steps:
            bleu += gain_last_quarter * (step - 0.75 * steps) / (0.25 * steps)
        out.append([step, round(bleu, 2)])
    return out


def entry(name, model, bleus, *, role, seed=1, copy_of=None, ratio1=1.0, gain=0.3, ratio=0.98):
    stage = {"target_tokens": 600_000, "train_seconds": 900.0, "target_tokens_per_s": 666.7}
    length = [("1-10", 400), ("11-20", 300), ("21-30", 152), ("31-40", 45), ("41+", 2)]
    by_length = [
        {"bucket": b, "sentences": n, "bleu": bleus[0] - 2 * i} for i, (b, n) in enumerate(length)
    ]
    greedy = {"bleu": bleus[0], "chrf": 55.0, "by_k": cells(bleus, ratio1, ratio)}
    beam = {"bleu": bleus[0] + 1, "chrf": 56.0, "by_k": cells([b + 1 for b in bleus], ratio1)}
    return {
        "name": name,
        "base": copy_of or name,
        "seed": seed,
        "copy": copy_of is not None,
        "role": role,
        "model": model,
        "family": model,
        "attention": model not in ("rnn", "rnnencdec"),
        "parameters": 8_517_184,
        "steps": 1800,
        "target_tokens": 1_200_000,
        "train_seconds": 1800.0,
        "decodes": {
            "greedy": {**greedy, "by_length": by_length, "seconds": 20.0},
            "beam": {**beam, "by_length": by_length, "seconds": 60.0, "beam": 5, "alpha": 1.0},
        },
        "alpha_sweep": [{"alpha": a, "bleu": 30.0, "ratio": 0.95} for a in (0.6, 1.0, 1.4)],
        "nll_by_k": [
            {"k": k, "nll": 2.0 + 0.1 * k, "tokens": 14_000, "sentences": LINES[k]} for k in LINES
        ],
        "caption_gap": {
            str(k): {"gap": 0.02 * k, "low": 0.01 * k, "high": 0.03 * k, "units": LINES[k]}
            for k in (2, 3, 4)
        },
        "stages": {
            "single": {**stage, "steps": 1200, "lr": 0.001, "schedule": "inverse_sqrt"}
            | {"reused": False, "valid_curve": curve(gain)},
            "joined": {**stage, "steps": 600, "lr": 0.0005, "schedule": "cosine"}
            | {"reused": False, "valid_curve": [[600, 28.0]]},
        },
        "zero_shot": {"greedy": {"by_k": cells([b - 1 for b in bleus[:1]] + [5.0, 3.0, 2.0])}},
        "score_seconds": 120.0,
    }


def stats(difference, low, high, nobp, a=0.8):
    return {
        "retention": {"a": a, "b": a - difference, "difference": difference, "low": low}
        | {"high": high, "mean": difference, "units": 250},
        "retention_nobp": {"a": a, "b": a - nobp, "difference": nobp},
    }


REPRODUCES = stats(0.20, 0.12, 0.28, 0.15)
THROUGH_ZERO = stats(0.01, -0.05, 0.07, 0.0)
DELTA, MARGIN = 0.1, 0.05


def ci(difference, low, high, a=0.9):
    return {"a": a, "b": a - difference, "difference": difference, "low": low, "high": high}


V2_PASS = {
    "rho": ci(0.4, 0.3, 0.5),
    "capped": ci(0.3, 0.2, 0.4),
    "equivalence": ci(0.4, 0.32, 0.48),
}
QUIET = ci(0.01, -0.02, 0.03)


def study(pair_stats=None, reverse=None, **changes):
    """The results dict of a study: ablation, headline, negative rnn, one family and seed copies
    2 and 3 of the pair, rated by ``verdict`` with ``pair_stats`` (role or name -> stats;
    headline pairs reproduce and the controls do not, by default). ``changes``: model name ->
    fields of ``entry`` to change."""
    specs = [
        (ABLATION, "rnnencdec", [30.0, 24.0, 19.0, 15.0], "ablation", 1, None),
        (HEADLINE, "bahdanau", [34.0, 32.0, 30.0, 28.0], "headline", 1, None),
        ("study-rnn", "rnn", [28.0, 22.0, 17.0, 13.0], "negative", 1, None),
        ("study-transformer", "transformer", [36.0, 34.0, 32.0, 30.0], "family", 1, None),
    ]
    for s in (2, 3):
        specs.append((f"{ABLATION}-seed{s}", "rnnencdec", [29.0, 23.5, 18.5, 14.5], "ablation", s))
        specs[-1] += (ABLATION,)
        specs.append((f"{HEADLINE}-seed{s}", "bahdanau", [33.5, 31.0, 29.5, 27.5], "headline", s))
        specs[-1] += (HEADLINE,)
    models = [
        entry(n, mo, b, role=r, seed=s, copy_of=c, **changes.get(n, {}))
        for n, mo, b, r, s, c in specs
    ]
    by = {m["name"]: m for m in models}
    ablation = {1: ABLATION, 2: f"{ABLATION}-seed2", 3: f"{ABLATION}-seed3"}
    pairs = [("headline", HEADLINE, ABLATION)]
    pairs += [("headline", f"{HEADLINE}-seed{s}", ablation[s]) for s in (2, 3)]
    pairs += [("negative", "study-rnn", ABLATION), ("family", "study-transformer", ABLATION)]
    pairs += [("null", ablation[2], ABLATION)]
    given = pair_stats or {}
    rows = []
    for role, a, b in pairs:
        default = REPRODUCES if role in ("headline", "family") else THROUGH_ZERO
        pair = copy.deepcopy(given.get(a, given.get(role, default)))
        rows.append(verdict_v1.rate_pair(by[a], by[b], pair, role))
    diffs = [r["retention"]["difference"] for r in rows if r["role"] == "headline"]
    seeds = verdict.seed_interval(diffs)
    v1 = {"rows": rows, "seed_interval": seeds, "overall": verdict_v1.overall(rows, seeds)}
    heads, controls = [], []
    for set_name, seed_list in verdict.CONFIRMATION.items():
        for s in seed_list:
            a = by.get(f"{HEADLINE}-seed{s}", by[HEADLINE])
            b = by.get(f"{ABLATION}-seed{s}", by[ABLATION])
            st = copy.deepcopy(given.get("v2", V2_PASS))
            row = {"set": set_name, "seed": s, "role": "headline", "attention": a["name"]}
            row.update(ablation=b["name"], **st, **verdict.rate_seed(a, b, st, DELTA))
            heads.append(row)
        eq = copy.deepcopy(given.get("equivalence", QUIET))
        row = {"set": set_name, "seed": (1, 2), "role": "null", "attention": f"{ABLATION}-seed2"}
        row.update(ablation=ABLATION, equivalence=eq, **verdict.rate_control(eq, MARGIN))
        controls.append(row)
    v2 = {
        "rule": "v2",
        "k": 4,
        "delta": DELTA,
        "margin": MARGIN,
        "why": "chosen by hand for this fixture",
        "confirmation": {
            "heads": heads,
            "controls": controls,
            "overall": verdict.overall(heads, controls, DELTA),
        },
        "exploratory": {"heads": [], "controls": [], "proposal": None, "v1": v1},
    }
    summary = {
        "by_k": [
            {"k": k, "rho": None if k == 1 else 1 - 0.1 * k, "rho_low": None if k == 1 else 0.5}
            | {"rho_high": None if k == 1 else 0.95, "capped_bleu": 30.0 - k}
            | {"capped_retention": 1 - 0.05 * (k - 1), "shortened": 2.0 * k}
            for k in LINES
        ]
    }
    return {
        "study": "multi30k",
        "recipe": {"single_steps": 1200, "joined_steps": 600, "concat_k": 4}
        | {"single_validations": 12, "words": "1200 updates on single pairs, then 600 joined"},
        "machine": "x86_64 CPU, 2 cores, torch 2.13.0+cpu",
        "wall_seconds": 5400.0,
        "tokenizer": {"type": "sentencepiece", "vocab_size": 8000, "sha256": "ab" * 32},
        "eval_set": {
            "origin": "multi30k test_2016_flickr",
            "sentences_per_k": {str(k): n for k, n in LINES.items()},
            "valid_lines": 1014,
        },
        "buckets": [10, 20, 30, 40, 50, 60],
        "beam": {"size": 5, "alphas": [0.6, 1.0, 1.4]},
        "seeds": [1, 2, 3],
        "models": models,
        "length_ratio": 1.07,
        "sets": {
            name: {"origin": name, "models": {m["name"]: copy.deepcopy(summary) for m in models}}
            for name in verdict.CONFIRMATION
        },
        "verdict": v2,
        "reverse": reverse,
    }


def section(text: str, head: str) -> str:
    return text.split(head, 1)[1].split("\n## ", 1)[0]


def test_the_verdict_comes_first_then_rule_v2_before_any_table():
    res = study()
    text, findings = report_markdown(res)
    overall = res["verdict"]["confirmation"]["overall"]
    assert overall["kind"] == "reproduces" and overall["words"].startswith("Reproduced:")
    assert findings["verdict"] == overall["words"] and findings["kind"] == "reproduces"
    assert text.splitlines()[2] == f"**Verdict.** {overall['words']}"
    rule, first_table = text.index("**Rule v2**"), text.index("\n| ")
    assert rule < first_table
    paragraph = text[rule:].split("\n", 1)[0]
    assert "exceeds DELTA = 0.1" in paragraph and "inside +/-0.05" in paragraph
    assert "r = 1.070" in paragraph and "ceil(1.1 x source words x r)" in paragraph
    assert (
        "(i + N/2) mod N" in paragraph and "test_2017_flickr: seeds 1, 2, 3, 4, 5, 6" in paragraph
    )
    v1 = text[text.index("**Rule v1.**") :].split("\n", 1)[0]
    assert "[0.9, 1.1]" in v1 and "less than 1 BLEU point" in v1
    assert "paired-bootstrap 95% interval above 0" in v1
    assert "without its brevity penalty is at least 0" in v1
    assert "the rule is invalid and no conclusion is drawn" in v1 and "over 5% of lines" in v1
    heads = [
        "# Bottleneck versus attention on Multi30k",
        "**Verdict.**",
        "## Rule v2",
        "## Confirmation",
        f"]({FIGURE})",
        "## Rho and capped retention by k",
        "## Setup",
        "## Maturity (the competence gate)",
        "## Exploratory: the seeds that chose the margins",
        "### Rule v1 on the same seeds",
        "## Per-cell diagnostics (greedy)",
        "## Tuned beam by k (beam 5)",
        "## Per-caption NLL in context",
        "## NLL by k",
        "## Zero-shot control",
        "## Synthetic reversal",
        LIMIT,
        "## Against Bahdanau et al. (2015, Figure 2)",
    ]
    at = [text.index(h) for h in heads]
    assert at == sorted(at)
    assert "captions of about 12 source words each" in text and "up to 30 or 50 words" in text
    assert "## Synthetic reversal\n\nNot run (make study-quick)." in text
    for bad in BAD_WORDS:
        assert bad not in text.lower()


def test_the_confirmation_table_the_controls_and_the_seed_interval():
    res = study()
    conf = section(report_markdown(res)[0], "## Confirmation")
    rows = [x for x in conf.splitlines() if x.startswith("| test_")]
    assert len(rows) == 9 + 2  # 3 + 6 headline cells, one null control per set
    assert rows[0] == (
        "| test_2016_flickr | 4 | 90.0% / 50.0% | +40.0 [+30.0, +50.0] | 90.0% / 60.0% "
        "| +30.0 [+20.0, +40.0] | passes |"
    )
    assert "| test_2017_flickr | null | 1 vs 2 | study-rnnencdec-seed2 vs study-rnnencdec " in conf
    assert "| +1.0 [-2.0, +3.0] | holds |" in conf
    assert "Over seeds 1, 2, 3, 4, 5, 6: mean rho difference +40.0 points" in conf
    models = section(report_markdown(res)[0], "## Rho and capped retention by k")
    assert "### test_2017_flickr" in models
    assert f"| {HEADLINE} | 80.0% [50.0%, 95.0%] | 70.0% [50.0%, 95.0%] |" in models


def test_a_broken_control_or_a_weak_effect_decides_the_verdict():
    res = study({"equivalence": ci(0.08, 0.02, 0.12)})
    words = res["verdict"]["confirmation"]["overall"]["words"]
    assert words.startswith("No conclusion: 2 of 2 controls fall outside the equivalence margin")
    assert "| +8.0 [+2.0, +12.0] | breaks |" in report_markdown(res)[0]
    weak = {"rho": ci(0.02, -0.05, 0.09), "capped": ci(-0.01, -0.05, 0.03)}
    res = study({"v2": weak})
    overall = res["verdict"]["confirmation"]["overall"]
    assert overall["kind"] == "does not reproduce" and overall["words"].startswith("Not reproduced")
    assert "0 of 9 cells pass" in overall["words"]


def test_setup_states_the_recipe_and_each_stages_minutes_and_tokens():
    text = report_markdown(study())[0]
    setup = section(text, "## Setup")
    assert "Recipe: 1200 updates on single pairs, then 600 joined." in setup
    assert "took 90 minutes" in setup and "k = 4: 250 lines, 48.6 source words" in setup
    row = next(x for x in setup.splitlines() if x.startswith(f"| {HEADLINE} |"))
    assert (
        row == f"| {HEADLINE} | headline | 1 | 1200 | 600,000 | 15.0 | 600 | 600,000 | 15.0 | 2.0 |"
    )


def test_the_maturity_table_lists_every_entry_with_its_gate():
    res = study(**{"study-transformer": {"ratio1": 0.82}, "study-rnn": {"gain": 2.5}})
    text = report_markdown(res)[0]
    table = section(text, "## Maturity (the competence gate)")
    for m in res["models"]:
        assert f"| {m['name']} | " in table
    row = next(x for x in table.splitlines() if x.startswith(f"| {HEADLINE}-seed2 |"))
    assert "| headline (seed 2 copy) |" in row and row.endswith("| 1.000 | yes |")
    assert "| 30.0 @900, 30.1 @1000, 30.2 @1100, 30.3 @1200 | +0.30 |" in table
    row = next(x for x in table.splitlines() if x.startswith("| study-transformer |"))
    assert "| not competent: k = 1 greedy length ratio 0.820 outside [0.9, 1.1] |" in row
    assert "| 35.0 [33.7, 36.3] | 36.0 [34.7, 37.3] | 0.820 |" in row  # zero-shot, fine-tuned
    row = next(x for x in table.splitlines() if x.startswith("| study-rnn |"))
    assert "| +2.50 |" in row and "not competent: validation BLEU still rising" in row
    family = section(text, "### Rule v1 on the same seeds")
    assert "| not competent |" in family and "study-transformer vs study-rnnencdec" in family
    for bad in BAD_WORDS:
        assert bad not in text.lower()


def test_the_maturity_table_shows_the_zoo_bleu_of_each_config_that_has_one():
    res = study()
    for m in res["models"]:
        m["config"] = f"configs/study/multi30k/{m['model']}.yaml"
        m["config"] = f"{m['name']} (seed copy)" if m["copy"] else m["config"]
    plain = section(report_markdown(res)[0], "## Maturity (the competence gate)")
    assert "zoo BLEU" not in plain  # no --zoo: no column
    res["zoo"] = {"bahdanau": {"bleu": 32.32, "chrf": 51.26, "step": 857, "file": "x"}}
    table = section(report_markdown(res)[0], "## Maturity (the competence gate)")
    assert "| fine-tuned k=1 greedy BLEU | zoo BLEU | k=1 ratio |" in table
    assert "trained 20 minutes by make zoo" in table
    row = next(x for x in table.splitlines() if x.startswith(f"| {HEADLINE} |"))
    assert "| 34.0 [32.7, 35.3] | 32.3 | 1.000 | yes |" in row
    row = next(x for x in table.splitlines() if x.startswith(f"| {HEADLINE}-seed2 |"))
    assert "| 32.3 | 1.000 | yes |" in row  # a seed copy: its base config's zoo run
    row = next(x for x in table.splitlines() if x.startswith(f"| {ABLATION} |"))
    assert "| - | 1.000 | yes |" in row  # no zoo run of rnnencdec


def test_a_headline_model_that_is_not_competent_gives_no_conclusion():
    res = study(**{f"{HEADLINE}-seed3": {"ratio1": 1.2}})
    text, findings = report_markdown(res)
    assert res["verdict"]["confirmation"]["overall"]["kind"] == "no conclusion"
    assert findings["verdict"].startswith("No conclusion: 1 of 9 confirmation cells have a model")
    assert f"{HEADLINE}-seed3 not competent" in findings["verdict"]
    assert f"**Verdict.** {findings['verdict']}" in text
    assert "No comparison with Figure 2 is drawn: rule v2 reached no conclusion." in text
    v1 = res["verdict"]["exploratory"]["v1"]["overall"]
    assert v1["kind"] == "not competent" and f"Rule v1: {v1['words']}" in text
    for bad in BAD_WORDS:
        assert bad not in text.lower()


def test_rule_v1_s_table_has_one_row_per_pair_and_the_seed_line():
    res = study({f"{HEADLINE}-seed3": stats(0.10, 0.02, 0.18, 0.05)})
    text = report_markdown(res)[0]
    table = section(text, "### Rule v1 on the same seeds")
    rows = [x for x in table.splitlines() if x.startswith("| ") and "---" not in x][1:]
    v1 = res["verdict"]["exploratory"]["v1"]
    assert len(rows) == len(v1["rows"]) == 6
    assert rows[0] == (
        f"| headline | {HEADLINE} vs {ABLATION} | 80.0% / 60.0% | +20.0 [+12.0, +28.0] | +15.0 "
        "| reproduces |"
    )
    assert "| null | study-rnnencdec-seed2 vs study-rnnencdec |" in table
    assert "| no difference shown |" in table
    s = v1["seed_interval"]
    assert s["n"] == 3 and s["low"] > 0
    assert (
        f"Seeds: mean greedy retention difference {100 * s['mean']:+.1f} points, 95% t-interval "
        f"[{100 * s['low']:+.1f}, {100 * s['high']:+.1f}] over n = 3 seeds." in table
    )


def test_a_control_that_reproduces_makes_rule_v1_invalid():
    for role in ("negative", "null"):
        res = study({role: REPRODUCES})
        text = report_markdown(res)[0]
        assert res["verdict"]["exploratory"]["v1"]["overall"]["kind"] == "rule invalid"
        table = section(text, "### Rule v1 on the same seeds")
        assert "Rule v1: The rule is invalid, so no conclusion is drawn" in table
        assert "| reproduces (a control: the rule is invalid) |" in table
        assert f"- The {role} control reproduces: the rule is invalid here" in table


def test_diagnostics_flag_length_and_never_take_a_cell_out():
    res = study(**{"study-rnn": {"ratio": 1.2}, "study-transformer": {"ratio": 0.85}})
    text = report_markdown(res)[0]
    diag = section(text, "## Per-cell diagnostics (greedy)")
    assert "| study-rnn | 4 | 250 | 13.0 [11.7, 14.3] | 13.5 | 1.200 | 6.0 | 0.4 | long, cut |" in (
        diag
    )
    assert (
        "| study-transformer | 2 | 500 | 34.0 [32.7, 35.3] | 34.5 | 0.850 | 0.0 | 0.4 | short |"
        in (diag)
    )
    assert f"| {HEADLINE} | 1 | 1,000 | 34.0 [32.7, 35.3] | 34.5 | 1.000 | 0.0 | 0.4 | - |" in diag
    beam = section(text, "## Tuned beam by k (beam 5)")
    assert f"| {HEADLINE} | 1 | 35.0 [33.7, 36.3] | 33.0 [31.7, 34.3] |" in beam
    nll = section(text, "## Per-caption NLL in context")
    assert f"| {HEADLINE} | +0.040 [+0.020, +0.060] | +0.060 [+0.030, +0.090] |" in nll
    assert f"| {HEADLINE} | 2.100 | 2.200 | 2.300 | 2.400 | +0.300 |" in section(
        text, "## NLL by k"
    )
    shot = section(text, "## Zero-shot control")
    assert (
        "reported apart from the verdict" in shot and f"| {HEADLINE} | 33.0 [31.7, 34.3] |" in shot
    )


def test_write_report_draws_the_figure_and_renders_twice_the_same(tmp_path):
    res = study(**{"study-transformer": {"ratio1": 0.82}})
    v1_rows = res["verdict"]["exploratory"]["v1"]["rows"]
    v1_rows[3]["retention"]["difference"] = float("nan")  # a k = 1 BLEU of 0
    write_report(res, tmp_path / "a")
    png = (tmp_path / "a" / FIGURE).read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    assert not list((tmp_path / "a").glob(".*.tmp"))
    raw = (tmp_path / "a" / "results.json").read_text()
    assert "NaN" not in raw
    saved = json.loads(raw)
    assert saved["findings"]["verdict"] == res["verdict"]["confirmation"]["overall"]["words"]
    assert res["findings"] == saved["findings"]
    write_report(copy.deepcopy(saved), tmp_path / "b")
    first = (tmp_path / "a" / "report.md").read_bytes()
    assert (tmp_path / "b" / "report.md").read_bytes() == first
    assert report_markdown(saved)[0].encode() == first
    # the web page still reads the Multi30k schema
    page = load_study(tmp_path / "a")
    assert page["modes"] == ["greedy", "beam"] and page["budget"] is None
    assert page["findings"] == saved["findings"]["verdict"]


def test_the_figure_draws_each_model_over_its_seeds():
    res = study()
    rnnencdec = res["sets"]["test_2016_flickr"]["models"][f"{ABLATION}-seed2"]["by_k"]
    rnnencdec[3] = {**rnnencdec[3], "rho": 0.3}  # one seed lower at k = 4
    bands = seed_bands(res, "test_2016_flickr", "rho")
    assert set(bands) == {ABLATION, HEADLINE, "study-rnn", "study-transformer"}
    b = bands[ABLATION]
    assert b["seeds"] == 3 and not b["attention"] and bands[HEADLINE]["attention"]
    assert list(b["mean"][:3]) == [100.0, 80.0, 70.0]  # rho is 100% at k = 1
    assert b["low"][3] == 30.0 and b["high"][3] == 60.0
    assert b["mean"][3] == (60.0 + 30.0 + 60.0) / 3
    capped = seed_bands(res, "test_2017_flickr", "capped_retention")[HEADLINE]
    assert list(capped["mean"]) == pytest.approx([100.0, 95.0, 90.0, 85.0])


def test_a_k_no_seed_defines_stays_undefined_without_numpys_warnings():
    """compare at its smallest settings ended with numpy's RuntimeWarnings (Mean of empty slice,
    All-NaN slice encountered): rho is undefined at k = 4 for every seed of a model."""
    res = study()
    models = res["sets"]["test_2016_flickr"]["models"]
    for name in (ABLATION, f"{ABLATION}-seed2", f"{ABLATION}-seed3"):
        models[name]["by_k"][3] = {**models[name]["by_k"][3], "rho": None}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = seed_bands(res, "test_2016_flickr", "rho")[ABLATION]
    assert list(b["mean"][:3]) == [100.0, 80.0, 70.0]
    assert math.isnan(b["mean"][3]) and math.isnan(b["low"][3]) and math.isnan(b["high"][3])


def reverse_results():
    """A results dict as ``compare --alignment reverse`` writes it."""
    buckets = [("1-10", 40), ("11-20", 40), ("21-30", 20)]

    def one(name, attention, exact):
        rows = [
            {"bucket": b, "sentences": n, "bleu": e, "exact": e}
            for (b, n), e in zip(buckets, exact, strict=True)
        ]
        k1 = {"k": 1, "sentences": 100, "bleu": exact[0], "exact": exact[0], "mean_src_words": 15}
        dec = {"seconds": 1.0, "bleu": exact[0], "chrf": 50.0, "exact": exact[0]}
        align = None
        if attention:
            align = {
                "accuracy": 91.0,
                "best_head": None,
                "commonest_offset": 0,
                "offsets": {"+0": 91.0},
                "by_length": [
                    {"bucket": b, "positions": 10 * n, "accuracy": 91.0} for b, n in buckets
                ],
            }
        plateau = {"bucket": "1-10", "best_exact": exact[0], "best_step": 600, "verdict": "trained"}
        return {
            **{"name": name, "model": name, "family": name, "attention": attention},
            **{"concat_k": 1, "max_src_words": None, "parameters": 100_000, "steps": 600},
            **{"train_seconds": 60.0, "target_tokens_per_s": 80.0, "stopped": "max_steps"},
            "decodes": {"greedy": {**dec, "by_length": rows, "by_k": [k1]}},
            "alignment": align,
            "plateau": {**plateau, "curve": [{"step": 600, "exact": exact[0]}]},
        }

    return {
        "budget": "600 updates per model",
        "machine": "x86_64 CPU",
        "tokenizer": {"type": "word", "vocab_size": 24},
        "eval_set": {"origin": "reverse", "sentences": 100, "test_sentences": 100, "concat_k": 1},
        "exact_match": True,
        "alignment": "reverse",
        "attention_maps": [],
        "models": [
            one("rnn", False, [97.0, 40.0, 10.0]),
            one("bahdanau", True, [100.0, 99.0, 97.0]),
        ],
    }


def test_the_reverse_section_and_the_synthetic_report_are_left_as_they_were(tmp_path):
    res = study(reverse=reverse_results())
    write_report(res, tmp_path / "m30k")
    text = (tmp_path / "m30k" / "report.md").read_text()
    assert "### Reverse table (greedy" in text and "| bahdanau | 100,000 |" in text
    assert not (tmp_path / "m30k" / "bleu_by_length.png").exists()

    rev = copy.deepcopy(reverse_results())
    write_report(rev, tmp_path / "rev")
    text = (tmp_path / "rev" / "report.md").read_text()
    assert text.startswith("# Bottleneck versus attention\n")
    assert "## Reverse table (greedy" in text and "## Exact match (%) by source length" in text
    assert rev["findings"]["plateau"] in text
    assert (tmp_path / "rev" / "bleu_by_length.png").exists()
    assert (tmp_path / "rev" / "exact_by_length.png").exists()
    assert not (tmp_path / "rev" / FIGURE).exists()
    assert json.loads((tmp_path / "rev" / "results.json").read_text())["alignment"] == "reverse"

"""The Multi30k study's report (``write_report`` on ``study: multi30k``): rated models, BLEU by k
with intervals, the verdict's wording rule, seeds, merged length buckets, the plot, and the
synthetic reverse report left as it was. A fixture of numbers; nothing is trained."""

from __future__ import annotations

import copy
import json
import math
import statistics

from seq2seq.study.multi30k_report import report_markdown
from seq2seq.study.multi30k_sections import merge_tails
from seq2seq.study.report import write_report
from seq2seq.study.stats import claim_refusal

LINES = {1: 1000, 2: 500, 3: 333, 4: 250}
WORDS = {1: 12.1, 2: 24.3, 3: 36.4, 4: 48.6}
REF = "study-rnn-context"


def by_k(bleus, ratio4=0.98, early4=0.4):
    cells = []
    for k, b in zip(LINES, bleus, strict=True):
        ratio, early = (ratio4, early4) if k == 4 else (0.98, 0.4)
        cells.append(
            {
                "k": k,
                "sentences": LINES[k],
                "bleu": b,
                "low": round(b - 1.3, 1),
                "high": round(b + 1.3, 1),
                "bp": round(min(1.0, math.exp(1 - 1 / ratio)), 3),
                "ratio": ratio,
                "cut": 0.0,
                "early": early,
                "mean_src_words": WORDS[k],
                "refusal": claim_refusal(LINES[k], ratio),
            }
        )
    return cells


def decode(bleus, seconds, **kw):
    length = [("1-10", 400), ("11-20", 300), ("21-30", 152), ("31-40", 45), ("41+", 2)]
    return {
        "seconds": seconds,
        "bleu": bleus[0],
        "chrf": 55.0,
        "by_k": by_k(bleus, **kw),
        "by_length": [
            {"bucket": b, "sentences": n, "bleu": bleus[0] - 2 * i}
            for i, (b, n) in enumerate(length)
        ],
    }


def vs(a, b, low, high):
    return {"a": a, "b": b, "difference": a - b, "low": low, "high": high, "mean": a - b}


def run(
    name, family, bleus, *, role="main", seed=1, base=None, learned=True, low=None, nll=None, **kw
):
    """One run; ``low`` (with high = low + 0.25) sets its paired retention difference against
    the reference; None for the reference and the fixed-vector models. ``nll``: (low, high) of
    the paired interval on its NLL rise minus the reference's, or None."""
    attention = family not in ("rnn", "rnn_context")
    kept = bleus[3] / bleus[0]
    beam = [b + 1.0 for b in bleus]
    cmp = nll_cmp = None
    if nll is not None:
        nll_cmp = {"a": 0.3, "b": 0.9, "difference": sum(nll) / 2, "low": nll[0], "high": nll[1]}
    if low is not None:
        cmp = {
            label: {**vs(kept, 14.0 / 32.0, low, low + 0.25), "units": 250}
            for label in ("greedy", "beam")
        }
    return {
        "name": name,
        "model": family.split("_")[0] if family != "rnn_context" else "rnn",
        "family": family,
        "attention": attention,
        "role": role,
        "base": base or name,
        "seed": seed,
        "train_concat_k": 1 if role == "control" else 4,
        "parameters": 8_517_184,
        "train_seconds": 700.1,
        "target_tokens": 1_000_123,
        "steps": 420,
        "best_step": 400,
        "decodes": {
            "greedy": decode(bleus, 20.1, **kw),
            "beam": {**decode(beam, 60.0, **kw), "beam": 5, "alpha": 1.0},
        },
        "alpha_sweep": [
            {"alpha": a, "bleu": bleus[0] - abs(a - 1.0), "ratio": 0.9 + a / 10}
            for a in (0.6, 1.0, 1.4)
        ],
        "nll_by_k": [
            {"k": k, "nll": 2.1 + (k - 1) * 0.8 * (1 - kept), "tokens": 14000} for k in LINES
        ],
        "retention": {"greedy": kept, "beam": beam[3] / beam[0]},
        "vs_reference": cmp,
        "nll_vs_reference": nll_cmp,
        "learned": learned,
    }


def study(reverse=None):
    models = [
        run("study-rnn", "rnn", [30.0, 24.0, 19.0, 15.0]),
        run(REF, "rnn_context", [32.0, 25.0, 19.5, 14.0]),
        run("study-bahdanau", "bahdanau", [36.0, 34.0, 32.0, 30.0], low=0.30, nll=(-0.7, -0.5)),
        run("study-luong-dot", "luong_dot", [34.0, 31.0, 29.0, 27.0], low=0.20, nll=(-0.4, 0.1)),
        run("study-luong-general", "luong_general", [33.0, 29.0, 26.0, 20.0], low=-0.05),
        run("study-luong-concat", "luong_concat", [5.0, 3.0, 2.0, 1.5], learned=False, low=0.1),
        run("study-transformer", "transformer", [38.0, 35.0, 33.0, 31.0], low=0.25, nll=(0.1, 0.3)),
        run(
            "study-bahdanau-single",
            "bahdanau",
            [35.0, 22.0, 14.0, 9.0],
            role="control",
            ratio4=0.62,
            early4=41.0,
        ),  # fmt: skip
        run(
            "study-transformer-single",
            "transformer",
            [37.0, 20.0, 11.0, 6.0],
            role="control",
            ratio4=0.55,
            early4=52.0,
        ),  # fmt: skip
    ]
    for s, (a, r) in {2: ([35.0, 33.0, 31.5, 29.0], [31.0, 24.0, 19.0, 13.0]),
                      3: ([36.5, 34.0, 32.5, 30.5], [32.5, 26.0, 20.0, 15.0])}.items():  # fmt: skip
        models.append(run(f"{REF}-s{s}", "rnn_context", r, role="seed", seed=s, base=REF))
        models.append(
            run(
                f"study-bahdanau-s{s}",
                "bahdanau",
                a,
                role="seed",
                seed=s,
                base="study-bahdanau",
                low=0.2 + 0.05 * s,
                nll=(-0.5, -0.3) if s == 2 else (-0.2, 0.1),
            )  # fmt: skip
        )
    return {
        "study": "multi30k",
        "budget": "1000000 target tokens per model",
        "budget_tokens": 1_000_000,
        "machine": "x86_64 CPU, 2 cores (torch threads: 2), torch 2.13.0+cpu",
        "wall_seconds": 5400.0,
        "design": "From scratch at equal target tokens, one shared tokenizer.",
        "tokenizer": {"type": "sentencepiece", "vocab_size": 8000},
        "eval_set": {
            "origin": "multi30k test_2016_flickr",
            "sentences_per_k": {str(k): n for k, n in LINES.items()},
        },
        "reference": REF,
        "beam": {"size": 5, "alphas": [0.6, 1.0, 1.4]},
        "models": models,
        "reverse": reverse,
    }


def model(res, name):
    return next(m for m in res["models"] if m["name"] == name)


def report(res) -> str:
    return report_markdown(res)[0]


def test_rated_models_show_intervals_and_an_unrated_one_is_named_with_its_reason():
    res = study()
    text = report(res)
    table = text.split("## BLEU by k (greedy, the headline)")[1].split("## BLEU by k (beam")[0]
    for m in res["models"]:
        if m["role"] == "main" and m["learned"]:
            c = m["decodes"]["greedy"]["by_k"]
            row = next(x for x in table.splitlines() if x.startswith(f"| {m['name']} |"))
            for cell in c:
                assert f"{cell['bleu']:.1f} [{cell['low']:.1f}, {cell['high']:.1f}]" in row
            assert f"| {100 * m['retention']['greedy']:.0f}% |" in row
    assert (
        "- study-luong-concat: not rated: its k = 1 BLEU 5.0 is below 25% of the best (38.0)."
        in text
    )
    assert "| study-luong-concat (not rated) |" in table
    assert "study-bahdanau-single" not in table  # controls are not headline rows
    assert "alpha 0.6: BLEU (ratio)" in text


def test_reproduces_only_when_the_interval_lies_above_zero():
    above, through = study(), study()
    model(through, "study-bahdanau")["vs_reference"]["greedy"]["low"] = -0.02
    assert "- study-bahdanau: Reproduces Figure 2" in report(above)
    text = report(through)
    assert "- study-bahdanau: Reproduces Figure 2" not in text
    assert "- study-bahdanau: no difference shown (the interval includes 0)" in text
    assert "- study-transformer: Reproduces Figure 2" in text  # the others are untouched


def test_a_refused_greedy_cell_hands_the_verdict_to_the_tuned_beam_or_withholds_it():
    for name in ("study-bahdanau", REF):
        res = study()
        greedy4 = model(res, name)["decodes"]["greedy"]["by_k"][3]
        greedy4["ratio"], greedy4["refusal"] = 0.85, claim_refusal(250, 0.85)
        text = report(res)
        assert "- study-bahdanau: Reproduces Figure 2; greedy" not in text
        assert (
            "- study-bahdanau: Reproduces Figure 2 with the tuned beam (a greedy cell is "
            f"refused: {name} k = 4 (outputs too short (hyp/ref length ratio 0.85" in text
        )
        assert f"- {name}, k = 4: outputs too short (hyp/ref length ratio 0.85" in text
        assert "| reproduces (beam) |" in text
        # the beam's interval decides: through 0, no difference is shown
        model(res, "study-bahdanau")["vs_reference"]["beam"].update(low=-0.1, high=0.2)
        text = report(res)
        assert "- study-bahdanau: no difference shown with the tuned beam (a greedy cell" in text
        assert "For study-bahdanau, study-luong-general the verdict does not come out as" in text
        # both decodings refused: the interval excluding 0 makes no claim
        beam4 = model(res, name)["decodes"]["beam"]["by_k"][3]
        beam4["ratio"], beam4["refusal"] = 0.8, claim_refusal(250, 0.8)
        text = report(res)
        assert "- study-bahdanau: no claim: the greedy interval excludes 0, but a cell it " in text
        assert f"and so is one of the tuned beam's (greedy: {name} k = 4 (outputs too short" in (
            text
        )
        assert f"beam: {name} k = 4 (outputs too short (hyp/ref length ratio 0.80" in text
        assert "| no claim (refused cell) |" in text
    # a ratio under 0.9 is refused even when compare recorded no reason
    res = study()
    for label in ("greedy", "beam"):
        c = model(res, "study-bahdanau")["decodes"][label]["by_k"][3]
        c["ratio"], c["refusal"] = 0.85, None
    text = report(res)
    assert "- study-bahdanau: Reproduces Figure 2" not in text
    assert "For study-bahdanau no claim can be made either way" in text
    assert "study-bahdanau the verdict does not come out" not in text


def test_the_opposite_when_the_interval_lies_below_zero_and_the_overall_sentence():
    res = study()
    text = report(res)
    assert "3 of 4 rated attention models reproduce Figure 2 against study-rnn-context" in text
    assert "For study-luong-general the verdict does not come out as Bahdanau et al. found" in text
    assert "opposite of Figure 2" not in text
    model(res, "study-luong-general")["vs_reference"]["greedy"].update(low=-0.4, high=-0.1)
    assert (
        "- study-luong-general: the opposite of Figure 2: study-luong-general keeps less than "
        "study-rnn-context" in report(res)
    )
    for m in res["models"]:
        if m["vs_reference"]:
            m["vs_reference"]["greedy"].update(low=0.1, high=0.3)
    text = report(res)
    assert "4 of 4 rated attention models" in text and "does not come out" not in text
    model(res, REF)["learned"] = False
    text = report(res)
    assert (
        "No verdict can be drawn: the reference study-rnn-context is not rated: its k = 1" in text
    )
    assert "Reproduces Figure 2" not in text


def test_seed_table_and_whether_the_verdict_holds_for_every_seed():
    res = study()
    text = report(res)
    seeds = text.split("## Seeds")[1].split("## Search-free")[0]
    for base in ("study-bahdanau", REF):
        group = [m for m in res["models"] if m["base"] == base and m["role"] in ("main", "seed")]
        assert len(group) == 3
        row = next(x for x in seeds.splitlines() if x.startswith(f"| {base} |"))
        for i, scale in ((0, 1), (3, 1), (None, 100)):
            xs = [
                scale
                * (
                    m["retention"]["greedy"]
                    if i is None
                    else m["decodes"]["greedy"]["by_k"][i]["bleu"]
                )
                for m in group
            ]
            assert f"{statistics.mean(xs):.2f} ± {statistics.stdev(xs):.2f}" in row
    assert "study-bahdanau: Figure 2 is reproduced for every seed." in seeds
    # the search-free interval per seed: seed 3's passes through 0
    assert (
        "| reproduces | -0.400 [-0.500, -0.300] |" in seeds
        and "| reproduces | -0.050 [-0.200, +0.100] |" in seeds
    )
    assert (
        "study-bahdanau: without search, its NLL rises less than the reference's (interval below "
        "0) for seed 1, 2 of 1, 2, 3." in seeds
    )
    model(res, "study-bahdanau-s3")["nll_vs_reference"]["high"] = -0.01
    every = "study-bahdanau: without search, its NLL rises less than the reference's for every seed"
    assert every in report(res)
    for m in res["models"]:  # results written before the NLL interval existed: no NLL sentence
        m["nll_vs_reference"] = None
    assert "without search" not in report(res).split("## Seeds")[1].split("## Search-free")[0]
    model(res, "study-bahdanau-s3")["vs_reference"]["greedy"]["low"] = -0.1
    seeds = report(res).split("## Seeds")[1]
    assert "reproduced for every seed" not in seeds
    assert "study-bahdanau: not reproduced for seed 3 (no difference shown" in seeds
    model(res, REF)["learned"] = False
    assert "No verdict by seed: the reference study-rnn-context is not rated" in report(res)
    res["models"] = [m for m in res["models"] if m["role"] != "seed"]
    assert "## Seeds\n\nNot run (make study-seeds)." in report(res)


def test_merge_tails_gives_every_bucket_100_lines_and_keeps_the_total():
    sizes = [400, 300, 152, 45, 2]
    rows = [
        {"bucket": b, "sentences": n, "bleu": 30.0 - i}
        for i, (b, n) in enumerate(
            zip(["1-10", "11-20", "21-30", "31-40", "41+"], sizes, strict=True)
        )
    ]
    merged = merge_tails(rows)
    assert [r["sentences"] for r in merged] == [400, 300, 199]
    assert sum(r["sentences"] for r in merged) == sum(sizes)
    assert [r["bucket"] for r in merged] == ["1-10", "11-20", "21+"]
    assert merged[-1]["bleu"] == (28.0 * 152 + 27.0 * 45 + 26.0 * 2) / 199
    front = merge_tails(
        [{"bucket": "1-10", "sentences": 30}, {"bucket": "11-20", "sentences": 200}]
    )
    assert [(r["bucket"], r["sentences"]) for r in front] == [("1-20", 230)]
    assert "| 21+ (n=199)* |" in report(study())


def test_sections_come_in_order_with_nll_and_the_control_sentence():
    text = report(study())
    heads = [
        "# Bottleneck versus attention on Multi30k",
        "## Rated models",
        "## BLEU by k (greedy, the headline)",
        "## BLEU by k (beam 5, length penalty alpha chosen on validation)",
        "## Verdict",
        "## Seeds",
        "## Search-free evidence: NLL per target token by k",
        "## Length generalisation (a separate, zero-shot control)",
        "## Synthetic reversal",
        "## By length in words",
        "](bleu_by_k.png)",
    ]
    at = [text.index(h) for h in heads]
    assert at == sorted(at)
    assert "each k over the same 1,000 sentences" in text
    assert "1,000,000 target tokens" in text and "90 minutes" in text
    assert "study-rnn-context's NLL rises the most from k = 1 to k = 4 (2.100 -> 3.450 nats" in text
    assert "study-luong-concat (not rated) | 2.100 |" in text  # in the table, not the sentence
    # the rise against the reference's, with its interval; a model without one shows "-"
    assert (
        "study-bahdanau | 2.100 | 2.233 | 2.367 | 2.500 | +0.400 | -0.600 [-0.700, -0.500] |"
        in text
    )
    assert "| -0.150 [-0.400, +0.100] |" in text and "| +0.200 [+0.100, +0.300] |" in text
    assert "study-luong-general | 2.100 | 2.415 | 2.730 | 3.045 | +0.945 | - |" in text
    finding = (
        "Without search: the NLL of 1 of 3 rated attention models rises less than "
        "study-rnn-context's from k = 1 to k = 4 (interval below 0): study-bahdanau. It rises "
        "more for study-transformer (interval above 0). No difference is shown for "
        "study-luong-dot (interval through 0). The fixed-vector study-rnn's rises less than "
        "study-rnn-context's too (+1.200 against +1.350 nats, from a k = 1 loss of 2.100 against "
        "2.100): a smaller rise alone does not single out attention."
    )
    assert finding in text.split("## Search-free evidence")[1]
    assert finding in text.split("## Verdict")[1].split("## Seeds")[0]  # pointed to there too
    assert report_markdown(study())[1]["nll"] == finding
    assert "are not part of the bottleneck verdict" in text
    assert "study-bahdanau-single 0.62 of the reference length, 41.0% ended early" in text
    assert "## Synthetic reversal\n\nNot run (make study-quick)." in text


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


def test_write_report_draws_the_png_and_leaves_the_reverse_report_as_it_was(tmp_path):
    res = study(reverse=reverse_results())
    write_report(res, tmp_path / "m30k")
    png = (tmp_path / "m30k" / "bleu_by_k.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    saved = json.loads((tmp_path / "m30k" / "results.json").read_text())
    assert saved["study"] == "multi30k" and "3 of 4" in saved["findings"]["verdict"]
    text = (tmp_path / "m30k" / "report.md").read_text()
    assert "### Reverse table (greedy" in text and "| bahdanau | 100,000 |" in text
    assert not (tmp_path / "m30k" / "bleu_by_length.png").exists()
    assert not list((tmp_path / "m30k").glob(".*.tmp"))

    rev = copy.deepcopy(reverse_results())
    write_report(rev, tmp_path / "rev")
    text = (tmp_path / "rev" / "report.md").read_text()
    assert text.startswith("# Bottleneck versus attention\n")
    assert "## Reverse table (greedy" in text and "## Exact match (%) by source length" in text
    assert (tmp_path / "rev" / "bleu_by_length.png").exists()
    assert (tmp_path / "rev" / "exact_by_length.png").exists()
    assert not (tmp_path / "rev" / "bleu_by_k.png").exists()
    assert json.loads((tmp_path / "rev" / "results.json").read_text())["alignment"] == "reverse"


def test_the_spread_of_target_tokens_over_the_runs_is_stated():
    res = study()
    counts = [700_000 + 2_000 * i for i in range(len(res["models"]))]
    for m, n in zip(res["models"], counts, strict=True):
        m["target_tokens"] = n
    lo, hi = min(counts), max(counts)
    spread = f"{100 * (hi - lo) / lo:.1f}% apart"
    assert f"Target tokens trained on: {lo:,} to {hi:,} over {len(counts)} runs ({spread}" in (
        report(res)
    )

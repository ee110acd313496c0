"""``seq2seq compare``: one tokenizer and one budget for every model, reuse of finished runs, long
inputs joined from real lines, scores by length, a report whose findings follow the numbers."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.checkpoint import load_checkpoint, load_for_inference
from seq2seq.config import ConfigError, load_config
from seq2seq.data.text import ParallelText, drop_long_sources
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.study.cells import nll_lines_by_k, nll_rise_difference_ci, retention_difference_ci
from seq2seq.study.compare import Budget, StudyOptions, compare, load_study_configs
from seq2seq.study.evalsets import EvalSet, attention_sentences, build_eval_set, score_decode
from seq2seq.study.multi30k import Multi30kPlan
from seq2seq.study.report import length_finding

from .toys import reverse_data

TINY = {
    "rnn": {"name": "rnn", "emb_size": 16, "hidden_size": 24, "encoder_hidden_size": 12},
    "bahdanau": {
        "name": "bahdanau",
        "emb_size": 16,
        "hidden_size": 24,
        "encoder_hidden_size": 12,
        "attention_size": 16,
        "maxout_size": 16,
    },
    "transformer": {
        "name": "transformer",
        "d_model": 16,
        "n_heads": 2,
        "d_ff": 32,
        "n_encoder_layers": 1,
        "n_decoder_layers": 1,
    },
}


def write_config(folder, name, model, data, tokenizer, **data_extra):
    cfg = {
        "name": name,
        "data": {**data, **data_extra},
        "tokenizer": tokenizer,
        "model": {**TINY[model], "dropout": 0.0},
        "train": {"max_steps": 50, "batch_tokens": 800, "valid_every": 100, "seed": 1},
        "decode": {"batch_size": 64, "max_len_a": 1.0, "max_len_b": 5},
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def slice_data(slice_dir):
    """The slice's val split doubles as the test set (100 lines)."""
    return {
        "train": str(slice_dir / "train"),
        "valid": str(slice_dir / "val"),
        "test": str(slice_dir / "val"),
        "max_len": 40,
        "max_valid_pairs": 20,
    }


def run_cli(*args):
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "seq2seq", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


@pytest.fixture(scope="module")
def study_data(tmp_path_factory, multi30k_slice):
    """The slice's train and val splits, with the first 40 val lines as the test set."""
    d = tmp_path_factory.mktemp("test40")
    for lang in ("de", "en"):
        lines = (multi30k_slice / f"val.{lang}").read_text().splitlines(keepends=True)[:40]
        (d / f"test.{lang}").write_text("".join(lines))
    return {**slice_data(multi30k_slice), "test": str(d / "test")}


@pytest.fixture(scope="module")
def multi30k_study(tmp_path_factory, study_data):
    """Three tiny models (rnn and bahdanau on joined pairs, a single-pair transformer) compared
    for 3 updates each through the command line, two trained at a time (--jobs 2)."""
    tmp = tmp_path_factory.mktemp("study")
    tok = {"vocab_size": 300}
    paths = [
        write_config(tmp, "rnn-k2", "rnn", study_data, tok, concat_k=2),
        write_config(tmp, "bahdanau-k2", "bahdanau", study_data, tok, concat_k=2),
        write_config(tmp, "transformer-1", "transformer", study_data, tok),
    ]
    out = tmp / "out"
    r = run_cli(
        "compare",
        *paths,
        "--out",
        out,
        "--budget-steps",
        3,
        "--concat-k",
        3,
        "--concat-n",
        30,
        "--beams",
        "1,2",
        "--attention-n",
        2,
        "--jobs",
        2,  # two trainings at a time in worker processes
        "--device",
        "cpu",
    )
    assert r.returncode == 0, r.stderr
    return paths, out, r


@pytest.mark.e2e  # three models trained by `seq2seq compare` on the Multi30k slice
def test_compare_writes_report_results_and_plot(multi30k_study):
    paths, out, r = multi30k_study
    results = json.loads((out / "results.json").read_text())
    assert results["study"] == "multi30k"
    assert results["machine"].endswith("; 2 runs at a time, one torch thread each")  # --jobs 2
    names = [m["name"] for m in results["models"]]
    assert names == ["rnn-k2", "bahdanau-k2", "transformer-1"]
    # 40 test lines, then the first 30 joined 2 at a time (15) and 3 at a time (10)
    assert results["eval_set"]["sentences_per_k"] == {"1": 40, "2": 15, "3": 10}
    roles = {m["name"]: m["role"] for m in results["models"]}
    assert roles == {"rnn-k2": "main", "bahdanau-k2": "main", "transformer-1": "control"}
    assert results["reference"] == "rnn-k2"  # the only fixed-vector rnn
    for m in results["models"]:
        assert m["steps"] == 3 and m["parameters"] > 0 and not m["reused"]
        assert set(m["decodes"]) == {"greedy", "beam"}
        for d in m["decodes"].values():
            assert [c["k"] for c in d["by_k"]] == [1, 2, 3]
            assert [c["sentences"] for c in d["by_k"]] == [40, 15, 10]
            assert sum(row["sentences"] for row in d["by_length"]) == 65
            for c in d["by_k"]:  # every cell is refused here: fewer than 100 lines
                assert c["low"] <= c["bleu"] + 1e-9 and "fewer than 100" in c["refusal"]
        sweep = m["alpha_sweep"]
        assert [row["alpha"] for row in sweep] == [0.6, 0.8, 1.0, 1.2, 1.4]
        assert m["decodes"]["beam"]["alpha"] == max(sweep, key=lambda x: x["bleu"])["alpha"]
        assert [row["k"] for row in m["nll_by_k"]] == [1, 2, 3]
        assert all(row["tokens"] > 0 and row["nll"] > 0 for row in m["nll_by_k"])
    by = {m["name"]: m for m in results["models"]}
    vs = by["bahdanau-k2"]["vs_reference"]["greedy"]
    assert vs["units"] == 10  # the k = 3 lines, each with the 3 test lines it joins
    # scored in worker processes (--jobs 2): the interval rests on the hypotheses they wrote
    cfg = load_study_configs(paths[:1], Budget(steps=3), "cpu")[0]

    def hyps(name):
        return (out / "runs" / name / "decode" / "test.greedy.txt").read_text().split("\n")[:-1]

    want = retention_difference_ci(
        hyps("bahdanau-k2"), hyps("rnn-k2"), build_eval_set(cfg, 3, 30), 3
    )
    for key in ("a", "b", "difference", "low", "high"):  # NaN is stored as None
        assert vs[key] == (None if math.isnan(want[key]) else pytest.approx(want[key])), key
    if vs["difference"] is not None:  # None: a k = 1 BLEU of 0 leaves no retention
        assert vs["low"] <= vs["difference"] <= vs["high"]
    # the search-free interval: the per-line NLL of each checkpoint, paired over the same units
    testset, tok = build_eval_set(cfg, 3, 30), Tokenizer.load(out / "tokenizer")

    def lines(name):
        model = load_for_inference(out / "runs" / name, "cpu")[0]
        return nll_lines_by_k(model, tok, testset, torch.device("cpu"))

    nll = by["bahdanau-k2"]["nll_vs_reference"]
    want = nll_rise_difference_ci(lines("bahdanau-k2"), lines("rnn-k2"), testset, 3)
    for key in ("a", "b", "difference", "low", "high"):
        assert nll[key] == pytest.approx(want[key], abs=1e-6), key
    assert nll["units"] == 10 and nll["low"] <= nll["difference"] <= nll["high"]
    assert "NaN" not in (out / "results.json").read_text()
    assert by["rnn-k2"]["vs_reference"] is None and by["transformer-1"]["vs_reference"] is None
    assert by["rnn-k2"]["nll_vs_reference"] is None  # the reference itself, and controls
    assert by["transformer-1"]["nll_vs_reference"] is None
    report = (out / "report.md").read_text()
    for name in names:
        assert name in report
    assert results["findings"]["verdict"] in report
    assert results["findings"]["verdict"] in r.stdout
    assert (out / "bleu_by_k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.e2e  # three models trained by `seq2seq compare` on the Multi30k slice
def test_every_run_gets_the_one_shared_tokenizer(multi30k_study):
    _, out, _ = multi30k_study
    shared = Tokenizer.load(out / "tokenizer")
    for name in ("rnn-k2", "bahdanau-k2", "transformer-1"):
        ckpt = load_checkpoint(out / "runs" / name / "best.pt")
        assert Tokenizer.from_state_dict(ckpt["tokenizer"]).src_proto == shared.src_proto
        assert ckpt["config"]["train"]["max_steps"] == 3  # the budget replaced max_steps 50


@pytest.mark.e2e  # three models trained by `seq2seq compare` on the Multi30k slice
def test_finished_runs_are_reused_seeds_added_and_a_new_budget_retrains(multi30k_study):
    paths, out, _ = multi30k_study
    opts = StudyOptions(concat_k=3, concat_n=30, n_attention=0, device="cpu")
    before = json.loads((out / "results.json").read_text())
    decoded = sorted((out / "runs").glob("*/decode/*"))
    stamps = [p.stat().st_mtime_ns for p in decoded]
    # 3 runs x (test greedy, test tuned beam, 5 validation alphas) x (hypotheses, key)
    assert len(decoded) == 3 * 7 * 2
    again = compare(paths[:2], out, Budget(steps=3), opts)
    assert [m["reused"] for m in again["models"]] == [True, True]
    assert [p.stat().st_mtime_ns for p in decoded] == stamps  # nothing decoded again
    for old, new in zip(before["models"], again["models"], strict=False):
        assert new["decodes"]["beam"]["by_k"] == old["decodes"]["beam"]["by_k"]
        assert new["train_seconds"] == old["train_seconds"]
    # a second seed of both: seed 1 is the main run itself, seed 2 trains anew
    plan = Multi30kPlan(seeds=(1, 2), seed_models="rnn-k2,bahdanau-k2")
    seeded = compare(paths[:2], out, Budget(steps=3), opts, plan)
    by = {m["name"]: m for m in seeded["models"]}
    assert set(by) == {"rnn-k2", "bahdanau-k2", "rnn-k2-seed2", "bahdanau-k2-seed2"}
    assert by["bahdanau-k2-seed2"]["role"] == "seed" and by["bahdanau-k2-seed2"]["seed"] == 2
    assert by["bahdanau-k2-seed2"]["base"] == "bahdanau-k2"
    ckpt = load_checkpoint(out / "runs" / "rnn-k2-seed2" / "best.pt")
    assert ckpt["config"]["train"]["seed"] == 2
    # the seed-2 attention model is paired with the seed-2 reference
    cfg = load_study_configs(paths[:1], Budget(steps=3), "cpu")[0]
    testset = build_eval_set(cfg, 3, 30)

    def hyps(name):
        return (out / "runs" / name / "decode" / "test.greedy.txt").read_text().split("\n")[:-1]

    want = retention_difference_ci(hyps("bahdanau-k2-seed2"), hyps("rnn-k2-seed2"), testset, 3)
    got = by["bahdanau-k2-seed2"]["vs_reference"]["greedy"]
    assert got["difference"] == pytest.approx(want["difference"], nan_ok=True)
    assert got["b"] == pytest.approx(want["b"], nan_ok=True)
    seeds = (out / "report.md").read_text().split("## Seeds")[1].split("## ")[0]
    assert "| rnn-k2 | 1, 2 |" in seeds and "| bahdanau-k2 | 1, 2 |" in seeds
    other = compare(paths[:1], out, Budget(steps=4), opts)
    assert other["models"][0]["reused"] is False and other["models"][0]["steps"] == 4


def test_compare_refuses_configs_that_cannot_be_compared(tmp_path, synth_corpus):
    data, tok = slice_data(synth_corpus), {"vocab_size": 300}
    a = write_config(tmp_path, "a", "rnn", data, tok)
    (tmp_path / "dup").mkdir()
    dup = write_config(tmp_path / "dup", "a", "bahdanau", data, tok)
    other_test = write_config(
        tmp_path, "b", "rnn", {**data, "test": str(synth_corpus / "train")}, tok
    )
    other_tok = write_config(tmp_path, "c", "rnn", data, {"vocab_size": 500})
    with pytest.raises(ConfigError, match="name 'a' is also the name of"):
        load_study_configs([a, dup], Budget(), "cpu")
    with pytest.raises(ConfigError, match=r"b.yaml: data.test differs from .*a.yaml"):
        load_study_configs([a, other_test], Budget(), "cpu")
    with pytest.raises(ConfigError, match="c.yaml: the tokenizer section differs"):
        load_study_configs([a, other_tok], Budget(), "cpu")
    # the axes of the study may differ
    axes = write_config(tmp_path, "d", "rnn", data, tok, concat_k=4, max_src_words=10)
    cfgs = load_study_configs([a, axes], Budget(minutes=2.5), "cpu")
    assert [(c.train.max_time, c.train.max_steps) for c in cfgs] == [(2.5, None), (2.5, None)]


def run_main(monkeypatch, capsys, *args) -> tuple[int, str]:
    """``seq2seq ARGS`` in this process: (exit code, stderr)."""
    from seq2seq.cli import main

    monkeypatch.setattr(sys, "argv", ["seq2seq", *map(str, args)])
    with pytest.raises(SystemExit) as e:
        main()
    return e.value.code, capsys.readouterr().err


def test_cli_errors_are_one_line(tmp_path, synth_corpus, monkeypatch, capsys):
    a = write_config(tmp_path, "a", "rnn", slice_data(synth_corpus), {"vocab_size": 300})
    out = tmp_path / "o"
    for args, msg in (
        (("--budget-steps", 2, "--budget-minutes", 1), "not both"),
        (("--beams", "1,x"), "--beams '1,x'"),
        (("--buckets", "20,10"), "--buckets '20,10'"),
    ):
        code, err = run_main(monkeypatch, capsys, "compare", a, "--out", out, *args)
        assert code == 2 and msg in err
        assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_what_a_study_names_is_checked_before_any_training(
    tmp_path, synth_corpus, monkeypatch, capsys
):
    data, tok = slice_data(synth_corpus), {"vocab_size": 300}
    a = write_config(tmp_path, "a", "rnn", data, tok)
    b = write_config(tmp_path, "b", "bahdanau", data, tok)
    clash = write_config(tmp_path, "a-seed2", "bahdanau", data, tok)
    cosine = yaml.safe_load(b.read_text())
    cosine["name"], cosine["train"]["schedule"] = "cos", "cosine"
    (tmp_path / "cos.yaml").write_text(yaml.safe_dump(cosine))
    for configs, args, msg in (
        ((a, b), ("--reference", "nosuch"), "--reference 'nosuch' is not a main run (a, b)"),
        ((a, b), ("--seeds", "2", "--seed-models", "nosuch"), "--seed-models: 'nosuch' is not"),
        ((a, b), ("--seeds", "99999999999"), "give training seeds from 0 to 2^32 - 1"),
        ((a, clash), ("--seeds", "2", "--seed-models", "a"), "the seed copy 'a-seed2' would"),
        ((a, tmp_path / "cos.yaml"), ("--budget-tokens", 500), "cosine schedule decays over"),
    ):
        out = tmp_path / f"o{len(msg)}"
        code, err = run_main(monkeypatch, capsys, "compare", *configs, "--out", out, *args)
        assert code == 2 and msg in err, err
        assert len(err.strip().splitlines()) == 1
        assert not (out / "runs").exists()  # refused before any training
    code, err = run_main(
        monkeypatch, capsys, "synth", "--task", "reverse", "--n", 0, "--out", tmp_path / "s"
    )
    assert (
        code == 2
        and "--n must be at least 1" in err
        and not (tmp_path / "s" / "train.src").exists()
    )


def test_long_inputs_join_consecutive_lines(tmp_path):
    for lang, words in (("de", "a b c d e"), ("en", "A B C D E")):
        (tmp_path / f"t.{lang}").write_text("".join(f"{w}\n" for w in words.split()))
    cfg = load_config(None, [f"data.test={tmp_path / 't'}"])
    ev = build_eval_set(cfg, concat_k=3, concat_n=None)
    assert ev.src == ["a", "b", "c", "d", "e", "a b", "c d", "a b c"]
    assert ev.ref == ["A", "B", "C", "D", "E", "A B", "C D", "A B C"]
    assert ev.k == [1, 1, 1, 1, 1, 2, 2, 3]
    assert build_eval_set(cfg, concat_k=3, concat_n=4).src[5:] == ["a b", "c d", "a b c"]
    assert build_eval_set(cfg, concat_k=2, concat_n=2).src[5:] == ["a b"]


def test_scores_by_length_and_by_k():
    # sources of 2, 2, 12 and 12 words; the third hypothesis is wrong
    long = " ".join(["w"] * 12)
    ev = EvalSet(
        "test",
        ["x y", "x z", long, long],
        ["the cat sat on it", "a dog ran to us", "one two three four", "five six seven eight"],
        [1, 1, 2, 2],
        "toy",
    )
    hyps = [ev.ref[0], ev.ref[1], "nothing alike at all", ev.ref[3]]
    s = score_decode(ev, hyps, edges=(10, 20), tgt_lang="en")
    assert s["sentences"] == 2 and s["bleu"] == pytest.approx(100.0) and s["exact"] == 100.0
    rows = {r["bucket"]: r for r in s["by_length"]}
    assert [(b, rows[b]["sentences"], rows[b]["exact"]) for b in ("1-10", "11-20", "21+")] == [
        ("1-10", 2, 100.0),
        ("11-20", 2, 50.0),
        ("21+", 0, None),
    ]
    assert rows["1-10"]["bleu"] == pytest.approx(100.0) and rows["11-20"]["bleu"] < 100.0
    assert [(r["k"], r["sentences"], r["exact"], r["mean_src_words"]) for r in s["by_k"]] == [
        (1, 2, 100.0, 2.0),
        (2, 2, 50.0, 12.0),
    ]


def test_attention_lines_span_short_to_long():
    ev = EvalSet("t", [" ".join(["w"] * n) for n in (5, 1, 9, 3, 7)], [""] * 5, [1] * 5, "toy")
    # length order: 1 (line 1), 3 (line 3), 5 (line 0), 7 (line 4), 9 (line 2)
    assert attention_sentences(ev, 3) == [3, 0, 2]
    assert attention_sentences(ev, 1) == [2]
    assert attention_sentences(ev, 0) == []


def fake_results(rows: dict[str, list[float]], attention: dict[str, bool], metric="bleu"):
    buckets = [("1-10", 50), ("11-20", 40), ("21-30", 3)]
    models = []
    for name, ys in rows.items():
        by_length = [
            {"bucket": b, "sentences": n, "bleu": y, "exact": y}
            for (b, n), y in zip(buckets, ys, strict=True)
        ]
        models.append(
            {
                "name": name,
                "attention": attention[name],
                "concat_k": 4,
                "max_src_words": None,
                "decodes": {"greedy": {"by_length": by_length}, "beam5": {"by_length": by_length}},
            }
        )
    return {"models": models, "exact_match": metric == "exact"}


def test_finding_names_the_fastest_fall_and_checks_the_claim():
    # 21-30 holds only 3 lines, so the finding spans 1-10 to 11-20
    res = fake_results(
        {"rnn": [20.0, 5.0, 0.0], "att": [30.0, 27.0, 1.0]}, {"rnn": False, "att": True}
    )
    text = length_finding(res, "bleu")
    assert text.startswith(
        "From 1-10 to 11-20 source words (beam5), rnn keeps the least of "
        "its BLEU (20.0 -> 5.0, 25% kept) and att the most (30.0 -> 27.0, 90% "
        "kept)"
    )
    assert "the fixed-vector rnn keeps 25% against at least 90% for every attention model" in text
    res = fake_results(
        {"rnn": [20.0, 18.0, 0.0], "att": [30.0, 15.0, 1.0]}, {"rnn": False, "att": True}
    )
    text = length_finding(res, "bleu")
    assert (
        "unlike Bahdanau et al. (2015, Figure 2), the fixed-vector rnn keeps 90%, no less "
        "than the attention model att (50%)" in text
    )


def test_a_model_that_never_learnt_is_named_but_not_rated():
    res = fake_results(
        {"rnn": [20.0, 5.0, 0.0], "att": [30.0, 27.0, 1.0], "flat": [7.0, 9.0, 0.0]},
        {"rnn": False, "att": True, "flat": True},
    )
    text = length_finding(res, "bleu")
    assert "and att the most (30.0 -> 27.0, 90% kept)" in text
    assert "for every attention model (att)" in text
    assert text.endswith(
        "; not rated, as they score under a quarter of the best BLEU on the shortest inputs: "
        "flat (7.0)."
    )


def test_exact_match_finding():
    res = fake_results(
        {"rnn": [95.0, 20.0, 0.0], "att": [99.0, 91.0, 10.0]},
        {"rnn": False, "att": True},
        metric="exact",
    )
    assert length_finding(res, "exact") == (
        "Exact-match accuracy from 1-10 to 11-20 source words (beam5): rnn goes from 95% to "
        "20%; att stays at or above 90% in every bucket (lowest 91%)."
    )


def test_max_src_words_drops_long_training_sources():
    text = ParallelText(["a b c", "a", "a b", "a b c d"], ["1", "2", "3", "4"], [1, 2, 4, 5], "f")
    drop_long_sources(text, 2)
    assert (text.src, text.tgt, text.line_no) == (["a", "a b"], ["2", "3"], [2, 4])
    assert text.dropped == {"over max_src_words 2": [1, 5]}
    with pytest.raises(ConfigError, match="max_src_words needs backend 'memory'"):
        load_config(None, ["data.max_src_words=10", "data.backend=arrow"])


@pytest.mark.e2e  # two models trained by compare
def test_reverse_study_reports_exact_match(tmp_path):

    data = reverse_data(tmp_path, 300, 25, 40)
    tok = {"type": "word", "vocab_size": 16}
    paths = [write_config(tmp_path, n, n, data, tok) for n in ("rnn", "bahdanau")]
    opts = StudyOptions(beams=(1,), concat_k=1, n_attention=1, exact_match=True, device="cpu")
    torch.manual_seed(0)
    results = compare(paths, tmp_path / "out", Budget(steps=2), opts)
    assert results["eval_set"]["sentences"] == 100
    rows = results["models"][0]["decodes"]["greedy"]["by_length"]
    assert [r["bucket"] for r in rows] == [
        "1-10",
        "11-20",
        "21-30",
        "31-40",
        "41-50",
        "51-60",
        "61+",
    ]
    assert all(r["exact"] is None or 0 <= r["exact"] <= 100 for r in rows)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Exact match (%) by source length (greedy)" in report
    assert results["findings"]["exact"] in report
    assert (tmp_path / "out" / "exact_by_length.png").is_file()


@pytest.mark.e2e  # two trainings in worker processes, stopped by SIGTERM
def test_sigterm_to_compare_stops_its_workers_and_keeps_their_runs(tmp_path):
    """``kill`` or ``timeout`` signal compare's own process only: it passes SIGTERM on to its
    worker processes, which save last.pt (a rerun resumes from it), and no worker outlives it."""
    import signal
    import time

    data = reverse_data(tmp_path, 300, 12, 40)
    tok = {"type": "word", "vocab_size": 16}
    paths = [write_config(tmp_path, n, n, data, tok) for n in ("rnn", "bahdanau")]
    out = tmp_path / "out"
    args = ["compare", *paths, "--out", out, "--budget-steps", 100000, "--exact-match"]
    args += ["--beams", 1, "--concat-k", 1, "--jobs", 2, "--device", "cpu"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "seq2seq", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    logs = [out / "runs" / n / "train_log.jsonl" for n in ("rnn", "bahdanau")]
    deadline = time.monotonic() + 240
    while not all(p.is_file() and p.stat().st_size for p in logs):  # both are training
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-2000:]
        time.sleep(0.5)
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    cmdline = {int(c): Path(f"/proc/{c}/cmdline").read_bytes() for c in children}
    workers = [pid for pid, cmd in cmdline.items() if b"spawn_main" in cmd]  # not the tracker
    assert len(workers) == 2, cmdline
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err, err[-3000:]
    for n in ("rnn", "bahdanau"):
        assert (out / "runs" / n / "last.pt").is_file()
    alive = [pid for pid in workers if Path(f"/proc/{pid}").exists()]
    assert not alive, f"workers left running: {alive}"

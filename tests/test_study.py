"""``seq2seq compare``: one tokenizer and one budget for every model, reuse of finished runs, long
inputs joined from real lines, scores by length, a report whose findings follow the numbers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.config import ConfigError, load_config
from seq2seq.data.text import ParallelText, drop_long_sources
from seq2seq.study.compare import compare
from seq2seq.study.evalsets import EvalSet, attention_sentences, build_eval_set, score_decode
from seq2seq.study.plan import Budget, StudyOptions, load_study_configs
from seq2seq.study.report import length_finding

from .toys import TINY_RUN_MODELS, reverse_data


def write_config(folder, name, model, data, tokenizer, **data_extra):
    cfg = {
        "name": name,
        "data": {**data, **data_extra},
        "tokenizer": tokenizer,
        "model": {**TINY_RUN_MODELS[model], "dropout": 0.0},
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
    a = write_config(tmp_path, "a", "rnnencdec", data, tok)
    b = write_config(tmp_path, "b", "bahdanau", data, tok)
    clash = write_config(tmp_path, "a-seed2", "rnn", data, tok)
    cosine = yaml.safe_load(b.read_text())
    cosine["name"], cosine["train"]["schedule"] = "cos", "cosine"
    (tmp_path / "cos.yaml").write_text(yaml.safe_dump(cosine))
    stages = ("--single-steps", 2, "--joined-steps", 2)
    for configs, args, msg in (
        ((a, b), (*stages, "--reference", "nosuch"), "--reference 'nosuch' is not a compared"),
        ((a, b), (*stages, "--headline", "nosuch"), "--headline 'nosuch' is not a compared"),
        ((a, b), (*stages, "--seeds", "99999999999"), "give training seeds from 0 to 2^32 - 1"),
        ((a, b, clash), (*stages, "--seeds", "2"), "the seed copy 'a-seed2' would"),
        ((a, b), (), "give --single-steps and --joined-steps"),
        ((b,), stages, "no rnnencdec config to rate the others against"),
        (
            (a, tmp_path / "cos.yaml"),
            ("--budget-tokens", 500, "--exact-match"),
            "cosine schedule decays over",
        ),
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
    paths = [write_config(tmp_path, n, n, data, tok) for n in ("rnn", "bahdanau", "rnnencdec")]
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
    worker processes, which save last.pt (a rerun resumes from it), no queued job starts after it
    (the third config here waits for a worker) and no worker outlives it."""
    import signal
    import time

    data = reverse_data(tmp_path, 300, 12, 40)
    tok = {"type": "word", "vocab_size": 16}
    paths = [write_config(tmp_path, n, n, data, tok) for n in ("rnn", "bahdanau", "rnnencdec")]
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
    assert not (out / "runs" / "rnnencdec").exists()  # queued, never started

"""``seq2seq compare`` (``seq2seq/commands/study.py``): its option errors are one line, and what a
study names is checked before any training."""

from __future__ import annotations

import sys

import pytest
import yaml

from tests.toys import run_main, slice_data, synth_run_raw, write_study_config


def run_main_exiting(monkeypatch, capsys, *args) -> tuple[int, str]:
    """``seq2seq ARGS`` in this process: (exit code, stderr)."""
    from seq2seq.cli import main

    monkeypatch.setattr(sys, "argv", ["seq2seq", *map(str, args)])
    with pytest.raises(SystemExit) as e:
        main()
    return e.value.code, capsys.readouterr().err


def test_compare_refuses_two_budgets_in_one_line(tmp_path, synth_corpus, monkeypatch, capsys):
    path, out = tmp_path / "a.yaml", tmp_path / "out"
    path.write_text(yaml.safe_dump(synth_run_raw(synth_corpus, max_steps=2)))
    args = ("compare", path, "--out", out, "--budget-minutes", 1, "--budget-tokens", 100)
    code, err = run_main(monkeypatch, capsys, *args)
    assert code == 2 and "give --budget-minutes or --budget-tokens, not both" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


def test_cli_errors_are_one_line(tmp_path, synth_corpus, monkeypatch, capsys):
    a = write_study_config(tmp_path, "a", "rnn", slice_data(synth_corpus), {"vocab_size": 300})
    out = tmp_path / "o"
    for args, msg in (
        (("--budget-steps", 2, "--budget-minutes", 1), "not both"),
        (("--beams", "1,x"), "--beams '1,x'"),
        (("--buckets", "20,10"), "--buckets '20,10'"),
    ):
        code, err = run_main_exiting(monkeypatch, capsys, "compare", a, "--out", out, *args)
        assert code == 2 and msg in err
        assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_what_a_study_names_is_checked_before_any_training(
    tmp_path, synth_corpus, monkeypatch, capsys
):
    data, tok = slice_data(synth_corpus), {"vocab_size": 300}
    a = write_study_config(tmp_path, "a", "rnnencdec", data, tok)
    b = write_study_config(tmp_path, "b", "bahdanau", data, tok)
    clash = write_study_config(tmp_path, "a-seed2", "rnn", data, tok)
    cosine = yaml.safe_load(b.read_text())
    cosine["name"], cosine["train"]["schedule"] = "cos", "cosine"
    (tmp_path / "cos.yaml").write_text(yaml.safe_dump(cosine))
    stages = ("--single-steps", 2, "--joined-steps", 2)
    for configs, args, msg in (
        ((a, b), (*stages, "--reference", "nosuch"), "--reference 'nosuch' is not a compared"),
        ((a, b), (*stages, "--headline", "nosuch"), "--headline 'nosuch' is not a compared"),
        ((a, b), (*stages, "--seeds", "99999999999"), "give training seeds from 0 to 2^32 - 1"),
        ((a, b), (*stages, "--negative-seeds", "x"), "--negative-seeds 'x': give training seeds"),
        ((a, b), (*stages, "--negative-seeds", "4"), "--negative-seeds: no negative control"),
        ((a, b), (*stages, "--seeds", "1,2,1"), "--seeds '1,2,1': seed 1 is given twice; give"),
        ((a, b), (*stages, "--negative-seeds", "4,4"), "--negative-seeds '4,4': seed 4 is given"),
        ((a, b), (*stages, "--test", tmp_path / "nosuch"), "--test " + str(tmp_path / "nosuch")),
        ((a, b), (*stages, "--test", "x/test.de"), "--test x/test.de: give the test set's PREFIX"),
        ((a, b), (*stages, "--score-only"), "holds no study (no tokenizer/); train it first"),
        ((a, b, clash), (*stages, "--seeds", "2"), "the seed copy 'a-seed2' would"),
        ((a, b), (), "give --single-steps and --joined-steps"),
        ((a, b), ("--budget-steps", 5), "--budget-* is for a synthetic task: add --alignment"),
        ((b,), stages, "no rnnencdec config to rate the others against"),
        (
            (a, tmp_path / "cos.yaml"),
            ("--budget-tokens", 500, "--exact-match"),
            "cosine schedule decays over",
        ),
    ):
        out = tmp_path / f"o{len(msg)}"
        code, err = run_main_exiting(monkeypatch, capsys, "compare", *configs, "--out", out, *args)
        assert code == 2 and msg in err, err
        assert len(err.strip().splitlines()) == 1
        assert not (out / "runs").exists()  # refused before any training
        assert not (out / "tokenizer").exists()  # or any tokenizer
    code, err = run_main_exiting(
        monkeypatch, capsys, "synth", "--task", "reverse", "--n", 0, "--out", tmp_path / "s"
    )
    assert (
        code == 2
        and "--n must be at least 1" in err
        and not (tmp_path / "s" / "train.src").exists()
    )
    args = ("--task", "reverse", "--min-len", 5, "--max-len", 3, "--out", tmp_path / "s")
    code, err = run_main_exiting(monkeypatch, capsys, "synth", *args)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--min-len 5 --max-len 3: give lengths with 1 <= --min-len <= --max-len, such as" in err


def test_compare_refuses_real_text_stages_with_a_synthetic_task(
    tmp_path, synth_corpus, monkeypatch, capsys
):
    path = tmp_path / "a.yaml"
    path.write_text(yaml.safe_dump(synth_run_raw(synth_corpus, max_steps=2)))
    args = [path, "--out", tmp_path / "o", "--single-steps", 2, "--joined-steps", 2]
    code, err = run_main(monkeypatch, capsys, "compare", *args, "--exact-match")
    assert code == 2 and "give one kind of options" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
    base = [path, "--out", tmp_path / "o", "--budget-steps", 2, "--exact-match"]
    for extra, name in (
        (("--seeds", "1,2"), "--seeds"),
        (("--negative-seeds", "4"), "--negative-seeds"),
        (("--test", tmp_path / "t"), "--test"),
        (("--score-only",), "--score-only"),
    ):
        code, err = run_main(monkeypatch, capsys, "compare", *base, *extra)
        assert code == 2 and f"error: {name} is for the real-text study" in err, err
        assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_compare_refuses_options_of_the_other_kind_when_typed_even_at_their_defaults(
    tmp_path, synth_corpus, monkeypatch, capsys
):
    """Options with a default are refused only when typed: the same value left out passes."""
    path = tmp_path / "a.yaml"
    path.write_text(yaml.safe_dump(synth_run_raw(synth_corpus, max_steps=2)))
    out = tmp_path / "o"
    synthetic = [path, "--out", out, "--budget-steps", 2, "--exact-match"]
    for extra in (
        ("--alphas", "0.6,0.8,1.0,1.2,1.4"),
        ("--bootstrap", 1000),
        ("--reference", "a"),
        ("--headline", "a"),
    ):
        code, err = run_main(monkeypatch, capsys, "compare", *synthetic, *extra)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert (
            f"error: {extra[0]} is for the real-text study (--single-steps, --joined-steps); a "
            "synthetic task does not use it: leave it out"
        ) in err
    real = [path, "--out", out, "--single-steps", 2, "--joined-steps", 2]
    for extra in (("--beams", "1,5"), ("--attention-n", 3)):
        code, err = run_main(monkeypatch, capsys, "compare", *real, *extra)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"error: {extra[0]} is for a synthetic task (--exact-match, --alignment)" in err
    assert not out.exists()


def test_compare_on_a_missing_corpus_leaves_no_output_folder(tmp_path, monkeypatch, capsys):
    path = tmp_path / "a.yaml"
    path.write_text(yaml.safe_dump(synth_run_raw(tmp_path / "no_corpus", max_steps=2)))
    out = tmp_path / "deeper" / "o"
    args = [path, "--out", out, "--budget-steps", 2, "--exact-match"]
    code, err = run_main(monkeypatch, capsys, "compare", *args)
    assert code == 2 and "no_corpus" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "deeper").exists()

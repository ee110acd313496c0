"""``seq2seq eval`` with a checkpoint end to end on the Multi30k slice: scores equal sacrebleu's,
``--beam`` translates as ``translate`` does, BLEU by source length, ``-o -``."""

from __future__ import annotations

import json

import pytest
import sacrebleu

from tests.e2e.helpers import run
from tests.scoring import assert_same_as_cli, cli_scores
from tests.toys import run_seq2seq


def test_eval_bleu_equals_sacrebleu(trained_run, multi30k_slice, tmp_path):
    run_dir, _ = trained_run
    r = run(
        "eval",
        "-c",
        run_dir,
        "--src",
        multi30k_slice / "val.de",
        "--ref",
        multi30k_slice / "val.en",
        "--bleu",
        "--chrf",
        "-o",
        tmp_path / "hyp",
        "--json",
        tmp_path / "s.json",
    )
    assert r.returncode == 0, r.stderr
    assert "signature: nrefs:1|case:mixed|eff:no|tok:13a" in r.stdout
    hyps = (tmp_path / "hyp").read_text().splitlines()
    refs = (multi30k_slice / "val.en").read_text().splitlines()
    expected = sacrebleu.corpus_bleu(hyps, [refs]).score
    scores = json.loads((tmp_path / "s.json").read_text())
    assert scores["bleu"]["score"] == pytest.approx(expected, abs=1e-9)


def test_eval_beam_translates_like_translate_beam(
    trained_run, multi30k_slice, tmp_path, run_in_process
):
    run_dir, _ = trained_run
    src, ref = multi30k_slice / "val.de", multi30k_slice / "val.en"
    r = run_in_process(
        "eval", "-c", run_dir, "--src", src, "--ref", ref, "--beam", "3", "-o", tmp_path / "e"
    )
    assert r.returncode == 0, r.stderr
    r = run_in_process("translate", "-c", run_dir, "-i", src, "-o", tmp_path / "t", "--beam", "3")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "e").read_text() == (tmp_path / "t").read_text()
    greedy = run_in_process("translate", "-c", run_dir, "-i", src, "--beam", "1").stdout
    assert greedy != (tmp_path / "t").read_text()  # --beam reached the search


def test_eval_with_a_checkpoint_by_length(monkeypatch, capsys, tmp_path, tiny_run, multi30k_slice):
    src, ref = multi30k_slice / "val.de", multi30k_slice / "val.en"
    hyp, report = tmp_path / "hyp.en", tmp_path / "s.json"
    code, out, err = run_seq2seq(
        monkeypatch,
        capsys,
        "eval",
        "-c",
        tiny_run,
        "--src",
        src,
        "--ref",
        ref,
        "--bleu",
        "--chrf",
        "--by-length",
        "-o",
        hyp,
        "--json",
        report,
    )
    assert code == 0, err
    scores = json.loads(report.read_text())
    assert_same_as_cli({**scores, "ter": {"score": cli_scores(ref, hyp)[2]}}, ref, hyp)
    rows = scores["by_length"]["buckets"]
    assert [r["bucket"] for r in rows] == ["1-10", "11-20", "21-30", "31-40", "41-60", "61+"]
    assert sum(r["sentences"] for r in rows) == 100 and scores["tgt_lang"] == "en"
    assert "BLEU by source length" in out


def test_eval_output_dash_writes_the_translations_to_stdout(
    monkeypatch, capsys, tmp_path, tiny_run, multi30k_slice
):
    src, ref = multi30k_slice / "val.de", multi30k_slice / "val.en"
    args = ["eval", "-c", tiny_run, "--src", src, "--ref", ref, "-o", "-"]
    code, out, err = run_seq2seq(monkeypatch, capsys, *args, "--json", tmp_path / "s.json")
    assert code == 0, err
    hyps, refs = out.splitlines(), ref.read_text().splitlines()
    assert len(hyps) == 100  # stdout holds the translations only, one per source line
    scores = json.loads((tmp_path / "s.json").read_text())
    assert scores["bleu"]["score"] == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert "signature: nrefs:1" in err
    code, out, err = run_seq2seq(monkeypatch, capsys, *args, "--json", "-")
    assert code == 2 and "would share standard output" in err and out == ""

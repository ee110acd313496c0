"""Output paths named ``.gz`` are written gzip-compressed (atomically, as every output), so the
commands that read ``.gz`` inputs read them back: translate -o, eval -o and --json."""

from __future__ import annotations

import gzip
import json

from tests.toys import run_cli


def test_gz_outputs_are_gzip_and_read_back(synth_run, synth_corpus, monkeypatch, capsys, tmp_path):
    src, ref = tmp_path / "in.de", tmp_path / "ref.en"
    src.write_text("".join((synth_corpus / "val.de").read_text().splitlines(True)[:5]), "utf-8")
    ref.write_text("".join((synth_corpus / "val.en").read_text().splitlines(True)[:5]), "utf-8")
    hyp = tmp_path / "out" / "hyp.en.gz"
    code, _, err = run_cli(monkeypatch, capsys, "translate", "-c", synth_run, "-i", src, "-o", hyp)
    assert code == 0, err
    lines = gzip.decompress(hyp.read_bytes()).decode("utf-8").splitlines()
    assert len(lines) == 5 and not (tmp_path / "out" / "hyp.en.gz.partial").exists()
    # read back: as eval's hypotheses, and as translate's input
    code, _, err = run_cli(monkeypatch, capsys, "eval", "--hyp", hyp, "--ref", ref)
    assert code == 0, err
    code, out, err = run_cli(monkeypatch, capsys, "translate", "-c", synth_run, "-i", hyp)
    assert code == 0, err
    assert len(out.splitlines()) == 5
    # eval's own outputs
    again, scores = tmp_path / "again.en.gz", tmp_path / "scores.json.gz"
    code, _, err = run_cli(
        monkeypatch, capsys, "eval", "-c", synth_run, "--src", src, "--ref", ref,
        "-o", again, "--json", scores,
    )  # fmt: skip
    assert code == 0, err
    assert gzip.decompress(again.read_bytes()).decode("utf-8").splitlines() == lines
    assert "bleu" in json.loads(gzip.decompress(scores.read_bytes()))

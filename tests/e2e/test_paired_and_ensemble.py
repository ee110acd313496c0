"""The three features through the command line on real (tiny) runs: ``seq2seq paired`` over two
runs translating ``--src``, ensembles of several ``-c`` in ``translate`` and ``eval`` (copies
decode as one model, another tokenizer is one line), and ``--no-repeat-ngram``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from seq2seq.config import TokenizerConfig, validate_config
from seq2seq.data.tokenizer import Tokenizer
from tests.toys import run_cli, synth_run_config, synth_run_raw

pytestmark = pytest.mark.e2e

N_LINES = 30


@pytest.fixture(scope="module")
def runs(tmp_path_factory, synth_corpus, synth_tokenizer, synth_run) -> dict[str, Path]:
    """The tiny rnn (``synth_run``), a tiny Transformer with the same tokenizer, and a tiny rnn
    with a tokenizer of 150 pieces."""
    from seq2seq.training.loop import train

    root = tmp_path_factory.mktemp("ens_runs")
    cfg = synth_run_config(synth_corpus, "transformer", max_steps=2)
    train(cfg, root / "tf", tokenizer=synth_tokenizer)
    src = (synth_corpus / "train.de").read_text().splitlines()
    tgt = (synth_corpus / "train.en").read_text().splitlines()
    other = Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=150))
    raw = {**synth_run_raw(synth_corpus), "tokenizer": {"vocab_size": 150}}
    raw["train"] = {**raw["train"], "max_steps": 2}
    train(validate_config(raw), root / "other_tok", tokenizer=other)
    return {"rnn": synth_run, "tf": root / "tf", "other": root / "other_tok"}


@pytest.fixture(scope="module")
def data(tmp_path_factory, synth_corpus) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("ens_data")
    for lang in ("de", "en"):
        lines = (synth_corpus / f"val.{lang}").read_text().splitlines()[:N_LINES]
        (d / f"val.{lang}").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return d / "val.de", d / "val.en"


def translate(monkeypatch, capsys, tmp_path, name: str, *args) -> list[str]:
    out = tmp_path / name
    code, _, err = run_cli(monkeypatch, capsys, "translate", *args, "-o", out, "--device", "cpu")
    assert code == 0, err
    return out.read_text().splitlines()


def test_paired_bootstrap_of_two_runs(monkeypatch, capsys, tmp_path, runs, data):
    src, ref = data
    out = tmp_path / "paired.json"
    code, stdout, err = run_cli(
        monkeypatch, capsys, "paired", "-c", runs["rnn"], "-c", runs["tf"], "--src", src,
        "--ref", ref, "--paired-method", "bs", "--paired-n", 200, "--chrf", "--json", out,
        "--device", "cpu",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out.read_text())
    assert [s["name"] for s in report["systems"]] == [str(runs["rnn"]), str(runs["tf"])]
    assert report["sentences"] == N_LINES and report["n_samples"] == 200
    assert "Baseline: " in stdout and "p = " in stdout
    for system, run in zip(report["systems"], ("rnn", "tf"), strict=True):
        assert system["checkpoint"]["path"].startswith(str(runs[run]))
        assert system["decode"]["method"] and system["ensemble"] is None
        # each system's score is its score alone
        alone = tmp_path / f"{run}.json"
        code, _, err = run_cli(
            monkeypatch, capsys, "eval", "-c", runs[run], "--src", src, "--ref", ref, "--chrf",
            "--json", alone, "--device", "cpu",
        )  # fmt: skip
        assert code == 0, err
        assert system["chrf"]["score"] == pytest.approx(
            json.loads(alone.read_text())["chrf"]["score"]
        )


def test_an_ensemble_of_copies_translates_as_one_model(monkeypatch, capsys, tmp_path, runs, data):
    src, _ = data
    rnn = str(runs["rnn"])
    copy = tmp_path / "copy.pt"  # the same -c twice is refused as a slip; a copy is a member
    shutil.copy(Path(rnn) / "best.pt", copy)
    one = translate(monkeypatch, capsys, tmp_path, "one.txt", "-c", rnn, "-i", src, "--beam", 3)
    two = translate(
        monkeypatch, capsys, tmp_path, "two.txt", "-c", rnn, "-c", copy, "-i", src, "--beam", 3
    )
    assert one == two and len(one) == N_LINES


def test_ensemble_bleu_of_two_families(monkeypatch, capsys, tmp_path, runs, data):
    src, ref = data
    out = tmp_path / "ens.json"
    code, stdout, err = run_cli(
        monkeypatch, capsys, "eval", "-c", runs["rnn"], "-c", runs["tf"], "--src", src,
        "--ref", ref, "--json", out, "--beam", 2, "--device", "cpu",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out.read_text())
    first, second = report["ensemble"]
    assert first == report["checkpoint"] and second["path"].startswith(str(runs["tf"]))
    assert report["bleu"]["score"] >= 0 and "BLEU" in stdout
    assert report["decode"]["beam_size"] == 2


def test_an_ensemble_with_another_tokenizer_is_one_line(monkeypatch, capsys, tmp_path, runs, data):
    src, _ = data
    code, out, err = run_cli(
        monkeypatch, capsys, "translate", "-c", runs["rnn"], "-c", runs["other"], "-i", src,
        "--device", "cpu",
    )  # fmt: skip
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"error: -c {runs['other']}: its tokenizer")
    assert f"differs from -c {runs['rnn']}'s" in err
    assert "target vocabulary of 150 pieces, not 200" in err


def test_no_repeat_ngram_through_the_command_line(monkeypatch, capsys, tmp_path, runs, data):
    src, ref = data
    rnn = str(runs["rnn"])
    plain = translate(monkeypatch, capsys, tmp_path, "plain.txt", "-c", rnn, "-i", src)
    off = translate(
        monkeypatch, capsys, tmp_path, "off.txt", "-c", rnn, "-i", src, "--no-repeat-ngram", 0
    )
    assert off == plain
    for method in (["--beam", "3"], ["--method", "greedy"]):
        blocked = translate(
            monkeypatch, capsys, tmp_path, "nr.txt", "-c", rnn, "-i", src, *method,
            "--no-repeat-ngram", 1, "--max-len-b", 8,
        )  # fmt: skip
        assert len(blocked) == N_LINES and blocked != plain  # the toy run repeats "red O red O"
    out = tmp_path / "nr.json"
    code, _, err = run_cli(
        monkeypatch, capsys, "eval", "-c", rnn, "--src", src, "--ref", ref,
        "--no-repeat-ngram", 2, "--json", out, "--device", "cpu",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out.read_text())
    assert report["decode"]["no_repeat_ngram"] == 2
    assert report["decode_source"]["no_repeat_ngram"] == "command line"
    code, _, err = run_cli(
        monkeypatch, capsys, "translate", "-c", rnn, "-i", src, "--no-repeat-ngram", -1
    )
    assert code == 2 and "--no-repeat-ngram: Input should be greater than or equal to 0" in err

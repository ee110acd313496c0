"""``seq2seq tune-decode`` (``seq2seq/commands/tune.py``): tuning on the run's test split is
warned about; a choice at the grid's edge is swept beyond."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

import seq2seq.decoding.tune as tune
from seq2seq.decoding.tune import MAX_ALPHA
from tests.toys import run_cli


def test_tuning_on_the_runs_own_test_split_is_warned_about(tmp_path, caplog):
    from seq2seq.config import load_config
    from seq2seq.decoding.tune import warn_if_test_split

    for name in ("test.de", "test.en", "val.de"):
        (tmp_path / name).write_text("ein hund .\n")
    cfg = load_config(None, [f"data.test={tmp_path / 'test'}", "train.max_steps=1"])
    with caplog.at_level("WARNING", logger="seq2seq"):
        warn_if_test_split(tmp_path / "val.de", cfg)
    assert not caplog.records
    with caplog.at_level("WARNING", logger="seq2seq"):
        warn_if_test_split(tmp_path / "test.de", cfg)
    (record,) = caplog.records
    assert "is the run's test split (data.test)" in record.getMessage()


def test_tune_decode_sweeps_beyond_a_choice_at_the_grids_edge_and_records_it(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    """A scripted search whose BLEU rises with α (10 more lines right per 0.5), whatever K: the
    grid's top α keeps winning, so α is swept up to its cap, and K doubles once (a tie then goes
    to the smaller beam)."""
    refs = (synth_corpus / "val.en").read_text(encoding="utf-8").splitlines()
    assert len(refs) == 100

    def scripted(model, tok, sources, cfg, device, **kwargs):
        right = 0 if cfg.method == "greedy" else round(cfg.length_penalty * 20)
        return [SimpleNamespace(text=r if i < right else "wrong") for i, r in enumerate(refs)]

    monkeypatch.setattr(tune, "translate_sentences", scripted)
    run = Path(shutil.copytree(synth_run, tmp_path / "run"))
    args = ["tune-decode", "-c", run, "--beams", "2", "--alphas", "0,0.5"]
    code, out, err = run_cli(monkeypatch, capsys, *args)
    assert code == 0, err
    sweep = json.loads((run / "tune_decode.json").read_text())
    beyond = [(x["beam_size"], x["length_penalty"]) for x in sweep["beyond_grid"]]
    alphas = [1.0 + 0.5 * i for i in range(9)]  # 1.0 ... 5.0
    assert beyond == [(2, 1.0), (4, 0.5)] + [(2, a) for a in alphas[1:]]
    assert alphas[-1] == MAX_ALPHA and len(sweep["sweep"]) == 3 + len(beyond)
    assert yaml.safe_load((run / "decode.yaml").read_text()) == {
        "method": "beam",
        "beam_size": 2,
        "length_penalty": MAX_ALPHA,
    }
    assert "best at the grid's edge: also sweeping beam 2, length penalty 1; beam 4" in err
    # --no-extend sweeps the grid as given
    code, _, err = run_cli(monkeypatch, capsys, *args, "--no-extend", "--no-write", "--json",
                           tmp_path / "plain.json")  # fmt: skip
    assert code == 0, err
    plain = json.loads((tmp_path / "plain.json").read_text())
    assert plain["beyond_grid"] == [] and len(plain["sweep"]) == 3


def test_json_that_would_replace_the_runs_checkpoint_or_the_tuning_set_is_refused_before_decoding(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    """--json is written after the sweep: naming the run's best.pt (or --src, --ref) there would
    replace the checkpoint with the sweep's JSON. It is refused before anything is decoded."""
    monkeypatch.setattr(tune, "translate_sentences", lambda *a, **k: pytest.fail("decoded"))
    run = Path(shutil.copytree(synth_run, tmp_path / "run"))
    src, ref = synth_corpus / "val.de", synth_corpus / "val.en"
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    tuning = ["--src", src, "--ref", ref, "--beams", "2", "--alphas", "0"]
    for json_out, said in (
        (run / "best.pt", "would overwrite the run's own best.pt"),
        (run / "config.yaml", "would overwrite the run's own config.yaml"),
        (src, "is the --src file"),
        (ref, "is the --ref file"),
    ):
        for checkpoint in (run, run / "best.pt"):
            code, _, err = run_cli(
                monkeypatch, capsys, "tune-decode", "-c", checkpoint, *tuning, "--json", json_out
            )
            assert code == 2 and len(err.strip().splitlines()) == 1, err
            assert f"error: --json {json_out}" in err and said in err
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before


@pytest.mark.parametrize("stdin_option", ["--src", "--ref"])
def test_standard_input_as_the_tuning_set_is_refused_naming_the_option(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys, stdin_option
):
    """The tuning set is decoded once per setting, so it is a file; ``-`` was '-: file not
    found'. Refused before the run is loaded."""
    monkeypatch.setattr(tune, "translate_sentences", lambda *a, **k: pytest.fail("decoded"))
    files = {"--src": synth_corpus / "val.de", "--ref": synth_corpus / "val.en", stdin_option: "-"}
    args = ["--src", files["--src"], "--ref", files["--ref"]]
    code, out, err = run_cli(monkeypatch, capsys, "tune-decode", "-c", synth_run, *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"error: {stdin_option} -: standard input is not read here; give a file" in err

"""``seq2seq/decoding/runs.py``: the one loader. Serve and ``translate`` load a run alike and
translate it alike; an ensemble keeps its members; a CTranslate2 export is refused where it is
not read, and cannot join an ensemble; a run's decode.yaml is said in one line."""

from __future__ import annotations

import os
import shutil

import pytest
from fastapi.testclient import TestClient

from seq2seq.checkpoint import CTRANSLATE2_META, CheckpointError
from seq2seq.decoding.ensemble import Ensemble
from seq2seq.decoding.runs import load
from tests.toys import run_cli


@pytest.fixture(scope="module")
def sources(synth_corpus, tmp_path_factory):
    lines = (synth_corpus / "val.de").read_text(encoding="utf-8").splitlines()[:8]
    path = tmp_path_factory.mktemp("runs_src") / "src.de"
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path, lines


def test_a_serve_request_translates_as_translate_does(synth_run, sources, monkeypatch, capsys):
    """The page's API and ``translate`` load through ``load``: for one run, the greedy and the
    beam translations of every line are the same text."""
    from seq2seq.serve.app import create_app
    from seq2seq.serve.runs import load_runs

    path, lines = sources
    with TestClient(create_app(load_runs([synth_run], "cpu"))) as c:
        r = c.post("/translate", json={"text": "\n".join(lines), "beam": 3, "attention": False})
    assert r.status_code == 200, r.text
    (model,) = r.json()["models"]
    served_greedy = [line["greedy"]["text"] for line in model["lines"]]
    served_beam = [line["beam"]["text"] for line in model["lines"]]
    code, greedy, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", path, "--method", "greedy"
    )
    assert code == 0, err
    code, beam, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", path, "--beam", "3"
    )
    assert code == 0, err
    assert greedy.splitlines() == served_greedy
    assert beam.splitlines() == served_beam
    assert served_greedy != served_beam or len(set(served_greedy)) > 1  # not all empty


def test_an_ensemble_keeps_its_members_and_the_first_runs_settings(
    synth_run, synth_transformer_run
):
    first = load(synth_run, "cpu")
    ens = load([synth_run, synth_transformer_run], "cpu")
    assert isinstance(ens.model, Ensemble) and len(ens.model.models) == 2
    assert [p for p, _ in ens.members] == [first.checkpoint, load(synth_transformer_run).checkpoint]
    assert ens.cfg == first.cfg and ens.checkpoint == first.checkpoint
    assert load(synth_run, "cpu").members == []
    # the same checkpoint twice (as the folder and as its best.pt) was a 2-member ensemble of one
    # model (a new-user trial)
    twice = r"best\.pt: the same checkpoint as -c .*run \(.*best\.pt\).*give each checkpoint once"
    with pytest.raises(ValueError, match=twice):
        load([synth_run, synth_transformer_run, synth_run / "best.pt"], "cpu")
    # best.pt is a hard link to the last.pt of its step: the same file by another name
    assert os.path.samefile(synth_run / "best.pt", synth_run / "last.pt")
    with pytest.raises(ValueError, match=r"-c \S+last\.pt: the same checkpoint as -c \S+run \("):
        load([synth_run, synth_run / "last.pt"], "cpu")


def test_a_ctranslate2_export_joins_no_ensemble_and_is_refused_where_it_is_not_read(
    synth_run, tmp_path
):
    export = tmp_path / "ct2"
    export.mkdir()
    (export / CTRANSLATE2_META).write_text("{}")
    with pytest.raises(ValueError, match="cannot join an ensemble"):
        load([export, synth_run], "cpu")
    with pytest.raises(CheckpointError, match="only `seq2seq translate -c"):
        load(export, "cpu", ctranslate2=False)


def test_a_runs_decode_yaml_is_said_in_one_line(synth_run, sources, tmp_path, monkeypatch, capsys):
    run = tmp_path / "tuned"
    shutil.copytree(synth_run, run)
    (run / "decode.yaml").write_text("method: beam\nbeam_size: 3\nlength_penalty: 0.6\n")
    code, _, err = run_cli(monkeypatch, capsys, "translate", "-c", run, "-i", sources[0])
    assert code == 0, err
    said = [line for line in err.splitlines() if "decode.yaml" in line]
    assert len(said) == 1 and said[0].endswith(
        f"decoding with {run / 'decode.yaml'} (tune-decode): beam 3, alpha 0.6"
    )
    code, _, err = run_cli(
        monkeypatch, capsys, "translate", "-c", run, "-i", sources[0], "--beam", "2"
    )
    said = [line for line in err.splitlines() if "decode.yaml" in line]
    assert code == 0 and len(said) == 1 and "the command line sets beam 2" in said[0], err

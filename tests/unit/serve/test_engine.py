"""``seq2seq/serve/engine.py``: text split into lines as ``translate`` reads a file, and a
translation past its deadline never decoded."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from seq2seq.serve import engine
from seq2seq.serve.engine import Stopped, TranslateRequest, split_lines, translate_checked


def test_text_splits_into_lines_like_translate_reads_a_file():
    assert split_lines("a\r\nb\n\nc\u2028d\n") == ["a", "b", "", "c\u2028d"]
    assert split_lines("") == [] and split_lines("\n") == [""]


def test_a_translation_past_its_deadline_stops_before_its_next_model(served, decoder):
    decoder.seconds = 0
    req = TranslateRequest(text="s1")
    with pytest.raises(Stopped):
        translate_checked(["s1"], served, req, stop=lambda: len(decoder.calls) >= 1)
    assert decoder.calls == ["s1"]  # the second model was never asked
    assert len(translate_checked(["s1"], served, req)["models"]) == 2


def test_a_translation_whose_time_ran_out_while_it_waited_for_a_model_lock_is_not_decoded(
    served, monkeypatch
):
    decoded = []
    monkeypatch.setattr(engine, "translate_sentences", lambda *a, **k: decoded.append(a))
    m, deadline = served[0], time.monotonic() + 0.1
    req, stop = TranslateRequest(text="s1"), lambda: time.monotonic() > deadline
    with ThreadPoolExecutor(1) as pool:
        with m.lock:  # another request decodes with the model past this one's deadline
            waiting = pool.submit(engine.translate_with, m, ["s1"], req, stop)
            time.sleep(0.2)
        with pytest.raises(Stopped):
            waiting.result(timeout=5)
    assert decoded == [] and not m.lock.locked()


def test_a_request_without_beam_decodes_with_the_runs_tuned_beam(synth_run, tmp_path):
    """The server says it uses the run's tuned decode settings: a request without ``beam`` gets
    the decode.yaml's beam size (3 here), not a fixed 5; an explicit beam still wins."""
    import shutil

    from seq2seq.serve.engine import Limits, RequestError, check_request
    from seq2seq.serve.runs import load_runs

    run = tmp_path / "tuned"
    shutil.copytree(synth_run, run)
    (run / "decode.yaml").write_text("method: beam\nbeam_size: 3\nlength_penalty: 0.7\n")
    [m] = load_runs([run])
    for body, beam in (({}, 3), ({"beam": 2}, 2)):
        req = TranslateRequest(text="Der Hund.", **body)
        sources, chosen = check_request([m], req, Limits())
        result = engine.translate_with(m, sources, req)
        assert result["beam"] == beam and result["length_penalty"] == 0.7
    with pytest.raises(RequestError) as e:  # n_best over the run's beam, when beam is not given
        check_request([m], TranslateRequest(text="Der Hund.", n_best=4), Limits())
    assert e.value.status == 422 and "n_best (4) cannot exceed model 'tuned''s beam (3)" in str(
        e.value
    )

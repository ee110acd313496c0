"""The server's fast tests: two copies of ``synth_run`` served (``served``), and a fake decoder
(``decoder``) that stands in for the real one, so every timing is the fake's."""

from __future__ import annotations

import threading
import time

import pytest

from seq2seq.serve import engine
from seq2seq.serve.runs import load_runs


@pytest.fixture(scope="module")
def served(synth_run):
    return load_runs([synth_run, synth_run])  # named "run" and "run-2"


class FakeDecoder:
    """Stands in for ``engine.translate_with``: records each call's first source line, then
    sleeps ``seconds``, or, for a line "hold", waits until ``release`` is set."""

    def __init__(self, seconds: float = 0.3):
        self.seconds, self.calls, self.release = seconds, [], threading.Event()

    def __call__(self, m, sources, req, stop):
        self.calls.append(sources[0])
        if sources[0] == "hold":
            assert self.release.wait(10)
        else:
            time.sleep(self.seconds)
        return {"name": m.name, "lines": []}


@pytest.fixture
def decoder(monkeypatch):
    fake = FakeDecoder()
    monkeypatch.setattr(engine, "translate_with", fake)
    yield fake
    fake.release.set()

"""The end-to-end tier's runs, trained once a session: ``trained_run`` (a tiny bahdanau, 40
updates through the command line on the Multi30k slice), ``tiny_run`` (a tiny Transformer, 10
updates), and the server's app over ``tiny_runs`` (``served``, ``client``).

Every test in this folder is marked ``e2e`` by tests/conftest.py."""

from __future__ import annotations

import json

import pytest

from tests.e2e.helpers import run, write_config
from tests.toys import tiny_model_config


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory, multi30k_slice):
    """(run folder, train summary) of a tiny bahdanau trained by ``seq2seq train``."""
    tmp = tmp_path_factory.mktemp("cli")
    model = tiny_model_config(
        "bahdanau", emb_size=32, hidden_size=32, attention_size=32, maxout_size=32
    )
    cfg = write_config(tmp, multi30k_slice, model)
    r = run("train", cfg, "--run-dir", tmp / "run")
    assert r.returncode == 0, r.stderr
    return tmp / "run", json.loads(r.stdout)


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, multi30k_slice):
    """The run folder of a tiny Transformer trained 10 updates by ``seq2seq train``."""
    tmp = tmp_path_factory.mktemp("decode")
    model = tiny_model_config("transformer", d_model=32, d_ff=64)
    cfg = write_config(tmp, multi30k_slice, model, max_steps=10, valid_every=10)
    r = run("train", cfg, "--run-dir", tmp / "run")
    assert r.returncode == 0, r.stderr
    return tmp / "run"


@pytest.fixture(scope="session")
def served(tiny_runs):
    from seq2seq.serve.runs import load_runs
    from tests.serve_runs import MODELS

    return load_runs([tiny_runs[name] for name in MODELS])


@pytest.fixture(scope="session")
def client(served):
    from fastapi.testclient import TestClient

    from seq2seq.serve.app import create_app
    from seq2seq.serve.engine import Limits

    with TestClient(create_app(served, limits=Limits(max_lines=8, max_src_tokens=40))) as c:
        yield c

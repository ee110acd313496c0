"""``seq2seq serve``: the JSON API against tiny trained runs (translations equal ``seq2seq
translate``'s, attention maps are distributions, bad requests get 4xx with a message, concurrent
requests are answered correctly, a failure inside a model does not stop the server)."""

from __future__ import annotations

import json
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from seq2seq.cli import app as cli_app
from seq2seq.serve.app import create_app, start_in_thread
from seq2seq.serve.engine import Limits
from seq2seq.serve.runs import load_runs, load_study
from tests.serve_runs import MODELS, STEPS
from tests.toys import REPO

# Blank, blank-looking (zero-width space), U+2028 inside a line, NUL, CRLF: the hygiene cases.
ODD_TEXT = "s1 s2 s3 s4\n\n \u200b \ns5\u2028s6 s7\ns8\x00 s9 s0\r\ns2 s4 s6 s8 s1 s3\n"


@pytest.fixture(scope="session")
def served(tiny_runs):
    return load_runs([tiny_runs[name] for name in MODELS])


@pytest.fixture(scope="session")
def client(served):
    with TestClient(create_app(served, limits=Limits(max_lines=8, max_src_tokens=40))) as c:
        yield c


def _cli_translate(run: Path, tmp_path: Path, text: str, *args: str) -> list[str]:
    src, out = tmp_path / "src.txt", tmp_path / "out.txt"
    src.write_bytes(text.encode())
    res = CliRunner().invoke(
        cli_app, ["translate", "-c", str(run), "-i", str(src), "-o", str(out), *args]
    )
    assert res.exit_code == 0, res.output
    return out.read_text(encoding="utf-8").split("\n")[:-1]


def _texts(model_result: dict, mode: str) -> list[str]:
    return ["" if line is None else line[mode]["text"] for line in model_result["lines"]]


def _answers(data: dict) -> list:
    """A response without its timings."""
    return [(m["name"], m["lines"]) for m in data["models"]]


@pytest.mark.parametrize("alpha", [None, 0.8])
def test_translations_equal_seq2seq_translate(client, tiny_runs, tmp_path, alpha):
    body = {"text": ODD_TEXT, "beam": 3, "length_penalty": alpha}
    data = client.post("/translate", json=body).json()
    assert [m["name"] for m in data["models"]] == list(MODELS)
    assert data["sources"][1:3] == ["", ""] and data["sources"][3] == "s5 s6 s7"
    lp = [] if alpha is None else ["--length-penalty", str(alpha)]
    for result in data["models"]:
        run = tiny_runs[result["name"]]
        assert _texts(result, "greedy") == _cli_translate(run, tmp_path, ODD_TEXT, "--beam", "1")
        assert _texts(result, "beam") == _cli_translate(run, tmp_path, ODD_TEXT, "--beam", "3", *lp)
        assert result["lines"][1] is None and result["lines"][2] is None
        if alpha is not None:  # the answer says which length penalty scored it
            assert result["length_penalty"] == alpha


def test_attention_maps_are_distributions_over_the_source_pieces(client, served):
    data = client.post("/translate", json={"text": "s1 s2 s3\ns4 s5 s6 s7 s8", "beam": 2}).json()
    for m, result in zip(served, data["models"], strict=True):
        for line in result["lines"]:
            for mode in ("greedy", "beam"):
                hyp = line[mode]
                if m.attention is None:
                    assert hyp["attention"] is None
                    continue
                maps = hyp["attention"]  # (L, H, T, S)
                layers, heads = m.attention
                assert (len(maps), len(maps[0])) == (layers, heads)
                n_src = len(line["source_pieces"])
                for head in (h for layer in maps for h in layer):
                    assert len(head) == len(hyp["pieces"])
                    for row in head:
                        # 4-decimal rounding moves each weight by at most 5e-5
                        assert len(row) == n_src and min(row) >= 0
                        assert sum(row) == pytest.approx(1, abs=n_src * 5e-5 + 1e-9)
    by_name = {m["name"]: m for m in client.get("/models").json()["models"]}
    assert (by_name["transformer"]["layers"], by_name["transformer"]["heads"]) == (2, 2)
    assert (by_name["bahdanau"]["layers"], by_name["bahdanau"]["heads"]) == (1, 1)
    assert not by_name["rnn"]["attention"]


def test_models_endpoint_describes_each_run(client, served):
    data = client.get("/models").json()
    assert [m["name"] for m in data["models"]] == list(MODELS)
    for info, m in zip(data["models"], served, strict=True):
        assert info["parameters"] == m.run.model.num_parameters()
        assert info["training"]["steps"] == STEPS and info["training"]["train_pairs"] == 600
        assert info["checkpoint"] == "best.pt" and info["device"] == "cpu"
    assert data["models"][1]["family"] == "bahdanau (additive)"
    assert data["limits"]["max_lines"] == 8 and data["study"] is False


def test_n_best_lists_are_sorted_and_start_with_the_beam_translation(client):
    data = client.post("/translate", json={"text": "s1 s2 s3", "beam": 4, "n_best": 3}).json()
    for result in data["models"]:
        beam = result["lines"][0]["beam"]
        scores = [h["score"] for h in beam["n_best"]]
        assert len(scores) == 3 and scores == sorted(scores, reverse=True)
        assert beam["n_best"][0]["text"] == beam["text"]
        assert result["greedy_ms"] > 0 and result["beam_ms"] > 0
    greedy_only = client.post("/translate", json={"text": "s1", "beam": 1}).json()
    assert all(r["lines"][0]["beam"] is None for r in greedy_only["models"])


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({}, 422, "text: Field required"),
        ({"text": 3}, 422, "text: Input should be a valid string"),
        ({"text": "s1", "beam": 0}, 422, "beam: Input should be greater than or equal to 1"),
        ({"text": "s1", "beam": 99}, 422, "beam: Input should be less than or equal to 16"),
        ({"text": "s1", "beam": 2, "n_best": 3}, 422, "n_best (3) cannot exceed beam (2)"),
        ({"text": "s1", "length_penalty": -1}, 422, "length_penalty: Input should be greater"),
        ({"text": "s1", "beam": "5"}, 422, "beam: Input should be a valid integer"),
        ({"text": "s1", "attention": "no"}, 422, "attention: Input should be a valid boolean"),
        ({"text": "s1", "path": "/etc"}, 422, "path: Extra inputs are not permitted"),
        ({"text": "s1", "models": ["../runs"]}, 422, "unknown model '../runs'; this server has"),
        ({"text": "s1", "models": []}, 422, "models: name at least one model"),
        ({"text": "s1\n" * 9}, 413, "text has 9 lines; the limit is 8"),
        ({"text": "s1 " * 2000}, 413, "text has 6000 characters; the limit is 5000"),
        ({"text": "s1\n" + "s2 " * 30}, 413, "line 2 is 60 source pieces long for model 'rnn'"),
    ],
)
def test_bad_requests_get_a_4xx_with_a_one_line_message(client, body, status, needle):
    r = client.post("/translate", json=body)
    assert r.status_code == status
    assert needle in r.json()["detail"] and "\n" not in r.json()["detail"]


def test_a_nan_length_penalty_is_named_as_not_finite(client):
    """NaN (which Python's JSON reads) was told it 'should be less than or equal to 10'."""
    body = b'{"text": "s1", "length_penalty": NaN}'
    r = client.post("/translate", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert "length_penalty: Input should be a finite number" in r.json()["detail"]


def test_bodies_that_are_not_json_or_too_large_are_refused(client):
    form = {"content-type": "application/x-www-form-urlencoded"}
    r = client.post("/translate", content=b"text=s1", headers=form)
    assert r.status_code == 422 and "send a JSON object" in r.json()["detail"]
    r = client.post(
        "/translate", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 422 and "send a JSON object" in r.json()["detail"]
    big = json.dumps({"text": "s1 " * 30000}).encode()
    r = client.post("/translate", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "request body over 65536 bytes" in r.json()["detail"]
    chunks = (b"x" * 1000 for _ in range(100))  # no Content-Length: counted as it arrives
    r = client.post("/translate", content=chunks, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "request body over 65536 bytes" in r.json()["detail"]


def test_blank_input_gets_empty_answers_not_errors(client):
    data = client.post("/translate", json={"text": "\n \u200b\u00a0\n\x00"}).json()
    assert data["sources"] == ["", "", ""]
    assert all(line is None for m in data["models"] for line in m["lines"])
    empty = client.post("/translate", json={"text": ""}).json()  # no line at all
    assert empty["sources"] == [] and all(m["lines"] == [] for m in empty["models"])


def test_only_fixed_routes_reach_files(client):
    page = client.get("/")
    assert page.status_code == 200 and "/static/app.js" in page.text
    assert "translate" in client.get("/static/app.js").text
    for path in ("/static/../pyproject.toml", "/static/index.html", "/static/%2e%2e/cli.py"):
        assert client.get(path).status_code == 404
    assert client.get("/study").json()["detail"].startswith("no study loaded")


def test_a_failing_model_call_answers_500_and_the_server_goes_on(served, monkeypatch):
    app = create_app(served)
    bahdanau = served[1]

    def boom(*args, **kwargs):
        raise RuntimeError("boom\nsecond line")

    with TestClient(app, raise_server_exceptions=False) as c:
        with monkeypatch.context() as m:
            m.setattr(bahdanau.run.model, "cross_attention_maps", boom)
            r = c.post("/translate", json={"text": "s1 s2"})
            assert r.status_code == 500
            assert r.json()["detail"] == "internal error: RuntimeError: boom"
            assert c.post("/translate", json={"text": "s1", "models": ["rnn"]}).status_code == 200
        assert not bahdanau.lock.locked()
        assert c.post("/translate", json={"text": "s1 s2"}).status_code == 200


def test_32_concurrent_requests_are_all_answered_correctly(served):
    """Through a real uvicorn server: 32 requests at once, each for its own sentence and model,
    get the answers the same requests get one at a time."""
    names = [m.name for m in served]
    bodies = [
        {
            "text": " ".join(f"s{(i + k) % 10}" for k in range(2 + i % 5)),
            "beam": 1 + i % 3,
            "models": [names[i % 3]],
            "attention": i % 2 == 0,
        }
        for i in range(32)
    ]
    server, url = start_in_thread(create_app(served))
    try:
        with httpx.Client(base_url=url, timeout=120) as http:
            expected = [http.post("/translate", json=b).json() for b in bodies]
            with ThreadPoolExecutor(32) as pool:
                got = list(pool.map(lambda b: http.post("/translate", json=b), bodies))
    finally:
        server.should_exit = True
    assert [r.status_code for r in got] == [200] * 32
    assert [_answers(r.json()) for r in got] == [_answers(e) for e in expected]


def test_study_results_are_served_for_the_plot(served):
    folder = REPO / "docs/results/study/multi30k"
    raw = json.loads((folder / "results.json").read_text())
    study = load_study(folder)
    assert study["modes"] == ["greedy", "beam"] and study["buckets"][:2] == [10, 20]
    assert study["findings"] == raw["findings"]["verdict"]
    with TestClient(create_app(served, study)) as c:
        data = c.get("/study").json()
        assert c.get("/models").json()["study"] is True
    bahdanau = next(m for m in data["models"] if m["name"] == "study-bahdanau")
    want = next(m for m in raw["models"] if m["name"] == "study-bahdanau")
    rows, want_rows = bahdanau["decodes"]["beam"]["by_length"], want["decodes"]["beam"]["by_length"]
    assert rows[0]["bucket"] == "1-10" and rows[0]["bleu"] == pytest.approx(want_rows[0]["bleu"])
    assert bahdanau["steps"] == 1400 + 200  # both stages of the recipe, not the joined one alone
    assert data["budget"] == raw["recipe"]["words"]


def test_serve_command_errors_are_one_line_exit_2(tiny_runs, tmp_path, run_in_process):
    def serve(*args):
        return run_in_process("serve", *args)

    r = serve(tmp_path / "nothing")
    assert r.returncode == 2 and "no such checkpoint or run directory" in r.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        r = serve(tiny_runs["rnn"], "--port", taken.getsockname()[1])
    assert r.returncode == 2 and "cannot listen on 127.0.0.1:" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = serve(tiny_runs["rnn"], "--study", tmp_path, "--port", 0)
    assert r.returncode == 2 and "results.json: not found" in r.stderr
    r = serve(f"a={tiny_runs['rnn']}", f"a={tiny_runs['bahdanau']}", "--port", 0)
    assert r.returncode == 2 and "model name 'a' given twice" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_name_equals_path_names_a_model(tiny_runs, tmp_path):
    """``NAME=PATH`` names the model in /models and requests; a plain PATH keeps its folder's
    name, stepping aside (``-2``) for a given name; an existing path with ``=`` stays a path."""
    import shutil

    odd = tmp_path / "lr=0.1"
    shutil.copytree(tiny_runs["rnn"], odd)
    served = load_runs(
        [
            f"att={tiny_runs['bahdanau'] / 'best.pt'}",
            str(tiny_runs["rnn"]),
            f"rnn={tiny_runs['transformer']}",
            str(odd),
            tiny_runs["bahdanau"],  # a Path is a path
        ]
    )
    names = ["att", "rnn-2", "rnn", "lr=0.1", "bahdanau"]
    assert [m.name for m in served] == names
    families = ["bahdanau", "rnn", "transformer", "rnn", "bahdanau"]
    assert [m.run.cfg.model.name for m in served] == families
    with TestClient(create_app(served)) as c:
        assert [m["name"] for m in c.get("/models").json()["models"]] == names
        data = c.post("/translate", json={"text": "s1 s2", "models": ["att", "rnn"]}).json()
        assert [m["name"] for m in data["models"]] == ["att", "rnn"]
        assert data["models"][1]["lines"][0]["greedy"]["attention"] is not None  # the transformer

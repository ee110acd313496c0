"""``seq2seq/serve/app.py``: text that is not Unicode gets a 4xx; under load, translations wait in a
bounded queue for worker threads of their own, so the cheap routes answer while they wait, a full
queue answers 503 with Retry-After, and a translation nobody waits for any more is never computed.

The decoding is faked (``engine.translate_with`` sleeps or waits for a signal and records its
call) over a real tiny run, so every timing here is the fake's, and each test takes about a second.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import anyio
import httpx
import pytest
from fastapi.testclient import TestClient

from seq2seq.serve.app import create_app, start_in_thread
from seq2seq.serve.engine import Limits
from seq2seq.serve.runs import load_runs


async def _until(condition, limit_s: float = 5.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


def _body(text: str) -> dict:
    return {"text": text, "models": ["run"], "attention": False}


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b'{"text": "\\ud83d"}', "text: character 1 is a lone UTF-16 surrogate (U+D83D)"),
        (b'{"text": "ein \\ude00 hund"}', "text: character 5 is a lone UTF-16 surrogate (U+DE00)"),
        (b'{"text": "ein", "models": ["\\ud83d"]}', "unknown model '\\ud83d'"),
        (b'{"text": "ein", "\\ud83d": 1}', ""),
    ],
)
def test_text_that_is_not_unicode_gets_a_4xx_with_a_one_line_message(synth_run, body, needle):
    """A JSON escape of half a surrogate pair decodes to no character: the tokenizer cannot take
    it, and an answer that quoted it could not be encoded."""
    json_body = {"content-type": "application/json"}
    with TestClient(create_app(load_runs([synth_run]))) as c:
        r = c.post("/translate", content=body, headers=json_body)
        assert r.status_code in (400, 422), r.text
        detail = r.json()["detail"]
        assert needle in detail and "\n" not in detail and "internal error" not in detail
        pair = c.post("/translate", content=b'{"text": "ein \\ud83d\\ude00"}', headers=json_body)
        assert pair.status_code == 200 and pair.json()["sources"] == ["ein \U0001f600"]


def test_cheap_routes_answer_while_translations_fill_the_queue_and_one_more_gets_503(
    served, decoder
):
    """2 workers and 2 places in the queue, all taken by 0.3 s translations; FastAPI's own
    thread pool is cut to 2 threads, as 60 translations fill its 40 in a real server. The page,
    /models, /study and /health still answer at once; a fifth translation gets 503 and a
    Retry-After; the four queued ones are all answered."""
    app = create_app(served, limits=Limits(workers=2, max_queued=2, timeout_s=10))
    queue = app.state.translations

    async def scenario():
        anyio.to_thread.current_default_thread_limiter().total_tokens = 2
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            queued = [
                asyncio.create_task(http.post("/translate", json=_body(f"s{i}"))) for i in range(4)
            ]
            await _until(lambda: queue.counts() == (2, 2))
            t0 = time.perf_counter()
            cheap = [await http.get(path) for path in ("/models", "/", "/study", "/health")]
            cheap_s = time.perf_counter() - t0
            extra = await http.post("/translate", json=_body("s9"))
            return cheap, cheap_s, extra, await asyncio.gather(*queued)

    cheap, cheap_s, extra, answers = asyncio.run(scenario())
    assert [r.status_code for r in cheap] == [200, 200, 404, 200]
    assert cheap[0].json()["limits"]["max_queued"] == 2
    assert cheap[3].json() == {"status": "ok", "translating": 2, "waiting": 2}
    assert cheap_s < 0.5, f"cheap routes took {cheap_s:.2f} s behind the translations"
    assert extra.status_code == 503
    assert int(extra.headers["Retry-After"]) >= 1
    detail = extra.json()["detail"]
    assert detail.startswith("server busy: 2 translations running and 2 waiting") and "\n" not in (
        detail
    )
    assert [r.status_code for r in answers] == [200] * 4
    assert sorted(decoder.calls) == ["s0", "s1", "s2", "s3"]  # the refused one never ran


def test_a_translation_still_queued_past_its_deadline_is_never_computed(served, decoder):
    """One worker, held by a translation that outlasts the 0.5 s limit; the one queued behind it
    gets 503 at its own deadline, without waiting for the worker, and is never decoded."""
    app = create_app(served, limits=Limits(workers=1, max_queued=4, timeout_s=0.5))
    queue = app.state.translations

    async def scenario():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            holding = asyncio.create_task(http.post("/translate", json=_body("hold")))
            await _until(lambda: decoder.calls == ["hold"])
            t0 = time.perf_counter()
            late = await http.post("/translate", json=_body("late"))
            late_s = time.perf_counter() - t0
            held = await holding
            assert queue.counts() == (1, 0)  # the held thread is still counted until it ends
            decoder.release.set()
            await _until(lambda: queue.counts() == (0, 0))
            return late, late_s, held

    late, late_s, held = asyncio.run(scenario())
    assert late.status_code == held.status_code == 503
    assert late.json()["detail"].startswith("translation not done within 0.5 s")
    assert int(late.headers["Retry-After"]) >= 1
    assert late_s < 2.0
    assert decoder.calls == ["hold"]  # "late" was dropped before it started


def test_a_queued_translation_whose_client_left_is_never_computed(served, decoder):
    """Through a real server on 127.0.0.1: a translation waits behind one that holds the only
    worker; its client closes the connection; it leaves the queue and never runs."""
    app = create_app(served, limits=Limits(workers=1, max_queued=4, timeout_s=30))
    queue = app.state.translations
    server, url = start_in_thread(app)
    try:
        with httpx.Client(base_url=url, timeout=30) as http, ThreadPoolExecutor(1) as pool:
            holding = pool.submit(http.post, "/translate", json=_body("hold"))
            asyncio.run(_until(lambda: decoder.calls == ["hold"]))
            body = json.dumps(_body("gone")).encode()
            host, port = url.removeprefix("http://").rstrip("/").split(":")
            with socket.create_connection((host, int(port))) as s:
                s.sendall(
                    b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                asyncio.run(_until(lambda: queue.counts() == (1, 1)))
            asyncio.run(_until(lambda: queue.counts() == (1, 0)))  # dropped once the client left
            decoder.release.set()
            assert holding.result().status_code == 200
    finally:
        server.should_exit = True
    assert decoder.calls == ["hold"]


def test_a_json_key_given_twice_is_refused_naming_the_key(synth_run):
    """``"beam": 1, "beam": 16``: the last won, silently (the config loader refuses a YAML key
    given twice)."""
    with TestClient(create_app(load_runs([synth_run]))) as c:
        for key in ("beam", "\\ud83d"):  # a lone surrogate: named by its escape
            body = f'{{"text": "ein", "{key}": 1, "{key}": 16}}'.encode()
            r = c.post("/translate", content=body, headers={"content-type": "application/json"})
            assert r.status_code == 422
            assert r.json() == {"detail": f"{key} is given twice in the JSON body; keep one"}

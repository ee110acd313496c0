"""The FastAPI application and the uvicorn server behind ``seq2seq serve``, the one home of
``fastapi`` and ``uvicorn`` (routes, errors and limits: docs/serve.md).

Every error is JSON ``{"detail": "one line"}``: 4xx for a bad request, 503 (and ``Retry-After``)
for a translation the server is too busy for, 500 for a failure inside a model; none stops the
server. Translations decode in worker threads of their own (``TranslationQueue``), so the other
routes, on the event loop, answer at once however many translations wait.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import socket
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from seq2seq.atomic import escaped
from seq2seq.decoding.quantize import quantize_model
from seq2seq.serve import ServeError
from seq2seq.serve.engine import (
    MAX_BEAM,
    Limits,
    RequestError,
    Stopped,
    TranslateRequest,
    check_request,
    translate_checked,
)
from seq2seq.serve.runs import ServedModel, load_runs, load_study

log = logging.getLogger("seq2seq")

STATIC = {  # fixed routes -> (package file, media type); no request path reaches the disk
    "/": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/style.css": ("style.css", "text/css; charset=utf-8"),
}


class BodyLimit:
    """ASGI middleware: a request body over ``max_bytes`` gets 413 and a message naming the limit,
    by its Content-Length header when it has one, else by counting the bytes as they arrive."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        message = f"request body over {self.max_bytes} bytes; send less text at once"
        length = dict(scope["headers"]).get(b"content-length", b"0")
        if not length.isdigit() or int(length) > self.max_bytes:
            return await JSONResponse({"detail": message}, 413)(scope, receive, send)
        seen = 0

        async def counted():
            nonlocal seen
            event = await receive()
            seen += len(event.get("body", b""))
            if seen > self.max_bytes:  # FastAPI lets an HTTPException out of body parsing
                raise HTTPException(413, message)
            return event

        return await self.app(scope, counted, send)


class UniqueKeysRequest(Request):
    """A request whose JSON body may not give a key twice (``json.loads`` keeps the last)."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = json.loads(await self.body(), object_pairs_hook=_unique_keys)
        return self._json


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict; raises HTTPException (422, which FastAPI lets out of
    body parsing) naming a key given twice, as the config loader refuses a YAML key twice."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise HTTPException(422, f"{escaped(key)} is given twice in the JSON body; keep one")
        out[key] = value
    return out


class UniqueKeysRoute(APIRoute):
    """A route that reads its JSON body with ``UniqueKeysRequest``."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            return await handler(UniqueKeysRequest(request.scope, request.receive))

        return route


class Busy(RequestError):
    """503: the server cannot take the translation now; ``retry_after`` seconds is a guess."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(503, message)
        self.retry_after = retry_after


class TranslationQueue:
    """Runs translations in ``limits.workers`` threads of their own, off the event loop, with at
    most ``limits.max_queued`` more waiting (one more is refused at once: ``Busy``). One whose
    client left or whose ``limits.timeout_s`` passed is dropped before it starts, or told to stop
    before its next model (its thread stays counted until it ends); the client gets 503 at once.
    """

    POLL_S = 0.1  # how often a waiting request checks whether its client is still there

    def __init__(self, limits: Limits):
        self.limits = limits
        self.pool: ThreadPoolExecutor | None = None  # started by the first translation
        self.taken = 0  # translations submitted and not yet over (their thread's end included)
        self.lock = threading.Lock()  # for taken, which the worker threads lower
        self.mean_s = 1.0  # a moving average of a translation's seconds, for Retry-After

    def counts(self) -> tuple[int, int]:
        """(translations decoding, translations waiting for a worker) now."""
        taken = self.taken
        return min(taken, self.limits.workers), max(taken - self.limits.workers, 0)

    def retry_after(self) -> int:
        """Seconds until the translations taken now are likely done (1 at least, at most the
        time limit)."""
        guess = math.ceil(self.mean_s * max(self.taken, 1) / self.limits.workers)
        return max(1, min(guess, math.ceil(self.limits.timeout_s)))

    async def run(self, work: Callable[[Callable[[], bool]], Any], request: Request) -> Any:
        """``work(stop)``'s result, computed in a worker thread; ``stop()`` turns true once the
        answer is no longer wanted. Raises Busy when every worker and queue place is taken, or
        the time limit passed."""
        lim = self.limits
        with self.lock:
            full = self.taken >= lim.workers + lim.max_queued
            if not full:
                self.taken += 1
        if full:
            raise Busy(
                f"server busy: {lim.workers} translations running and {lim.max_queued} waiting "
                f"(serve --workers, --max-queued); try again in {self.retry_after()} s",
                self.retry_after(),
            )
        deadline = time.monotonic() + lim.timeout_s
        given_up = threading.Event()

        def stop() -> bool:
            return given_up.is_set() or time.monotonic() > deadline

        def job():
            if stop():
                raise Stopped  # nobody waits for this answer any more: not computed
            t0 = time.perf_counter()
            try:
                return work(stop)
            finally:
                self.mean_s = 0.8 * self.mean_s + 0.2 * (time.perf_counter() - t0)

        if self.pool is None:
            self.pool = ThreadPoolExecutor(lim.workers, thread_name_prefix="translate")
        future = self.pool.submit(job)
        future.add_done_callback(self._over)
        done = asyncio.wrap_future(future)
        try:
            while not done.done():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                await asyncio.wait({done}, timeout=min(left, self.POLL_S))
                if not done.done() and await request.is_disconnected():
                    raise RequestError(499, "the client closed the connection; translation dropped")
            if done.done() and not done.cancelled():
                return done.result()
        except Stopped:
            pass
        finally:
            if not done.done():
                given_up.set()
                future.cancel()  # a translation still waiting never starts
                done.cancel()  # nor is a running one's late answer awaited
        raise Busy(
            f"translation not done within {lim.timeout_s:g} s (serve --timeout); the server is "
            f"busy or the text too long: try again in {self.retry_after()} s, or send less",
            self.retry_after(),
        )

    def _over(self, future: Future) -> None:
        with self.lock:
            self.taken -= 1

    def close(self) -> None:
        """Drop the waiting translations (the running ones end with their current model); a
        later translation starts a new pool."""
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def create_app(
    served: Sequence[ServedModel], study: dict | None = None, limits: Limits = Limits()
) -> FastAPI:
    """The application over models loaded once (``runs.load_runs``) and an optional study
    (``runs.load_study``)."""
    queue = TranslationQueue(limits)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        queue.close()

    # no /docs: its page loads from a CDN; /openapi.json stays
    app = FastAPI(title="seq2seq serve", docs_url=None, redoc_url=None, lifespan=lifespan)
    app.router.route_class = UniqueKeysRoute  # a JSON key given twice: 422
    app.state.translations = queue
    app.add_middleware(BodyLimit, max_bytes=limits.max_body_bytes)
    for route, (name, media) in STATIC.items():
        body = resources.files("seq2seq.serve").joinpath("static", name).read_bytes()
        app.add_api_route(route, _static(body, media), methods=["GET"], include_in_schema=False)

    @app.get("/models")
    async def models() -> dict[str, Any]:
        """The loaded models (name, family, parameters, training summary), limits, study."""
        return {
            "models": [m.info for m in served],
            "limits": {**asdict(limits), "max_beam": MAX_BEAM},
            "study": study is not None,
        }

    @app.post("/translate")
    async def translate(req: TranslateRequest, request: Request) -> dict[str, Any]:
        """Every chosen model's greedy and beam translations of ``text`` (see docs/serve.md)."""
        sources, chosen = await run_in_threadpool(check_request, served, req, limits)
        return await queue.run(lambda stop: translate_checked(sources, chosen, req, stop), request)

    @app.get("/study")
    async def study_results() -> dict[str, Any]:
        """The ``--study`` results for the BLEU-by-length plot."""
        if study is None:
            raise HTTPException(404, "no study loaded; start the server with --study DIR")
        return study

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """The server answers; translations decoding and waiting now."""
        translating, waiting = queue.counts()
        return {"status": "ok", "translating": translating, "waiting": waiting}

    @app.exception_handler(RequestError)
    async def refused(request: Request, e: RequestError) -> JSONResponse:
        response = _error(str(e), e.status)
        if isinstance(e, Busy):
            response.headers["Retry-After"] = str(e.retry_after)
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, e: RequestValidationError) -> JSONResponse:
        return _error(validation_message(e.errors()), 422)

    @app.exception_handler(Exception)
    async def failed(request: Request, e: Exception) -> JSONResponse:
        log.error("%s %s failed", request.method, request.url.path, exc_info=e)
        first = (str(e).strip().splitlines() or [""])[0][:200]
        return _error(f"internal error: {type(e).__name__}: {first}", 500)

    return app


def _static(body: bytes, media: str):
    async def page() -> Response:
        return Response(body, media_type=media, headers={"Cache-Control": "no-cache"})

    return page


def _error(detail: str, status: int) -> JSONResponse:
    """``{"detail": detail}``; a lone surrogate quoted from the request (a key, a value) is written
    as its escape, ``\\ud83d`` (``atomic.escaped``), so the answer can always be encoded."""
    return JSONResponse({"detail": escaped(detail)}, status)


def validation_message(errors: Sequence[dict]) -> str:
    """pydantic's first error as one line, e.g. ``beam: Input should be less than or equal to
    16``; a body that is not JSON says so."""
    err = errors[0]
    if err.get("type") in ("json_invalid", "model_attributes_type", "dict_type"):
        return 'send a JSON object with Content-Type: application/json, e.g. {"text": "..."}'
    loc = [str(x) for x in err.get("loc", ()) if x != "body"]
    msg = str(err.get("msg", "invalid request")).removeprefix("Value error, ")
    return f"{'.'.join(loc)}: {msg}" if loc else msg


def listen(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket (port 0 picks a free port); raises ServeError for an address
    that cannot be used (port taken, unknown host, no permission)."""
    try:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(info[0], socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(info[4])
        sock.listen(128)
    except OSError as e:
        raise ServeError(
            f"cannot listen on {host}:{port} ({e.strerror or e}); pass another --port or --host"
        ) from None
    return sock


def make_server(app: FastAPI) -> uvicorn.Server:
    """A uvicorn server for ``app`` (run it with ``server.run(sockets=[sock])``)."""
    return uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5))


def start_in_thread(app: FastAPI, host: str = "127.0.0.1") -> tuple[uvicorn.Server, str]:
    """Serve ``app`` on a free port from a daemon thread (tests, screenshots); returns the
    server (``server.should_exit = True`` stops it) and the page's URL, once it accepts."""
    sock = listen(host, 0)
    server = make_server(app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.05)
    return server, url(host, sock.getsockname()[1])


def url(host: str, port: int) -> str:
    """The page's address, e.g. ``http://127.0.0.1:8000/`` (IPv6 hosts in brackets)."""
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(
    runs: Sequence[str | Path],
    host: str = "127.0.0.1",
    port: int = 8000,
    study: str | Path | None = None,
    device: str | None = None,
    limits: Limits = Limits(),
    quantize: str | None = None,
) -> None:
    """Load ``runs`` (paths, or ``NAME=PATH`` strings) once, with int8 weights under
    ``quantize`` (on the CPU), then serve the page and API until Ctrl-C.

    Raises:
        ServeError: the address is taken, the study folder is unusable, or a NAME is refused.
        CheckpointError, ConfigError: a run cannot be loaded.
        ValueError: ``quantize`` unknown, or a model not on the CPU under it.
    """
    sock = listen(host, port)  # first: a taken port fails before minutes of loading
    study_data = None if study is None else load_study(study)
    served = load_runs(runs, device)
    for m in served:
        m.run.model = quantize_model(m.run.model, quantize)
    app = create_app(served, study_data, limits)
    if host not in ("127.0.0.1", "localhost", "::1"):
        log.warning(
            "listening on %s: anyone who can reach this machine can use the models (there is "
            "no authentication)",
            host,
        )
    names = ", ".join(f"{m.name} ({m.info['family']}, {m.run.device})" for m in served)
    log.info("serving %s at %s (Ctrl-C to stop)", names, url(host, sock.getsockname()[1]))
    make_server(app).run(sockets=[sock])

"""The FastAPI application and the uvicorn server behind ``seq2seq serve``, the one home of
``fastapi`` and ``uvicorn``.

Routes: ``GET /`` the page (and its two static files, read from the package once), ``GET
/models``, ``POST /translate``, ``GET /study``. Every error is JSON ``{"detail": "one line"}``
with a 4xx status for a bad request and 500 for a failure inside a model; neither stops the server.
Requests run in FastAPI's thread pool; each model's lock lets one request at a time use it.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from seq2seq.serve import ServeError
from seq2seq.serve.engine import (
    Limits,
    RequestError,
    TranslateRequest,
    limits_info,
    translate_request,
)
from seq2seq.serve.runs import ServedModel, load_runs
from seq2seq.serve.study import load_study

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


def create_app(
    served: Sequence[ServedModel], study: dict | None = None, limits: Limits = Limits()
) -> FastAPI:
    """The application over models loaded once (``runs.load_runs``) and an optional study
    (``study.load_study``)."""
    # no /docs: its page loads from a CDN; /openapi.json stays
    app = FastAPI(title="seq2seq serve", docs_url=None, redoc_url=None)
    app.add_middleware(BodyLimit, max_bytes=limits.max_body_bytes)
    pages = {
        route: (resources.files("seq2seq.serve").joinpath("static", name).read_bytes(), media)
        for route, (name, media) in STATIC.items()
    }
    for route, (body, media) in pages.items():
        app.add_api_route(route, _static(body, media), methods=["GET"], include_in_schema=False)

    @app.get("/models")
    def models() -> dict[str, Any]:
        """The loaded models (name, family, parameters, training summary), limits, study."""
        return {
            "models": [m.info for m in served],
            "limits": limits_info(limits),
            "study": study is not None,
        }

    @app.post("/translate")
    def translate(req: TranslateRequest) -> dict[str, Any]:
        """Every chosen model's greedy and beam translations of ``text`` (see docs/serve.md)."""
        return translate_request(served, req, limits)

    @app.get("/study")
    def study_results() -> dict[str, Any]:
        """The ``--study`` results for the BLEU-by-length plot."""
        if study is None:
            raise HTTPException(404, "no study loaded; start the server with --study DIR")
        return study

    _add_error_handlers(app)
    return app


def _static(body: bytes, media: str):
    def page() -> Response:
        return Response(body, media_type=media, headers={"Cache-Control": "no-cache"})

    return page


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestError)
    async def refused(request: Request, e: RequestError) -> JSONResponse:
        return _error(str(e), e.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, e: RequestValidationError) -> JSONResponse:
        return _error(validation_message(e.errors()), 422)

    @app.exception_handler(Exception)
    async def failed(request: Request, e: Exception) -> JSONResponse:
        log.error("%s %s failed", request.method, request.url.path, exc_info=e)
        first = (str(e).strip().splitlines() or [""])[0][:200]
        return _error(f"internal error: {type(e).__name__}: {first}", 500)


def _error(detail: str, status: int) -> JSONResponse:
    """``{"detail": detail}``; a lone surrogate quoted from the request (a key, a value) is written
    as its escape, ``\\ud83d``, so the answer can always be encoded."""
    return JSONResponse({"detail": detail.encode("utf-8", "backslashreplace").decode()}, status)


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
    """A bound, listening TCP socket (port 0 picks a free port).

    Raises:
        ServeError: the address cannot be used (port taken, unknown host, no permission).
    """
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


def make_server(app: FastAPI, sock: socket.socket) -> uvicorn.Server:
    """A uvicorn server for ``app`` on ``sock`` (run it with ``server.run(sockets=[sock])``)."""
    return uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5))


def start_in_thread(app: FastAPI, host: str = "127.0.0.1") -> tuple[uvicorn.Server, str]:
    """Serve ``app`` on a free port from a daemon thread (tests, screenshots); returns the
    server (``server.should_exit = True`` stops it) and the page's URL, once it accepts."""
    sock = listen(host, 0)
    server = make_server(app, sock)
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
) -> None:
    """Load ``runs`` once, then serve the page and API until Ctrl-C.

    Raises:
        ServeError: the address is taken or the study folder is unusable.
        CheckpointError, ConfigError: a run cannot be loaded.
    """
    sock = listen(host, port)  # first: a taken port fails before minutes of loading
    study_data = None if study is None else load_study(study)
    served = load_runs(runs, device)
    app = create_app(served, study_data, limits)
    if host not in ("127.0.0.1", "localhost", "::1"):
        log.warning(
            "listening on %s: anyone who can reach this machine can use the models (there is "
            "no authentication)",
            host,
        )
    names = ", ".join(f"{m.name} ({m.info['family']}, {m.device})" for m in served)
    log.info("serving %s at %s (Ctrl-C to stop)", names, url(host, sock.getsockname()[1]))
    make_server(app, sock).run(sockets=[sock])

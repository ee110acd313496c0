"""``serve``: the local page and JSON API over trained runs (``seq2seq.serve``)."""

from __future__ import annotations

from pathlib import Path

import typer

from seq2seq.commands.common import UserError
from seq2seq.commands.decode_options import QUANTIZE, quantized_device
from seq2seq.console import setup_logging


def serve(
    runs: list[str] = typer.Argument(
        ...,
        metavar="[NAME=]RUN",
        help="Run folders (their best.pt, else last.pt) or checkpoint files. Each model is named "
        "after its folder (-2, -3 ... on clashes); NAME=RUN names it NAME instead (letters, "
        "digits, '.', '_', '-'; e.g. nu-avg=runs/nu/avg.pt). A RUN that exists as given is a "
        "path even if it holds '='.",
    ),
    host: str = typer.Option(
        "127.0.0.1",
        "--host",
        help="Address to listen on. Any other than 127.0.0.1 opens the models to the network, "
        "with no authentication.",
    ),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port; 0 picks a free one."),
    study: Path | None = typer.Option(
        None,
        "--study",
        metavar="DIR",
        help="A `seq2seq compare --out` folder: its results.json as an interactive "
        "BLEU-by-length plot.",
    ),
    device: str | None = typer.Option(
        None,
        "--device",
        metavar="DEVICE",
        help="auto | cpu | cuda [default: each run's train.device; cpu with --quantize].",
    ),
    quantize: str | None = QUANTIZE,
    workers: int = typer.Option(
        4,
        "--workers",
        min=1,
        help="Translations decoding at once, in threads of their own (each model still takes "
        "one at a time); the page, /models, /study and /health never wait for them.",
    ),
    max_queued: int = typer.Option(
        32,
        "--max-queued",
        min=0,
        help="Translations waiting for a worker; one more gets 503 with a Retry-After header.",
    ),
    timeout: float = typer.Option(
        60.0,
        "--timeout",
        min=0.001,
        help="Seconds a translation may take from its arrival, waiting included; then it gets "
        "503, and one still waiting is dropped before it starts (so is one whose client left).",
    ),
):
    """Serve a local page and JSON API (POST /translate, see docs/serve.md) showing every run's
    greedy and beam translations, log-probabilities, decode times and cross-attention side by
    side. The runs are loaded once; Ctrl-C stops the server."""
    from seq2seq.serve import ServeError
    from seq2seq.serve.app import serve as run_server
    from seq2seq.serve.engine import Limits

    setup_logging()
    limits = Limits(workers=workers, max_queued=max_queued, timeout_s=timeout)
    device = quantized_device(quantize, device)
    try:
        run_server(runs, host, port, study, device, limits, quantize)
    except ServeError as e:
        raise UserError(str(e)) from None

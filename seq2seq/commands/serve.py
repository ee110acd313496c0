"""``serve``: the local page and JSON API over trained runs (``seq2seq.serve``)."""

from __future__ import annotations

from pathlib import Path

import typer

from seq2seq.commands import decode_options as opt
from seq2seq.commands.common import UserError, user_errors
from seq2seq.console import setup_logging


def serve(
    runs: list[str] = typer.Argument(
        ...,
        metavar="[NAME=]RUN",
        help="Run folders or checkpoint files, each named after its folder or NAME=RUN.",
    ),
    host: str = typer.Option(
        "127.0.0.1",
        metavar="HOST",
        help="Address to listen on; any but 127.0.0.1 opens the models to the network.",
    ),
    port: int = typer.Option(
        8000, min=0, max=65535, metavar="PORT", help="Port; 0 picks a free one."
    ),
    study: Path | None = typer.Option(
        None,
        metavar="DIR",
        help="A `seq2seq compare --out` folder, shown as a BLEU-by-length plot.",
    ),
    device: str | None = typer.Option(
        None,
        metavar="DEVICE",
        help="auto | cpu | cuda [default: each run's train.device; cpu with --quantize].",
    ),
    quantize: opt.Quantize = None,
    workers: int = typer.Option(
        4, min=1, metavar="N", help="Translations decoding at once, each in its own thread."
    ),
    max_queued: int = typer.Option(
        32, min=0, metavar="N", help="Translations waiting for a worker; one more gets 503."
    ),
    timeout: float = typer.Option(
        60.0,
        min=0.001,
        metavar="SECONDS",
        help="Seconds a translation may take, waiting included; then 503.",
    ),
):
    """Serve a local page and JSON API (POST /translate) showing every run's translations side
    by side; the runs are loaded once (docs/serve.md). Ctrl-C stops the server."""
    from seq2seq.decoding.quantize import quantize_device
    from seq2seq.serve import ServeError
    from seq2seq.serve.app import serve as run_server
    from seq2seq.serve.engine import Limits

    setup_logging()
    limits = Limits(workers=workers, max_queued=max_queued, timeout_s=timeout)
    with user_errors():
        device = quantize_device(quantize, device)
    try:
        run_server(runs, host, port, study, device, limits, quantize)
    except ServeError as e:
        raise UserError(str(e)) from None

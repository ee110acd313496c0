"""``export``: a run's weights and tokenizer alone (``export/weights.py``), or its Transformer as a
CTranslate2 model (``export/ctranslate2.py``), which ``decoding.runs.load`` reads back."""

from __future__ import annotations

from pathlib import Path

import typer

from seq2seq.atomic import check_writable
from seq2seq.commands.common import UserError, no_stdout, user_errors
from seq2seq.console import setup_logging


def export(
    run: Path = typer.Argument(
        ...,
        metavar="RUN",
        help="Run folder (its best.pt, else last.pt), checkpoint file, or an earlier export.",
    ),
    output: Path = typer.Option(
        ..., "--output", "-o", metavar="DIR", help="Folder to write the export into (a new one)."
    ),
    dtype: str = typer.Option(
        "fp32",
        metavar="fp32|fp16|bf16",
        help="Weights' type in the export; fp16 and bf16 halve its size.",
    ),
    fmt: str = typer.Option(
        "seq2seq",
        "--format",
        metavar="seq2seq|ctranslate2",
        help="seq2seq: DIR/model.pt; ctranslate2: for CTranslate2.",
    ),
    quantize: str | None = typer.Option(
        None,
        metavar="int8",
        help="--format ctranslate2: store int8 weights (CTranslate2's own quantization).",
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace DIR when it holds an earlier export."
    ),
):
    """Write a run's weights and tokenizer (and decode.yaml), without training state, into a new
    folder, atomically; prints the sizes read and written (docs/overview.md)."""
    from seq2seq.export.folder import megabytes

    setup_logging()
    no_stdout(output, "-o", "an export folder")
    if fmt not in ("seq2seq", "ctranslate2"):
        raise UserError(f"--format {fmt}: choose seq2seq or ctranslate2")
    if quantize not in (None, "int8"):
        raise UserError(f"--quantize {quantize}: only int8 is offered (with --format ctranslate2)")
    if quantize is not None and fmt != "ctranslate2":
        raise UserError(
            f"--quantize {quantize}: only with --format ctranslate2; a seq2seq export is "
            "quantized when it is loaded (translate --quantize int8)"
        )
    check_writable(output, "-o", folder=True)  # before anything is read or converted
    with user_errors():
        if fmt == "ctranslate2":
            from seq2seq.export.ctranslate2 import export_ctranslate2, import_ctranslate2

            import_ctranslate2()  # missing: say so before the checkpoint is read
            done = export_ctranslate2(run, output, dtype, quantize, overwrite)
        else:
            from seq2seq.export.weights import export_checkpoint

            done = export_checkpoint(run, output, dtype, overwrite)
    typer.echo(
        f"exported {done.source} ({megabytes(done.source_bytes)}) -> {done.out} "
        f"({megabytes(done.out_bytes)}; {done.what})"
    )

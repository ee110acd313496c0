"""``--quantize int8`` of ``translate``, ``eval`` and ``serve`` (``decoding.quantize``): the option,
the device it allows, and its application to a loaded model."""

from __future__ import annotations

import typer

from seq2seq.commands.common import user_errors

QUANTIZE = typer.Option(
    None,
    "--quantize",
    metavar="int8",
    help="Decode with int8 weights (dynamic int8 quantization of the Linear, LSTM and GRU "
    "layers, torch's quantize_dynamic): CPU only, so --device auto means cpu and cuda is "
    "refused. Output may differ slightly from float decoding. It pays for the RNN families "
    "(2-3x on a CPU with VNNI) and little for the Transformer (0.9-1.1x; export it to "
    "CTranslate2 with --quantize int8 instead).",
)


def quantized_device(quantize: str | None, device: str | None) -> str | None:
    """``--device`` under ``--quantize``: cpu for auto (or none given), unchanged without it.

    Raises:
        UserError: an unknown mode, or --device cuda with it (one line).
    """
    from seq2seq.decoding.quantize import quantize_device

    if quantize is None:
        return device
    with user_errors():
        return quantize_device(quantize, device or "auto")


def quantized(model, quantize: str | None):
    """``model`` with int8 weights under ``--quantize int8``, else ``model`` itself.

    Raises:
        UserError: the model is not on the CPU, or this torch cannot quantize (one line).
    """
    from seq2seq.decoding.quantize import quantize_model

    with user_errors():
        return quantize_model(model, quantize)

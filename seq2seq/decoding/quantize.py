"""``--quantize int8`` for ``translate``, ``eval`` and ``serve``: torch's dynamic int8
quantization (``quantize_dynamic``) for decoding on the CPU: Linear, LSTM and GRU weights int8, one
scale per tensor, activations quantized per batch; embeddings, layer norms and ``FLOAT_LINEARS``
stay float."""

from __future__ import annotations

import warnings

from torch import nn

QUANTIZE_MODES = ("int8",)
# Linear layers whose ``.weight`` a model reads itself, which a packed int8 layer cannot serve: the
# Transformer's attention input projection (sliced for cross-attention) and output projection.
FLOAT_LINEARS = ("in_proj", "out_proj")


def quantize_device(quantize: str | None, device: str | None) -> str | None:
    """The device to decode on under ``--quantize``: ``auto`` (or None) -> cpu (int8 kernels are
    CPU-only); without ``quantize``, ``device`` unchanged. Raises ValueError (one line) for an
    unknown mode or cuda."""
    if quantize is None:
        return device
    if quantize not in QUANTIZE_MODES:
        raise ValueError(f"--quantize {quantize!r}: choose {' or '.join(QUANTIZE_MODES)}")
    device = device or "auto"
    if device.startswith("cuda"):
        raise ValueError(
            f"--quantize {quantize} decodes on the CPU (torch has no CUDA int8 kernels for it); "
            f"drop --device {device} or give --device cpu"
        )
    return "cpu" if device == "auto" else device


def quantizable(model: nn.Module) -> list[str]:
    """Names of the modules ``quantize_model`` converts: nn.Linear (not ``FLOAT_LINEARS``), nn.LSTM,
    nn.GRU."""
    names = []
    for name, m in model.named_modules():
        linear = isinstance(m, nn.Linear) and name.rsplit(".", 1)[-1] not in FLOAT_LINEARS
        if linear or isinstance(m, nn.LSTM | nn.GRU):
            names.append(name)
    return names


def quantize_model(model: nn.Module, quantize: str | None) -> nn.Module:
    """A new module: ``model`` (on the CPU) with int8 weights in its ``quantizable`` layers, in
    eval mode (``quantize`` None: ``model`` itself). Raises ValueError (one line) for an unknown
    mode, a model not on the CPU, or a torch without dynamic quantization."""
    if quantize is None:
        return model
    quantize_device(quantize, "cpu")
    elsewhere = sorted({p.device.type for p in model.parameters()} - {"cpu"})
    if elsewhere:
        raise ValueError(f"--quantize {quantize}: the model must be on the CPU, not {elsewhere[0]}")
    try:
        import torch
        from torch.ao.quantization import default_dynamic_qconfig, quantize_dynamic
    except ImportError:
        raise ValueError(
            f"--quantize {quantize}: this torch has no torch.ao.quantization.quantize_dynamic"
        ) from None
    spec = dict.fromkeys(quantizable(model), default_dynamic_qconfig)
    with warnings.catch_warnings():  # torch marks torch.ao.quantization deprecated (for torchao)
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        out = quantize_dynamic(model, spec, dtype=torch.qint8, inplace=False)
    return out.eval()

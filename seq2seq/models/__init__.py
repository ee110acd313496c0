"""The model zoo: ``MODELS`` and ``build_model`` (``registry.py``), the protocol every model speaks
(``base.Seq2SeqModel``). This file imports no torch (``seq2seq.config`` reads ``configs.py``
here): the names below are imported from their modules on first use."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seq2seq.models.base import Seq2SeqModel
    from seq2seq.models.registry import MODELS, build_model

_HOME = {"MODELS": "registry", "build_model": "registry", "Seq2SeqModel": "base"}


def __getattr__(name: str) -> Any:
    """``from seq2seq.models import build_model`` imports the registry (and torch) only then."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)


__all__ = ["MODELS", "Seq2SeqModel", "build_model"]

"""Typed configuration: one YAML file with sections data, tokenizer, model, train, decode, each a
pydantic model with ``extra="forbid"``: every error is one line naming the key, found before
anything is built. Modules, each importing only those before it: ``reading`` (YAML, ``base:``,
``--set``), ``sections``, ``aliases`` and ``loading`` (``Config``). Never imports torch.
"""

from __future__ import annotations

from seq2seq.config.loading import (
    RANGE_ERRORS,
    Config,
    load_config,
    to_yaml,
    valid_range,
    validate_config,
)
from seq2seq.config.loading import _one_line as _one_line  # checkpoint.py's config errors
from seq2seq.config.reading import ConfigError, load_yaml
from seq2seq.config.sections import (
    DataConfig,
    DecodeConfig,
    SearchMethod,
    TeacherForcingConfig,
    TokenizerConfig,
    TrainConfig,
    data_root,
)

__all__ = [
    "RANGE_ERRORS",
    "Config",
    "ConfigError",
    "DataConfig",
    "DecodeConfig",
    "SearchMethod",
    "TeacherForcingConfig",
    "TokenizerConfig",
    "TrainConfig",
    "data_root",
    "load_config",
    "load_yaml",
    "to_yaml",
    "valid_range",
    "validate_config",
]

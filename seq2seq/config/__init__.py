"""Typed configuration: one YAML file with sections data, tokenizer, model, train, decode.

Every section is a pydantic model with ``extra="forbid"``, so a misspelt key is an error that names
its path (``model.n_head: unknown key``). Cross-field constraints (``d_model % n_heads == 0``, a dot
score needs equal encoder and decoder sizes) are checked once, before anything is built.
``--set key=value`` overrides go through the same validation as the file. A file may start from
another: ``base: ../transformer.yaml`` (relative to the file) merges the base under it, section by
section and key by key, so a derived config says only what differs and cannot drift from its base.
A key given twice in the YAML is an error naming both lines. A number not finite or out of bounds
is refused with its range.

The modules, each importing only those above it:

- ``reading.py``: reading config YAML (``load_yaml``, which refuses a key given twice), a config
  file with its ``base:`` chain, ``--set`` overrides, and ``ConfigError``. Imports only yaml.
- ``sections.py``: the data, tokenizer and train sections (``_Section``, their base), and
  ``data_root``. Imports only pydantic.
- ``decode.py``: ``SearchMethod``, ``SEARCH_SETTINGS`` and ``DecodeConfig``. Imports
  ``sections.py``.
- ``experiment.py``: ``Config``, the whole experiment, with the ``model:`` union ``ModelConfig``
  built from ``seq2seq/models/configs.py``. Imports ``sections.py``, ``decode.py`` and
  ``seq2seq.models.configs``.
- ``aliases.py``: the names other toolkits give a setting (``ALIASES``) and ``foreign_hint``, the
  key an unknown one may mean by those names or in another section. Imports only ``difflib``.
- ``loading.py``: ``load_config``, ``validate_config``, ``to_yaml`` and their one-line errors
  (``RANGE_ERRORS``, ``valid_range``). Imports every module above.

The import rule: ``seq2seq.config`` imports nothing of ``seq2seq`` but ``seq2seq.models.configs``
(the model sections, which live beside the models and import only pydantic; importing them runs
``seq2seq/models/__init__.py``, which imports no torch either). Beyond the standard library it
imports only pydantic and yaml, never torch, so a config is validated without torch. Every other
part of ``seq2seq`` may import ``seq2seq.config``, and does so from this package, whose names are
listed below (the modules above are its layout, not its interface).
"""

from __future__ import annotations

from seq2seq.config.decode import SEARCH_SETTINGS, DecodeConfig, SearchMethod
from seq2seq.config.experiment import Config, ModelConfig
from seq2seq.config.loading import RANGE_ERRORS, load_config, to_yaml, valid_range, validate_config
from seq2seq.config.loading import _one_line as _one_line  # checkpoint.py's config errors
from seq2seq.config.reading import ConfigError, DuplicateKeyError, load_yaml
from seq2seq.config.sections import (
    DataConfig,
    HFSource,
    TeacherForcingConfig,
    TokenizerConfig,
    TrainConfig,
    data_root,
)
from seq2seq.models.configs import (
    BahdanauConfig,
    LuongConfig,
    ModelConfigBase,
    RNNConfig,
    TransformerConfig,
)

__all__ = [
    "RANGE_ERRORS",
    "SEARCH_SETTINGS",
    "BahdanauConfig",
    "Config",
    "ConfigError",
    "DataConfig",
    "DecodeConfig",
    "DuplicateKeyError",
    "HFSource",
    "LuongConfig",
    "ModelConfig",
    "ModelConfigBase",
    "RNNConfig",
    "SearchMethod",
    "TeacherForcingConfig",
    "TokenizerConfig",
    "TrainConfig",
    "TransformerConfig",
    "data_root",
    "load_config",
    "load_yaml",
    "to_yaml",
    "valid_range",
    "validate_config",
]

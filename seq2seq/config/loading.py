"""``Config``, a whole experiment (the five sections and the checks that span them), and loading it
(``load_config``, ``validate_config``, ``to_yaml``) with one-line errors: per problem the key, what
it may have meant, a number's valid range, and the file or ``--set`` that said it.
"""

from __future__ import annotations

import difflib
import operator
import os
import re
from functools import reduce
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from seq2seq.config.aliases import foreign_hint
from seq2seq.config.reading import (
    ConfigError,
    apply_overrides,
    has_key,
    key_path,
    parse_override,
    read_config_file,
)
from seq2seq.config.sections import (
    DataConfig,
    DecodeConfig,
    HFSource,
    TeacherForcingConfig,
    TokenizerConfig,
    TrainConfig,
    _Section,
)
from seq2seq.models.configs import MODEL_CONFIGS, MODEL_NAMES, BahdanauConfig

# The model sections live beside the models (seq2seq/models/configs.py, torch-free), so a new model
# touches only models/.
ModelConfig = Annotated[reduce(operator.or_, MODEL_CONFIGS), Field(discriminator="name")]


class Config(_Section):
    """A whole experiment."""

    name: str = "experiment"
    run_dir: str | None = Field(
        None, description="default: runs/<name>; relative to the working folder; not from base:"
    )
    data: DataConfig = DataConfig()
    tokenizer: TokenizerConfig = TokenizerConfig()
    model: ModelConfig = BahdanauConfig()
    train: TrainConfig = TrainConfig(max_epochs=10)
    decode: DecodeConfig = DecodeConfig()

    @model_validator(mode="after")
    def _sampling_needs_a_model_that_allows_it(self) -> Config:
        if not self.model.scheduled_sampling and not self.train.teacher_forcing.always:
            allowed = ", ".join(
                n for n, c in zip(MODEL_NAMES, MODEL_CONFIGS, strict=True) if c.scheduled_sampling
            )
            raise ValueError(
                f"train.teacher_forcing: scheduled sampling is for the models {allowed}; "
                f"remove it for {self.model.name}"
            )
        return self

    @model_validator(mode="after")
    def _fits_max_positions(self) -> Config:
        """A model with a position limit (the Transformer's ``max_positions``) embeds at most that
        many tokens: the longest training or validation pair (BOS added, ``concat_k`` or
        ``valid_concat_k`` pairs joined) and the shortest-source output must fit."""
        n_pos, d = self.model.position_limit, self.data
        if n_pos is None:
            return self
        k = max(d.concat_k, d.valid_concat_k)
        longest = d.max_len * k + 1
        if longest > n_pos:
            which = "concat_k" if d.concat_k >= d.valid_concat_k else "valid_concat_k"
            raise ValueError(
                f"model.max_positions ({n_pos}) must be at least data.max_len x data.{which} + 1 "
                f"= {longest}: raise max_positions or lower data.max_len"
            )
        if self.decode.max_len_a + self.decode.max_len_b > n_pos:
            raise ValueError(
                f"decode.max_len_a + decode.max_len_b ({self.decode.max_len_a} + "
                f"{self.decode.max_len_b}) allow outputs longer than model.max_positions "
                f"({n_pos}) even for a one-token source: lower them or raise max_positions"
            )
        return self


# the classes whose validation errors _one_line renders (pydantic names the class in err.title)
_SECTIONS = (Config, DataConfig, HFSource, TokenizerConfig, TrainConfig, TeacherForcingConfig)
_SECTIONS += (DecodeConfig, *MODEL_CONFIGS)


def _keys_of(model: str | None) -> dict[str, set[str]]:
    """Each section's keys; the model section's are those of ``model`` when it names one."""
    out = {}
    for section, field in Config.model_fields.items():
        out[section] = set(getattr(field.annotation, "model_fields", {}))
    named = [MODEL_CONFIGS[MODEL_NAMES.index(model)]] if model in MODEL_NAMES else MODEL_CONFIGS
    out["model"] = {f for c in named for f in c.model_fields}
    return out


def _did_you_mean(loc: str, model: str | None = None) -> str:
    """What follows "unknown key" for ``loc``: ``"; did you mean train.valid_every?"`` for a close
    key of its section, else ``aliases.foreign_hint``'s guess, else "". Under ``model`` (the model
    section's name) the keys are that model's (``" of the transformer model; did you mean
    model.n_heads?"``, or its keys and the models that have the key)."""
    *parents, last = loc.split(".")
    if parents == ["model"] and model in MODEL_NAMES:
        fields = MODEL_CONFIGS[MODEL_NAMES.index(model)].model_fields
        if close := difflib.get_close_matches(last, list(fields), n=1, cutoff=0.75):
            return f" of the {model} model; did you mean model.{close[0]}?"
        said = f" of the {model} model (its keys: {', '.join(fields)})"
        pairs = list(zip(MODEL_NAMES, MODEL_CONFIGS, strict=True))
        if has := [n for n, c in pairs if last in c.model_fields]:
            return f"{said}; {last} is a key of {', '.join(has)}"
        if hint := foreign_hint(loc, _keys_of(model)):
            return f" of the {model} model; did you mean {hint}"
        others = sorted({f for n, c in pairs if n != model for f in c.model_fields})
        if near := difflib.get_close_matches(last, others, n=1, cutoff=0.75):
            has = [n for n, c in pairs if near[0] in c.model_fields]
            return f"{said}; {near[0]} is a key of {', '.join(has)}"
        return said
    if len(parents) != 1 or parents[0] not in Config.model_fields:
        known = list(Config.model_fields) if not parents else []
    else:  # the section's keys (the model section's: every model's)
        known = _keys_of(None)[parents[0]]
    if close := difflib.get_close_matches(last, known, n=1, cutoff=0.75):
        return f"; did you mean {'.'.join([*parents, close[0]])}?"
    hint = foreign_hint(loc, _keys_of(model))
    return f"; did you mean {hint}" if hint else ""


def config_key_for(name: str) -> str | None:
    """The config key a bare ``name`` means: a key of one section (``lr`` -> ``train.lr``, the
    train section first), or another toolkit's name for one (``learning_rate`` -> ``train.lr``);
    None when none fits."""
    keys = _keys_of(None)
    hint = foreign_hint(name, keys)
    key = hint.split("?")[0] if hint else None
    if name in keys["train"] or (key or "").startswith("train."):  # batch_size: train's first
        return f"train.{name}" if name in keys["train"] else key
    return next((f"{section}.{name}" for section in keys if name in keys[section]), key)


# pydantic's error types for a number out of its field's bounds, or not finite
RANGE_ERRORS = {
    "finite_number",
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
}


def valid_range(title: str, loc: tuple[Any, ...]) -> str | None:
    """The values of the numeric setting at ``loc``, pydantic's location of an error in the class
    named ``title`` (``Config`` or one of its sections), in words: ``a finite number >= 0 and
    < 1``; None when ``loc`` names no bounded number."""
    cls: Any = next((c for c in _SECTIONS if c.__name__ == title), None)
    if cls is None:
        return None
    ann: Any = None
    bounds: list[Any] = []
    for part in loc:
        if isinstance(part, int):  # an element of a tuple
            args = [a for a in get_args(ann) if a is not Ellipsis]
            ann = args[min(part, len(args) - 1)] if args else None
        elif part in MODEL_NAMES and cls is None:  # the model union's tag
            cls = MODEL_CONFIGS[MODEL_NAMES.index(part)]
            continue
        elif isinstance(cls, type) and part in cls.model_fields:
            ann, bounds = cls.model_fields[part].annotation, list(cls.model_fields[part].metadata)
        else:
            return None
        if get_origin(ann) is Annotated:  # the bounds of a tuple's element
            bounds = [m for f in ann.__metadata__ for m in getattr(f, "metadata", [f])]
            ann = get_args(ann)[0]
        if type(None) in get_args(ann) and len(get_args(ann)) == 2:  # X | None -> X
            ann = next(a for a in get_args(ann) if a is not type(None))
        cls = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    words = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
    limits = [(words[k], getattr(b, k)) for b in bounds for k in words if hasattr(b, k)]
    said = [f"{w} {v:g}" if isinstance(v, float) else f"{w} {v}" for w, v in limits]
    if ann not in (int, float) or not said:
        return None
    return ("an integer " if ann is int else "a finite number ") + " and ".join(said)


def _one_line(err: ValidationError, source: str, origin=None) -> str:
    """Turn pydantic's multi-line report into one line per problem, joined by '; '. ``origin``
    (dotted key, message -> notes) names another file or --set for a problem when that is not
    ``source``. A number out of range is shown with the value given and the valid range."""
    parts = []
    for e in err.errors():
        keys = [
            x
            for x in e["loc"]
            if not str(x).startswith(("function-", "tagged")) and str(x) not in MODEL_NAMES
        ]
        loc = ".".join(str(x) for x in keys if not isinstance(x, int))  # train.betas for [1]
        notes = []
        if e["type"] == "extra_forbidden":
            model = next((str(x) for x in e["loc"][1:2] if str(x) in MODEL_NAMES), None)
            msg = "unknown key" + _did_you_mean(loc, model if keys[:1] == ["model"] else None)
        elif e["type"] == "union_tag_invalid":
            msg = f"unknown model name; choose {', '.join(MODEL_NAMES[:-1])} or {MODEL_NAMES[-1]}"
        else:
            msg = e["msg"].removeprefix("Value error, ")
        if e["type"] in RANGE_ERRORS and (valid := valid_range(err.title, e["loc"])):
            msg, notes = f"{msg}, not {e['input']}", [f"valid: {valid}"]
        notes += origin(loc, msg) if origin is not None and loc else []
        where = f" ({'; '.join(notes)})" if notes else ""
        parts.append(f"{key_path(keys)}: {msg}{where}" if keys else msg)
    return f"{source}: " + "; ".join(parts)


def load_config(
    path: str | os.PathLike | None,
    overrides: list[str] | None = None,
    labels: dict[str, str] | None = None,
) -> Config:
    """Read a YAML config, apply ``key=value`` overrides, validate. ``labels`` names the
    command-line option an override came from (dotted key -> e.g. ``--max-steps``; the others
    are ``--set``), for the error message.

    Raises:
        ConfigError: missing/unreadable file, bad YAML, unknown key or invalid value (one line).
    """
    source = str(path) if path else "config"
    layers: list[tuple[str, dict]] = []  # each file of the base chain, the derived one first
    raw: dict = read_config_file(Path(path), layers=layers) if path is not None else {}
    raw = apply_overrides(raw, overrides or [])
    set_keys = {".".join(parse_override(item)[0]) for item in overrides or []}
    try:
        return Config.model_validate(raw)
    except ValidationError as e:

        def said_in(loc: str) -> str:
            """Where a key was said: its option (--set, or the one ``labels`` names), else the
            most derived file that holds it."""
            for k in set_keys:
                if k == loc or k.startswith(loc + ".") or loc.startswith(k + "."):
                    return (labels or {}).get(k, "--set")
            return next((name for name, layer in layers if has_key(layer, loc)), source)

        def origin(loc: str, msg: str) -> list[str]:
            """Where the keys of a problem at ``loc`` were said, where not in ``source``: each
            key of section ``loc`` that its message names (a check across keys, ``best_metric
            'bleu' needs valid_bleu: true``), else ``loc``."""
            named = [
                w for w in dict.fromkeys(re.findall(r"\w+", msg)) if has_key(raw, f"{loc}.{w}")
            ]
            if named:
                said = {w: said_in(f"{loc}.{w}") for w in named}
                return [f"{w} given in {s}" for w, s in said.items() if s != source]
            return [] if said_in(loc) == source else [f"given in {said_in(loc)}"]

        raise ConfigError(_one_line(e, source, origin)) from None


def validate_config(raw: dict, source: str = "config") -> Config:
    try:
        return Config.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(_one_line(e, source)) from None


def to_yaml(cfg: Config) -> str:
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False, allow_unicode=True)

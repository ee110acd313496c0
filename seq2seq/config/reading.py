"""Reading config YAML: ``load_yaml``, the one loader of every YAML input (PyYAML silently keeps
the last of two equal keys; this refuses them, naming both lines), config files with their
``base:`` chain, and ``--set key=value`` overrides. Imports only yaml.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class ConfigError(ValueError):
    """A configuration that cannot be used; the message is one line naming the key and the fix."""


class DuplicateKeyError(yaml.YAMLError):
    """A mapping gives one key twice. ``path`` is the key's place in the document (mapping keys,
    sequence indices), ``lines`` the 1-based lines of its two occurrences."""

    def __init__(self, path: tuple[Any, ...], lines: tuple[int, int]):
        self.path, self.lines = path, lines
        super().__init__(
            f"{key_path(path)} is given twice (lines {lines[0]} and {lines[1]}); keep one"
        )

    def under(self, prefix: list[str]) -> str:
        """The message for a value that sits at ``prefix`` (a ``--set`` key), without lines."""
        return f"{key_path((*prefix, *self.path))} is given twice; keep one"


def key_path(parts: tuple[Any, ...] | list[Any]) -> str:
    """``("train", "betas", 1)`` -> ``train.betas[1]``."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}" if out else str(p)
    return out


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that raises ``DuplicateKeyError`` for a key given twice in a mapping
    (merge keys ``<<`` excepted: a key beside one overrides the merged value, as YAML says)."""

    def construct_document(self, node: yaml.Node) -> Any:
        self._check_unique(node, (), set())
        return super().construct_document(node)

    def _check_unique(self, node: yaml.Node, path: tuple[Any, ...], seen: set[int]) -> None:
        if id(node) in seen:  # an alias of a node already checked (or a recursive one)
            return
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._check_unique(item, (*path, i), seen)
        if not isinstance(node, yaml.MappingNode):
            return
        first: dict[Any, int] = {}
        for key_node, value_node in node.value:
            merge = key_node.tag == "tag:yaml.org,2002:merge"
            if merge or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = self.construct_object(key_node)  # a scalar: str, int, bool, ... (hashable)
            line = key_node.start_mark.line + 1
            if key in first:
                raise DuplicateKeyError((*path, key), (first[key], line))
            first[key] = line
            self._check_unique(value_node, (*path, key), seen)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` that refuses a key given twice.

    Raises:
        DuplicateKeyError: a mapping gives one key twice (a ``yaml.YAMLError``).
        yaml.YAMLError: not valid YAML.
    """
    return yaml.load(text, Loader=UniqueKeyLoader)  # a SafeLoader: no arbitrary objects


def parse_override(item: str) -> tuple[list[str], Any]:
    """``"model.hidden_size=256"`` -> (["model", "hidden_size"], 256); the value is read as YAML.

    Raises:
        ConfigError: no ``=``, or a value that is not valid YAML or gives a key twice.
    """
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected key=value, e.g. --set train.lr=0.0005")
    key, value = item.split("=", 1)
    keys = key.strip().split(".")
    if not all(k.strip() for k in keys):
        raise ConfigError(
            f"--set {item!r}: the key before '=' is empty or has an empty part; e.g. --set "
            "train.lr=0.0005"
        )
    try:
        return keys, load_yaml(value) if value.strip() else None
    except DuplicateKeyError as e:
        raise ConfigError(f"--set {item!r}: {e.under(keys)}") from None
    except yaml.YAMLError as e:
        raise ConfigError(
            f"--set {item!r}: the value is not valid YAML ({getattr(e, 'problem', e)})"
        ) from None


def apply_overrides(raw: dict, overrides: list[str]) -> dict:
    """``raw`` with each ``key=value`` of ``overrides`` set, in order.

    Raises:
        ConfigError: a malformed override, a key inside a value that is not a section, or a key
            set twice (or inside a section a later override replaces): the first would be lost.
    """
    said: dict[tuple[str, ...], str] = {}
    for item in overrides:
        keys, value = parse_override(item)
        for earlier, text in said.items():
            if earlier[: len(keys)] == tuple(keys):
                raise ConfigError(
                    f"command line: {'.'.join(earlier)} is given twice ({text}, then {item}; "
                    "by --set or an option of its own); keep one"
                )
        said[tuple(keys)] = item
        node = raw
        for k in keys[:-1]:
            child = node.get(k)
            if child is None:
                child = node[k] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"--set {item!r}: {k} is not a section")
            node = child
        node[keys[-1]] = value
    return raw


OWN_KEYS = ("run_dir",)
"""Top-level keys a config never takes from its ``base:``: a derived config (a recipe built on a
zoo config) trains into its own folder, ``runs/<its name>`` unless it sets ``run_dir`` itself,
never into its base's."""


def read_config_file(
    p: Path, chain: tuple[Path, ...] = (), layers: list[tuple[str, dict]] | None = None
) -> dict:
    """One config file's mapping, its ``base:`` (a config path relative to this file) merged under
    it section by section: the file says only what differs from its base, ``OWN_KEYS`` aside.
    ``layers`` collects (file, its own mapping) for each file of the chain, the derived one first.

    Raises:
        ConfigError: missing file, bad YAML, a key given twice, not a mapping, or a ``base``
            cycle.
    """
    if p.is_dir():
        inside = p / "config.yaml"
        hint = f", e.g. {inside}" if inside.is_file() else ""
        raise ConfigError(f"{p}: is a folder; give a config file (YAML){hint}")
    if not p.is_file():
        raise ConfigError(f"{p}: config file not found")
    if p.resolve() in chain:
        raise ConfigError(f"{chain[-1]}: base {p} leads back to itself")
    try:
        raw = load_yaml(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        line = p.read_bytes()[: e.start].count(b"\n") + 1
        raise ConfigError(
            f"{p} line {line}: not UTF-8 (byte 0x{e.object[e.start]:02x}); save the config as UTF-8"
        ) from None
    except DuplicateKeyError as e:
        raise ConfigError(f"{p}: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{p}{where}: not valid YAML ({getattr(e, 'problem', e)})") from None
    if raw is None:
        raise ConfigError(
            f"{p}: the config is empty; start from one in configs/ (e.g. "
            "configs/multi30k/bahdanau.yaml) or give its sections (data, model, train, ...)"
        )
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: expected a mapping of sections (data, model, train, ...)")
    base = raw.pop("base", None)
    if layers is not None:
        layers.append((str(p), raw))
    if base is None:
        return raw
    if not isinstance(base, str):
        raise ConfigError(f"{p}: base must be the path of another config, e.g. ../transformer.yaml")
    if not (p.parent / base).is_file():
        raise ConfigError(
            f"{p}: base {base}: config file not found ({p.parent / base}); the path is relative "
            "to this file"
        )
    inherited = read_config_file(p.parent / base, (*chain, p.resolve()), layers)
    for key in OWN_KEYS:
        inherited.pop(key, None)
    return merge(inherited, raw)


def merge(base: dict, over: dict) -> dict:
    """``over`` on top of ``base``: mappings merge key by key, any other value replaces."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def has_key(d: dict, dotted: str) -> bool:
    """Whether the nested mapping ``d`` holds the dotted key (its value may be None)."""
    *parents, last = dotted.split(".")
    for part in parents:
        d = d.get(part) if isinstance(d, dict) else None
    return isinstance(d, dict) and last in d

"""Hugging Face ``datasets`` as a data source: a split of a hub name or a ``save_to_disk`` folder,
one sentence per row from a column or a dotted path into dict columns (``translation.de``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from seq2seq.config import DataConfig
from seq2seq.data import DataError


def open_hf(cfg: DataConfig, split: str, streaming: bool = False):
    """Split ``split`` (train, valid or test) of the configured dataset, as a ``datasets`` Dataset
    (an IterableDataset when ``streaming``).

    Raises:
        DataError: the dataset or the split cannot be found or reached.
    """
    import datasets

    hf = cfg.hf
    assert hf is not None
    name = getattr(hf, f"{split}_split")
    try:
        local = Path(hf.path)
        if local.is_dir() and (local / "dataset_dict.json").exists():
            ds = datasets.load_from_disk(str(local))[name]
            return ds.to_iterable_dataset() if streaming else ds
        return datasets.load_dataset(hf.path, hf.name, split=name, streaming=streaming)
    except (FileNotFoundError, ValueError, KeyError, ConnectionError, OSError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DataError(f"dataset {hf.path} split {name!r}: {first}") from None


def hf_field(fields: Iterable[str], name: str, key: str) -> str:
    """The column a field names: ``translation.de`` -> ``translation``; a plain name -> itself.
    ``key`` is the setting, as messages name it.

    Raises:
        DataError: the dataset has no such column (its columns are listed).
    """
    head = name.partition(".")[0]
    if head not in fields:
        raise DataError(
            f"{key} {name!r}: the dataset has no field {head!r}; its fields are "
            f"{', '.join(sorted(fields))}"
        )
    return head


def _kind(value) -> str:
    if isinstance(value, dict):
        return f"a dict with keys {', '.join(map(str, value))}"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)} values"
    return f"a value of type {type(value).__name__} ({str(value)[:40]})"


def _use(path: str, value: dict, lang: str) -> str:
    """What to set instead: ``path.<lang>`` when the dict has it, else the choices."""
    keys = [str(k) for k in value if isinstance(value[k], str | None)] or [str(k) for k in value]
    if lang in keys:
        return f"use {path}.{lang}"
    return "use one of " + ", ".join(f"{path}.{k}" for k in keys)


def hf_text(row: dict, name: str, key: str, row_no: int, lang: str) -> str:
    """The sentence at field ``name`` of one row; a null on the way is '' (an empty side, dropped
    and counted). ``key`` is the setting (``data.hf.src_field``), ``row_no`` the row's 0-based
    index, ``lang`` the side's language (suggested when the field holds a dict).

    Raises:
        DataError: the path meets something that is not a dict, a dict without the key, or ends
            at something that is not text (names the setting, the row and what it holds).
    """
    parts = name.split(".")
    value = row
    for depth, part in enumerate(parts):
        if value is None:
            return ""
        at = ".".join(parts[:depth])
        if not isinstance(value, dict):
            raise DataError(
                f"{key} {name!r}: row {row_no} holds {_kind(value)} at {at}, not a dict with a "
                f"key {part!r}; use {at}"
            )
        if part not in value:
            if depth == 0:
                hf_field(value, name, key)
            raise DataError(
                f"{key} {name!r}: row {row_no} has no key {part!r} in {at} "
                f"({_kind(value)}); {_use(at, value, lang)}"
            )
        value = value[part]
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, dict):
        hint = _use(name, value, lang)
    else:
        hint = f"point {key} at a field that holds one sentence per row"
    raise DataError(f"{key} {name!r}: row {row_no} holds {_kind(value)}, not text; {hint}")


def hf_fields(cfg: DataConfig) -> tuple[tuple[str, str, str], tuple[str, str, str]]:
    """(field, setting, language) of the source and the target side."""
    hf = cfg.hf
    assert hf is not None
    return (
        (hf.src_field, "data.hf.src_field", cfg.src_lang),
        (hf.tgt_field, "data.hf.tgt_field", cfg.tgt_lang),
    )


def hf_column(ds, name: str, key: str, lang: str) -> list[str]:
    """Every row's sentence at field ``name`` of a loaded Dataset (``hf_text`` row by row)."""
    head = hf_field(ds.column_names, name, key)
    return [hf_text({head: x}, name, key, i, lang) for i, x in enumerate(ds[head])]

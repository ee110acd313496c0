"""What a server holds, fixed at start and read once: the runs, each behind its own lock, and the
``--study`` results. Nothing a request carries ever names a file: requests pick models by the
names given here."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seq2seq.checkpoint import resolve_checkpoint
from seq2seq.config import DecodeConfig
from seq2seq.decoding.alignment_output import attention_shape
from seq2seq.decoding.runs import DEFAULT_BEAM, Translator, load
from seq2seq.decoding.translate import source_limit
from seq2seq.serve import ServeError
from seq2seq.training.state import epoch_number

# a name given as NAME=PATH: what requests, the page and its selectors can carry unquoted
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass
class ServedModel:
    """One loaded run.

    Attributes:
        name: the run's name in requests and on the page (``name_runs``).
        run: the loaded run (``decoding.runs.load``): its model, tokenizer, config and device.
        attention: (L, H) decoder layers and heads of its cross-attention maps, or None for a
            model without attention (the fixed-vector ``rnn``).
        info: what the page shows about it (``model_info``).
        lock: held for every model call, so concurrent requests use the model one at a time.
    """

    name: str
    run: Translator
    attention: tuple[int, int] | None
    info: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def load_runs(paths: Sequence[str | Path], device: str | None = None) -> list[ServedModel]:
    """One ``ServedModel`` per path (``decoding.runs.load``), in the order the page shows them,
    named by ``name_runs``; ``device`` auto | cpu | cuda, or None for each run's own
    ``train.device``.

    Raises:
        ServeError: an empty, duplicate or malformed NAME (before anything is loaded).
        CheckpointError: a path holds no readable checkpoint.
        ConfigError: an unknown device, CUDA asked for but absent, or no room for output.
    """
    return [served_model(load(path, device), name) for name, path in name_runs(paths)]


def split_name(arg: str | Path) -> tuple[str | None, Path]:
    """``(NAME, PATH)`` of a ``NAME=PATH`` string, ``(None, path)`` for a plain path: a ``Path``,
    and a string naming a file or folder that exists (``runs/lr=0.1``), is a path whatever it
    holds; any other string with ``=`` is split at its first ``=``. Raises ServeError for an
    empty PATH, or a NAME that is empty or not a simple label (``NAME_RE``)."""
    if isinstance(arg, Path) or "=" not in arg or Path(arg).exists():
        return None, Path(arg)
    name, path = arg.split("=", 1)
    if not name:
        raise ServeError(f"{arg}: empty model name; write NAME=PATH, or the PATH alone")
    if not NAME_RE.fullmatch(name):
        raise ServeError(
            f"{arg}: model name {name!r} is not a simple label; use letters, digits, '.', '_' "
            "and '-', a letter or digit first, at most 64 characters"
        )
    if not path:
        raise ServeError(f"{arg}: no PATH after '='; write NAME=PATH")
    return name, Path(path)


def name_runs(paths: Sequence[str | Path]) -> list[tuple[str, Path]]:
    """Each run's name and path as given: the name given as ``NAME=PATH``, else the
    checkpoint's folder's name (or the file's stem), with ``-2``, ``-3`` ... added where another
    run has it (a given name is kept; a folder's name steps aside). Raises as ``load_runs``: a
    NAME refused or given twice before any path is looked at."""
    specs = [split_name(p) for p in paths]
    given = [name for name, _ in specs if name is not None]
    for name in given:
        if given.count(name) > 1:
            raise ServeError(f"model name {name!r} given twice; each NAME=PATH needs its own NAME")
    taken: set[str] = set(given)
    named = []
    for name, path in specs:
        ckpt_path = resolve_checkpoint(path)  # every path is checked before any model loads
        if name is None:
            base = ckpt_path.parent.name or ckpt_path.stem
            name, k = base, 1
            while name in taken:
                k += 1
                name = f"{base}-{k}"
            taken.add(name)
        named.append((name, path))
    return named


def served_beam(decode: DecodeConfig) -> int:
    """The beam a request without one searches with: the run's ``decode.beam_size`` when its
    settings search with a beam (tune-decode's decode.yaml, or the config), else ``DEFAULT_BEAM``
    (every zoo config until tune-decode has tuned it): the page still shows a beam translation
    beside greedy's. ``/models`` gives it as each model's ``beam``."""
    return decode.beam_size if decode.method == "beam" else DEFAULT_BEAM


def served_model(run: Translator, name: str) -> ServedModel:
    """A loaded run, its attention probed and described; says where its decode settings came
    from (``Translator.decode_settings``). Raises ConfigError for decode settings that leave no
    room for output."""
    run.decode_settings()
    source_limit(run.model, run.cfg.decode)  # fails now, not on the first request
    served = ServedModel(name, run, attention_shape(run.model, run.device))
    served.info = model_info(served)
    return served


def model_info(served: ServedModel) -> dict[str, Any]:
    """Name, family, size, device, decode defaults, how to tune them, and the training summary
    (from the run's ``train_state``, and the corpus sizes from ``run_info.json`` when present), as
    JSON values."""
    run = served.run
    cfg, st, ckpt_path = run.cfg, run.train_state, run.checkpoint
    best = st.get("best_score")
    if best is not None and cfg.train.best_metric == "loss":
        best = -best  # stored as "higher is better"
    training = {
        "steps": st.get("step"),
        "epoch": epoch_number(st),
        "train_minutes": None if "train_seconds" not in st else round(st["train_seconds"] / 60, 1),
        "target_tokens": st.get("tokens_seen"),
        "best_metric": cfg.train.best_metric,
        "best_score": best,
        "best_step": st.get("best_step"),
    }
    # the run's own length, past best.pt's step; else the card says the checkpoint's step alone
    summary = _json_object(ckpt_path.parent / "train_summary.json")
    if summary is not None and training["steps"] is not None:
        training["run_steps"] = summary.get("steps")
    # the corpus sizes; else the summary is shown without them
    if (extra := _json_object(ckpt_path.parent / "run_info.json")) is not None:
        training.update(train_pairs=extra.get("train_pairs"), valid_pairs=extra.get("valid_pairs"))
    layers, heads = served.attention or (0, 0)
    return {
        "name": served.name,
        "config_name": cfg.name,
        "model": cfg.model.name,
        "family": cfg.model.family,
        "checkpoint": ckpt_path.name,
        "parameters": run.model.num_parameters(),
        "device": str(run.device),
        "attention": served.attention is not None,
        "layers": layers,
        "heads": heads,
        "languages": [cfg.data.src_lang, cfg.data.tgt_lang],
        "decode": cfg.decode.model_dump(mode="json"),
        "beam": served_beam(cfg.decode),
        # tune-decode's decode.yaml beside the checkpoint set the search; else the page hints at it
        "decode_tuned": run.decode_file is not None,
        "tune_hint": run.tune_hint,
        "training": training,
    }


def _json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None for a missing or unreadable file, or JSON that is not an
    object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def load_study(folder: str | Path) -> dict[str, Any]:
    """``--study DIR``: read the ``results.json`` of a ``seq2seq compare --out DIR`` study and keep
    what the page's BLEU-by-length plot needs; requests only ever get this copy. Raises ServeError
    for no results.json there, or one that is not a compare study's.

    Returns:
        ``{"budget", "machine", "exact_match", "buckets", "modes", "findings", "models"}`` (real
        text: the recipe as the budget, both stages' steps); each model has ``name``, ``family``,
        ``attention``, ``steps``, ``parameters`` and, per decode mode (``greedy``, ``beam5``, ...
        or the Multi30k study's ``beam``), ``bleu``, ``chrf`` and ``by_length`` rows
        ``{"bucket", "sentences", "bleu", "exact"}``.
    """
    path = Path(folder) / "results.json"
    if not path.is_file():
        raise ServeError(
            f"{path}: not found; --study takes the folder `seq2seq compare --out` wrote"
        )
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        models = [_model(m) for m in raw["models"]]
        buckets = [int(b) for b in raw["buckets"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ServeError(
            f"{path}: not a results.json written by seq2seq compare ({type(e).__name__}: {e})"
        ) from None
    modes = sorted({mode for m in models for mode in m["decodes"]}, key=_mode_order)
    # the sentence under the plot: the Multi30k study's rho finding (a verdict, in a results.json
    # of rules v1 and v2), or a synthetic study's BLEU finding
    found = raw.get("findings") if isinstance(raw.get("findings"), dict) else {}
    finding = found.get("rho") or found.get("verdict") or found.get("bleu")
    return {
        "budget": raw.get("budget") or (raw.get("recipe") or {}).get("words"),
        "machine": raw.get("machine"),
        "exact_match": bool(raw.get("exact_match")),
        "buckets": buckets,
        "modes": modes,
        "findings": finding,
        "models": models,
    }


def _model(m: dict) -> dict[str, Any]:
    decodes = {
        mode: {
            "bleu": d.get("bleu"),
            "chrf": d.get("chrf"),
            "by_length": [
                {
                    "bucket": str(row["bucket"]),
                    "sentences": int(row["sentences"]),
                    "bleu": None if row.get("bleu") is None else float(row["bleu"]),
                    "exact": None if row.get("exact") is None else float(row["exact"]),
                }
                for row in d["by_length"]
            ],
        }
        for mode, d in m["decodes"].items()
    }
    return {
        "name": str(m["name"]),
        "family": m.get("family"),
        "attention": m.get("attention"),
        "steps": sum(s.get("steps") or 0 for s in m["stages"].values())
        if m.get("stages")  # real text: both stages of the recipe
        else m.get("steps"),
        "parameters": m.get("parameters"),
        "decodes": decodes,
    }


def _mode_order(mode: str) -> tuple[int, str]:
    """greedy first, then beams by size (the Multi30k study's one tuned ``beam`` after greedy)."""
    digits = "".join(c for c in mode if c.isdigit())
    return (0 if mode == "greedy" else 1 + int(digits or 0), mode)

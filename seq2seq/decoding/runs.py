"""The one way a trained run is loaded for decoding, by every command, ``serve`` and the study:
``load`` gives a ``Translator`` for one model, an ensemble, int8 weights or a CTranslate2 export."""

from __future__ import annotations

import logging
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from seq2seq.atomic import same_file
from seq2seq.checkpoint import (
    DECODE_FILE,
    load_checkpoint,
    model_from_checkpoint,
    resolve_checkpoint,
    with_tuned_decode,
)
from seq2seq.config import Config, DecodeConfig, load_yaml
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decoding.ctranslate2 import (
    CTranslate2LineTranslator,
    CTranslate2Model,
    ctranslate2_device,
    export_folder,
    read_export,
)
from seq2seq.decoding.ensemble import Ensemble, check_same_tokenizer
from seq2seq.decoding.files import LineTranslator
from seq2seq.decoding.quantize import quantize_device, quantize_model
from seq2seq.export.ctranslate2 import import_ctranslate2
from seq2seq.runtime import inference_device

log = logging.getLogger("seq2seq")

# Where a decode setting came from (eval --json's decode_source).
FROM_CONFIG = "config"
FROM_DECODE_FILE = "decode.yaml (tune-decode)"
FROM_COMMAND_LINE = "command line"


@dataclass
class Translator:
    """A run loaded for decoding (``load``): ``model`` (one, an ``Ensemble``, int8 layers or a
    ``CTranslate2Model``) in eval mode on ``device``; ``cfg`` as the checkpoint holds it (its
    decode section kept as ``config_decode``), then with the ``decode.yaml`` beside
    ``checkpoint`` applied (``decode_file``, setting ``decode_file_keys``); ``members``: an
    ensemble's (checkpoint, step) each; ``tune_hint``: how ``settings_line`` says to tune."""

    model: Any
    tok: Tokenizer
    cfg: Config
    device: torch.device | str
    checkpoint: Path
    train_state: dict[str, Any]
    quantize: str | None = None
    tune_hint: str = ""
    engine: type[LineTranslator] = LineTranslator
    members: list[tuple[Path, int | None]] = field(default_factory=list)
    decode_file: Path | None = None
    decode_file_keys: frozenset[str] = frozenset()
    config_decode: DecodeConfig = field(init=False)

    def __post_init__(self) -> None:
        self.config_decode = self.cfg.decode
        self.cfg = with_tuned_decode(self.cfg, self.checkpoint.parent)  # checks decode.yaml
        if (path := self.checkpoint.parent / DECODE_FILE).is_file():
            self.decode_file = path
            self.decode_file_keys = frozenset(load_yaml(path.read_text(encoding="utf-8")) or {})

    @property
    def step(self) -> int | None:
        """The update the checkpoint was saved at; None for one without (averaged)."""
        return self.train_state.get("step")

    def decode_settings(
        self, method: str | None = None, **options: Any
    ) -> tuple[DecodeConfig, dict[str, str]]:
        """The run's decode settings with ``options`` (DecodeConfig fields, None = not given) and
        ``method`` (else ``chosen_method``'s, else the run's; beam on a run that searches without
        one is beam ``DEFAULT_BEAM`` unless ``beam_size`` is given), and where each came from
        (``FROM_*``), said in one log line (``settings_line``).

        Raises:
            pydantic.ValidationError: an option out of bounds, or a setting of another method.
            ValueError: a length penalty given for a method that ranks nothing (greedy, sample).
        """
        tuned = self.cfg.decode
        chosen = method or chosen_method(options.get("beam_size")) or tuned.method
        alpha = options.get("length_penalty")
        if alpha is not None and chosen != "beam":
            raise ValueError(
                f"--length-penalty {alpha}: only beam search ranks by the length penalty; method "
                f"{chosen} would ignore it; give --beam K, or drop --length-penalty"
            )
        given = {k for k, v in options.items() if v is not None}
        if chosen == "beam" and tuned.method != "beam" and "beam_size" not in given:
            options, given = {**options, "beam_size": DEFAULT_BEAM}, given | {"beam_size"}
        final = tuned.with_method(chosen, **{k: options[k] for k in given})
        given |= {"method"} if method is not None or "beam_size" in given else set()
        sources = {}
        for name in type(final).model_fields:
            value = getattr(final, name)
            if name in given or value != getattr(tuned, name):
                sources[name] = FROM_COMMAND_LINE
            elif name in self.decode_file_keys or value != getattr(self.config_decode, name):
                sources[name] = FROM_DECODE_FILE
            else:
                sources[name] = FROM_CONFIG
        if line := self.settings_line(final, sources):
            log.info(line)
        return final, sources

    def settings_line(self, final: DecodeConfig, sources: dict[str, str]) -> str | None:
        """The line on where ``final`` came from: what decode.yaml set and the command line
        overrode, e.g. ``decoding with runs/x/decode.yaml (tune-decode): beam 5, alpha 1.0``;
        without decode.yaml, beam search's beam and alpha and how to tune them; or None."""
        if self.decode_file is None:
            beam = {sources.get("beam_size"), sources.get("length_penalty")}
            if final.method != "beam" or beam == {FROM_COMMAND_LINE}:
                return None
            line = (
                f"decoding with {describe_decode(final, ['beam_size', 'length_penalty'])} "
                f"(not tuned: {self.tune_hint})"
            )
            if final.length_penalty == 0 and sources.get("length_penalty") == FROM_CONFIG:
                line += (
                    "; this alpha is stored in the run's config (runs configured before the "
                    "default alpha became 1.0 store 0) and favours short outputs: "
                    "--length-penalty 1 overrides it"
                )
            return line
        # greedy ranks nothing: its length penalty does not count
        moot = "length_penalty" if final.method == "greedy" else None
        used = [n for n, s in sources.items() if s == FROM_DECODE_FILE and n != moot]
        over = [n for n in sorted(self.decode_file_keys) if sources.get(n) == FROM_COMMAND_LINE]
        sets = f"the command line sets {describe_decode(final, over)}"
        if used:
            line = f"decoding with {self.decode_file} (tune-decode): {describe_decode(final, used)}"
            return f"{line}; {sets}" if over else line
        return f"{self.decode_file} (tune-decode) not used: {sets}" if over else None

    def line_translator(self, dcfg: DecodeConfig, **kwargs: Any) -> LineTranslator:
        """A ``files.LineTranslator`` (``engine``) decoding with ``dcfg``; ``kwargs``: its other
        fields."""
        return self.engine(self.model, self.tok, dcfg, self.device, **kwargs)

    def made_with(self, dcfg: DecodeConfig, sources: dict[str, str]) -> dict[str, Any]:
        """How translations were made, for eval --json: checkpoint, ensemble, decode settings and
        their sources, quantize."""
        return {
            "checkpoint": {"path": str(self.checkpoint), "step": self.step},
            "ensemble": [{"path": str(p), "step": s} for p, s in self.members] or None,
            "decode": dcfg.model_dump(mode="json"),
            "decode_source": sources,
            **({"quantize": self.quantize} if self.quantize else {}),
        }


DEFAULT_BEAM = 5  # beam search's K where the run's settings search without one (as fairseq's)


def chosen_method(beam_size: int | None) -> str | None:
    """The search ``--beam K`` without ``--method`` chooses: beam, greedy for K = 1 (the search
    beam 1 does); None without ``--beam`` (the run's)."""
    return None if beam_size is None else "greedy" if beam_size == 1 else "beam"


def describe_decode(cfg: DecodeConfig, names: Sequence[str]) -> str:
    """Some settings in words: ``beam 5, alpha 1.0``, ``greedy``, ``max_len_b 20``."""
    parts = []
    if "method" in names or "beam_size" in names:
        parts.append(f"beam {cfg.beam_size}" if cfg.method == "beam" else cfg.method)
    for name in names:
        if name not in ("method", "beam_size"):
            label = "alpha" if name == "length_penalty" else name
            parts.append(f"{label} {getattr(cfg, name)}")
    return ", ".join(parts)


def load(
    paths: str | Path | Sequence[str | Path],
    device: str | None = "auto",
    quantize: str | None = None,
    ctranslate2: bool = True,
) -> Translator:
    """Run folders, checkpoint files or exports -> a ``Translator`` on ``device``.

    Args:
        paths: one path (a run folder's best.pt, else last.pt; a checkpoint or export), or
            several for an ensemble with the first run's config, settings and tokenizer.
        device: auto | cpu | cuda; None: the first run's ``train.device``.
        quantize: ``int8`` for int8 weights (on the CPU; a CTranslate2 export computes in int8).
        ctranslate2: read a CTranslate2 export; False refuses one (``resolve_checkpoint``).

    Raises:
        ValueError: no path, a checkpoint given twice, a tokenizer that differs from the first's,
            a CTranslate2 export in an ensemble, an unknown ``quantize`` or a device it refuses
            (one line each).
        CheckpointError: a missing, damaged or incompatible checkpoint or export.
        ConfigError: an unknown device, or CUDA asked for but absent.
    """
    paths = [paths] if isinstance(paths, str | Path) else list(paths)
    if not paths:
        raise ValueError("give a checkpoint with -c RUN")
    seen: list[tuple[str | Path, Path]] = []
    for p in paths:  # an ensemble of a model with itself translates as the model alone
        key = Path(p) if export_folder(p) else resolve_checkpoint(p)
        if twice := next((q for q, k in seen if same_file(k, key)), None):
            raise ValueError(
                f"-c {p}: the same checkpoint as -c {twice} ({key}); an ensemble of a model "
                "with itself translates as the model alone: give each checkpoint once"
            )
        seen.append((p, key))
    quantize_device(quantize, "cpu")  # an unknown mode fails before anything is read
    folders = [export_folder(p) if ctranslate2 else None for p in paths]
    if any(folders):
        if len(paths) > 1:
            raise ValueError(
                "a CTranslate2 export cannot join an ensemble; give it as the only -c, or "
                "ensemble the runs it came from"
            )
        return _load_ctranslate2(folders[0], device or "auto", quantize)
    if device is not None:
        device = quantize_device(quantize, device)
    first = _load_one(Path(paths[0]), device, quantize)
    runs = [first]
    for path in paths[1:]:
        run = _load_one(Path(path), str(first.device), quantize)
        check_same_tokenizer([f"-c {paths[0]}", f"-c {path}"], [first.tok, run.tok])
        runs.append(run)
    if len(runs) > 1:
        first.model = Ensemble([r.model for r in runs]).eval()
        first.members = [(r.checkpoint, r.step) for r in runs]
    return first


def _load_one(path: Path, device: str | None, quantize: str | None) -> Translator:
    """One checkpoint on ``device`` (None: its run's train.device), int8 under ``quantize``."""
    ckpt_path = resolve_checkpoint(path)
    ckpt = load_checkpoint(ckpt_path)
    model, tok, cfg = model_from_checkpoint(ckpt, str(ckpt_path))
    state = ckpt.get("train_state") or ckpt.get("exported_from") or {}
    del ckpt
    if device is None:
        said = f"the train.device of {ckpt_path} (its run's config)"
        dev = inference_device(quantize_device(quantize, cfg.train.device), said)
    else:
        dev = inference_device(device)
    return Translator(
        quantize_model(model.to(dev), quantize),
        tok,
        cfg,
        dev,
        ckpt_path,
        state,
        quantize,
        f"`seq2seq tune-decode -c {shlex.quote(str(path))}` chooses beam size and alpha on "
        "validation",
    )


def _load_ctranslate2(folder: Path, device: str, quantize: str | None) -> Translator:
    """A CTranslate2 export, its ``model`` a ``CTranslate2Model``; raises ValueError when
    ctranslate2 is missing or the device refused, CheckpointError for unreadable files."""
    import_ctranslate2()
    dev = ctranslate2_device(device)
    meta, tok, cfg = read_export(folder)
    source = (meta.get("exported_from") or {}).get("checkpoint")
    if source and Path(source).is_file():
        tune = f"`seq2seq tune-decode -c {shlex.quote(source)}` on the checkpoint it came from"
    else:  # moved, or exported elsewhere: the path recorded at export, when there is one
        tune = f"`seq2seq tune-decode` on the checkpoint it came from ({source or 'unrecorded'})"
    return Translator(
        CTranslate2Model(folder, dev, quantize, meta.get("max_positions")),
        tok,
        cfg,
        dev,
        folder / "model.bin",
        {"step": (meta.get("exported_from") or {}).get("step")},
        quantize,
        f"{tune} chooses beam size and alpha on validation; export again to bring its "
        "decode.yaml along",
        CTranslate2LineTranslator,
    )

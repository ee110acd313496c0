"""A run directory: refusing to mix runs, ``--overwrite``, loading ``last.pt`` to resume, writing
``last.pt`` with its rotations (``step<N>.pt``, ``best.pt``, ``best-step<N>.pt``: hard links to the
``last.pt`` of their step, so a validation writes one file; rank 0 only), ``config.yaml``
(resolved) and ``run_info.json`` (versions, git commit, the digests of the data a resume
checks)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import platform
import re
import shutil
import subprocess
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from seq2seq.atomic import atomic_write_text
from seq2seq.checkpoint import (
    CheckpointError,
    config_of,
    link_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from seq2seq.config import Config, ConfigError, TrainConfig, to_yaml
from seq2seq.data.arrow import clean_rows
from seq2seq.data.text import DataError, split_names
from seq2seq.evaluation.metrics import corpus_score
from seq2seq.runtime import set_rng_states
from seq2seq.training.state import TrainingError, TrainState, book_last, lr_at

log = logging.getLogger("seq2seq")

RESUME_KEYS = ("model", "optimizer", "scaler", "train_state", "rng", "tokenizer")
# The checkpoints a training writes (``RunCheckpoints``).
CHECKPOINT_FILES = ("last.pt", "best.pt", "step*.pt", "best-step*.pt")
RUN_FILES = (
    "*.pt",
    "spm*.model",
    "train_log.jsonl",
    "train.log",
    "train_summary.json",
    "config.yaml",
    "run_info.json",
    "attention.png",
)


def check_run_dir(run_dir: Path, resume: bool, overwrite: bool) -> None:
    """A new run never lands on an earlier one unless ``--overwrite`` says so.

    Raises:
        TrainingError: ``run_dir`` holds a run (``last.pt``) and neither resume nor overwrite.
    """
    if not resume and not overwrite and (run_dir / "last.pt").exists():
        raise TrainingError(
            f"{run_dir} already holds a run (last.pt): continue it with --resume {run_dir}, "
            "or pass --overwrite, or choose another --run-dir"
        )


def clear_run(run_dir: Path, keep: frozenset[str] = frozenset()) -> None:
    """``--overwrite``: remove what an earlier run wrote (checkpoints, tokenizer, logs, TensorBoard
    events), so nothing of it mixes with the new run; other files in the folder, and those named
    in ``keep``, are left alone."""
    for pattern in RUN_FILES:
        for path in run_dir.glob(pattern):
            if path.name not in keep:
                path.unlink()
    if "tensorboard" not in keep:
        shutil.rmtree(run_dir / "tensorboard", ignore_errors=True)


def dead_run_files(run_dir: Path) -> list[str]:
    """What a run killed before its first checkpoint left in ``run_dir`` (log lines, TensorBoard
    events, config.yaml, ...), which a new run would mix with its own; nothing where the folder
    holds a checkpoint (``*.pt``)."""
    if not run_dir.is_dir() or any(run_dir.glob("*.pt")):
        return []
    names = sorted(p.name for pattern in RUN_FILES for p in run_dir.glob(pattern))
    return names + ["tensorboard/"] * (run_dir / "tensorboard").is_dir()


def load_resume(run_dir: Path, cfg: Config) -> dict:
    """``run_dir/last.pt``, checked for everything a resume needs.

    Raises:
        TrainingError: no last.pt.
        CheckpointError: unreadable, or without optimizer/RNG/... state (e.g. an averaged one),
            or the folder's best.pt is of another run.
        ConfigError: the data, tokenizer or model section differs from the checkpoint's, or a
            train change cannot be honoured (``check_train_changes``).
    """
    path = run_dir / "last.pt"
    if not path.is_file():
        raise TrainingError(f"{path}: nothing to resume (no last.pt in the run directory)")
    try:
        ckpt = load_checkpoint(path)
    except CheckpointError as e:
        if "cannot read this checkpoint" not in str(e):
            raise
        best = run_dir / "best.pt"
        warm = f", or warm-start a new run with train.init_from: {best}" if best.is_file() else ""
        raise CheckpointError(
            f"{path}: cannot read it (corrupt or truncated), so the run cannot resume; train "
            f"it again with --overwrite{warm}"
        ) from None
    if missing := [k for k in RESUME_KEYS if k not in ckpt]:
        raise CheckpointError(
            f"{path}: holds no {missing[0]} state, so it can translate but not resume training"
        )
    old = config_of(ckpt, str(path))
    for section in ("data", "tokenizer", "model"):
        if getattr(old, section) != getattr(cfg, section):
            raise ConfigError(
                f"--resume {run_dir}: the config's {section} section differs from last.pt's; "
                "resume with the config last.pt was trained with (the run's config.yaml, unless "
                "last.pt was copied from another run)"
            )
    _check_best_of_this_run(run_dir / "best.pt", old, path)
    check_train_changes(old.train, cfg.train, ckpt["train_state"], run_dir)
    return ckpt


def _check_best_of_this_run(best: Path, cfg: Config, last: Path) -> None:
    """A readable ``best.pt`` of another run than ``last`` (a folder mixing two runs' files, whose
    best.pt ``translate`` would load) raises CheckpointError; a damaged one is left to training,
    which replaces it at the next best validation."""
    try:
        theirs = config_of(load_checkpoint(best), str(best)) if best.is_file() else cfg
    except CheckpointError:
        return
    if any(getattr(theirs, s) != getattr(cfg, s) for s in ("data", "tokenizer", "model")):
        raise CheckpointError(
            f"{best}: is of another run than {last} (its data, tokenizer or model differ): the "
            "folder mixes two runs' files; resume a folder that holds one run's"
        )


# train.* keys a resume may change and stay exact (max_steps not under cosine, whose decay ends
# there; init_from a resume ignores)
RESUME_EXACT = (
    "max_steps",
    "max_epochs",
    "max_time",
    "max_tokens",
    "init_from",
    "patience",
    "log_every",
    "keep_best",
    "keep_last",
    "checkpoint_every",
    "max_nonfinite",
    "num_threads",
)
# Keys that cut an epoch's batches: a saved position mid-epoch means nothing under new values.
RESUME_BATCHING = ("batch_tokens", "seed")
# Keys that change the learning rate curve itself.
RESUME_SCHEDULE = ("schedule", "lr", "warmup_steps", "min_lr", "decay_steps")


def check_train_changes(old: TrainConfig, new: TrainConfig, state: dict, run_dir: Path) -> None:
    """What a resume with a changed ``train`` section can honour: ``RESUME_EXACT`` keys (and
    ``precision: auto``, which keeps the run's) silently; anything else with one warning naming
    each change (old -> new) and, when the learning rate curve changes, the rate before and after.

    Raises:
        ConfigError: ``batch_tokens`` or ``seed`` changed while the run stopped mid-epoch.
    """
    changed = {
        k: (getattr(old, k), getattr(new, k))
        for k in type(new).model_fields
        if getattr(old, k) != getattr(new, k)
    }
    if new.precision == "auto":  # keeps what the run's auto became (precision.settle_precision)
        changed.pop("precision", None)
    mid_epoch = state.get("batch_in_epoch", 0) > 0
    for k in RESUME_BATCHING:
        if k in changed and mid_epoch:
            a, b = changed[k]
            raise ConfigError(
                f"--resume {run_dir}: train.{k} {a} -> {b} while the run stopped mid-epoch "
                f"(epoch {state['epoch'] + 1}, batch {state['batch_in_epoch']}): the saved "
                "position cannot be applied to other batches; resume with the old value, or "
                "change it at an epoch boundary (max_epochs)"
            )
    cosine = "cosine" in (old.schedule, new.schedule)
    inexact = {
        k: v for k, v in changed.items() if k not in RESUME_EXACT or (k == "max_steps" and cosine)
    }
    if not inexact:
        return
    items = ", ".join(f"train.{k} {a} -> {b}" for k, (a, b) in inexact.items())
    note = ""
    if any(k in RESUME_SCHEDULE or k == "max_steps" for k in inexact):
        step, scale = state.get("step", 0), state.get("plateau_scale", 1.0)
        note = (
            f"; the learning rate goes from {lr_at(max(step, 1), old, scale):.1e} at step "
            f"{step} to {lr_at(step + 1, new, scale):.1e} at step {step + 1} "
            f"({lr_at(step + 1, old, scale):.1e} under the old settings)"
        )
    log.warning("resume is not exact: %s%s", items, note)


def restore(ckpt: dict, model, optimizer, scaler, path: Path) -> TrainState:
    """Load weights, optimizer, scaler and RNG states from ``ckpt``; returns its training state.

    Raises:
        CheckpointError: the state does not fit (one line naming ``path``).
    """
    try:
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        if ckpt["scaler"]:  # empty when the run was not fp16
            scaler.load_state_dict(ckpt["scaler"])
        state = TrainState(**ckpt["train_state"])
        if "target_tokens" not in ckpt["train_state"]:  # saved before the host count existed
            state.target_tokens = state.tokens_seen
        set_rng_states(ckpt["rng"])
    except (RuntimeError, ValueError, TypeError, KeyError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
        raise CheckpointError(f"{path}: cannot resume from it ({first})") from None
    return state


class RunCheckpoints:
    """Writes a run's checkpoints; on ranks other than 0 every call does nothing."""

    def __init__(self, run_dir: Path, keep_last: int, is_main: bool):
        self.run_dir, self.keep_last, self.is_main = run_dir, keep_last, is_main

    def save_last(self, st: TrainState, payload: Callable[[], dict]) -> None:
        """``last.pt`` (``payload()``, built after the bookkeeping it records); with ``keep_last``
        k > 1 also ``step<N>.pt`` for the newest k.

        Raises:
            TrainingError: a weight is NaN or inf (nothing written; the previous checkpoint stays).
        """
        name, dropped = book_last(st, self.keep_last)  # every rank keeps the same state
        if not self.is_main:
            return
        ckpt = payload()
        try:
            save_checkpoint(self.run_dir / "last.pt", ckpt)
        except CheckpointError as e:
            raise TrainingError(
                f"{e}: training diverged; lower train.lr or use precision fp32 "
                "(the previous checkpoint is kept)"
            ) from None
        if name is not None:
            self._link(name)
        self._remove(dropped)

    def keep_validated(self, improved: bool, kept: str | None, dropped: list[str]) -> None:
        """After ``save_last`` of a validated step: ``best.pt`` when it improved, its
        ``best-step<N>.pt`` when it entered the best k, and the best-k files that left."""
        if not self.is_main:
            return
        if improved:
            self._link("best.pt")
        if kept:
            self._link(kept)
        self._remove(dropped)

    def _link(self, name: str) -> None:
        link_checkpoint(self.run_dir / "last.pt", self.run_dir / name)

    def _remove(self, names: list[str]) -> None:
        for old in names:
            (self.run_dir / old).unlink(missing_ok=True)


PACKAGE = Path(__file__).resolve().parents[1]


def git_commit(package: Path = PACKAGE) -> str | None:
    """The commit of the seq2seq source ``package`` (the ``seq2seq`` folder) runs from, when that
    source is a seq2seq checkout: the folder sits at the top of a git work tree whose
    pyproject.toml names the project seq2seq. None otherwise -- an installed package, even one in
    a ``.venv`` inside another repository, whose commit says nothing of this code (run_info.json
    has the package version beside it)."""

    def git(*args: str) -> str:
        cmd = ["git", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=5, cwd=package).stdout

    with contextlib.suppress(OSError, subprocess.SubprocessError, UnicodeDecodeError):
        top = Path(git("rev-parse", "--show-toplevel").strip() or "/nowhere")
        ours = re.search(r'(?m)^name = "seq2seq"$', (top / "pyproject.toml").read_text("utf-8"))
        if ours and top.resolve() / "seq2seq" == package.resolve():
            return git("rev-parse", "HEAD").strip() or None
    return None


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("seq2seq", "torch", "sentencepiece", "sacrebleu", "datasets", "numpy"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def data_digests(cfg: Config) -> dict[str, str]:
    """Split (train, valid, and test when it can be read) -> sha256 of what the run reads of it:
    its decoded, cleaned pairs in order (``arrow.clean_rows``, within ``max_<split>_pairs``),
    whatever the files' names, compression or line ends. A hub dataset, read by name, is not read
    here: {}.

    Raises:
        DataError: the training or validation split cannot be read.
    """
    hf = cfg.data.hf
    if hf is not None and not (Path(hf.path) / "dataset_dict.json").is_file():
        return {}
    out = {}
    for split in ("train", "valid", "test"):
        h = hashlib.sha256()
        try:
            for row in clean_rows(cfg.data.model_dump_json(), split):
                if row["src"]:  # cleaning leaves no NUL: a safe separator
                    h.update(f"{row['src']}\0{row['tgt']}\0".encode())
        except DataError:
            if split != "test":  # a run needs no test split
                raise
            continue
        out[split] = h.hexdigest()
    return out


def check_data_unchanged(run_dir: Path, cfg: Config, now: dict[str, str]) -> None:
    """``--resume``: each split's digest ``now`` (``data_digests``) must be the one
    ``run_info.json`` recorded at the run's start, so a run never goes on with other data.

    Raises:
        DataError: a split's pairs changed (names its files, with the old and new sha256 prefix).
    """
    path = run_dir / "run_info.json"
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))["data_sha256"]
        recorded = {str(k): str(v) for k, v in recorded.items()}
    except FileNotFoundError:
        log.warning("%s not found: the data cannot be checked against the run's start", path)
        return
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        log.warning("%s: no data digest (%s): the data cannot be checked", path, type(e).__name__)
        return
    changed = [
        f"{split_names(cfg.data, k)} (sha256 of its cleaned pairs {old[:12]} -> {now[k][:12]})"
        for k, old in recorded.items()
        if k in now and now[k] != old
    ]
    if changed:
        raise DataError(
            f"--resume {run_dir}: data changed since the run started, as run_info.json recorded "
            f"it: {', '.join(changed)}; restore the data, or train afresh with --overwrite"
        )


def write_run_info(
    run_dir: Path, cfg: Config, data, model, data_sha256: dict[str, str], runtime: dict
) -> None:
    """``config.yaml`` (resolved) and ``run_info.json`` (versions, commit, ``data_sha256`` (from
    ``data_digests``), sizes, and ``runtime``: what ``auto`` settings resolved to here)."""
    # the signature validation BLEU is reported under (one reference)
    bleu = corpus_score("bleu", ["x"], [["x"]], cfg.data.tgt_lang) if cfg.train.valid_bleu else None
    info = {
        "versions": versions(),
        "git_commit": git_commit(),
        "data_sha256": data_sha256,
        "hf_dataset": cfg.data.hf.model_dump() if cfg.data.hf else None,
        "train_pairs": len(data.train),
        "valid_pairs": len(data.valid),
        "src_vocab": data.tok.src_vocab_size,
        "tgt_vocab": data.tok.tgt_vocab_size,
        "parameters": model.num_parameters(),
        "bleu_signature": bleu.signature if bleu is not None else None,
        "runtime": runtime,
    }
    atomic_write_text(run_dir / "config.yaml", to_yaml(cfg))
    atomic_write_text(run_dir / "run_info.json", json.dumps(info, indent=2))

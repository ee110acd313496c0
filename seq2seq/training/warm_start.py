"""Warm start (``train.init_from``): a new run begins from another run's weights; the optimizer,
schedule, step and counters start afresh, and the run trains with the checkpoint's tokenizer (the
weights fit only their vocabulary). ``--resume`` ignores ``init_from``.
"""

from __future__ import annotations

import logging
from pathlib import Path

from torch import nn

from seq2seq.checkpoint import CheckpointError, config_of, load_checkpoint, resolve_checkpoint
from seq2seq.config import Config, ConfigError
from seq2seq.data.tokenizer import Tokenizer

log = logging.getLogger("seq2seq")


class WarmStart:
    """A checked ``init_from`` checkpoint: resolved ``path``, loaded ``ckpt``, its ``tokenizer``."""

    def __init__(self, path: Path, ckpt: dict, tokenizer: Tokenizer):
        self.path, self.ckpt, self.tokenizer = path, ckpt, tokenizer

    def load_weights(self, model: nn.Module) -> None:
        """Copy the checkpoint's weights into ``model`` (built from the run's config).

        Raises:
            CheckpointError: the weights do not fit the model (one line naming the checkpoint).
        """
        try:
            model.load_state_dict(self.ckpt["model"])
        except (RuntimeError, KeyError) as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
            raise CheckpointError(
                f"train.init_from {self.path}: its weights do not fit this run's model ({first})"
            ) from None
        log.info("weights from %s (init_from)", self.path)


def load_warm_start(path: str, cfg: Config, tokenizer: Tokenizer | None = None) -> WarmStart:
    """Load the checkpoint ``train.init_from`` names (a file, or a run directory's ``best.pt``,
    else ``last.pt``) and check it against ``cfg`` before any data is read.

    Args:
        tokenizer: the tokenizer the caller means the run to use (``seq2seq compare``'s shared
            one), which must be the checkpoint's byte for byte; None takes the checkpoint's.

    Raises:
        CheckpointError: nothing at ``path``, an unreadable file, a checkpoint without weights or
            tokenizer, or an invalid config in it.
        ConfigError: the tokenizer section or the model architecture (dropout rates aside)
            differs from the checkpoint's, or ``tokenizer`` is not the checkpoint's.
    """
    p = resolve_checkpoint(path)
    ckpt = load_checkpoint(p)
    where = f"train.init_from {p}"
    for key in ("model", "tokenizer"):
        if key not in ckpt:
            raise CheckpointError(f"{where}: the checkpoint holds no {key}; give a run's best.pt")
    old = config_of(ckpt, str(p))
    config_yaml = p.parent / "config.yaml"
    diff = _first_difference(
        old.tokenizer.model_dump(mode="json"), cfg.tokenizer.model_dump(mode="json")
    )
    if diff:
        key, theirs, ours = diff
        raise ConfigError(
            f"{where}: tokenizer.{key} is {theirs!r} there but {ours!r} here; a warm start trains "
            f"with the checkpoint's own tokenizer: copy the tokenizer section of {config_yaml}"
        )
    diff = architecture_difference(old, cfg)
    if diff:
        key, theirs, ours = diff
        raise ConfigError(
            f"{where}: model.{key} is {theirs!r} there but {ours!r} here, so its weights do not "
            f"fit this model; copy the model section of {config_yaml} (only the dropout rates "
            "may differ)"
        )
    theirs = Tokenizer.from_state_dict(ckpt["tokenizer"])
    if tokenizer is not None and tokenizer.digest() != theirs.digest():
        raise ConfigError(
            f"{where}: the checkpoint's tokenizer (sha256 {theirs.digest()[:12]}) is not this "
            f"run's ({tokenizer.digest()[:12]}), and its weights fit only their own vocabulary; "
            "warm-start from a run trained with this tokenizer, or give train no tokenizer so "
            "the run takes the checkpoint's"
        )
    return WarmStart(p, ckpt, theirs)


def architecture_difference(old: Config, new: Config) -> tuple[str, object, object] | None:
    """The first model key, other than a dropout rate, whose value differs between two configs:
    (key, old value, new value), or None when the weights of one fit the other's model."""
    a, b = old.model.model_dump(mode="json"), new.model.model_dump(mode="json")
    if a["name"] != b["name"]:
        return "name", a["name"], b["name"]
    return _first_difference(*({k: v for k, v in d.items() if "dropout" not in k} for d in (a, b)))


def _first_difference(a: dict, b: dict) -> tuple[str, object, object] | None:
    for key in dict.fromkeys([*a, *b]):
        if a.get(key) != b.get(key):
            return key, a.get(key), b.get(key)
    return None

"""Checkpoint averaging: the element-wise mean of the weights of several checkpoints of one run
(Vaswani et al. 2017, §6.1 averages the last 5 or 20), saved as a checkpoint that translates."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from seq2seq.checkpoint import CheckpointError, config_of, load_checkpoint, save_checkpoint


def select_checkpoints(run_dir: str | Path, last: int | None, best: int | None) -> list[Path]:
    """The checkpoint files that ``--last K`` (the newest K ``step<N>.pt``, kept with
    ``train.keep_last``) or ``--best K`` (the K best ``best-step<N>.pt`` as last.pt ranks them,
    kept with ``train.keep_best``; best.pt for K = 1) names in ``run_dir``.

    Raises:
        CheckpointError: not a run directory, neither or both of last/best, or fewer than K files.
    """
    d = Path(run_dir)
    if not d.is_dir():
        raise CheckpointError(f"{d}: not a run directory")
    k = last if last is not None else best
    if (last is None) == (best is None) or k < 1:
        raise CheckpointError("give exactly one of --last K or --best K, with K >= 1")
    kind = "last" if last is not None else "best"
    if k == 1:
        if not (d / f"{kind}.pt").is_file():
            why = "train first" if last is not None else "train until a validation first"
            raise CheckpointError(f"{d}: no {kind}.pt; {why}")
        return [d / f"{kind}.pt"]
    if last is not None:
        found = [
            (int(m[1]), p) for p in d.iterdir() if (m := re.fullmatch(r"step(\d+)\.pt", p.name))
        ]
        files, kept = [p for _, p in sorted(found)][-k:], "step<N>.pt"  # the newest, oldest first
    else:
        ranked = [d / name for _, name in load_checkpoint(d / "last.pt")["train_state"]["best_k"]]
        files, kept = [p for p in ranked if p.is_file()][:k], "best-step<N>.pt"
    if len(files) < k:
        raise CheckpointError(
            f"{d}: {len(files)} {kept} checkpoints, fewer than --{kind} {k}; train with "
            f"train.keep_{kind} >= {k}"
        )
    return files


def average_checkpoints(paths: list[Path]) -> dict:
    """Mean of the floating-point weights of ``paths`` (in float64, cast back); everything else
    comes from the last one, whose tied weights stay one tensor. The target vocabulary is the
    union of the inputs' (none when none has one). No optimizer or RNG state: the result
    translates but cannot resume.

    Raises:
        CheckpointError: no paths, or checkpoints of different models or tokenizers.
    """
    if not paths:
        raise CheckpointError("no checkpoints to average")
    ckpts = [load_checkpoint(p) for p in paths]
    ref, ref_cfg = ckpts[-1], config_of(ckpts[-1], str(paths[-1]))
    for p, c in zip(paths, ckpts, strict=True):
        cfg = config_of(c, str(p))
        if cfg.model != ref_cfg.model or c["tokenizer"] != ref["tokenizer"]:
            raise CheckpointError(
                f"{p}: a different model or tokenizer than {paths[-1]}; "
                "average checkpoints of one run only"
            )
    model, averaged = {}, {}  # averaged: one result per tensor, so tied names stay tied
    for name, t in ref["model"].items():
        alias = (t.untyped_storage().data_ptr(), t.storage_offset(), t.shape, t.stride())
        if alias not in averaged:
            stacked = [c["model"][name].double() for c in ckpts] if t.is_floating_point() else None
            averaged[alias] = t if stacked is None else torch.stack(stacked).mean(0).to(t.dtype)
        model[name] = averaged[alias]
    vocabs = [set(c["target_vocab"]) for c in ckpts if c.get("target_vocab") is not None]
    return {
        "config": ref["config"],
        "model": model,
        "tokenizer": ref["tokenizer"],
        **({"target_vocab": sorted(set.union(*vocabs))} if vocabs else {}),
        "averaged_from": [str(p) for p in paths],
    }


def average_run(
    run_dir: str | Path,
    output: str | Path,
    last: int | None = None,
    best: int | None = None,
    overwrite: bool = False,
) -> list[Path]:
    """Average the selected checkpoints of ``run_dir`` into ``output``; returns the inputs.

    Raises:
        CheckpointError: as ``select_checkpoints``, or ``output`` is the run's own ``last.pt``,
            ``best.pt``, one of the inputs, or named like the checkpoints training keeps there
            (``step<N>.pt``, ``best-step<N>.pt``): the average cannot resume, and a later
            ``--last`` / ``--best`` would take it for a training checkpoint; or ``output`` exists
            and ``overwrite`` is not given (as ``export``: it may be another run's last.pt).
    """
    paths = select_checkpoints(run_dir, last, best)
    run = Path(run_dir)
    own = {p.resolve() for p in [run / "last.pt", run / "best.pt", *paths]}
    out = Path(output).resolve()
    kept_name = re.fullmatch(r"(best-)?step\d+\.pt", out.name) is not None
    if out in own or (kept_name and out.parent == run.resolve()):
        raise CheckpointError(
            f"-o {output}: would overwrite the run's own {Path(output).name}; "
            f"write the average to another file, e.g. {run / 'averaged.pt'}"
        )
    if out.exists() and not overwrite:
        raise CheckpointError(
            f"-o {output}: already exists; give --overwrite to replace it, or another file"
        )
    save_checkpoint(output, average_checkpoints(paths))
    return paths

"""Several ``-c`` of ``translate`` and ``eval``: the runs loaded as one ensemble
(``decoding.ensemble.Ensemble``), checked to share one tokenizer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from seq2seq.commands.common import LoadedRun, UserError, load_model

# The help text of a repeated -c, shared by translate and eval.
ENSEMBLE_HELP = (
    "Repeat -c for an ensemble: at every step the models' next-token probabilities are "
    "averaged (the log of the mean probability, as fairseq does; not the mean log-probability). "
    "Families may be mixed; the models must share one tokenizer, and decode with the first "
    "run's settings (its decode.yaml included)."
)


def load_for_decoding(
    checkpoints: Sequence[Path],
    device: str,
    say_decode_file: bool = True,
    load: Callable[..., LoadedRun] = load_model,
) -> tuple[LoadedRun, list[LoadedRun]]:
    """``-c`` given once or more -> the run to decode with and every run loaded (each by
    ``load``, ``load_model`` or the command module's own name for it).

    One checkpoint: ``load_model``'s run, and a list of it. Several: the first run (its config,
    decode settings, tokenizer and checkpoint) with ``model`` an ``Ensemble`` of every run's model
    in the order given, and the runs. Only the first run's decode.yaml is said
    (``say_decode_file``); the others' decode settings are not used.

    Raises:
        UserError: no checkpoint, or a run's tokenizer differs from the first's (one line naming
            both and the difference).
        CheckpointError: as ``load_model``.
    """
    from seq2seq.decoding.ensemble import Ensemble, check_same_tokenizer

    if not checkpoints:
        raise UserError("give a checkpoint with -c RUN")
    runs = [load(checkpoints[0], device, say_decode_file)]
    if len(checkpoints) == 1:
        return runs[0], runs
    names = [f"-c {c}" for c in checkpoints]
    for k, path in enumerate(checkpoints[1:], start=1):
        run = load(path, device, say_decode_file=False)
        try:
            check_same_tokenizer([names[0], names[k]], [runs[0].tok, run.tok])
        except ValueError as e:
            raise UserError(str(e)) from None
        runs.append(run)
    try:
        model = Ensemble([r.model for r in runs]).eval()
    except ValueError as e:
        raise UserError(str(e)) from None
    return replace(runs[0], model=model), runs


def members(runs: Sequence[LoadedRun]) -> list[dict] | None:
    """eval --json's ``ensemble``: each model's checkpoint path and step, or None for one model."""
    if len(runs) < 2:
        return None
    return [{"path": str(r.checkpoint), "step": r.step} for r in runs]

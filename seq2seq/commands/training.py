"""``train`` and ``average``: the commands that write checkpoints."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import typer

from seq2seq.atomic import check_not_input, check_writable
from seq2seq.commands import decode_options as opt
from seq2seq.commands.common import UserError, fail, no_stdout, one_run
from seq2seq.console import counted, setup_logging


def train(
    config: Path = typer.Argument(..., metavar="CONFIG", help="YAML config (see configs/)."),
    run_dir: Path | None = typer.Option(
        None, metavar="DIR", help="Output folder [default: from the config, else runs/<name>]."
    ),
    set_: list[str] = typer.Option(
        [],
        "--set",
        metavar="KEY=VALUE",
        help="Override a config key, e.g. --set train.lr=5e-4 (repeatable).",
    ),
    resume: Path | None = typer.Option(
        None,
        metavar="RUN",
        help="Continue the run in folder RUN (the folder, not its last.pt) exactly where its "
        "last.pt stopped; train settings may change.",
    ),
    overwrite: bool = typer.Option(
        False,
        "--overwrite",
        help="Start afresh in a run directory that already holds a run (never one a live "
        "training holds).",
    ),
    max_steps: int | None = typer.Option(None, help="Stop after this many updates."),
    max_epochs: int | None = typer.Option(None, help="Stop after this many epochs."),
    max_time: float | None = typer.Option(
        None,
        help="Stop after this many minutes of training (a monotonic clock, not the wall clock), "
        "counted over resumed runs too.",
    ),
    device: str | None = typer.Option(
        None, metavar="DEVICE", help="auto | cpu | cuda [default: the config's, auto]."
    ),
    seed: int | None = typer.Option(None, help="Random seed [default: the config's]."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging."),
):
    """Train a model; writes checkpoints (best.pt, last.pt), the tokenizer, logs (train.log,
    train_log.jsonl), TensorBoard scalars and train_summary.json into the run directory, which it
    holds alone (train.lock: another training into it exits 2). Ctrl-C, SIGTERM or SIGHUP stops it
    after the current step: last.pt is saved and the exit code is 130 (docs/training.md)."""
    from seq2seq.config import load_config
    from seq2seq.training.distributed import launched_as_main
    from seq2seq.training.loop import train as run_training

    setup_logging(verbose)
    if resume is not None and (run_dir is not None or overwrite):
        raise UserError(
            "--resume continues the run in its own folder: drop --run-dir/--overwrite, or start "
            "a new run without --resume"
        )
    no_stdout(run_dir, "--run-dir", "a run folder")
    flags = {"max_steps": max_steps, "max_epochs": max_epochs, "max_time": max_time}
    flags |= {"device": device, "seed": seed}
    given = {k: v for k, v in flags.items() if v is not None}
    overrides = [*set_, *(f"train.{k}={v}" for k, v in given.items())]
    cfg = load_config(config, overrides, {f"train.{k}": f"--{k.replace('_', '-')}" for k in given})
    _check_run_dir(resume, run_dir, cfg)
    summary = run_training(cfg, resume or run_dir, resume=resume is not None, overwrite=overwrite)
    main = launched_as_main()  # under torchrun, rank 0 speaks for all
    if main:
        typer.echo(json.dumps(summary, indent=2))  # stdout: the one machine-readable result
    if summary["stopped"] == "interrupted":  # not finished: `train && eval` must not go on
        if not main:  # rank 0 says it; the others exit quietly
            sys.exit(130)
        again = config if not overrides else Path(summary["run_dir"]) / "config.yaml"
        fail(
            f"interrupted at step {summary['steps']}: last.pt saved; resume with seq2seq train "
            f"{shlex.quote(str(again))} --resume {shlex.quote(summary['run_dir'])}",
            code=130,
        )


def _check_run_dir(resume: Path | None, run_dir: Path | None, cfg) -> None:
    """The run folder training will write (as ``training.loop.train`` picks it) must be writable
    before the tokenizer and the first update; named by where it came from. ``--resume`` takes
    an existing folder."""
    if resume is not None and resume.is_file():
        raise UserError(
            f"--resume {resume}: a file; --resume takes the run's folder: --resume {resume.parent}"
        )
    if resume is not None and not resume.exists():
        raise UserError(
            f"--resume {resume}: no such folder; give the folder of the run to continue"
        )
    if resume is not None or run_dir is not None:
        check_writable(resume or run_dir, "--resume" if resume else "--run-dir", folder=True)
    else:
        what, path = ("run_dir", cfg.run_dir) if cfg.run_dir else ("run folder", f"runs/{cfg.name}")
        check_writable(path, what, folder=True, fix="give --run-dir a folder you can write to")


def average(
    checkpoint: opt.checkpoints("Run directory.") = ...,
    last: int | None = typer.Option(
        None, help="Average the newest K step<N>.pt (train.keep_last >= K); --last 1 is last.pt."
    ),
    best: int | None = typer.Option(
        None, help="Average the K best best-step<N>.pt (train.keep_best >= K); --best 1 is best.pt."
    ),
    output: Path = typer.Option(
        ..., "--output", "-o", metavar="FILE", help="Where to write the averaged checkpoint."
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace an existing FILE (never a live training's checkpoint)."
    ),
):
    """Average the weights of the last or best K checkpoints of a run into one checkpoint that
    translates (it holds no optimizer state, so it cannot resume training)."""
    from seq2seq.training.average import average_run
    from seq2seq.training.run_dir import CHECKPOINT_FILES
    from seq2seq.training.run_lock import live_holder

    setup_logging()
    run = one_run(checkpoint, "average")
    no_stdout(output, "-o", "a checkpoint")
    check_writable(output, "-o")  # before the checkpoints are read and averaged
    check_not_input(output, "-o", runs=[run], checkpoints=False)
    # never a checkpoint (last.pt, ...) that a live training writes
    if any(output.match(p) for p in CHECKPOINT_FILES) and (holder := live_holder(output.parent)):
        raise UserError(
            f"-o {output}: a training is writing that run folder ({holder}) and writes "
            f"{output.name} itself; write the average to another file"
        )
    paths = average_run(run, output, last=last, best=best, overwrite=overwrite)
    names = ", ".join(p.name for p in paths)
    typer.echo(f"averaged {counted(len(paths), 'checkpoint')} ({names}) -> {output}")

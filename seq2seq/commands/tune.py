"""``tune-decode``: choose beam size and length penalty on validation, write them into the run."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from seq2seq.atomic import check_not_input, check_writable
from seq2seq.commands import decode_options as opt
from seq2seq.commands.common import UserError, no_stdin, no_stdout, one_run, user_errors, warn
from seq2seq.console import setup_logging


def tune_decode(
    checkpoint: opt.checkpoints("Run directory (its best.pt) or a checkpoint file in it.") = ...,
    src: Path | None = typer.Option(
        None,
        metavar="FILE",
        help="Tuning source file, at least 50 non-blank lines; not a test set "
        "[default: the run's data.valid].",
    ),
    ref: Path | None = typer.Option(
        None,
        metavar="FILE",
        help="Tuning reference file [default: the run's data.valid target side].",
    ),
    beams: str = typer.Option(
        "5,10",
        metavar="K,K,...",
        help="Beam sizes K to sweep (>= 2); greedy is always a candidate.",
    ),
    alphas: str = typer.Option(
        "0,0.2,0.4,0.6,0.8,1,1.2,1.5,2",
        metavar="A,A,...",
        help="Length penalties α to sweep for every beam size.",
    ),
    extend: bool = typer.Option(
        True,
        "--extend/--no-extend",
        help="Sweep beyond the grid's top edge while the best setting sits on it.",
    ),
    batch_size: opt.BatchSize = None,
    write: bool = typer.Option(
        True,
        "--write/--no-write",
        help="Write the best to RUN_DIR/decode.yaml and the sweep to RUN_DIR/tune_decode.json.",
    ),
    json_out: Path | None = typer.Option(
        None,
        "--json",
        metavar="FILE",
        help="Also write the sweep as JSON [default: RUN_DIR/tune_decode.json, unless --no-write].",
    ),
    device: opt.Device = "auto",
):
    """Choose beam size and length penalty on validation: sweep greedy and beam search, write the
    best into RUN_DIR/decode.yaml; ties go to the cheaper search (docs/overview.md)."""
    from seq2seq.atomic import write_output
    from seq2seq.checkpoint import DECODE_FILE, resolve_checkpoint
    from seq2seq.decoding import tune
    from seq2seq.decoding.runs import load

    setup_logging()
    no_stdout(json_out, "--json", "the sweep")
    no_stdin(src, "--src")
    no_stdin(ref, "--ref")
    with user_errors():
        beam_sizes, alpha_values = tune.parse_beams(beams), tune.parse_floats(alphas, "--alphas")
        if (src is None) != (ref is None):
            raise UserError("give both --src and --ref, or neither (the run's validation set)")
        ckpt = resolve_checkpoint(one_run(checkpoint, "tune-decode"))
        run_dir = ckpt.parent
        check_not_input(json_out, "--json", [("--src", src), ("--ref", ref)], [ckpt])
        check_writable(json_out, "--json")  # every file the sweep ends in, before it decodes
        fix = "copy the run to a folder you can write to, or pass --no-write"
        if write and json_out is None:
            check_writable(run_dir / "tune_decode.json", "--write", fix=fix)
        if write:
            check_writable(run_dir / DECODE_FILE, "--write", fix=fix)
        run = load(ckpt, device)
        src, ref, sources, refs = tune.tuning_set(run.cfg, src, ref, ckpt)
        base = run.cfg.decode
        if batch_size is not None:
            base = base.model_copy(update={"batch_size": batch_size})
        n_settings = len(tune.candidates(base, beam_sizes, alpha_values))

    typer.echo(
        f"tuning on {src} ({len(sources)} lines): {n_settings} settings"
        + (" (more if the best sits at the grid's edge)" if extend else ""),
        err=True,
    )
    with user_errors():
        rows, added = tune.sweep_run(
            run, sources, refs, base, beam_sizes, alpha_values, extend, str(src)
        )
    sweep = json.dumps(tune.sweep_result(ckpt, src, ref, len(sources), rows, added), indent=2)
    if json_out is not None:  # the sweep the user asked for, whatever it decides
        write_output(json_out, sweep)
    if tune.all_tied(rows):
        same, fix = tune.tie_reasons(rows, src)
        if write:
            raise UserError(f"{same}; nothing written, the run keeps its decode settings; {fix}")
        warn(f"{same}; {fix}")
    best = tune.best_row(rows)
    if json_out is None and write:  # --no-write: nothing in the run folder changes
        write_output(run_dir / "tune_decode.json", sweep)
    line = f"best: {best.label}: BLEU {best.bleu:.2f} (greedy {rows[0].bleu:.2f}) on {src}"
    if write:
        path = tune.write_decode_file(run_dir, best, rows, str(src))
        line += f" -> {path}; translate, eval and serve use it"
    typer.echo(line)

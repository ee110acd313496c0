"""``tune-decode``: choose beam size and length penalty on validation, write them into the run."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from seq2seq.commands import decode_options as opt
from seq2seq.commands.common import UserError, no_stdout, user_errors, warn
from seq2seq.commands.outputs import check_writable
from seq2seq.console import setup_logging


def tune_decode(
    checkpoint: Path = typer.Option(
        ...,
        "--checkpoint",
        "-c",
        metavar="RUN",
        help="Run directory (its best.pt) or a checkpoint file in it.",
    ),
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
        help="Length penalties α to sweep for every beam size (GNMT: score / ((5 + |Y|) / 6)^α).",
    ),
    extend: bool = typer.Option(
        True,
        "--extend/--no-extend",
        help="Sweep beyond the grid's top edge (α up to 5, beam up to 40) while the best setting "
        "sits on it; --no-extend sweeps the grid as given.",
    ),
    batch_size: int | None = typer.Option(
        None, help="Sentences per batch [default: the run's decode.batch_size]."
    ),
    write: bool = typer.Option(
        True,
        "--write/--no-write",
        help="Write the best to RUN_DIR/decode.yaml (translate, eval and serve use it) and the "
        "sweep to RUN_DIR/tune_decode.json; --no-write leaves the run folder untouched.",
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
    from seq2seq.checkpoint import resolve_checkpoint
    from seq2seq.data.text import resolve_corpus_file
    from seq2seq.decoding.runs import load
    from seq2seq.decoding.tune import (
        all_tied,
        best_row,
        candidates,
        check_tuning_set,
        parse_beams,
        parse_floats,
        sweep_result,
        sweep_run,
        write_decode_file,
    )
    from seq2seq.evaluation.report import read_eval_texts

    setup_logging()
    no_stdout(json_out, "--json", "the sweep")
    with user_errors():
        beam_sizes, alpha_values = parse_beams(beams), parse_floats(alphas, "--alphas")
        if (src is None) != (ref is None):
            raise UserError("give both --src and --ref, or neither (the run's validation set)")
        ckpt = resolve_checkpoint(checkpoint)
        _check_outputs(ckpt.parent, json_out, write)  # before the model decodes anything
        run = load(ckpt, device)
        cfg = run.cfg
        if src is None:
            if cfg.data.valid is None:
                raise UserError(f"{ckpt}: the run has no data.valid; give --src and --ref")
            src = resolve_corpus_file(cfg.data.valid, cfg.data.src_lang)
            ref = resolve_corpus_file(cfg.data.valid, cfg.data.tgt_lang)
        _warn_if_test_split(src, cfg)
        texts = read_eval_texts([ref], src, None)  # as eval reads them: aligned, not blank
        sources, refs = texts.sources, texts.refs[0]
        check_tuning_set(sources, refs, src)
        base = (
            cfg.decode
            if batch_size is None
            else cfg.decode.model_copy(update={"batch_size": batch_size})
        )
        n_settings = len(candidates(base, beam_sizes, alpha_values))

    typer.echo(
        f"tuning on {src} ({len(sources)} lines): {n_settings} settings"
        + (" (more if the best sits at the grid's edge)" if extend else ""),
        err=True,
    )
    with user_errors():
        rows, added = sweep_run(
            run, sources, refs, base, beam_sizes, alpha_values, extend, str(src)
        )
    run_dir = ckpt.parent
    result = sweep_result(ckpt, src, ref, len(sources), rows, added)
    from seq2seq.atomic import write_output

    if json_out is not None:  # the sweep the user asked for, whatever it decides
        write_output(json_out, json.dumps(result, indent=2))
    if all_tied(rows):
        same = f"--src {src}: all {len(rows)} settings scored BLEU {rows[0].bleu:.2f}, so " + (
            "no output matches its reference"
            if rows[0].bleu == 0
            else "this tuning set cannot tell them apart"
        )
        fix = (
            "check that --ref translates --src, or train the model longer"
            if rows[0].bleu == 0
            else "tune on a bigger or more varied --src/--ref"
        )
        if write:
            raise UserError(f"{same}; nothing written, the run keeps its decode settings; {fix}")
        warn(f"{same}; {fix}")
    best = best_row(rows)
    greedy = rows[0]
    if json_out is None and write:  # --no-write: nothing in the run folder changes
        write_output(run_dir / "tune_decode.json", json.dumps(result, indent=2))
    line = f"best: {best.label}: BLEU {best.bleu:.2f} (greedy {greedy.bleu:.2f}) on {src}"
    if write:
        path = write_decode_file(run_dir, best, rows, str(src))
        line += f" -> {path}; translate, eval and serve use it"
    typer.echo(line)


def _check_outputs(run_dir: Path, json_out: Path | None, write: bool) -> None:
    """Every file the sweep will end in must be writable before it starts: --json, and with
    --write the run's decode.yaml and (without --json) tune_decode.json."""
    from seq2seq.checkpoint import DECODE_FILE

    check_writable(json_out, "--json")
    if write:
        fix = "copy the run to a folder you can write to, or pass --no-write"
        if json_out is None:
            check_writable(run_dir / "tune_decode.json", "--write", fix=fix)
        check_writable(run_dir / DECODE_FILE, "--write", fix=fix)


def _warn_if_test_split(src: Path, cfg) -> None:
    """A warning when --src is the run's own test split: the search would be chosen on the
    sentences its test scores are reported on."""
    import logging

    from seq2seq.data.text import DataError, resolve_corpus_file

    if cfg.data.test is None:
        return
    try:
        test = resolve_corpus_file(cfg.data.test, cfg.data.src_lang)
    except DataError:
        return
    if Path(src).resolve() == test.resolve():
        logging.getLogger("seq2seq").warning(
            "--src %s is the run's test split (data.test): its test scores will no longer be "
            "unseen; tune on validation lines instead",
            src,
        )

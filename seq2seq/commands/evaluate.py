"""``eval``: score translations with sacrebleu, translating the sources first with a checkpoint
(as ``translate`` does) or taking a hypothesis file."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from seq2seq.commands.common import UserError, load_model, user_errors, warn
from seq2seq.commands.decode_options import (
    METHOD,
    SEED,
    TEMPERATURE,
    TOP_K,
    TOP_P,
    decode_cfg,
    given_options,
)
from seq2seq.commands.outputs import check_writable
from seq2seq.console import setup_logging


def _say_decode_file(run, dcfg, options: dict) -> dict[str, str]:
    """Where each decode setting came from (``LoadedRun.decode_sources``), and one line on stderr
    when the run's decode.yaml changed them."""
    sources = run.decode_sources(dcfg, given_options(options))
    if line := run.decode_file_line(dcfg, sources):
        typer.echo(line, err=True)
    return sources


def evaluate(
    checkpoint: Path | None = typer.Option(
        None,
        "--checkpoint",
        "-c",
        metavar="RUN",
        help="Checkpoint file or run directory; not needed with --hyp.",
    ),
    src: Path | None = typer.Option(
        None,
        "--src",
        metavar="FILE",
        help="Source file (plain or .gz): translated with --checkpoint; its word counts give "
        "--by-length buckets.",
    ),
    ref: list[Path] = typer.Option(
        ..., "--ref", metavar="FILE", help="Reference file(s) (repeat for several references)."
    ),
    hyp: Path | None = typer.Option(
        None, "--hyp", metavar="FILE", help="Score this hypothesis file instead of translating."
    ),
    bleu: bool = typer.Option(
        False,
        "--bleu",
        help="Corpus BLEU (sacrebleu, 13a unless the target language needs its own).",
    ),
    chrf: bool = typer.Option(False, "--chrf", help="chrF (sacrebleu)."),
    ter: bool = typer.Option(False, "--ter", help="TER (sacrebleu)."),
    by_length: bool = typer.Option(
        False,
        "--by-length",
        help="Also BLEU per source-length bucket (words of --src), with sentence counts.",
    ),
    buckets: str | None = typer.Option(
        None,
        "--buckets",
        metavar="N,N,...",
        help="Bucket upper bounds in source words, e.g. 10,20,30 "
        "[default: 10,20,30,40,60 -> 1-10 ... 61+].",
    ),
    lowercase: bool = typer.Option(
        False,
        "--lowercase",
        "-lc",
        help="Case-insensitive BLEU and chrF (Unicode lowercasing), like sacrebleu -lc "
        "--chrf-lowercase; TER always ignores case.",
    ),
    beam: int | None = typer.Option(
        None,
        "--beam",
        help="Beam size K for translating --src; implies --method beam "
        "[default: the run's decode.beam_size].",
    ),
    method: str | None = METHOD,
    temperature: float | None = TEMPERATURE,
    top_k: int | None = TOP_K,
    top_p: float | None = TOP_P,
    seed: int | None = SEED,
    batch_size: int | None = typer.Option(None, "--batch-size", help="Sentences per batch."),
    tgt_lang: str | None = typer.Option(
        None,
        "--tgt-lang",
        metavar="LANG",
        help="Target language code; picks sacrebleu's BLEU tokenizer (zh, ja, ko) "
        "[default: the run's data.tgt_lang with --checkpoint].",
    ),
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        metavar="FILE",
        help="Also write the hypotheses here (- for stdout; the scores then go to stderr); "
        "with --checkpoint only.",
    ),
    json_out: Path | None = typer.Option(
        None,
        "--json",
        metavar="FILE",
        help="Write scores, signatures, by-length rows and warnings as JSON to this file "
        "(- for stdout; the scores then go to stderr); with --checkpoint also the checkpoint "
        "(path, step), the decode settings used and where each came from (config, the run's "
        "decode.yaml, the command line).",
    ),
    device: str = typer.Option("auto", "--device", metavar="DEVICE", help="auto | cpu | cuda."),
):
    """Score translations with sacrebleu: translate --src with a checkpoint (or take --hyp) and
    compare with --ref. Prints each score with its signature; warns on stderr when a file looks
    subword-tokenised or pre-tokenised. No line is dropped: an empty line is an empty segment.
    Translating shows a progress bar (on a terminal), and a line when the run's decode.yaml
    (seq2seq tune-decode) sets the search.
    """
    from seq2seq.atomic import is_stdout, write_output
    from seq2seq.evaluation.metrics import parse_buckets
    from seq2seq.evaluation.report import evaluation_report, format_report, read_eval_texts

    setup_logging()
    names = [n for n, on in (("bleu", bleu), ("chrf", chrf), ("ter", ter)) if on] or ["bleu"]
    if by_length and src is None:
        raise UserError("--by-length needs --src: buckets are counted in source words")
    if hyp is not None and checkpoint is not None:
        raise UserError("give --hyp (score a file) or --checkpoint (translate --src), not both")
    if hyp is not None and output is not None:
        raise UserError(
            f"--output {output}: with --hyp nothing is translated, so there are no new "
            "hypotheses to write; drop --output (the scores go to stdout, --json for a file)"
        )
    if hyp is not None:
        decoding = {
            "--beam": beam,
            "--method": method,
            "--temperature": temperature,
            "--top-k": top_k,
            "--top-p": top_p,
            "--seed": seed,
            "--batch-size": batch_size,
        }
        if given := [name for name, value in decoding.items() if value is not None]:
            raise UserError(
                f"{', '.join(given)}: with --hyp nothing is translated, so decoding options "
                "do not apply; drop them, or translate with --checkpoint and --src"
            )
    if is_stdout(output) and is_stdout(json_out):
        raise UserError("--output - and --json - would share standard output; give one a file")
    check_writable(output, "--output")  # before translating and scoring
    check_writable(json_out, "--json")
    with user_errors():
        edges = parse_buckets(buckets)
        texts = read_eval_texts(ref, src, hyp)
    made_with = None
    if hyp is None:
        options = {
            "beam_size": beam,
            "batch_size": batch_size,
            "method": method,
            "temperature": temperature,
            "top_k": top_k,
            "top_p": top_p,
            "seed": seed,
        }
        texts.hyps, run_lang, made_with = _translate_for_eval(
            checkpoint, src, texts, options, device
        )
        tgt_lang = tgt_lang or run_lang
        if output is not None:
            write_output(output, "".join(line + "\n" for line in texts.hyps))
    with user_errors():
        report = evaluation_report(
            texts, names, by_length, edges, tgt_lang, lowercase, made_with=made_with
        )
    for w in report["warnings"]:
        warn(w)
    typer.echo(format_report(report), err=is_stdout(output) or is_stdout(json_out))
    if json_out is not None:
        write_output(json_out, json.dumps(report, indent=2, ensure_ascii=False))


def _translate_for_eval(checkpoint, src, texts, options, device) -> tuple[list[str], str, dict]:
    """Translate the sources of ``texts`` with the checkpoint's decode settings and ``options``
    (as for ``decode_cfg``), as ``translate -i`` would (the same windows and batches); returns
    the best translations, the run's target language and how they were made (eval --json's
    checkpoint, decode and decode_source)."""
    from seq2seq.decoding.files import LineTranslator, translate_lines

    if checkpoint is None or src is None:
        raise UserError("give --checkpoint and --src to translate, or --hyp to score a file")
    run = load_model(checkpoint, device, say_decode_file=False)  # said below, as eval uses it
    dcfg = decode_cfg(run.cfg.decode, **options)
    sources = _say_decode_file(run, dcfg, options)
    tr = LineTranslator(run.model, run.tok, dcfg, run.device, source_name=str(src))
    out = translate_lines(tr, texts.sources)
    made_with = {
        "checkpoint": {"path": str(run.checkpoint), "step": run.step},
        "decode": dcfg.model_dump(mode="json"),
        "decode_source": sources,
    }
    return [t.text for t in out], run.cfg.data.tgt_lang, made_with

"""``translate``: text in, one translation per line out, with a trained model."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from seq2seq.atomic import check_not_input, check_writable, sole_writer
from seq2seq.commands import decode_options as opt
from seq2seq.commands.common import UserError, fail, no_stdout, user_errors
from seq2seq.config import DecodeConfig
from seq2seq.console import setup_logging


@opt.with_search_options
def translate(
    ctx: typer.Context,
    checkpoint: opt.checkpoints(
        "Checkpoint, run directory or export folder. " + opt.ENSEMBLE_HELP
    ) = ...,
    input: str = typer.Option(
        "-",
        "--input",
        "-i",
        metavar="FILE",
        help="Source file, or - for stdin (one sentence per line).",
    ),
    output: str = typer.Option(
        "-",
        "--output",
        "-o",
        metavar="FILE",
        help="Output file, or - for stdout; missing folders on its path are created. Written to "
        "FILE.partial (FILE.lock keeps a second writer out), renamed to FILE when every line is "
        "done.",
    ),
    n_best: int = typer.Option(
        1,
        min=1,
        max=1000,
        metavar="N",
        help="Write the N best per line (TSV: line, score, hypothesis); the score is the "
        "length-penalised one the search ranks by.",
    ),
    output_format: str | None = typer.Option(
        None,
        "--format",
        metavar="text|nbest|jsonl",
        help="jsonl: per line translation, score, log_prob, tokens, token_log_probs (one per "
        "piece, EOS included), alignment [default: nbest with --n-best above 1, else text].",
    ),
    align_layer: int | None = typer.Option(
        None,
        metavar="N",
        help="--format jsonl: align with decoder layer N [default: the search's attention, the "
        "Transformer's last decoder layer averaged over heads].",
    ),
    batch_tokens: int | None = typer.Option(
        None, min=1, metavar="N", help="Batch by padded source tokens, not sentences."
    ),
    attention_dir: Path | None = typer.Option(
        None, metavar="DIR", help="Write a cross-attention heatmap PNG per line."
    ),
    attention_n: int | None = typer.Option(
        None,
        min=0,
        metavar="N",
        help="With --attention-dir: plot the first N input lines [default: 10].",
    ),
    device: opt.Device = "auto",
    quantize: opt.Quantize = None,
    search: dict | None = None,
):
    """Translate text line by line, one output line per input line, in order (docs/overview.md).
    Ctrl-C stops with exit code 130 and keeps the lines translated in FILE.partial."""
    from seq2seq.decoding.alignment_output import has_attention
    from seq2seq.decoding.alignment_output import output_format as output_format_of
    from seq2seq.decoding.ctranslate2 import export_folder
    from seq2seq.decoding.files import TranslationInterrupted, partial_of, translate_io
    from seq2seq.decoding.runs import chosen_method, load
    from seq2seq.decoding.search import check_n_best

    setup_logging()
    no_stdout(attention_dir, "--attention-dir", "a folder of plots")
    if attention_n is not None and attention_dir is None:
        raise UserError(
            f"--attention-n {attention_n}: plots are drawn only with --attention-dir DIR; give it"
        )
    beam, batch_size = search["beam_size"], search["batch_size"]
    if batch_size is not None and batch_tokens is not None:
        raise UserError(
            f"--batch-size {batch_size} and --batch-tokens {batch_tokens}: batches are counted "
            "in sentences or in tokens; give one of them"
        )
    outputs = [("--attention-dir", attention_dir)]
    check_not_input(output, "--output", [("--input", input)], checkpoint, outputs=outputs)
    check_writable(output, "--output")  # before any decoding: no finished work thrown away
    # one writer an output: held until the command ends (a live one is named, never deleted)
    ctx.with_resource(sole_writer(output, "--output"))
    if (kept := partial_of(output)) is not None and kept.is_file():
        raise UserError(
            f"--output {output}: {kept} holds the lines a stopped translate kept; move it away "
            "(or delete it), then run again"
        )
    check_writable(attention_dir, "--attention-dir", folder=True)
    if attention_dir is not None and len(checkpoint) == 1 and export_folder(checkpoint[0]):
        raise UserError(
            "--attention-dir: a CTranslate2 export returns no attention maps; plot them with "
            "the run it came from"
        )
    settled = search["method"] or chosen_method(beam)
    if n_best > 1 and (settled == "greedy" or (settled == "beam" and beam is not None)):
        with user_errors():  # --n-best before loading; the run's own settings are checked after
            given = {"beam_size": beam} if settled == "beam" else {}
            check_n_best(DecodeConfig().with_method(settled, **given), n_best)
    with user_errors():
        output_format_of(output_format, n_best, align_layer, None)  # before the model loads
        run = load(checkpoint, device, quantize)
        dcfg, _ = run.decode_settings(**search)
        check_n_best(dcfg, n_best)
        fmt = output_format_of(output_format, n_best, align_layer, run.model, run.device)
    plot = None
    if attention_dir is not None:  # else matplotlib stays unimported (its cache folder)
        from seq2seq.evaluation.plots import NO_ATTENTION, plot_translations

        if not has_attention(run.model):  # before the first window is translated
            raise UserError(NO_ATTENTION)

        def plot(results, first_line_no: int) -> None:
            with user_errors():  # a model without attention: one line
                plot_translations(results, run.tok, first_line_no, attention_dir)

    source_name = "stdin" if input == "-" else input
    translator = run.line_translator(
        dcfg,
        n_best=n_best,
        batch_tokens=batch_tokens,
        attention_n=10 if attention_n is None else attention_n,
        plot=plot,
        source_name=source_name,
        output_format=fmt,
        align_layer=align_layer,
    )
    if input == "-" and sys.stdin.isatty():
        typer.echo("ready: type a sentence, Ctrl-D ends", err=True)
    try:  # SIGTERM, SIGHUP too (cli.main): kept lines and the message of a Ctrl-C
        translate_io(translator, input, output)
    except TranslationInterrupted as e:  # typer would exit 130 without a word
        fail(str(e), code=130)
    if translator.report.summary():
        typer.echo(f"translate: {translator.report.summary()}", err=True)
    if translator.report.lines == 0:  # exit 0, as for any filter, but never without a word
        typer.echo(f"translate: {source_name}: no text to translate (empty input)", err=True)

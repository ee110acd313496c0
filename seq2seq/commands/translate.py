"""``translate``: text in, one translation per line out, with a trained model."""

from __future__ import annotations

from pathlib import Path

import typer

from seq2seq.commands.common import UserError, fail, no_stdout, user_errors
from seq2seq.commands.decode_options import (
    BATCH_SIZE,
    ENSEMBLE_HELP,
    LENGTH_PENALTY,
    MAX_LEN_A,
    MAX_LEN_B,
    MAX_SRC_LEN,
    METHOD,
    MIN_LEN,
    NO_REPEAT_NGRAM,
    QUANTIZE,
    SEED,
    TEMPERATURE,
    TOP_K,
    TOP_P,
)
from seq2seq.commands.outputs import check_not_input, check_writable
from seq2seq.console import setup_logging


def translate(
    checkpoint: list[Path] = typer.Option(
        ...,
        "--checkpoint",
        "-c",
        metavar="RUN",
        help="Checkpoint file or run directory (its best.pt, else last.pt), or a `seq2seq "
        "export` folder (its model.pt; a CTranslate2 export is decoded by CTranslate2). "
        + ENSEMBLE_HELP,
    ),
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
        help="Output file, or - for stdout; missing folders on its path are created. Written as "
        "the translation goes, to FILE.partial, "
        "renamed to FILE when every line is done; Ctrl-C leaves FILE.partial with the lines "
        "translated so far (and FILE as it was).",
    ),
    beam: int | None = typer.Option(
        None,
        "--beam",
        help="Beam size K, 1 to 1000; implies --method beam (K = 1 gives greedy's output); a "
        "wide beam decodes fewer sentences at a time [default: the run's decode.beam_size].",
    ),
    method: str | None = METHOD,
    temperature: float | None = TEMPERATURE,
    top_k: int | None = TOP_K,
    top_p: float | None = TOP_P,
    seed: int | None = SEED,
    no_repeat_ngram: int | None = NO_REPEAT_NGRAM,
    n_best: int = typer.Option(
        1,
        "--n-best",
        min=1,
        max=1000,
        help="Write the N best per line as TSV: line number, score, hypothesis (a backslash, "
        "tab, newline or carriage return in it written as \\\\, \\t, \\n, \\r); the score is "
        "the length-penalised one the search ranks by, log P / ((5 + |Y|) / 6)^alpha with alpha "
        "= --length-penalty (log P itself at alpha 0). With --format jsonl, N hypotheses per "
        "object instead. Beam search needs --beam N or more, sampling draws N per line.",
    ),
    output_format: str | None = typer.Option(
        None,
        "--format",
        metavar="text|nbest|jsonl",
        help="text: the best translation, one line per input line. nbest: the --n-best TSV "
        "(rows as --n-best says). jsonl: one JSON object per input line, in order: line (its "
        "number), translation, score (as in the TSV), log_prob (sum of the token log-probs), "
        "finished, tokens (target pieces, EOS </s> included), token_log_probs (one per piece, "
        "EOS included), alignment (Pharaoh i-j: source word i, target word j, 0-based, from "
        "each target piece's argmax cross-attention, pieces mapped to words; null for a model "
        "without attention); with --n-best N, {line, hypotheses: [N such]}. A blank line gives "
        "an empty translation. [default: nbest with --n-best above 1, else text]",
    ),
    align_layer: int | None = typer.Option(
        None,
        "--align-layer",
        metavar="N",
        help="--format jsonl: align with decoder layer N's cross-attention (0-based), heads "
        "averaged, recomputed teacher-forced on each hypothesis. RNN attention models have one "
        "layer (0) [default: the attention the search returns: the Transformer's last decoder "
        "layer averaged over heads, the RNN decoders' one attention].",
    ),
    batch_size: int | None = BATCH_SIZE,
    max_len_a: float | None = MAX_LEN_A,
    max_len_b: int | None = MAX_LEN_B,
    min_len: int | None = MIN_LEN,
    length_penalty: float | None = LENGTH_PENALTY,
    max_src_len: int | None = MAX_SRC_LEN,
    batch_tokens: int | None = typer.Option(
        None,
        "--batch-tokens",
        min=1,
        help="Batch by padded source tokens instead of --batch-size sentences.",
    ),
    attention_dir: Path | None = typer.Option(
        None,
        "--attention-dir",
        metavar="DIR",
        help="Write a cross-attention heatmap PNG per sentence (source x output pieces) here.",
    ),
    attention_n: int = typer.Option(
        10, "--attention-n", min=0, help="Plot the first N input lines (blank lines have no plot)."
    ),
    device: str = typer.Option("auto", "--device", metavar="DEVICE", help="auto | cpu | cuda."),
    quantize: str | None = QUANTIZE,
):
    """Translate text line by line: one output line per input line, in order; empty in, empty out.
    Lines are translated 1, 2, 4, then 8 batches at a time and written, in order, as each such
    window finishes (so -o FILE.partial grows as it goes; FILE appears when all is done). Ctrl-C
    stops with exit code 130 and says how many lines were translated and where they are. When any
    source has uncovered characters or is cut to the length limit, or any translation stops at the
    maximum length without EOS, a summary line on stderr counts them. Reading a terminal, it says
    when the model is ready; Ctrl-D ends."""
    import sys

    from seq2seq.decoding.alignment_output import output_format as output_format_of
    from seq2seq.decoding.ctranslate2 import export_folder
    from seq2seq.decoding.files import TranslationInterrupted, translate_io
    from seq2seq.decoding.runs import load
    from seq2seq.decoding.search import check_n_best

    setup_logging()
    no_stdout(attention_dir, "--attention-dir", "a folder of plots")
    check_not_input(output, "--output", [("--input", input)], checkpoint)
    check_writable(output, "--output")  # before any decoding: no finished work thrown away
    check_writable(attention_dir, "--attention-dir", folder=True)
    if attention_dir is not None and len(checkpoint) == 1 and export_folder(checkpoint[0]):
        raise UserError(
            "--attention-dir: a CTranslate2 export returns no attention maps; plot them with "
            "the run it came from"
        )
    options = {
        "beam_size": beam,
        "batch_size": batch_size,
        "max_len_a": max_len_a,
        "max_len_b": max_len_b,
        "min_len": min_len,
        "length_penalty": length_penalty,
        "max_src_len": max_src_len,
        "temperature": temperature,
        "top_k": top_k,
        "top_p": top_p,
        "seed": seed,
        "no_repeat_ngram": no_repeat_ngram,
    }
    with user_errors():
        run = load(checkpoint, device, quantize)
        dcfg, _ = run.decode_settings(method, **options)
        check_n_best(dcfg, n_best)
        fmt = output_format_of(output_format, n_best, align_layer, run.model, run.device)
    plot = _attention_plotter(run.tok, attention_dir)
    source_name = "stdin" if input == "-" else input
    translator = run.line_translator(
        dcfg,
        n_best=n_best,
        batch_tokens=batch_tokens,
        attention_n=attention_n,
        plot=plot,
        source_name=source_name,
        output_format=fmt,
        align_layer=align_layer,
    )
    if input == "-" and sys.stdin.isatty():
        typer.echo("ready: type a sentence, Ctrl-D ends", err=True)
    try:
        translate_io(translator, input, output)
    except TranslationInterrupted as e:  # typer would exit 130 without a word
        fail(str(e), code=130)
    if translator.report.summary():
        typer.echo(f"translate: {translator.report.summary()}", err=True)
    if translator.report.lines == 0:  # exit 0, as for any filter, but never without a word
        typer.echo(f"translate: {source_name}: no text to translate (empty input)", err=True)


def _attention_plotter(tok, directory: Path | None):
    """``--attention-dir``: a function that plots translations decoded with attention into
    ``directory`` (one-line error for a model without attention), or None."""
    from seq2seq.evaluation.plots import plot_translations

    if directory is None:
        return None

    def plot(results, first_line_no: int) -> None:
        with user_errors():
            plot_translations(results, tok, first_line_no, directory)

    return plot

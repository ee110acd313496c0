"""The ``seq2seq`` command line: parse, call the library, print, map errors to exit codes.

``translate`` and ``eval`` live here; ``train`` and ``average`` in ``commands/training.py``,
``tune-decode`` in ``commands/tune.py``, ``compare`` and ``synth`` in ``commands/study.py``, and
what they share in ``commands/common.py`` (and ``commands/outputs.py``: every output path is checked
writable before the work starts).
Every user-facing problem (bad config, bad data, bad checkpoint) ends as one line on stderr and exit
code 2; nothing here prints a traceback unless SEQ2SEQ_DEBUG=1. An output path ``-`` means standard
output.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import get_args

import typer

from seq2seq.commands import serve, study, training, tune
from seq2seq.commands.common import (
    UserError,
    fail,
    load_model,
    no_stdout,
    user_errors,
    warn,
)
from seq2seq.commands.outputs import check_writable
from seq2seq.config import SearchMethod
from seq2seq.console import setup_logging

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Neural machine translation: RNN encoder-decoder, Bahdanau and Luong attention, and the "
    "Transformer. Train, translate, evaluate, average checkpoints, tune the search on "
    "validation, make synthetic corpora, compare models.",
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts say "[default: ...]": square brackets are not markup
    context_settings={"help_option_names": ["-h", "--help"]},  # every command's -h
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            said = version("seq2seq")
        except PackageNotFoundError:  # run from a source tree that was never installed
            from seq2seq import __version__ as said
        typer.echo(f"seq2seq {said}")
        raise typer.Exit()


@app.callback()
def _options(
    show_version: bool = typer.Option(
        False,
        "--version",
        callback=_version,
        is_eager=True,
        help="Print the version (seq2seq X.Y.Z) and exit.",
    ),
) -> None:
    pass


# The one-line summaries of ``seq2seq --help``: short enough for an 80-column terminal (click cuts
# a longer first sentence mid-phrase with "...").
SUMMARIES = {
    "train": "Train a model into a run folder (checkpoints, logs).",
    "translate": "Translate text line by line with a trained model.",
    "eval": "Score translations (BLEU, chrF, TER) with sacrebleu.",
    "average": "Average a run's last or best checkpoints into one.",
    "tune-decode": "Choose beam size and length penalty on validation.",
    "compare": "The bottleneck-versus-attention study.",
    "synth": "Write a synthetic parallel corpus (copy, reverse, ...).",
    "serve": "Serve a local page and JSON API over trained runs.",
}

app.command(short_help=SUMMARIES["train"])(training.train)


# The search options of translate and eval (see DecodeConfig); None = the run's setting.
_METHOD = typer.Option(
    None,
    "--method",
    metavar="METHOD",
    help=f"Search: {' | '.join(get_args(SearchMethod))}. A method other than the run's "
    "starts from its own defaults, e.g. --method sample ignores the run's beam size "
    "[default: beam with --beam, else the run's decode.method].",
)
_TEMPERATURE = typer.Option(
    None,
    "--temperature",
    help="sample: draw from softmax(logits / T), T > 0; below 1 sharper, above 1 flatter "
    "[default: the run's decode.temperature, 1].",
)
_TOP_K = typer.Option(
    None,
    "--top-k",
    help="sample: draw only among the K most probable tokens, K >= 1 "
    "[default: the run's decode.top_k, all tokens].",
)
_TOP_P = typer.Option(
    None,
    "--top-p",
    help="sample: draw only among the fewest most probable tokens holding probability P, "
    "0 < P <= 1 (nucleus sampling) [default: the run's decode.top_p, 1 = all tokens].",
)
_SEED = typer.Option(
    None,
    "--seed",
    help="sample: seed of the draws; the same input, seed and batching give the same output "
    "[default: the run's decode.seed, none = new draws every time].",
)


@app.command(short_help=SUMMARIES["translate"])
def translate(
    checkpoint: Path = typer.Option(
        ...,
        "--checkpoint",
        "-c",
        metavar="RUN",
        help="Checkpoint file or run directory (its best.pt, else last.pt).",
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
        help="Output file, or - for stdout. Written as the translation goes, to FILE.partial, "
        "renamed to FILE when every line is done; Ctrl-C leaves FILE.partial with the lines "
        "translated so far (and FILE as it was).",
    ),
    beam: int | None = typer.Option(
        None,
        "--beam",
        help="Beam size K; implies --method beam (K = 1 gives greedy's output) "
        "[default: the run's decode.beam_size].",
    ),
    method: str | None = _METHOD,
    temperature: float | None = _TEMPERATURE,
    top_k: int | None = _TOP_K,
    top_p: float | None = _TOP_P,
    seed: int | None = _SEED,
    n_best: int = typer.Option(
        1,
        "--n-best",
        min=1,
        help="Write the N best per line as TSV: line number, score, hypothesis (a backslash, "
        "tab, newline or carriage return in it written as \\\\, \\t, \\n, \\r); beam search "
        "needs --beam N or more, sampling draws N per line.",
    ),
    batch_size: int | None = typer.Option(
        None, "--batch-size", help="Sentences per batch [default: the run's decode.batch_size]."
    ),
    max_len_a: float | None = typer.Option(
        None,
        "--max-len-a",
        help="Output length limit a*src_len+b: a [default: the run's decode.max_len_a].",
    ),
    max_len_b: int | None = typer.Option(
        None,
        "--max-len-b",
        help="Output length limit a*src_len+b: b [default: the run's decode.max_len_b].",
    ),
    min_len: int | None = typer.Option(
        None, "--min-len", help="Tokens required before EOS [default: the run's decode.min_len]."
    ),
    length_penalty: float | None = typer.Option(
        None,
        "--length-penalty",
        help="GNMT alpha, 0 = raw log-prob [default: the run's decode.length_penalty].",
    ),
    max_src_len: int | None = typer.Option(
        None,
        "--max-src-len",
        help="Cut longer sources to this many tokens, with a warning "
        "[default: the run's decode.max_src_len].",
    ),
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
):
    """Translate text line by line: one output line per input line, in order; empty in, empty out.
    Lines are translated 8 batches at a time and written, in order, as each such window finishes
    (so -o FILE.partial grows as it goes; FILE appears when all is done). Ctrl-C stops with exit
    code 130 and says how many lines were translated and where they are. When any source has
    uncovered characters or is cut to the length limit, or any translation stops at the maximum
    length without EOS, a summary line on stderr counts them. Reading a terminal, it says when the
    model is ready; Ctrl-D ends."""
    import sys

    from seq2seq.decoding.search import check_n_best
    from seq2seq.decoding.stream import LineTranslator, TranslationInterrupted, translate_io

    setup_logging()
    no_stdout(attention_dir, "--attention-dir", "a folder of plots")
    if input != "-" and output != "-" and Path(input).resolve() == Path(output).resolve():
        raise UserError(
            f"--output {output} is the --input file: the translations would replace the "
            "sources; write them to another file"
        )
    check_writable(output, "--output")  # before any decoding: no finished work thrown away
    check_writable(attention_dir, "--attention-dir", folder=True)
    run = load_model(checkpoint, device)
    options = {
        "beam_size": beam,
        "batch_size": batch_size,
        "max_len_a": max_len_a,
        "max_len_b": max_len_b,
        "min_len": min_len,
        "length_penalty": length_penalty,
        "max_src_len": max_src_len,
        "method": method,
        "temperature": temperature,
        "top_k": top_k,
        "top_p": top_p,
        "seed": seed,
    }
    dcfg = _decode_cfg(run.cfg.decode, **options)
    check_n_best(dcfg, n_best)
    plot = _attention_plotter(run.tok, attention_dir)
    source_name = "stdin" if input == "-" else input
    translator = LineTranslator(
        run.model, run.tok, dcfg, run.device, n_best, batch_tokens, attention_n, plot, source_name
    )
    if input == "-" and sys.stdin.isatty():
        typer.echo("ready: type a sentence, Ctrl-D ends", err=True)
    try:
        translate_io(translator, input, output)
    except TranslationInterrupted as e:  # typer would exit 130 without a word
        fail(str(e), code=130)
    if translator.report.summary():
        typer.echo(f"translate: {translator.report.summary()}", err=True)


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


def _decode_cfg(base, method=None, **options):
    """The run's DecodeConfig ``base`` with the options that were given (``options``: DecodeConfig
    fields; None = not given).

    The method is --method, else beam when --beam is given, else the run's;
    ``DecodeConfig.with_method`` drops the settings of another method than it.

    Raises:
        UserError: an option out of bounds, or a setting of another method, named as the option.
    """
    method = method or ("beam" if options.get("beam_size") is not None else base.method)
    with user_errors():
        return base.with_method(method, **{k: v for k, v in options.items() if v is not None})


def _given(options: dict) -> set[str]:
    """The DecodeConfig fields the command line set; --beam sets the method too."""
    given = {k for k, v in options.items() if v is not None}
    return given | ({"method"} if "beam_size" in given else set())


def _say_decode_file(run, dcfg, options: dict) -> dict[str, str]:
    """Where each decode setting came from (``LoadedRun.decode_sources``), and one line on stderr
    when the run's decode.yaml changed them."""
    sources = run.decode_sources(dcfg, _given(options))
    if line := run.decode_file_line(dcfg, sources):
        typer.echo(line, err=True)
    return sources


@app.command("eval", short_help=SUMMARIES["eval"])
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
    method: str | None = _METHOD,
    temperature: float | None = _TEMPERATURE,
    top_k: int | None = _TOP_K,
    top_p: float | None = _TOP_P,
    seed: int | None = _SEED,
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
    (as for ``_decode_cfg``), as ``translate -i`` would (the same windows and batches); returns
    the best translations, the run's target language and how they were made (eval --json's
    checkpoint, decode and decode_source)."""
    from seq2seq.decoding.stream import LineTranslator, translate_lines

    if checkpoint is None or src is None:
        raise UserError("give --checkpoint and --src to translate, or --hyp to score a file")
    run = load_model(checkpoint, device, say_decode_file=False)  # said below, as eval uses it
    dcfg = _decode_cfg(run.cfg.decode, **options)
    sources = _say_decode_file(run, dcfg, options)
    tr = LineTranslator(run.model, run.tok, dcfg, run.device, source_name=str(src))
    out = translate_lines(tr, texts.sources)
    made_with = {
        "checkpoint": {"path": str(run.checkpoint), "step": run.step},
        "decode": dcfg.model_dump(mode="json"),
        "decode_source": sources,
    }
    return [t.text for t in out], run.cfg.data.tgt_lang, made_with


app.command(short_help=SUMMARIES["average"])(training.average)
app.command("tune-decode", short_help=SUMMARIES["tune-decode"])(tune.tune_decode)
app.command(short_help=SUMMARIES["compare"])(study.compare)
app.command(short_help=SUMMARIES["synth"])(study.synth)
app.command(short_help=SUMMARIES["serve"])(serve.serve)


def main() -> None:
    """Entry point: run the app, turning known errors into one line and exit code 2."""
    try:  # these import torch, which takes a second or two: Ctrl-C may land here
        from seq2seq.checkpoint import CheckpointError
        from seq2seq.config import ConfigError
        from seq2seq.data.text import DataError
        from seq2seq.training.state import TrainingError
    except KeyboardInterrupt:
        fail("interrupted", code=130)

    try:
        app()
    except (ConfigError, DataError, CheckpointError, TrainingError, UserError) as e:
        fail(str(e))
    except KeyboardInterrupt:  # before training's own Ctrl-C handler, or a second Ctrl-C
        fail("interrupted", code=130)
    except OSError as e:  # a path that is a folder, exists already, is not writable, ...
        if e.filename is None:
            fail(str(e))
        fail(f"{e.filename}: {e.strerror}; check the path and try again")
    except Exception as e:
        if os.environ.get("SEQ2SEQ_DEBUG"):
            raise
        first = (str(e).strip().splitlines() or [""])[0]
        fail(f"{type(e).__name__}: {first} (set SEQ2SEQ_DEBUG=1 for the traceback)", code=1)

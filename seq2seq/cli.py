"""The ``seq2seq`` command line: parse, call the library, print, map errors to exit codes.

Every user-facing problem (bad config, bad data, bad checkpoint) ends as one line on stderr and exit
code 2; nothing here prints a traceback unless SEQ2SEQ_DEBUG=1.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import typer

from seq2seq.console import console, setup_logging

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Neural machine translation: RNN encoder-decoder, Bahdanau and Luong attention, and the "
    "Transformer. Train, translate, evaluate, average checkpoints, make synthetic corpora, "
    "compare models.",
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts say "[default: ...]": square brackets are not markup
)


class UserError(Exception):
    """A problem with what the user gave us; printed as one line."""


def _fail(msg: str, code: int = 2) -> None:
    """Print one error line on stderr and exit with ``code``."""
    from rich.text import Text

    console.print(Text.assemble(("error: ", "bold red"), msg), highlight=False, soft_wrap=True)
    sys.exit(code)


def _device(name: str) -> str:
    """``--device`` for inference: auto | cpu | cuda (one-line error when cuda is absent)."""
    from seq2seq.runtime import pick_device

    return str(pick_device(name, "fp32"))


@app.command()
def train(
    config: Path = typer.Argument(..., help="YAML config (see configs/)."),
    run_dir: Path | None = typer.Option(
        None, "--run-dir", help="Output folder [default: from the config, else runs/<name>]."
    ),
    set_: list[str] = typer.Option(
        [], "--set", help="Override a config key, e.g. --set train.lr=5e-4 (repeatable)."
    ),
    resume: Path | None = typer.Option(
        None,
        "--resume",
        help="Continue the run in this folder exactly where its last.pt stopped. CONFIG must "
        "have the run's data, tokenizer and model sections (RUN_DIR/config.yaml does); train "
        "settings may change, e.g. --max-time to extend a finished run.",
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Start afresh in a run directory that already holds a run."
    ),
    max_steps: int | None = typer.Option(None, "--max-steps", help="Stop after this many updates."),
    max_epochs: int | None = typer.Option(
        None, "--max-epochs", help="Stop after this many epochs."
    ),
    max_time: float | None = typer.Option(
        None,
        "--max-time",
        help="Stop after this many minutes of wall time, counted over resumed runs too.",
    ),
    device: str | None = typer.Option(
        None, "--device", help="auto | cpu | cuda [default: the config's, auto]."
    ),
    seed: int | None = typer.Option(None, "--seed", help="Random seed [default: the config's]."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging."),
):
    """Train a model; writes checkpoints (best.pt, last.pt), the tokenizer, logs and TensorBoard
    scalars into the run directory."""
    from seq2seq.config import load_config
    from seq2seq.training.loop import train as run_training

    setup_logging(verbose)
    overrides = list(set_)
    for key, value in (
        ("max_steps", max_steps),
        ("max_epochs", max_epochs),
        ("max_time", max_time),
        ("device", device),
        ("seed", seed),
    ):
        if value is not None:
            overrides.append(f"train.{key}={value}")
    if resume is not None and (run_dir is not None or overwrite):
        raise UserError(
            "--resume continues the run in its own folder: drop --run-dir/--overwrite, or start "
            "a new run without --resume"
        )
    cfg = load_config(config, overrides)
    target = resume or run_dir
    summary = run_training(cfg, target, resume=resume is not None, overwrite=overwrite)
    if os.environ.get("RANK", "0") == "0":  # under torchrun, rank 0 speaks for all
        typer.echo(json.dumps(summary, indent=2))  # stdout: the one machine-readable result


@app.command()
def translate(
    checkpoint: Path = typer.Option(
        ...,
        "--checkpoint",
        "-c",
        help="Checkpoint file or run directory (its best.pt, else last.pt).",
    ),
    input: str = typer.Option(
        "-", "--input", "-i", help="Source file, or - for stdin (one sentence per line)."
    ),
    output: str = typer.Option("-", "--output", "-o", help="Output file, or - for stdout."),
    beam: int | None = typer.Option(
        None, "--beam", help="Beam size; 1 = greedy [default: the run's decode.beam_size]."
    ),
    n_best: int = typer.Option(
        1,
        "--n-best",
        min=1,
        help="Write the N best per line as TSV: line number, score, hypothesis.",
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
        help="Write a cross-attention heatmap PNG per sentence (source x output pieces) here.",
    ),
    attention_n: int = typer.Option(
        10, "--attention-n", min=0, help="Plot the first N input lines (blank lines have no plot)."
    ),
    device: str = typer.Option("auto", "--device", help="auto | cpu | cuda."),
):
    """Translate text line by line: one output line per input line, in order; empty in, empty out.
    A summary line on stderr counts sources with uncovered characters, sources cut to the length
    limit, and translations that stopped at the maximum length without EOS."""
    from seq2seq.checkpoint import load_for_inference
    from seq2seq.decoding.translate import TranslationReport

    setup_logging()
    dev = _device(device)
    model, tok, cfg = load_for_inference(checkpoint, dev)
    dcfg = _decode_cfg(
        cfg.decode, beam, batch_size, max_len_a, max_len_b, min_len, length_penalty, max_src_len
    )
    if n_best > dcfg.beam_size:
        raise UserError(f"--n-best {n_best} needs --beam of at least {n_best}")
    report = TranslationReport()
    extras = _Extras(
        batch_tokens, attention_dir, attention_n, source_name="stdin" if input == "-" else input
    )

    def render(lines: list[str], first_line_no: int) -> list[str]:
        res = _translate_lines(model, tok, lines, dcfg, dev, n_best, first_line_no, extras)
        report.add(res)
        if n_best == 1:
            return [r.text for r in res]
        out = []
        for k, r in enumerate(res):
            for h, text in zip(r.hypotheses, r.texts, strict=True):
                out.append(f"{first_line_no + k}\t{h.score:.4f}\t{text}")
            if not r.hypotheses:
                out.append(f"{first_line_no + k}\t\t")
        return out

    if input == "-":
        _stream(render, dcfg.batch_size, output)
    else:
        from seq2seq.data.text import read_lines

        lines = read_lines(input)
        with _progress(len(lines), extras):
            result = render(lines, 1)
        _write_lines(output, result)
    if report.summary():
        typer.echo(f"translate: {report.summary()}", err=True)


@dataclass
class _Extras:
    """translate's batching and plotting options, and the progress callback while one runs."""

    batch_tokens: int | None
    attention_dir: Path | None
    attention_n: int
    progress: Callable[[int], None] | None = None
    source_name: str = "input"


def _translate_lines(model, tok, lines, dcfg, dev, n_best, first_line_no, extras: _Extras):
    """Translate ``lines`` (numbered from ``first_line_no``); the first ``attention_n`` lines of
    the input are decoded with attention and plotted into ``attention_dir``."""
    from seq2seq.decoding.translate import translate_sentences
    from seq2seq.evaluation.plots import plot_translations

    n_att = 0
    if extras.attention_dir is not None:
        n_att = max(0, min(len(lines), extras.attention_n - first_line_no + 1))
    kw = {
        "n_best": n_best,
        "progress": extras.progress,
        "batch_tokens": extras.batch_tokens,
        "source_name": extras.source_name,
    }
    head = (
        translate_sentences(
            model,
            tok,
            lines[:n_att],
            dcfg,
            dev,
            need_attention=True,
            first_line_no=first_line_no,
            **kw,
        )
        if n_att
        else []
    )
    if head:
        _or_user_error(plot_translations, head, tok, first_line_no, extras.attention_dir)
    tail = translate_sentences(
        model, tok, lines[n_att:], dcfg, dev, first_line_no=first_line_no + n_att, **kw
    )
    return head + tail


@contextmanager
def _progress(total: int, extras: _Extras):
    """A rich progress bar on stderr (when it is a terminal) fed by ``extras.progress``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    columns = (
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    with Progress(
        *columns, console=console, disable=not console.is_terminal, transient=True
    ) as bar:
        task = bar.add_task("translating", total=total)
        extras.progress = lambda n: bar.advance(task, n)
        try:
            yield
        finally:
            extras.progress = None


def _stream(render, batch_size: int, output: str) -> None:
    """stdin -> output: translate whatever lines are available (up to a batch), flush, repeat.
    Lines are read by the same rules as files (``data.decode_line``)."""
    import select

    from seq2seq.data.text import decode_line

    with _output_stream(output) as out:
        line_no = 1
        stdin = sys.stdin.buffer
        while True:
            raw = stdin.readline()
            if not raw:
                break
            batch = [raw]
            while len(batch) < batch_size and select.select([stdin], [], [], 0)[0]:
                nxt = stdin.readline()
                if not nxt:
                    break
                batch.append(nxt)
            lines = [
                decode_line(b.rstrip(b"\n"), "<stdin>", line_no + k) for k, b in enumerate(batch)
            ]
            for text in render(lines, line_no):
                out.write(text + "\n")
            out.flush()
            line_no += len(lines)


@contextmanager
def _output_stream(output: str):
    """stdout, or ``output`` written atomically: an error half-way never leaves a truncated or
    half-written file in its place."""
    if output == "-":
        yield sys.stdout
        return
    from seq2seq.atomic import atomic_open

    with atomic_open(output) as f:
        yield f


def _write_lines(output: str, lines: list[str]) -> None:
    text = "".join(line + "\n" for line in lines)
    if output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        from seq2seq.atomic import atomic_write_text

        atomic_write_text(output, text)


def _decode_cfg(
    base, beam, batch_size, max_len_a, max_len_b, min_len, length_penalty, max_src_len=None
):
    updates = {
        k: v
        for k, v in {
            "beam_size": beam,
            "batch_size": batch_size,
            "max_len_a": max_len_a,
            "max_len_b": max_len_b,
            "min_len": min_len,
            "length_penalty": length_penalty,
            "max_src_len": max_src_len,
        }.items()
        if v is not None
    }
    from pydantic import ValidationError

    try:
        return base.model_validate({**base.model_dump(), **updates})
    except ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][0])
        option = {"beam_size": "beam"}.get(field, field).replace("_", "-")
        raise UserError(f"--{option}: {err['msg']}") from None


@app.command("eval")
def evaluate(
    checkpoint: Path | None = typer.Option(
        None, "--checkpoint", "-c", help="Checkpoint file or run directory; not needed with --hyp."
    ),
    src: Path | None = typer.Option(
        None,
        "--src",
        help="Source file (plain or .gz): translated with --checkpoint; its word counts give "
        "--by-length buckets.",
    ),
    ref: list[Path] = typer.Option(
        ..., "--ref", help="Reference file(s) (repeat for several references)."
    ),
    hyp: Path | None = typer.Option(
        None, "--hyp", help="Score this hypothesis file instead of translating."
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
        None, "--beam", help="Beam size for translating --src [default: the run's]."
    ),
    batch_size: int | None = typer.Option(None, "--batch-size", help="Sentences per batch."),
    tgt_lang: str | None = typer.Option(
        None,
        "--tgt-lang",
        help="Target language code; picks sacrebleu's BLEU tokenizer (zh, ja, ko) "
        "[default: the run's data.tgt_lang with --checkpoint].",
    ),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Also write the hypotheses here."
    ),
    json_out: Path | None = typer.Option(
        None,
        "--json",
        help="Write scores, signatures, by-length rows and warnings as JSON to this file.",
    ),
    device: str = typer.Option("auto", "--device", help="auto | cpu | cuda."),
):
    """Score translations with sacrebleu: translate --src with a checkpoint (or take --hyp) and
    compare with --ref. Prints each score with its signature; warns on stderr when a file looks
    subword-tokenised or pre-tokenised. No line is dropped: an empty line is an empty segment.
    """
    from seq2seq.data.text import read_lines
    from seq2seq.evaluation.metrics import check_aligned, evaluation_report, parse_buckets

    setup_logging()
    names = [n for n, on in (("bleu", bleu), ("chrf", chrf), ("ter", ter)) if on] or ["bleu"]
    if by_length and src is None:
        raise UserError("--by-length needs --src: buckets are counted in source words")
    if hyp is not None and checkpoint is not None:
        raise UserError("give --hyp (score a file) or --checkpoint (translate --src), not both")
    edges = _or_user_error(parse_buckets, buckets)
    hyps = read_lines(hyp) if hyp is not None else []
    refs = [read_lines(r) for r in ref]
    sources = read_lines(src) if src is not None else None
    streams = [(str(p), r) for p, r in zip(ref, refs, strict=True)]
    streams += [(str(src), sources)] if sources is not None else []
    streams += [(str(hyp), hyps)] if hyp is not None else []
    _or_user_error(check_aligned, streams)
    if not refs[0]:
        raise UserError(f"{ref[0]}: no lines to score")
    if hyp is None:
        if checkpoint is None or sources is None:
            raise UserError("give --checkpoint and --src to translate, or --hyp to score a file")
        hyps, run_lang = _translate_for_eval(
            checkpoint, sources, beam, batch_size, device, source_name=str(src)
        )
        tgt_lang = tgt_lang or run_lang
        if output is not None:
            _write_lines(str(output), hyps)
    hyp_name = str(hyp) if hyp is not None else f"translations of {src}"
    report = _or_user_error(
        evaluation_report,
        names,
        hyps,
        refs,
        [str(r) for r in ref],
        hyp_name,
        sources if by_length else None,
        edges,
        tgt_lang,
        lowercase,
    )
    _print_eval_report(report)
    if json_out is not None:
        from seq2seq.atomic import atomic_write_text

        atomic_write_text(json_out, json.dumps(report, indent=2, ensure_ascii=False))


def _or_user_error(fn, *args):
    """Call ``fn``; a ValueError (bad user input) becomes a one-line UserError."""
    try:
        return fn(*args)
    except ValueError as e:
        raise UserError(str(e)) from None


def _translate_for_eval(
    checkpoint, sources, beam, batch_size, device, source_name: str = "input"
) -> tuple[list[str], str]:
    """Translate ``sources`` with the checkpoint's decode settings; returns the best translations
    and the run's target language."""
    from seq2seq.checkpoint import load_for_inference
    from seq2seq.decoding.translate import translate_sentences

    dev = _device(device)
    model, tok, cfg = load_for_inference(checkpoint, dev)
    dcfg = _decode_cfg(cfg.decode, beam, batch_size, None, None, None, None)
    out = translate_sentences(model, tok, sources, dcfg, dev, source_name=source_name)
    return [t.text for t in out], cfg.data.tgt_lang


def _print_eval_report(report: dict) -> None:
    """Warnings on stderr (one line each), scores and the by-length table on stdout."""
    from rich.text import Text

    from seq2seq.evaluation.metrics import METRICS, format_buckets

    for w in report["warnings"]:
        console.print(
            Text.assemble(("warning: ", "bold yellow"), w), highlight=False, soft_wrap=True
        )
    for n in METRICS:
        if n in report:
            typer.echo(f"{report[n]['text']}\n  signature: {report[n]['signature']}")
    if "by_length" in report:
        typer.echo(f"BLEU by source length ({report['hyp']}):")
        typer.echo(format_buckets(report["by_length"]["buckets"]))


@app.command()
def average(
    checkpoint: Path = typer.Option(..., "--checkpoint", "-c", help="Run directory."),
    last: int | None = typer.Option(
        None, "--last", help="Average the newest K step<N>.pt (train.keep_last >= K)."
    ),
    best: int | None = typer.Option(
        None, "--best", help="Average the K best best-step<N>.pt (train.keep_best >= K)."
    ),
    output: Path = typer.Option(
        ..., "--output", "-o", help="Where to write the averaged checkpoint."
    ),
):
    """Average the weights of the last or best K checkpoints of a run into one checkpoint that
    translates (it holds no optimizer state, so it cannot resume training)."""
    from seq2seq.training.average import average_run

    setup_logging()
    paths = average_run(checkpoint, output, last=last, best=best)
    typer.echo(
        f"averaged {len(paths)} checkpoints ({', '.join(p.name for p in paths)}) -> {output}"
    )


@app.command()
def compare(
    configs: list[Path] = typer.Argument(
        ..., help="YAML configs, one per model (each with its own name)."
    ),
    out: Path = typer.Option(
        ...,
        "--out",
        help="Output folder: tokenizer/, runs/<name>/, report.md, results.json, plots.",
    ),
    budget_minutes: float | None = typer.Option(
        None,
        "--budget-minutes",
        min=0.01,
        help="Train every model for this many minutes [default: each config's own stop rule]. "
        "Configs with a cosine schedule need --budget-steps.",
    ),
    budget_steps: int | None = typer.Option(
        None,
        "--budget-steps",
        min=1,
        help="Train every model for this many updates [default: each config's own stop rule].",
    ),
    beams: str = typer.Option("1,5", "--beams", help="Beam sizes to decode with; 1 = greedy."),
    concat_k: int = typer.Option(
        4,
        "--concat-k",
        min=1,
        help="Long inputs: test lines joined k = 1..K at a time (1 = the test set only).",
    ),
    concat_n: int | None = typer.Option(
        None,
        "--concat-n",
        min=1,
        help="Join only the first N test lines for k >= 2 [default: all].",
    ),
    buckets: str = typer.Option(
        "10,20,30,40,50,60", "--buckets", help="Source-length bucket upper bounds, in words."
    ),
    attention_n: int = typer.Option(
        3,
        "--attention-n",
        min=0,
        help="Lines whose attention maps are drawn for every attention model.",
    ),
    exact_match: bool = typer.Option(
        False,
        "--exact-match",
        help="Also report exact-match accuracy against length (synthetic tasks).",
    ),
    device: str = typer.Option(
        "auto",
        "--device",
        help="auto | cpu | cuda, for training and decoding (overrides train.device).",
    ),
):
    """Train each config under the same budget with one shared tokenizer (finished runs in
    OUT/runs are reused), decode the test set and its joined long inputs greedily and with beam
    search, and write report.md, results.json, bleu_by_length.png and attention/ into OUT."""
    from seq2seq.evaluation.metrics import parse_buckets
    from seq2seq.study.compare import Budget, StudyOptions
    from seq2seq.study.compare import compare as run_compare

    setup_logging()
    if budget_minutes is not None and budget_steps is not None:
        raise UserError("give --budget-minutes or --budget-steps, not both")
    try:
        beam_sizes = tuple(int(b) for b in beams.split(","))
    except ValueError:
        beam_sizes = ()
    if not beam_sizes or min(beam_sizes) < 1:
        raise UserError(f"--beams {beams!r}: give beam sizes such as 1,5")
    try:
        edges = parse_buckets(buckets)
    except ValueError as e:
        raise UserError(str(e)) from None
    opts = StudyOptions(
        beam_sizes, concat_k, concat_n, edges, attention_n, exact_match, _device(device)
    )
    results = run_compare(configs, out, Budget(budget_minutes, budget_steps), opts)
    typer.echo(f"wrote {out / 'report.md'} ({len(results['models'])} models)")
    typer.echo(results["findings"]["bleu"])


@app.command()
def synth(
    task: str = typer.Option(..., "--task", help="copy | reverse | sort."),
    n: int = typer.Option(
        20000, "--n", help="Training pairs (val and test get n/10 each, at least 100)."
    ),
    min_len: int = typer.Option(1, "--min-len", help="Shortest sequence, in symbols."),
    max_len: int = typer.Option(60, "--max-len", help="Longest sequence, in symbols."),
    vocab: int = typer.Option(20, "--vocab", help="Number of distinct symbols."),
    out: Path = typer.Option(..., "--out", help="Output folder: {train,val,test}.{src,tgt}."),
    seed: int = typer.Option(1, "--seed", min=0, max=2**32 - 1, help="Random seed."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace the corpus files already in --out."
    ),
):
    """Write a synthetic parallel corpus (train with data.src_lang: src, data.tgt_lang: tgt)."""
    from seq2seq.study.synth import write_corpus

    if task not in ("copy", "reverse", "sort"):
        raise UserError(f"--task {task!r}: choose copy, reverse or sort")
    existing = [out / f"{s}.{side}" for s in ("train", "val", "test") for side in ("src", "tgt")]
    existing = [p for p in existing if p.exists()]
    if existing and not overwrite:
        raise UserError(f"{existing[0]}: exists already; pass --overwrite or another --out")
    try:
        sizes = write_corpus(task, n, min_len, max_len, vocab, out, seed)  # type: ignore[arg-type]
    except ValueError as e:
        raise UserError(str(e)) from None
    typer.echo(f"wrote {task} corpus to {out}: " + ", ".join(f"{k} {v}" for k, v in sizes.items()))


@app.command()
def serve(
    runs: list[Path] = typer.Argument(
        ...,
        metavar="RUN",
        help="Run folders (their best.pt, else last.pt) or checkpoint files.",
    ),
    host: str = typer.Option(
        "127.0.0.1",
        "--host",
        help="Address to listen on. Any other than 127.0.0.1 opens the models to the network, "
        "with no authentication.",
    ),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port; 0 picks a free one."),
    study: Path | None = typer.Option(
        None,
        "--study",
        help="A `seq2seq compare --out` folder: its results.json as an interactive "
        "BLEU-by-length plot.",
    ),
    device: str | None = typer.Option(
        None, "--device", help="auto | cpu | cuda [default: each run's train.device]."
    ),
):
    """Serve a local page and JSON API (POST /translate, see docs/serve.md) showing every run's
    greedy and beam translations, log-probabilities, decode times and cross-attention side by
    side. The runs are loaded once; Ctrl-C stops the server."""
    from seq2seq.serve import ServeError
    from seq2seq.serve.app import serve as run_server

    setup_logging()
    try:
        run_server(runs, host, port, study, device)
    except ServeError as e:
        raise UserError(str(e)) from None


def main() -> None:
    """Entry point: run the app, turning known errors into one line and exit code 2."""
    try:  # these import torch, which takes a second or two: Ctrl-C may land here
        from seq2seq.checkpoint import CheckpointError
        from seq2seq.config import ConfigError
        from seq2seq.data.text import DataError
    except KeyboardInterrupt:
        _fail("interrupted", code=130)

    try:
        app()
    except (ConfigError, DataError, CheckpointError, UserError) as e:
        _fail(str(e))
    except KeyboardInterrupt:  # before training's own Ctrl-C handler, or a second Ctrl-C
        _fail("interrupted", code=130)
    except OSError as e:  # a path that is a folder, exists already, is not writable, ...
        if e.filename is None:
            _fail(str(e))
        _fail(f"{e.filename}: {e.strerror}; check the path and try again")
    except Exception as e:
        from seq2seq.training.loop import TrainingError

        if isinstance(e, TrainingError):
            _fail(str(e))
        if os.environ.get("SEQ2SEQ_DEBUG"):
            raise
        first = (str(e).strip().splitlines() or [""])[0]
        _fail(f"{type(e).__name__}: {first} (set SEQ2SEQ_DEBUG=1 for the traceback)", code=1)

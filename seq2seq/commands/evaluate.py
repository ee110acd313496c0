"""``eval`` and ``paired``: score translations with sacrebleu. ``eval`` scores a hypothesis file or
translates the sources first; ``paired`` compares systems (``--hyp`` files or ``-c`` runs) with
sacreBLEU's paired significance tests (``evaluation/paired.py``), the first the baseline."""

from __future__ import annotations

import json
import re
from pathlib import Path

import typer

from seq2seq.atomic import check_not_input, check_writable, is_stdout, same_file, write_output
from seq2seq.commands import decode_options as opt
from seq2seq.commands.common import UserError, flag_of, no_stdin, user_errors, warn
from seq2seq.console import setup_logging


@opt.with_search_options
def evaluate(
    checkpoint: opt.checkpoints(
        "Checkpoint file or run directory, to translate --src. " + opt.ENSEMBLE_HELP,
        list[Path] | None,
    ) = None,
    src: opt.Src = None,
    ref: opt.Ref = ...,
    hyp: list[Path] | None = typer.Option(
        None, metavar="FILE", help="Score this hypothesis file instead of translating."
    ),
    paired: str | None = typer.Option(None, hidden=True, help="Moved: seq2seq paired."),
    bleu: opt.Bleu = False,
    chrf: opt.Chrf = False,
    ter: opt.Ter = False,
    by_length: bool = typer.Option(
        False, "--by-length", help="Also BLEU per source-length bucket (words of --src)."
    ),
    buckets: str | None = typer.Option(
        None,
        metavar="N,N,...",
        help="Bucket upper bounds in source words [default: 10,20,30,40,60].",
    ),
    lowercase: opt.Lowercase = False,
    tgt_lang: opt.TgtLang = None,
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        metavar="FILE",
        help="Also write the hypotheses here (- for stdout); with --checkpoint only.",
    ),
    json_out: opt.JsonOut = None,
    device: opt.Device = "auto",
    quantize: opt.Quantize = None,
    search: dict | None = None,
):
    """Score translations with sacrebleu: translate --src with a checkpoint (or take --hyp) and
    compare with --ref (docs/overview.md). Comparing systems: seq2seq paired."""
    from seq2seq.evaluation.metrics import parse_buckets
    from seq2seq.evaluation.report import evaluation_report, format_report, read_eval_texts

    setup_logging()
    if paired is not None:
        raise UserError(
            "eval --paired moved to its own command: seq2seq paired --paired-method "
            f"{paired} --hyp BASE --hyp B ... --ref FILE (see seq2seq paired -h)"
        )
    names = metric_names(bleu, chrf, ter)
    checkpoints, hyps = list(checkpoint or []), list(hyp or [])
    if by_length and src is None:
        raise UserError("--by-length needs --src: buckets are counted in source words")
    if buckets is not None and not by_length:
        raise UserError(
            f"--buckets {buckets}: it sets the --by-length table's buckets; add --by-length, or "
            "drop --buckets"
        )
    if hyps and checkpoints:
        raise UserError("give --hyp (score a file) or --checkpoint (translate --src), not both")
    if len(hyps) > 1:
        raise UserError(
            f"--hyp given {len(hyps)} times: several systems are compared with seq2seq paired "
            "(the first --hyp the baseline)"
        )
    if hyps and output is not None:
        raise UserError(
            f"--output {output}: with --hyp nothing is translated, so there are no new "
            "hypotheses to write; drop --output (the scores go to stdout, --json for a file)"
        )
    if is_stdout(output) and is_stdout(json_out):
        raise UserError("--output - and --json - would share standard output; give one a file")
    outputs = [("--output", output), ("--json", json_out)]
    device = check_scoring(hyps, checkpoints, src, ref, search, tgt_lang, device, quantize, outputs)
    with user_errors():
        edges = parse_buckets(buckets)
        texts = read_eval_texts(ref, src, (hyps or [None])[0])
    made_with = None
    if not hyps:
        texts.hyps, run_lang, made_with = translate_for_eval(
            checkpoints, src, texts, search, device, quantize
        )
        tgt_lang = tgt_lang or run_lang
        if output is not None:
            write_output(output, "".join(line + "\n" for line in texts.hyps))
    with user_errors():
        report = evaluation_report(
            texts, names, by_length, edges, tgt_lang, lowercase, made_with=made_with
        )
    print_report(report, format_report(report), json_out, is_stdout(output) or is_stdout(json_out))


@opt.with_search_options
def paired(
    hyp: list[Path] | None = typer.Option(
        None, metavar="FILE", help="A system's translations; repeat, the first is the baseline."
    ),
    checkpoint: opt.checkpoints(
        "A system that translates --src; repeat, the first is the baseline.", list[Path] | None
    ) = None,
    src: opt.Src = None,
    ref: opt.Ref = ...,
    paired_method: str = typer.Option(
        "bs",
        metavar="bs|ar",
        help="bs: bootstrap resampling (mean ± 95% CI, p-value); ar: approximate randomisation.",
    ),
    paired_n: int | None = typer.Option(
        None,
        metavar="N",
        min=1,
        max=100_000,
        help="Bootstrap resamples (bs) or randomisation trials (ar) [default: 1000 bs, 10000 ar].",
    ),
    paired_seed: int | None = typer.Option(
        None,
        metavar="SEED",
        min=1,
        help="Seed of the resampling [default: $SACREBLEU_SEED or 12345].",
    ),
    bleu: opt.Bleu = False,
    chrf: opt.Chrf = False,
    ter: opt.Ter = False,
    lowercase: opt.Lowercase = False,
    tgt_lang: opt.TgtLang = None,
    json_out: opt.JsonOut = None,
    device: opt.Device = "auto",
    quantize: opt.Quantize = None,
    search: dict | None = None,
):
    """Compare two or more systems with sacreBLEU's paired significance test against the first
    (as sacrebleu --paired-bs / --paired-ar does; docs/overview.md)."""
    from seq2seq.evaluation import paired as significance
    from seq2seq.evaluation.report import read_eval_texts

    setup_logging()
    names = metric_names(bleu, chrf, ter)
    checkpoints, hyps = list(checkpoint or []), list(hyp or [])
    if paired_method not in significance.PAIRED_TESTS:
        raise UserError(
            f"--paired-method {paired_method}: choose bs (bootstrap) or ar (randomisation)"
        )
    if hyps and checkpoints:
        raise UserError("give --hyp files or -c runs (with --src) as the systems, not both")
    if hyps and src is not None:
        raise UserError(
            f"--src {src}: --hyp systems are scored as they are, nothing is translated; drop --src"
        )
    systems_given, flag = (checkpoints, "-c") if checkpoints else (hyps, "--hyp")
    if len(systems_given) < 2:
        given = f": {flag} is given once" if systems_given else ""
        raise UserError(
            f"paired compares two or more systems{given}; repeat --hyp FILE (or -c RUN with "
            "--src), the first being the baseline"
        )
    for i, x in enumerate(systems_given):
        if str(x) in map(str, systems_given[:i]):
            raise UserError(f"paired: {flag} {x} is given twice; give each system once")
    outputs = [("--json", json_out)]
    device = check_scoring(hyps, checkpoints, src, ref, search, tgt_lang, device, quantize, outputs)
    with user_errors():
        texts = read_eval_texts(ref, src, None)
        systems = significance.read_systems(hyps, texts) if hyps else []
    for c in checkpoints:
        lines, run_lang, made_with = translate_for_eval([c], src, texts, search, device, quantize)
        systems.append(significance.System(str(c), lines, made_with))
        tgt_lang = tgt_lang or run_lang
    with user_errors():
        report = significance.paired_report(
            systems, texts, names, paired_method, paired_n, paired_seed, tgt_lang, lowercase
        )
    print_report(report, significance.format_paired(report), json_out, is_stdout(json_out))


def metric_names(bleu: bool, chrf: bool, ter: bool) -> list[str]:
    """The metrics asked for; BLEU when none is."""
    return [n for n, on in (("bleu", bleu), ("chrf", chrf), ("ter", ter)) if on] or ["bleu"]


def check_scoring(hyps, checkpoints, src, ref, options, tgt_lang, device, quantize, outputs) -> str:
    """The checks of eval and paired before anything is read: decoding options and --quantize only
    to translate, --tgt-lang a language code, no input ``-``, ``outputs`` ((option, path)) neither
    an input, a run's file nor another output, and writable. Returns ``device`` for --quantize."""
    from seq2seq.decoding.quantize import quantize_device

    if hyps and (given := [flag_of(k) for k, v in options.items() if v is not None]):
        raise UserError(
            f"{', '.join(given)}: with --hyp nothing is translated, so decoding options "
            "do not apply; drop them, or translate with --checkpoint and --src"
        )
    if hyps and quantize:
        raise UserError("--quantize: with --hyp nothing is translated; drop it, or use -c")
    with user_errors():
        device = quantize_device(quantize, device)
    if tgt_lang is not None and not re.fullmatch(r"[A-Za-z]{2,3}([-_][A-Za-z0-9]+)*", tgt_lang):
        raise UserError(
            f"--tgt-lang {tgt_lang!r}: give a language code such as en, de, zh or pt-BR (it picks "
            "sacrebleu's tokenizer)"
        )
    for i, r in enumerate(ref):  # sacrebleu would count it as a second reference (nrefs:2)
        if twice := next((r0 for r0 in ref[:i] if same_file(r0, r)), None):
            raise UserError(f"--ref {r}: the same file as --ref {twice}; give each reference once")
    inputs = [("--src", src), *(("--ref", r) for r in ref), *(("--hyp", h) for h in hyps)]
    for option, path in inputs:
        no_stdin(path, option)  # read whole, and once per system
    for i, (option, path) in enumerate(outputs):
        check_not_input(path, option, inputs, checkpoints, outputs=outputs[:i])
    for option, path in outputs:
        check_writable(path, option)  # before translating and scoring
    return device


def print_report(report: dict, text: str, json_out: Path | None, to_stderr: bool) -> None:
    """Warn the report's warnings, print its ``text`` (on stderr when stdout holds another
    output) and write it to ``json_out`` as JSON."""
    for w in report["warnings"]:
        warn(w)
    typer.echo(text, err=to_stderr)
    if json_out is not None:
        write_output(json_out, json.dumps(report, indent=2, ensure_ascii=False))


def translate_for_eval(
    checkpoints, src, texts, options, device, quantize=None
) -> tuple[list[str], str, dict]:
    """The sources of ``texts`` translated as ``translate -i`` would (``files.translate_lines``;
    several checkpoints: an ensemble): the best translations, the run's target language,
    ``Translator.made_with``."""
    from seq2seq.decoding.files import translate_lines
    from seq2seq.decoding.runs import load

    if not checkpoints or src is None:
        raise UserError("give --checkpoint and --src to translate, or --hyp to score a file")
    with user_errors():
        run = load(checkpoints, device, quantize, ctranslate2=False)
        dcfg, sources = run.decode_settings(**options)
    out = translate_lines(run.line_translator(dcfg, source_name=str(src)), texts.sources)
    return [t.text for t in out], run.cfg.data.tgt_lang, run.made_with(dcfg, sources)

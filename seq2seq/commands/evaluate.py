"""``eval``: score translations with sacrebleu, translating the sources first with a checkpoint
(as ``translate`` does; several ``-c`` form an ensemble) or taking a hypothesis file; with
``--paired``, compare several systems with sacreBLEU's paired significance tests."""

from __future__ import annotations

import json
import re
from pathlib import Path

import typer

from seq2seq.commands.common import OPTION_OF_FIELD, UserError, user_errors, warn
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
    quantized_device,
)
from seq2seq.commands.outputs import check_not_input, check_writable
from seq2seq.console import setup_logging


def evaluate(
    checkpoint: list[Path] | None = typer.Option(
        None,
        "--checkpoint",
        "-c",
        metavar="RUN",
        help="Checkpoint file or run directory, to translate --src; not needed with --hyp. "
        + ENSEMBLE_HELP
        + " With --paired, each -c is instead one system to compare, translated on its own.",
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
    hyp: list[Path] | None = typer.Option(
        None,
        "--hyp",
        metavar="FILE",
        help="Score this hypothesis file instead of translating; repeat it with --paired to "
        "compare systems (the first is the baseline).",
    ),
    paired: str | None = typer.Option(
        None,
        "--paired",
        metavar="bs|ar",
        help="Compare two or more systems (--hyp A --hyp B ..., or -c RUN -c RUN ... with --src) "
        "with sacreBLEU's paired test against the first: bs = bootstrap resampling (score, "
        "mean ± 95% CI, p-value), ar = approximate randomisation (score, p-value; the interval "
        "from 1000 bootstrap resamples); for each metric asked (BLEU by default).",
    ),
    paired_n: int | None = typer.Option(
        None,
        "--paired-n",
        metavar="N",
        min=1,
        help="--paired: bootstrap resamples (bs) or randomisation trials (ar) "
        "[default: sacrebleu's, 1000 for bs, 10000 for ar].",
    ),
    paired_seed: int | None = typer.Option(
        None,
        "--paired-seed",
        metavar="SEED",
        min=1,
        help="--paired: the seed of the resampling [default: sacrebleu's, $SACREBLEU_SEED or "
        "12345].",
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
        help="Beam size K for translating --src, 1 to 1000; implies --method beam "
        "[default: the run's decode.beam_size].",
    ),
    method: str | None = METHOD,
    temperature: float | None = TEMPERATURE,
    top_k: int | None = TOP_K,
    top_p: float | None = TOP_P,
    seed: int | None = SEED,
    no_repeat_ngram: int | None = NO_REPEAT_NGRAM,
    length_penalty: float | None = LENGTH_PENALTY,
    min_len: int | None = MIN_LEN,
    max_len_a: float | None = MAX_LEN_A,
    max_len_b: int | None = MAX_LEN_B,
    max_src_len: int | None = MAX_SRC_LEN,
    batch_size: int | None = BATCH_SIZE,
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
        "decode.yaml, the command line); with --paired, each system's scores, intervals and "
        "p-values.",
    ),
    device: str = typer.Option("auto", "--device", metavar="DEVICE", help="auto | cpu | cuda."),
    quantize: str | None = QUANTIZE,
):
    """Score translations with sacrebleu: translate --src with a checkpoint (or take --hyp) and
    compare with --ref. Prints each score with its signature; warns on stderr when a file looks
    subword-tokenised or pre-tokenised. No line is dropped: an empty line is an empty segment.
    Translating shows a progress bar (on a terminal), and a line when the run's decode.yaml
    (seq2seq tune-decode) sets the search. With --paired, compares two or more systems with
    sacreBLEU's paired significance test (as sacrebleu --paired-bs / --paired-ar does).
    """
    from seq2seq.atomic import is_stdout, write_output
    from seq2seq.evaluation.metrics import parse_buckets
    from seq2seq.evaluation.paired import format_paired
    from seq2seq.evaluation.report import evaluation_report, format_report, read_eval_texts

    setup_logging()
    names = [n for n, on in (("bleu", bleu), ("chrf", chrf), ("ter", ter)) if on] or ["bleu"]
    checkpoints, hyps = list(checkpoint or []), list(hyp or [])
    if by_length and src is None:
        raise UserError("--by-length needs --src: buckets are counted in source words")
    if hyps and checkpoints:
        raise UserError("give --hyp (score a file) or --checkpoint (translate --src), not both")
    if hyps and output is not None:
        raise UserError(
            f"--output {output}: with --hyp nothing is translated, so there are no new "
            "hypotheses to write; drop --output (the scores go to stdout, --json for a file)"
        )
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
        "no_repeat_ngram": no_repeat_ngram,
    }
    if hyps and (given := [_flag(k) for k, v in options.items() if v is not None]):
        raise UserError(
            f"{', '.join(given)}: with --hyp nothing is translated, so decoding options "
            "do not apply; drop them, or translate with --checkpoint and --src"
        )
    if hyps and quantize:
        raise UserError("--quantize: with --hyp nothing is translated; drop it, or use -c")
    device = quantized_device(quantize, device)
    _check_paired(paired, paired_n, paired_seed, hyps, checkpoints, by_length, output)
    if tgt_lang is not None and not re.fullmatch(r"[A-Za-z]{2,3}([-_][A-Za-z0-9]+)*", tgt_lang):
        raise UserError(
            f"--tgt-lang {tgt_lang!r}: give a language code such as en, de, zh or pt-BR (it picks "
            "sacrebleu's tokenizer)"
        )
    if is_stdout(output) and is_stdout(json_out):
        raise UserError("--output - and --json - would share standard output; give one a file")
    inputs = [("--src", src), *(("--ref", r) for r in ref), *(("--hyp", h) for h in hyps)]
    check_not_input(output, "--output", inputs, checkpoints)
    check_not_input(json_out, "--json", [*inputs, ("--output", output)], checkpoints)
    check_writable(output, "--output")  # before translating and scoring
    check_writable(json_out, "--json")
    with user_errors():
        edges = parse_buckets(buckets)
        texts = read_eval_texts(ref, src, None if paired else (hyps or [None])[0])
    if paired:
        report = _paired_report(
            texts,
            hyps,
            checkpoints,
            src,
            options,
            device,
            names,
            tgt_lang,
            lowercase,
            (paired, paired_n, paired_seed),
            quantize,
        )
        text = format_paired(report)
    else:
        made_with = None
        if not hyps:
            texts.hyps, run_lang, made_with = _translate_for_eval(
                checkpoints, src, texts, options, device, quantize
            )
            tgt_lang = tgt_lang or run_lang
            if output is not None:
                write_output(output, "".join(line + "\n" for line in texts.hyps))
        with user_errors():
            report = evaluation_report(
                texts, names, by_length, edges, tgt_lang, lowercase, made_with=made_with
            )
        text = format_report(report)
    for w in report["warnings"]:
        warn(w)
    typer.echo(text, err=is_stdout(output) or is_stdout(json_out))
    if json_out is not None:
        write_output(json_out, json.dumps(report, indent=2, ensure_ascii=False))


def _flag(field: str) -> str:
    """A DecodeConfig field's option: ``beam_size`` -> ``--beam``, ``top_k`` -> ``--top-k``."""
    return "--" + OPTION_OF_FIELD.get(field, field).replace("_", "-")


def _check_paired(paired, paired_n, paired_seed, hyps, checkpoints, by_length, output) -> None:
    """--paired needs two or more systems, of one kind; --paired-n and --paired-seed need it; a
    second --hyp needs it.

    Raises:
        UserError: one line saying which option is wrong and what to give instead.
    """
    if paired is None:
        if extra := [o for o, v in (("--paired-n", paired_n), ("--paired-seed", paired_seed)) if v]:
            raise UserError(f"{', '.join(extra)}: only with --paired bs|ar")
        if len(hyps) > 1:
            raise UserError(
                f"--hyp given {len(hyps)} times: several systems are compared with --paired bs "
                "(bootstrap) or --paired ar (randomisation), the first --hyp the baseline"
            )
        return
    from seq2seq.evaluation.paired import PAIRED_TESTS

    if paired not in PAIRED_TESTS:
        raise UserError(f"--paired {paired}: choose bs (bootstrap) or ar (randomisation)")
    systems = hyps or checkpoints
    if len(systems) < 2:
        given = f": {'-c' if checkpoints else '--hyp'} is given once" if systems else ""
        raise UserError(
            f"--paired compares two or more systems{given}; repeat --hyp FILE (or -c RUN with "
            "--src), the first being the baseline"
        )
    if len({str(x) for x in systems}) < len(systems):
        raise UserError("--paired: a system is given twice; give each system once")
    if by_length:
        raise UserError("--by-length with --paired: score one system at a time for buckets")
    if output is not None:
        raise UserError(
            f"--output {output} with --paired: several systems are translated; translate each "
            "with seq2seq translate -o, then compare the files with --hyp"
        )


def _paired_report(
    texts, hyps, checkpoints, src, options, device, names, tgt_lang, lowercase, test, quantize=None
) -> dict:
    """The systems (``--hyp`` files, or ``-c`` runs each translating ``--src`` on its own) and
    ``paired_report`` over them; ``test`` is (--paired, --paired-n, --paired-seed)."""
    from seq2seq.evaluation.paired import System, paired_report, read_systems

    with user_errors():
        systems = read_systems(hyps, texts) if hyps else []
    for c in checkpoints:
        lines, run_lang, made_with = _translate_for_eval([c], src, texts, options, device, quantize)
        systems.append(System(str(c), lines, made_with))
        tgt_lang = tgt_lang or run_lang
    with user_errors():
        return paired_report(systems, texts, names, *test, tgt_lang, lowercase)


def _translate_for_eval(
    checkpoints, src, texts, options, device, quantize=None
) -> tuple[list[str], str, dict]:
    """Translate the sources of ``texts`` with the checkpoint (several: their ensemble, with the
    first's settings) and ``options`` (as for ``decode_cfg``), as ``translate -i`` would (the
    same windows and batches); returns the best translations, the run's target language and how
    they were made (eval --json's checkpoint, ensemble, decode and decode_source; and quantize,
    under --quantize)."""
    from seq2seq.decoding.runs import load

    if not checkpoints or src is None:
        raise UserError("give --checkpoint and --src to translate, or --hyp to score a file")
    options = dict(options)
    with user_errors():
        run = load(checkpoints, device, quantize, ctranslate2=False)
        dcfg, sources = run.decode_settings(options.pop("method"), **options)
    out = run.translate(texts.sources, dcfg, source_name=str(src))
    return [t.text for t in out], run.cfg.data.tgt_lang, run.made_with(dcfg, sources)

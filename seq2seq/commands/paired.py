"""``paired``: compare two or more systems with sacreBLEU's paired significance tests
(``evaluation/paired.py``), the first the baseline; a system is a ``--hyp`` file, or a ``-c`` run
that translates ``--src`` on its own (as ``eval`` does)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from seq2seq.commands.common import UserError, user_errors, warn
from seq2seq.commands.decode_options import (
    BATCH_SIZE,
    BEAM,
    DEVICE,
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
    decode_options,
    quantized_device,
)
from seq2seq.commands.evaluate import (
    BLEU,
    CHRF,
    JSON_OUT,
    LOWERCASE,
    REF,
    SRC,
    TER,
    TGT_LANG,
    check_hyp_options,
    check_tgt_lang,
    metric_names,
    translate_for_eval,
)
from seq2seq.commands.outputs import check_not_input, check_writable
from seq2seq.console import setup_logging


def paired(
    hyp: list[Path] | None = typer.Option(
        None,
        "--hyp",
        metavar="FILE",
        help="A system's translations; repeat, the first is the baseline.",
    ),
    checkpoint: list[Path] | None = typer.Option(
        None,
        "--checkpoint",
        "-c",
        metavar="RUN",
        help="A system that translates --src; repeat, the first is the baseline.",
    ),
    src: Path | None = SRC,
    ref: list[Path] = REF,
    paired_method: str = typer.Option(
        "bs",
        "--paired-method",
        metavar="bs|ar",
        help="bs: bootstrap resampling (mean ± 95% CI, p-value); ar: approximate randomisation.",
    ),
    paired_n: int | None = typer.Option(
        None,
        "--paired-n",
        metavar="N",
        min=1,
        help="Bootstrap resamples (bs) or randomisation trials (ar) [default: 1000 bs, 10000 ar].",
    ),
    paired_seed: int | None = typer.Option(
        None,
        "--paired-seed",
        metavar="SEED",
        min=1,
        help="Seed of the resampling [default: $SACREBLEU_SEED or 12345].",
    ),
    bleu: bool = BLEU,
    chrf: bool = CHRF,
    ter: bool = TER,
    lowercase: bool = LOWERCASE,
    beam: int | None = BEAM,
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
    tgt_lang: str | None = TGT_LANG,
    json_out: Path | None = JSON_OUT,
    device: str = DEVICE,
    quantize: str | None = QUANTIZE,
):
    """Compare two or more systems with sacreBLEU's paired significance test against the first
    (as sacrebleu --paired-bs / --paired-ar does; docs/overview.md)."""
    from seq2seq.atomic import is_stdout, write_output
    from seq2seq.evaluation.paired import (
        PAIRED_TESTS,
        System,
        format_paired,
        paired_report,
        read_systems,
    )
    from seq2seq.evaluation.report import read_eval_texts

    setup_logging()
    names = metric_names(bleu, chrf, ter)
    checkpoints, hyps = list(checkpoint or []), list(hyp or [])
    options = decode_options(locals())
    if paired_method not in PAIRED_TESTS:
        raise UserError(
            f"--paired-method {paired_method}: choose bs (bootstrap) or ar (randomisation)"
        )
    if hyps and checkpoints:
        raise UserError("give --hyp files or -c runs (with --src) as the systems, not both")
    systems_given = hyps or checkpoints
    if len(systems_given) < 2:
        given = f": {'-c' if checkpoints else '--hyp'} is given once" if systems_given else ""
        raise UserError(
            f"paired compares two or more systems{given}; repeat --hyp FILE (or -c RUN with "
            "--src), the first being the baseline"
        )
    seen: set[str] = set()
    for x in systems_given:
        if str(x) in seen:
            option = "-c" if checkpoints else "--hyp"
            raise UserError(f"paired: {option} {x} is given twice; give each system once")
        seen.add(str(x))
    check_hyp_options(hyps, options, quantize)
    device = quantized_device(quantize, device)
    check_tgt_lang(tgt_lang)
    inputs = [("--src", src), *(("--ref", r) for r in ref), *(("--hyp", h) for h in hyps)]
    check_not_input(json_out, "--json", inputs, checkpoints)
    check_writable(json_out, "--json")
    with user_errors():
        texts = read_eval_texts(ref, src, None)
        systems = read_systems(hyps, texts) if hyps else []
    for c in checkpoints:
        lines, run_lang, made_with = translate_for_eval([c], src, texts, options, device, quantize)
        systems.append(System(str(c), lines, made_with))
        tgt_lang = tgt_lang or run_lang
    with user_errors():
        report = paired_report(
            systems, texts, names, paired_method, paired_n, paired_seed, tgt_lang, lowercase
        )
    for w in report["warnings"]:
        warn(w)
    typer.echo(format_paired(report), err=is_stdout(json_out))
    if json_out is not None:
        write_output(json_out, json.dumps(report, indent=2, ensure_ascii=False))

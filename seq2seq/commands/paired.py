"""``paired``: compare two or more systems with sacreBLEU's paired significance tests
(``evaluation/paired.py``), the first the baseline; a system is a ``--hyp`` file, or a ``-c`` run
that translates ``--src`` on its own (as ``eval`` does)."""

from __future__ import annotations

from pathlib import Path

import typer

from seq2seq.commands import decode_options as opt
from seq2seq.commands import evaluate
from seq2seq.commands.common import UserError, user_errors
from seq2seq.commands.decode_options import decode_options
from seq2seq.console import setup_logging


def paired(
    hyp: list[Path] | None = typer.Option(
        None, metavar="FILE", help="A system's translations; repeat, the first is the baseline."
    ),
    checkpoint: list[Path] | None = typer.Option(
        None,
        "--checkpoint",
        "-c",
        metavar="RUN",
        help="A system that translates --src; repeat, the first is the baseline.",
    ),
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
    beam: opt.Beam = None,
    method: opt.Method = None,
    temperature: opt.Temperature = None,
    top_k: opt.TopK = None,
    top_p: opt.TopP = None,
    seed: opt.Seed = None,
    no_repeat_ngram: opt.NoRepeatNgram = None,
    length_penalty: opt.LengthPenalty = None,
    min_len: opt.MinLen = None,
    max_len_a: opt.MaxLenA = None,
    max_len_b: opt.MaxLenB = None,
    max_src_len: opt.MaxSrcLen = None,
    batch_size: opt.BatchSize = None,
    tgt_lang: opt.TgtLang = None,
    json_out: opt.JsonOut = None,
    device: opt.Device = "auto",
    quantize: opt.Quantize = None,
):
    """Compare two or more systems with sacreBLEU's paired significance test against the first
    (as sacrebleu --paired-bs / --paired-ar does; docs/overview.md)."""
    from seq2seq.atomic import is_stdout
    from seq2seq.evaluation.paired import (
        PAIRED_TESTS,
        System,
        format_paired,
        paired_report,
        read_systems,
    )
    from seq2seq.evaluation.report import read_eval_texts

    setup_logging()
    names = evaluate.metric_names(bleu, chrf, ter)
    checkpoints, hyps = list(checkpoint or []), list(hyp or [])
    options = decode_options(locals())
    if paired_method not in PAIRED_TESTS:
        raise UserError(
            f"--paired-method {paired_method}: choose bs (bootstrap) or ar (randomisation)"
        )
    if hyps and checkpoints:
        raise UserError("give --hyp files or -c runs (with --src) as the systems, not both")
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
    device = evaluate.check_scoring(
        hyps, checkpoints, src, ref, options, tgt_lang, device, quantize, outputs
    )
    with user_errors():
        texts = read_eval_texts(ref, src, None)
        systems = read_systems(hyps, texts) if hyps else []
    for c in checkpoints:
        lines, run_lang, made_with = evaluate.translate_for_eval(
            [c], src, texts, options, device, quantize
        )
        systems.append(System(str(c), lines, made_with))
        tgt_lang = tgt_lang or run_lang
    with user_errors():
        report = paired_report(
            systems, texts, names, paired_method, paired_n, paired_seed, tgt_lang, lowercase
        )
    evaluate.print_report(report, format_paired(report), json_out, is_stdout(json_out))

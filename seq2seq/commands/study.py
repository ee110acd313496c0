"""``compare`` and ``synth``: the study commands."""

from __future__ import annotations

from pathlib import Path

import typer

from seq2seq.atomic import check_writable
from seq2seq.commands.common import no_stdout, typed_options, user_errors
from seq2seq.console import counted, setup_logging


def compare(
    ctx: typer.Context,
    configs: list[Path] = typer.Argument(
        ..., metavar="CONFIG", help="YAML configs, one per model (each with its own name)."
    ),
    out: Path = typer.Option(
        ..., metavar="DIR", help="Output folder: runs, report.md, results.json, plots."
    ),
    single_steps: int | None = typer.Option(
        None,
        min=1,
        metavar="N",
        help="Real text: updates of the single-pair stage, for every model.",
    ),
    joined_steps: int | None = typer.Option(
        None,
        min=1,
        metavar="N",
        help="Real text: updates of the stage on single plus joined pairs.",
    ),
    budget_minutes: float | None = typer.Option(
        None,
        min=0.01,
        metavar="MIN",
        help="Synthetic tasks: minutes to train each model [default: its own].",
    ),
    budget_steps: int | None = typer.Option(
        None,
        min=1,
        metavar="N",
        help="Synthetic tasks: updates to train each model [default: its own].",
    ),
    budget_tokens: int | None = typer.Option(
        None,
        min=1,
        metavar="N",
        help="Synthetic tasks: target tokens to train each model on [default: its own].",
    ),
    beams: str = typer.Option(
        "1,5", metavar="K,K,...", help="Synthetic tasks: beam sizes to decode with; 1 = greedy."
    ),
    concat_k: int = typer.Option(
        4, min=1, metavar="K", help="Long inputs: test lines joined k = 1..K at a time."
    ),
    concat_n: int | None = typer.Option(
        None, min=1, metavar="N", help="Join only the first N test lines for k >= 2 [default: all]."
    ),
    buckets: str = typer.Option(
        "10,20,30,40,50,60", metavar="N,N,...", help="Source-length bucket upper bounds, in words."
    ),
    attention_n: int = typer.Option(
        3, min=0, metavar="N", help="Synthetic tasks: lines whose attention maps are drawn."
    ),
    exact_match: bool = typer.Option(
        False, "--exact-match", help="Also report exact-match accuracy against length (synthetic)."
    ),
    alignment: str | None = typer.Option(
        None,
        metavar="TASK",
        help="reverse | copy: add that task's alignment and plateau checks (and --exact-match).",
    ),
    alphas: str = typer.Option(
        "0.6,0.8,1.0,1.2,1.4",
        metavar="A,A,...",
        help="Real text: beam 5's length penalties to try.",
    ),
    n_bootstrap: int = typer.Option(
        1000,
        "--bootstrap",
        min=2,
        metavar="N",
        help="Real text: bootstrap resamples of every interval.",
    ),
    reference: str | None = typer.Option(
        None,
        metavar="NAME",
        help="Real text: the ablation the others are compared with [default: rnnencdec].",
    ),
    headline: str | None = typer.Option(
        None,
        metavar="NAME",
        help="Real text: the attention config paired with the ablation [default: bahdanau].",
    ),
    seeds: str | None = typer.Option(
        None,
        metavar="S,S,...",
        help="Real text: train the headline pair again with these seeds, e.g. 1,2,3.",
    ),
    negative_seeds: str | None = typer.Option(
        None,
        metavar="S,S,...",
        help="Real text: train the negative controls (the fixed-vector rnn and mean-pool) with "
        "these seeds, e.g. 4,5,6.",
    ),
    tests: list[str] | None = typer.Option(
        None,
        "--test",
        metavar="PREFIX",
        help="Real text: a test set, PREFIX.<lang>; repeat for more [default: data.test].",
    ),
    score_only: bool = typer.Option(
        False, "--score-only", help="Real text: never train; score the finished runs in OUT/runs."
    ),
    overwrite: bool = typer.Option(
        False,
        "--overwrite",
        help="Train afresh a run whose OUT/runs/<name> holds another (config, tokenizer, data).",
    ),
    only: str | None = typer.Option(
        None,
        metavar="NAMES",
        help="Real text: train and score only these runs, in this order (config or seed-copy "
        "names, comma-separated, e.g. study-rnn-seed7); the report then covers those runs only.",
    ),
    jobs: int = typer.Option(
        1,
        min=1,
        metavar="N",
        help="Configs trained at a time, each in a process of one torch thread.",
    ),
    device: str = typer.Option(
        "auto",
        metavar="DEVICE",
        help="auto | cpu | cuda, for training and decoding (overrides train.device).",
    ),
):
    """The bottleneck-versus-attention study: real text (--single-steps, --joined-steps) or a
    synthetic task (--exact-match, --alignment); what it trains, decodes and writes into OUT:
    docs/overview.md."""
    from seq2seq.config.lists import parse_list
    from seq2seq.evaluation.metrics import parse_buckets
    from seq2seq.runtime import inference_device
    from seq2seq.study.compare import compare as run_compare
    from seq2seq.study.plan import Budget, StudyOptions, multi30k_plan
    from seq2seq.study.reverse import TASKS

    setup_logging()
    no_stdout(out, "--out", "the study's folder")
    check_writable(out, "--out", folder=True)  # before any model trains
    with user_errors():
        budget = Budget(budget_minutes, budget_steps, budget_tokens)
        beam_sizes = parse_list(beams, "--beams", "give beam sizes such as 1,5", int, 1)
        edges = parse_buckets(buckets)
        if alignment is not None and alignment not in TASKS:
            raise ValueError(f"--alignment {alignment!r}: choose {' or '.join(TASKS)}")
        exact = exact_match or alignment is not None
        plan = multi30k_plan(
            budget,
            exact,
            single_steps=single_steps,
            joined_steps=joined_steps,
            concat_k=concat_k,
            alphas=alphas,
            seeds=seeds,
            negative_seeds=negative_seeds,
            tests=tests,
            score_only=score_only,
            only=only,
            on_command_line=typed_options(ctx),
            n_bootstrap=n_bootstrap,
            reference=reference,
            headline=headline,
        )
    dev = str(inference_device(device))
    opts = StudyOptions(
        beam_sizes, concat_k, concat_n, edges, attention_n, exact, dev, alignment, jobs, overwrite
    )
    results = run_compare(configs, out, budget, opts, plan)
    typer.echo(f"wrote {out / 'report.md'} ({counted(len(results['models']), 'model')})")
    for key in ("rho", "bleu", "exact", "plateau"):
        if key in results["findings"]:
            typer.echo(results["findings"][key])


def synth(
    task: str = typer.Option(..., metavar="TASK", help="copy | reverse | sort."),
    n: int = typer.Option(20000, help="Training pairs (val and test get n/10 each, at least 100)."),
    min_len: int = typer.Option(1, help="Shortest sequence, in symbols."),
    max_len: int = typer.Option(60, help="Longest sequence, in symbols."),
    vocab: int = typer.Option(20, help="Number of distinct symbols."),
    out: Path = typer.Option(..., metavar="DIR", help="Output folder: {train,val,test}.{src,tgt}."),
    seed: int = typer.Option(1, min=0, max=2**32 - 1, metavar="S", help="Random seed."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace the corpus files already in --out."
    ),
):
    """Write a synthetic parallel corpus (train with data.src_lang: src, data.tgt_lang: tgt)."""
    from seq2seq.study.synth import write_corpus

    no_stdout(out, "--out", "a corpus folder")
    check_writable(out, "--out", folder=True)
    with user_errors():
        sizes = write_corpus(task, n, min_len, max_len, vocab, out, seed, overwrite)
    typer.echo(f"wrote {task} corpus to {out}: " + ", ".join(f"{k} {v}" for k, v in sizes.items()))

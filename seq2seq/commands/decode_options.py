"""What ``translate`` and ``eval`` share: their search options (``--method``, ``--temperature``,
``--top-k``, ``--top-p``, ``--seed``, ``--no-repeat-ngram``, ``--length-penalty``, ``--min-len``,
``--max-len-a``/``-b``, ``--max-src-len``, ``--batch-size``; see ``DecodeConfig``) and
``decode_cfg``, which applies the options given to the run's decode settings."""

from __future__ import annotations

from typing import get_args

import typer

from seq2seq.commands.common import user_errors
from seq2seq.config import SearchMethod

# The search options of translate and eval (see DecodeConfig); None = the run's setting.
METHOD = typer.Option(
    None,
    "--method",
    metavar="METHOD",
    help=f"Search: {' | '.join(get_args(SearchMethod))}. A method other than the run's "
    "starts from its own defaults, e.g. --method sample ignores the run's beam size "
    "[default: beam with --beam, else the run's decode.method].",
)
TEMPERATURE = typer.Option(
    None,
    "--temperature",
    help="sample: draw from softmax(logits / T), T > 0; below 1 sharper, above 1 flatter "
    "[default: the run's decode.temperature, 1].",
)
TOP_K = typer.Option(
    None,
    "--top-k",
    help="sample: draw only among the K most probable tokens, K >= 1 "
    "[default: the run's decode.top_k, all tokens].",
)
TOP_P = typer.Option(
    None,
    "--top-p",
    help="sample: draw only among the fewest most probable tokens holding probability P, "
    "0 < P <= 1 (nucleus sampling) [default: the run's decode.top_p, 1 = all tokens].",
)
SEED = typer.Option(
    None,
    "--seed",
    help="sample: seed of the draws; the same input, seed and batching give the same output "
    "[default: the run's decode.seed, none = new draws every time].",
)

NO_REPEAT_NGRAM = typer.Option(
    None,
    "--no-repeat-ngram",
    metavar="N",
    help="Never repeat an n-gram of N tokens within an output: a token that would complete one "
    "already there gets -inf (fairseq's --no-repeat-ngram-size), in every method; 0 = off "
    "[default: the run's decode.no_repeat_ngram, 0].",
)

BATCH_SIZE = typer.Option(
    None, "--batch-size", help="Sentences per batch [default: the run's decode.batch_size]."
)
MAX_LEN_A = typer.Option(
    None,
    "--max-len-a",
    help="Output length limit a*src_len+b: a [default: the run's decode.max_len_a].",
)
MAX_LEN_B = typer.Option(
    None,
    "--max-len-b",
    help="Output length limit a*src_len+b: b [default: the run's decode.max_len_b].",
)
MIN_LEN = typer.Option(
    None, "--min-len", help="Tokens required before EOS [default: the run's decode.min_len]."
)
LENGTH_PENALTY = typer.Option(
    None,
    "--length-penalty",
    help="Beam search: GNMT alpha, rank by log P / ((5 + |Y|) / 6)^alpha; 0 = raw log-prob, "
    "which favours short outputs [default: the run's decode.length_penalty; 1.0 for runs "
    "configured since it became the default].",
)
MAX_SRC_LEN = typer.Option(
    None,
    "--max-src-len",
    help="Cut longer sources to this many tokens, with a warning "
    "[default: the run's decode.max_src_len].",
)


def decode_cfg(base, method=None, **options):
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


def given_options(options: dict) -> set[str]:
    """The DecodeConfig fields the command line set (``options``: None = not given); --beam sets
    the method too."""
    given = {k for k, v in options.items() if v is not None}
    return given | ({"method"} if "beam_size" in given else set())

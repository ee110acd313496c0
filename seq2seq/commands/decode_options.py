"""What ``translate`` and ``eval`` share: their search options (``--method``, ``--temperature``,
``--top-k``, ``--top-p``, ``--seed``, ``--no-repeat-ngram``, ``--length-penalty``, ``--min-len``,
``--max-len-a``/``-b``, ``--max-src-len``, ``--batch-size``; see ``DecodeConfig``, applied by
``decoding.runs.Translator.decode_settings``), the repeated ``-c`` of an ensemble, and
``--quantize`` (also ``serve``'s)."""

from __future__ import annotations

from typing import get_args

import typer

from seq2seq.commands.common import user_errors
from seq2seq.config import SearchMethod

# The help text of a repeated -c, shared by translate and eval (``decoding.runs.load``).
ENSEMBLE_HELP = (
    "Repeat -c for an ensemble: at every step the models' next-token probabilities are "
    "averaged (the log of the mean probability, as fairseq does; not the mean log-probability). "
    "Families may be mixed; the models must share one tokenizer, and decode with the first "
    "run's settings (its decode.yaml included)."
)
QUANTIZE = typer.Option(
    None,
    "--quantize",
    metavar="int8",
    help="Decode with int8 weights (dynamic int8 quantization of the Linear, LSTM and GRU "
    "layers, torch's quantize_dynamic): CPU only, so --device auto means cpu and cuda is "
    "refused. Output may differ slightly from float decoding. It pays for the RNN families "
    "(2-3x on a CPU with VNNI) and little for the Transformer (0.9-1.1x; export it to "
    "CTranslate2 with --quantize int8 instead).",
)

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


def quantized_device(quantize: str | None, device: str | None) -> str | None:
    """``--device`` under ``--quantize``: cpu for auto (or none given), checked before anything
    is read; unchanged without it.

    Raises:
        UserError: an unknown mode, or --device cuda with it (one line).
    """
    from seq2seq.decoding.quantize import quantize_device

    with user_errors():
        return quantize_device(quantize, device or "auto") if quantize else device

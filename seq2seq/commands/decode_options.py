"""What ``translate``, ``eval`` and ``paired`` share: their search options (see ``DecodeConfig``,
applied by ``decoding.runs.Translator.decode_settings``; docs/overview.md has the detail), the
repeated ``-c`` of an ensemble, and ``--quantize`` (also ``serve``'s)."""

from __future__ import annotations

from typing import Any, get_args

import typer

from seq2seq.commands.common import OPTION_OF_FIELD, user_errors
from seq2seq.config import DecodeConfig, SearchMethod

# The help text of a repeated -c, shared by translate and eval (``decoding.runs.load``).
ENSEMBLE_HELP = (
    "Repeat -c for an ensemble (the models' probabilities averaged at every step; one tokenizer, "
    "the first run's decode settings)."
)
QUANTIZE = typer.Option(
    None,
    "--quantize",
    metavar="int8",
    help="Decode with int8 weights (torch dynamic quantization): CPU only, output may differ "
    "slightly.",
)
CHECKPOINTS = typer.Option(
    None, "--checkpoint", "-c", metavar="RUN", help="Checkpoint file or run directory."
)
DEVICE = typer.Option("auto", "--device", metavar="DEVICE", help="auto | cpu | cuda.")

# The search options (DecodeConfig fields; --beam is beam_size); None = the run's setting.
BEAM = typer.Option(
    None, "--beam", help="Beam size K, 1 to 1000; implies --method beam [default: the run's]."
)
METHOD = typer.Option(
    None,
    "--method",
    metavar="METHOD",
    help=f"Search: {' | '.join(get_args(SearchMethod))} [default: beam with --beam, else the "
    "run's decode.method].",
)
TEMPERATURE = typer.Option(
    None, "--temperature", help="sample: softmax(logits / T), T > 0 [default: the run's, 1]."
)
TOP_K = typer.Option(
    None, "--top-k", help="sample: only the K most probable tokens [default: the run's, all]."
)
TOP_P = typer.Option(
    None, "--top-p", help="sample: nucleus, 0 < P <= 1 [default: the run's, 1 = all tokens]."
)
SEED = typer.Option(
    None, "--seed", help="sample: seed of the draws [default: the run's, none = new draws]."
)
NO_REPEAT_NGRAM = typer.Option(
    None,
    "--no-repeat-ngram",
    metavar="N",
    help="Never repeat an n-gram of N tokens in an output; 0 = off [default: the run's, 0].",
)
BATCH_SIZE = typer.Option(
    None, "--batch-size", help="Sentences per batch [default: the run's decode.batch_size]."
)
MAX_LEN_A = typer.Option(
    None, "--max-len-a", help="Output length limit a*src_len+b: a [default: the run's]."
)
MAX_LEN_B = typer.Option(
    None, "--max-len-b", help="Output length limit a*src_len+b: b [default: the run's]."
)
MIN_LEN = typer.Option(
    None, "--min-len", help="Tokens required before EOS [default: the run's decode.min_len]."
)
LENGTH_PENALTY = typer.Option(
    None,
    "--length-penalty",
    help="Beam search: GNMT alpha, log P / ((5 + |Y|) / 6)^alpha; 0 = raw log-prob; "
    "refused under greedy and sample, which rank nothing [default: the run's].",
)
MAX_SRC_LEN = typer.Option(
    None, "--max-src-len", help="Cut longer sources to this many tokens, with a warning."
)


def decode_options(values: dict[str, Any]) -> dict[str, Any]:
    """The search options among a command's parameters ``values`` (its ``locals()``), as
    DecodeConfig fields (``beam`` -> ``beam_size``); None = not given."""
    option = {field: OPTION_OF_FIELD.get(field, field) for field in DecodeConfig.model_fields}
    return {f: values[o] for f, o in option.items() if o in values}


def decode_flag(field: str) -> str:
    """A DecodeConfig field's option: ``beam_size`` -> ``--beam``, ``top_k`` -> ``--top-k``."""
    return "--" + OPTION_OF_FIELD.get(field, field).replace("_", "-")


def quantized_device(quantize: str | None, device: str | None) -> str | None:
    """``--device`` under ``--quantize``: cpu for auto (or none given), checked before anything
    is read; unchanged without it.

    Raises:
        UserError: an unknown mode, or --device cuda with it (one line).
    """
    from seq2seq.decoding.quantize import quantize_device

    with user_errors():
        return quantize_device(quantize, device or "auto") if quantize else device

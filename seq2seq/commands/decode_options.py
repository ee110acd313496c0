"""The options several commands share, each defined once as an ``Annotated`` type: the search
options of ``translate``, ``eval`` and ``paired`` (``DecodeConfig`` fields, None = the run's
setting; applied by ``decoding.runs.Translator.decode_settings``), ``--device``, ``--quantize``
(also ``serve``'s) and the scoring options of ``eval`` and ``paired``. docs/overview.md has the
detail."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, get_args

import typer

from seq2seq.commands.common import OPTION_OF_FIELD, user_errors
from seq2seq.config import DecodeConfig, SearchMethod

# The help text of a repeated -c, shared by translate and eval (``decoding.runs.load``).
ENSEMBLE_HELP = "Repeat -c for an ensemble."


def option(kind: Any, *flags: str, **settings: Any) -> Any:
    """``Annotated[kind, typer.Option(*flags, **settings)]``: an option's type, shared."""
    return Annotated[kind, typer.Option(*flags, **settings)]


Device = option(str, "--device", metavar="DEVICE", help="auto | cpu | cuda.")
Quantize = option(
    str | None,
    "--quantize",
    metavar="int8",
    help="Decode with int8 weights (torch dynamic quantization; CPU only).",
)

# The search options (DecodeConfig fields; --beam is beam_size); None: the run's setting.
Beam = option(
    int | None, "--beam", help="Beam size K, 1 to 1000; implies --method beam [default: the run's]."
)
Method = option(
    str | None,
    "--method",
    metavar="METHOD",
    help=f"Search: {' | '.join(get_args(SearchMethod))} [default: beam with --beam, else the "
    "run's decode.method].",
)
Temperature = option(
    float | None,
    "--temperature",
    help="sample: softmax(logits / T), T > 0 [default: the run's, 1].",
)
TopK = option(
    int | None, "--top-k", help="sample: only the K most probable tokens [default: the run's, all]."
)
TopP = option(
    float | None,
    "--top-p",
    help="sample: nucleus, 0 < P <= 1 [default: the run's, 1 = all tokens].",
)
Seed = option(
    int | None, "--seed", help="sample: seed of the draws [default: the run's, none = new draws]."
)
NoRepeatNgram = option(
    int | None,
    "--no-repeat-ngram",
    metavar="N",
    help="Never repeat an n-gram of N tokens in an output; 0 = off [default: the run's, 0].",
)
BatchSize = option(
    int | None, "--batch-size", help="Sentences per batch [default: the run's decode.batch_size]."
)
MaxLenA = option(
    float | None, "--max-len-a", help="Output length limit a*src_len+b: a [default: the run's]."
)
MaxLenB = option(
    int | None, "--max-len-b", help="Output length limit a*src_len+b: b [default: the run's]."
)
MinLen = option(
    int | None, "--min-len", help="Tokens required before EOS [default: the run's decode.min_len]."
)
LengthPenalty = option(
    float | None,
    "--length-penalty",
    help="Beam search: GNMT alpha, log P / ((5 + |Y|) / 6)^alpha [default: the run's].",
)
MaxSrcLen = option(
    int | None, "--max-src-len", help="Cut longer sources to this many tokens, with a warning."
)

# The scoring options of eval and paired.
Src = option(Path | None, "--src", metavar="FILE", help="Source file (plain or .gz) to translate.")
Ref = option(list[Path], "--ref", metavar="FILE", help="Reference file; repeat for several.")
Bleu = option(bool, "--bleu", help="Corpus BLEU (sacrebleu; the default metric).")
Chrf = option(bool, "--chrf", help="chrF (sacrebleu).")
Ter = option(bool, "--ter", help="TER (sacrebleu).")
Lowercase = option(
    bool, "--lowercase", "-lc", help="Case-insensitive BLEU and chrF (TER always ignores case)."
)
TgtLang = option(
    str | None,
    "--tgt-lang",
    metavar="LANG",
    help="Target language; picks sacrebleu's BLEU tokenizer [default: the run's data.tgt_lang].",
)
JsonOut = option(
    Path | None,
    "--json",
    metavar="FILE",
    help="Also write the report as JSON (- for stdout; the scores then go to stderr).",
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

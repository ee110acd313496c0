"""The options several commands share, each defined once as an ``Annotated`` type: ``-c``, the
search options of ``translate``, ``eval`` and ``paired`` (``with_search_options``), ``--device``,
``--quantize`` and the scoring options of ``eval`` and ``paired``."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, get_args

import typer

from seq2seq.commands.common import OPTION_OF_FIELD
from seq2seq.config import SearchMethod

ENSEMBLE_HELP = "Repeat -c for an ensemble."


def option(kind: Any, *flags: str, **settings: Any) -> Any:
    """``Annotated[kind, typer.Option(*flags, **settings)]``: an option's type, shared."""
    return Annotated[kind, typer.Option(*flags, **settings)]


def checkpoints(help: str, kind: Any = list[Path]) -> Any:
    """The ``-c RUN`` option (repeatable: click keeps a list) with its ``help``."""
    return option(kind, "--checkpoint", "-c", metavar="RUN", help=help)


Device = option(str, "--device", metavar="DEVICE", help="auto | cpu | cuda.")
Quantize = option(
    str | None,
    "--quantize",
    metavar="int8",
    help="Decode with int8 weights (torch dynamic quantization; CPU only).",
)

# The search options by parameter name, in --help's order: DecodeConfig fields (--beam is
# beam_size), their type and help; None = the run's setting.
_SEARCH_HELP = {
    "beam": (
        int,
        "Beam size K, 1 to 1000; implies --method beam (greedy for K = 1) [default: the run's; "
        "5 for --method beam on a run that searches without a beam].",
    ),
    "method": (
        str,
        f"Search: {' | '.join(get_args(SearchMethod))} [default: beam with --beam K > 1, greedy "
        "with --beam 1, else the run's decode.method].",
    ),
    "temperature": (float, "sample: softmax(logits / T), T > 0 [default: the run's, 1]."),
    "top_k": (int, "sample: only the K most probable tokens [default: the run's, all]."),
    "top_p": (float, "sample: nucleus, 0 < P <= 1 [default: the run's, 1 = all tokens]."),
    "seed": (int, "sample: seed of the draws [default: the run's, none = new draws]."),
    "no_repeat_ngram": (
        int,
        "Never repeat an n-gram of N tokens in an output; 0 = off [default: the run's, 0].",
    ),
    "length_penalty": (
        float,
        "Beam search: GNMT alpha, log P / ((5 + |Y|) / 6)^alpha [default: the run's].",
    ),
    "min_len": (int, "Tokens required before EOS [default: the run's decode.min_len]."),
    "max_len_a": (float, "Output length limit a*src_len+b: a [default: the run's]."),
    "max_len_b": (int, "Output length limit a*src_len+b: b [default: the run's]."),
    "max_src_len": (int, "Cut longer sources to this many tokens, with a warning."),
    "batch_size": (int, "Sentences per batch [default: the run's decode.batch_size]."),
}
METAVARS = {"method": "METHOD", "no_repeat_ngram": "N"}
SEARCH = {
    name: option(kind | None, metavar=METAVARS.get(name), help=text)
    for name, (kind, text) in _SEARCH_HELP.items()
}
BatchSize = SEARCH["batch_size"]  # tune-decode's too

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


FIELD_OF_OPTION = {o: f for f, o in OPTION_OF_FIELD.items()}


def with_search_options(command: Callable) -> Callable:
    """``command`` with the ``SEARCH`` options added to its signature before ``--device``; it gets
    them as one keyword ``search``: DecodeConfig field -> value (None = not given)."""
    sig = inspect.signature(command, eval_str=True)
    params = [p for p in sig.parameters.values() if p.name != "search"]
    at = next(i for i, p in enumerate(params) if p.name == "device")
    kw = inspect.Parameter.KEYWORD_ONLY
    added = [inspect.Parameter(n, kw, default=None, annotation=t) for n, t in SEARCH.items()]
    params = [p.replace(kind=kw) for p in params[:at] + added + params[at:]]

    @functools.wraps(command)
    def run(**values: Any) -> Any:
        search = {FIELD_OF_OPTION.get(n, n): values.pop(n) for n in SEARCH}
        return command(search=search, **values)

    run.__signature__ = sig.replace(parameters=params)
    return run

"""The ``decode`` section: the search methods (``SearchMethod``), the settings each reads
(``SEARCH_SETTINGS``) and ``DecodeConfig``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

from pydantic import Field, ValidationInfo, field_validator, model_validator

from seq2seq.config.sections import _Section

BEAM_LIMIT = 1000  # a beam wider than this only exhausts memory (decoding batches shrink to fit it)
BIG = 1_000_000  # the bound of every other count and length: past it, torch overflows

SearchMethod = Literal["greedy", "beam", "sample"]
"""The names of ``decoding.search.SEARCHES`` (a test checks that the two agree)."""

SEARCH_SETTINGS: dict[str, tuple[str, ...]] = {
    "greedy": (),
    "beam": ("beam_size",),
    "sample": ("temperature", "top_k", "top_p", "seed"),
}
"""The ``DecodeConfig`` fields each method reads besides the shared ones; under any other method
they must keep their defaults."""


class DecodeConfig(_Section):
    """Search settings of validation BLEU, ``translate``, ``eval``, ``tune-decode`` and ``serve``.

    ``method``: ``greedy``, ``beam`` (``beam_size`` K; K = 1 gives greedy's output) or ``sample``
    (ancestral sampling). Another method's setting is an error; a config without ``method`` (older)
    chooses by ``beam_size``: greedy for 1, beam for more. ``length_penalty`` is GNMT's alpha (Wu
    et al. 2016 eq. 14, beam only); its default 1.0 because every family's best alpha on Multi30k
    validation was at least 1 (docs/results/best/README.md) and at 0 beam scores below greedy.
    ``min_len`` 1 (as fairseq and Joey NMT): an undertrained beam otherwise often prefers EOS at
    once. A source over ``max_src_len`` tokens (or a Transformer's ``max_positions``, output
    included) is cut, with a warning. ``no_repeat_ngram`` N > 0 is fairseq's
    ``--no-repeat-ngram-size``. ``target_vocab_mask`` keeps every method to the pieces seen in the
    training targets, and EOS (``checkpoint.unpack_target_vocab``; without renormalising): on
    Multi30k validation greedy and beam 5 never left them, while sampling drew about 860 of 16,100
    pieces from outside and gained 2.0-2.6 BLEU with the mask (three seeds).
    """

    method: SearchMethod = Field("greedy", description=" | ".join(get_args(SearchMethod)))
    beam_size: int = Field(
        1, ge=1, le=BEAM_LIMIT, description="beam: hypotheses kept per sentence (K)"
    )
    temperature: float = Field(
        1.0, gt=0, description="sample: logits / temperature; below 1 sharper, above 1 flatter"
    )
    top_k: int | None = Field(
        None, ge=1, le=BIG, description="sample: draw from the k most probable"
    )
    top_p: float = Field(
        1.0, gt=0, le=1, description="sample: draw from the smallest set holding p (nucleus)"
    )
    seed: int | None = Field(
        None, ge=0, le=2**32 - 1, description="sample: repeat the draws (default: fresh ones)"
    )
    length_penalty: float = Field(
        1.0, ge=0, description="beam: GNMT alpha; 0 = raw log-probability"
    )
    max_len_a: float = Field(1.5, ge=0, le=BIG)
    max_len_b: int = Field(10, ge=1, le=BIG)
    min_len: int = Field(
        1, ge=0, le=BIG, description="tokens required before EOS (0 allows empty output)"
    )
    no_repeat_ngram: int = Field(
        0,
        ge=0,
        le=BIG,
        description="N > 0: never repeat an n-gram of N tokens in an output (0 = off)",
    )
    target_vocab_mask: bool = Field(
        True, description="output only pieces seen in the training targets (and EOS)"
    )
    max_src_len: int = Field(
        1024, ge=1, le=BIG, description="longer sources are cut, with a warning"
    )
    batch_size: int = Field(128, ge=1, le=BIG, description="sentences per decoding batch")

    @model_validator(mode="before")
    @classmethod
    def _method_from_beam_size(cls, data: Any) -> Any:
        """Configs and checkpoints from before ``method``: beam_size 1 is greedy, more is beam."""
        if isinstance(data, dict) and "method" not in data:
            data = {**data, "method": "greedy" if data.get("beam_size", 1) == 1 else "beam"}
        return data

    @field_validator(*(f for fields in SEARCH_SETTINGS.values() for f in fields))
    @classmethod
    def _used_by_the_method(cls, value: Any, info: ValidationInfo) -> Any:
        method = info.data.get("method")  # absent when the method itself was invalid
        owner = next(m for m, fields in SEARCH_SETTINGS.items() if info.field_name in fields)
        default = cls.model_fields[info.field_name].default
        if method is not None and method != owner and value != default:
            raise ValueError(f"{value} is a setting of method {owner}, but method is {method}")
        return value

    def model_copy(
        self, *, update: Mapping[str, Any] | None = None, deep: bool = False
    ) -> DecodeConfig:
        """A copy with ``update`` applied and validated; pydantic's own copy skips validation, so
        ``update={"beam_size": 5}`` would leave a greedy config greedy. ``with_method`` switches.

        Raises:
            pydantic.ValidationError: an update out of bounds or not used by the method.
        """
        copy = super().model_copy(deep=deep)
        return type(self).model_validate({**copy.model_dump(), **update}) if update else copy

    def with_method(self, method: str, **updates: Any) -> DecodeConfig:
        """A validated copy that decodes with ``method``: the settings of the other methods go
        back to their defaults, the shared ones are kept, then ``updates`` are applied.

        Raises:
            pydantic.ValidationError: an unknown method, or an update out of bounds or not used by
                ``method``.
        """
        data = self.model_dump()
        for other, fields in SEARCH_SETTINGS.items():
            if other != method:
                data.update({f: type(self).model_fields[f].default for f in fields})
        return type(self).model_validate({**data, "method": method, **updates})

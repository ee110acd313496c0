"""One ``POST /translate`` request: text -> every chosen model's greedy and beam translations, with
log-probabilities, decode times and cross-attention maps (docs/serve.md gives the JSON). Text is
read as ``translate`` reads it (``split_lines``, ``data.text.clean_line``, a blank line answered
``null``), but an over-long source is refused (413), not cut.

Shape notation: L decoder layers, H heads, T output tokens (EOS included), S source tokens.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from seq2seq.config import DecodeConfig
from seq2seq.config.sections import MAX_LENGTH_PENALTY
from seq2seq.data.text import clean_line
from seq2seq.decoding.alignment_output import teacher_forced_maps
from seq2seq.decoding.search import Hypothesis
from seq2seq.decoding.translate import Translation, source_limit, translate_sentences
from seq2seq.serve.runs import ServedModel, served_beam

MAX_BEAM = 16


@dataclass(frozen=True)
class Limits:
    """What one request may ask for (over a limit: 413 and a message), and how many translations
    the server takes on at once (see ``app.TranslationQueue``)."""

    max_body_bytes: int = 64 * 1024
    max_chars: int = 5000
    max_lines: int = 20
    max_src_tokens: int = 200  # per line, in the model's own source pieces
    workers: int = 4  # translations decoding at once (each model still takes one at a time)
    max_queued: int = 32  # translations waiting for a worker; one more is answered 503
    timeout_s: float = 60.0  # from arrival: a request still waiting or decoding then gets 503

    def __post_init__(self):
        if self.workers < 1 or self.max_queued < 0 or not self.timeout_s > 0:
            raise ValueError(
                f"workers {self.workers}, max_queued {self.max_queued}, timeout_s "
                f"{self.timeout_s}: need workers >= 1, max_queued >= 0 and timeout_s > 0"
            )


class RequestError(ValueError):
    """A request the server refuses: an HTTP status and a one-line message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class TranslateRequest(BaseModel):
    """The body of ``POST /translate``; unknown keys, and values of another JSON type (``"5"`` for
    a beam), are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)

    text: str = Field(description="one or more source sentences, one per line")
    beam: int | None = Field(
        None,
        ge=1,
        le=MAX_BEAM,
        description="beam size; 1 = greedy only; null = each run's decode.beam_size when its "
        "settings search with a beam (its tune-decode decode.yaml, if any), else 5",
    )
    n_best: int = Field(1, ge=1, description="hypotheses returned from the beam, best first")
    length_penalty: float | None = Field(
        None,
        ge=0,
        le=MAX_LENGTH_PENALTY,
        allow_inf_nan=False,
        description="GNMT alpha; null = each run's decode.length_penalty",
    )
    models: list[str] | None = Field(None, description="model names; null = every model")
    attention: bool = Field(True, description="include cross-attention maps")

    @field_validator("text")
    @classmethod
    def _text_is_unicode(cls, text: str) -> str:
        """Refuse a lone UTF-16 surrogate (JSON's ``"\\ud83d"``), which is no character: one line
        naming its position (from 1)."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(
                f"character {e.start + 1} is a lone UTF-16 surrogate (U+{ord(text[e.start]):04X}), "
                "not text; send valid Unicode (in JSON a \\ud83d escape needs its pair, e.g. "
                "\\ud83d\\ude00)"
            ) from None
        return text

    @model_validator(mode="after")
    def _n_best_fits_the_beam(self) -> TranslateRequest:
        if self.beam is not None and self.n_best > self.beam:
            raise ValueError(f"n_best ({self.n_best}) cannot exceed beam ({self.beam})")
        return self


def split_lines(text: str) -> list[str]:
    """Split at ``\\n`` only; drop the ``\\r`` of ``\\r\\n`` and the empty piece after a final
    newline. Other line-break-like characters stay in their line (``clean_line`` spaces them)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


class Stopped(Exception):
    """A translation given up before its next model: its client left or its time ran out."""


def check_request(
    served: Sequence[ServedModel], req: TranslateRequest, limits: Limits
) -> tuple[list[str], list[ServedModel]]:
    """Every check before any decoding: the cleaned source lines and the chosen models. Raises
    RequestError: 413 for text, lines or a source over ``limits``; 422 for an unknown model."""
    if len(req.text) > limits.max_chars:
        raise RequestError(
            413, f"text has {len(req.text)} characters; the limit is {limits.max_chars}"
        )
    lines = split_lines(req.text)
    if len(lines) > limits.max_lines:
        raise RequestError(413, f"text has {len(lines)} lines; the limit is {limits.max_lines}")
    chosen = pick_models(served, req.models)
    sources = [clean_line(line) for line in lines]
    for m in chosen:  # the first line longer than the model takes whole: 413
        limit = min(limits.max_src_tokens, source_limit(m.run.model, m.run.cfg.decode))
        for i, ids in enumerate(m.run.tok.encode_src(sources), start=1):
            if len(ids) > limit:
                raise RequestError(
                    413,
                    f"line {i} is {len(ids)} source pieces long for model {m.name!r}; the limit "
                    f"is {limit}: split it into shorter sentences",
                )
        if req.beam is None and req.n_best > beam_size(m.run.cfg.decode, req):
            raise RequestError(
                422,
                f"n_best ({req.n_best}) cannot exceed model {m.name!r}'s beam "
                f"({beam_size(m.run.cfg.decode, req)}); give beam {req.n_best} or more",
            )
    return sources, chosen


def translate_checked(
    sources: list[str],
    chosen: Sequence[ServedModel],
    req: TranslateRequest,
    stop: Callable[[], bool] = lambda: False,
) -> dict[str, Any]:
    """The answer for ``check_request``'s lines and models, one model after the other; raises
    Stopped when ``stop()`` is true before a model (see ``translate_with``)."""
    models = []
    for m in chosen:
        if stop():
            raise Stopped
        models.append(translate_with(m, sources, req, stop))
    return {"sources": sources, "models": models}


def pick_models(served: Sequence[ServedModel], names: list[str] | None) -> list[ServedModel]:
    """The models named (in server order), or all of them for None; raises RequestError (422) for
    a name the server does not hold, or an empty list."""
    if names is None:
        return list(served)
    known = {m.name for m in served}
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        what = f"unknown model {unknown[0]!r}" if unknown else "models: name at least one model"
        raise RequestError(422, f"{what}; this server has {', '.join(sorted(known))}")
    return [m for m in served if m.name in names]


def beam_size(base: DecodeConfig, req: TranslateRequest) -> int:
    """The request's beam, else the run's (``runs.served_beam``)."""
    return req.beam if req.beam is not None else served_beam(base)


def translate_with(
    m: ServedModel,
    sources: list[str],
    req: TranslateRequest,
    stop: Callable[[], bool] = lambda: False,
) -> dict[str, Any]:
    """Greedy (and, with ``beam`` > 1, beam) translations of ``sources`` by one model, holding its
    lock; decode times are wall milliseconds for all the lines together. Raises Stopped when
    ``stop()`` is true once the lock is free (another request may have held it long); a model's
    decoding is never cut short."""
    search = partial(translate_sentences, m.run.model, m.run.tok, sources, device=m.run.device)
    base = m.run.cfg.decode  # with the request's beam and length penalty (null: the run's)
    alpha = base.length_penalty if req.length_penalty is None else req.length_penalty
    greedy_cfg = base.with_method("greedy", length_penalty=alpha)
    beam_cfg = base.with_method("beam", beam_size=beam_size(base, req), length_penalty=alpha)
    beam: list[Translation | None] = [None] * len(sources)
    beam_ms = None
    with m.lock:
        if stop():
            raise Stopped
        t0 = time.perf_counter()
        greedy = search(greedy_cfg)
        greedy_ms = (time.perf_counter() - t0) * 1000
        if beam_cfg.beam_size > 1:
            t0 = time.perf_counter()
            beam = search(beam_cfg, n_best=req.n_best)
            beam_ms = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        lines = [
            line_result(m, s, g, b, req.attention)
            for s, g, b in zip(sources, greedy, beam, strict=True)
        ]
        attention_ms = (time.perf_counter() - t0) * 1000
    return {
        "name": m.name,
        "beam": beam_cfg.beam_size,
        "length_penalty": greedy_cfg.length_penalty,
        "greedy_ms": round(greedy_ms, 1),
        "beam_ms": None if beam_ms is None else round(beam_ms, 1),
        "attention_ms": round(attention_ms, 1),
        "lines": lines,
    }


def line_result(
    m: ServedModel, source: str, greedy: Translation, beam: Translation | None, attention: bool
) -> dict[str, Any] | None:
    """One line's pieces and hypotheses; None for a line that had nothing to translate."""
    if not greedy.hypotheses:
        return None
    src_ids = m.run.tok.encode_src([source])[0]
    out: dict[str, Any] = {
        "source_pieces": m.run.tok.src_pieces(source),
        "uncovered": greedy.uncovered,
        "greedy": hypothesis(m, src_ids, greedy.hypotheses[0], greedy.texts[0], attention),
        "beam": None,
    }
    if beam is not None and beam.hypotheses:
        best = hypothesis(m, src_ids, beam.hypotheses[0], beam.texts[0], attention)
        best["n_best"] = [
            {k: v for k, v in hypothesis(m, src_ids, h, t, False).items() if k != "attention"}
            for h, t in zip(beam.hypotheses, beam.texts, strict=True)
        ]
        out["beam"] = best
    return out


def hypothesis(
    m: ServedModel, src_ids: list[int], h: Hypothesis, text: str, attention: bool
) -> dict[str, Any]:
    """A hypothesis as JSON values; ``attention`` adds the model's cross-attention while it emits
    ``h.tokens`` (``teacher_forced_maps``): (L, H, T, S) nested lists, rounded to 4 decimals, row
    t the attention paid while emitting token t; null for a model without attention."""
    out = {
        "text": text,
        "pieces": m.run.tok.tgt_pieces(h.tokens),
        "log_prob": round(h.log_prob, 4),
        "score": round(h.score, 4),
        "finished": h.finished,
        "attention": None,
    }
    if attention and m.attention is not None:
        maps = teacher_forced_maps(m.run.model, [(src_ids, h.tokens)], m.run.device)
        out["attention"] = ((maps[0].double() * 1e4).round() / 1e4).tolist()
    return out

"""Sentences -> batches -> search -> detokenised text; shared by ``translate``, ``eval`` and
validation. Blank inputs come back empty, never sent to the model; a source longer than
``source_limit`` tokens is cut with a warning (as OpenNMT's ``src_seq_length_trunc``); the input
policy is in docs/data.md ("Data hygiene").
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from seq2seq.config import ConfigError, DecodeConfig
from seq2seq.console import counted
from seq2seq.data.batch import pad_sequences
from seq2seq.data.text import clean_line
from seq2seq.data.tokenizer import PAD, UNK, Tokenizer
from seq2seq.decoding.base import Hypothesis, max_lengths
from seq2seq.decoding.search import check_n_best, search
from seq2seq.models import Seq2SeqModel

log = logging.getLogger("seq2seq")

MAX_SEARCH_ROWS = 8192  # sentences x beam size decoded at once, at most (beam 40 x 200 fits)


@dataclass
class Translation:
    """A source sentence's n-best outputs, best first (none for an empty input); ``uncovered``:
    it has characters the tokenizer cannot spell (read as ``<unk>``); ``truncated``: it was cut
    to ``source_limit`` tokens; ``source_ids``: the ids the model read, the columns of the
    hypotheses' attention."""

    source: str
    hypotheses: list[Hypothesis]
    texts: list[str]
    uncovered: bool = False
    truncated: bool = False
    source_ids: list[int] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.texts[0] if self.texts else ""

    @property
    def cut(self) -> bool:
        """The best hypothesis stopped at the maximum length without EOS."""
        best = self.hypotheses[0] if self.hypotheses else None
        return best is not None and not best.finished and best.blocked is None


@dataclass
class TranslationReport:
    """Counts over everything translated, for the one summary line ``translate`` prints."""

    lines: int = 0
    uncovered: int = 0
    truncated: int = 0
    cut: int = 0

    def add(self, results: Sequence[Translation]) -> None:
        self.lines += len(results)
        self.uncovered += sum(r.uncovered for r in results)
        self.truncated += sum(r.truncated for r in results)
        self.cut += sum(r.cut for r in results)

    def summary(self) -> str | None:
        """One line for stderr, or None when every source was covered and whole and every
        translation ended with EOS."""
        parts = []
        if self.uncovered:
            parts.append(
                f"{self.uncovered} of {self.lines} source lines "
                f"({100 * self.uncovered / self.lines:.1f}%) have characters the tokenizer does "
                "not cover (read as <unk>; tokenizer.byte_fallback keeps them)"
            )
        if self.truncated:
            parts.append(f"{counted(self.truncated, 'source line')} cut to the length limit")
        if self.cut:
            parts.append(
                f"{counted(self.cut, 'translation')} stopped at the maximum length without EOS "
                "(see --max-len-a/--max-len-b)"
            )
        return "; ".join(parts) if parts else None


def source_limit(model: Seq2SeqModel, cfg: DecodeConfig) -> int:
    """The longest source, in tokens, translated whole: ``cfg.max_src_len``, and for a model with
    ``max_positions`` the longest S whose output limit floor(a·S + b) still fits them.

    Raises:
        ConfigError: ``max_len_a`` + ``max_len_b`` alone exceed the model's positions.
    """
    n_pos = model.max_positions
    if n_pos is None:
        return cfg.max_src_len
    room = n_pos - cfg.max_len_b
    if room < cfg.max_len_a:
        raise ConfigError(
            f"decode.max_len_a + max_len_b ({cfg.max_len_a} + {cfg.max_len_b}) allow outputs "
            f"longer than the model's max_positions ({n_pos}) even for a one-token source: lower "
            "--max-len-b or --max-len-a"
        )
    fit = n_pos if cfg.max_len_a == 0 else int(room / cfg.max_len_a)
    return max(1, min(cfg.max_src_len, n_pos, fit))


def translate_sentences(
    model: Seq2SeqModel,
    tok: Tokenizer,
    sentences: Sequence[str],
    cfg: DecodeConfig,
    device: torch.device | str = "cpu",
    n_best: int = 1,
    need_attention: bool = False,
    progress=None,
    first_line_no: int = 1,
    batch_tokens: int | None = None,
    source_name: str = "input",
) -> list[Translation]:
    """Translate in length-sorted batches of ``cfg.batch_size`` sentences (or of at most
    ``batch_tokens`` padded source tokens); output in input order. ``progress`` gets the count of
    sentences done after each batch; ``first_line_no`` and ``source_name`` name lines in warnings.
    The search is ``SEARCHES[cfg.method]``, or a ``model``'s own ``search_ids`` (CTranslate2's).

    Raises:
        ConfigError: ``n_best`` is more than ``cfg.method`` returns, or the limits do not fit.
    """
    check_n_best(cfg, n_best)
    limit = source_limit(model, cfg)
    results, jobs, ids = _prepare(tok, sentences, limit, first_line_no, source_name)
    _warn_min_len(cfg, ids)
    order = sorted(range(len(jobs)), key=lambda j: len(ids[j]))
    ctranslate2 = getattr(model, "search_ids", None)
    # beam search runs sentences x K rows at once: a wide beam takes fewer sentences per batch
    # (outputs do not depend on the batch)
    rows = cfg.beam_size if cfg.method == "beam" else 1
    batch_size = max(1, min(cfg.batch_size, MAX_SEARCH_ROWS // rows))
    if ctranslate2 is not None:
        batch_size = cfg.batch_size
    with eval_mode(model), torch.inference_mode():
        for chunk in _batches(order, ids, batch_size, batch_tokens):
            if ctranslate2 is not None:
                nbest = ctranslate2(tok, [ids[j] for j in chunk], cfg, n_best)
            else:
                src = pad_sequences([ids[j] for j in chunk]).to(device)
                nbest = search(model, src, src != PAD, cfg, n_best, need_attention)
            for j, hyps in zip(chunk, nbest, strict=True):
                r = results[jobs[j]]
                r.hypotheses, r.texts = hyps, tok.decode_tgt([h.tokens for h in hyps])
            if progress is not None:
                progress(len(chunk))
    for k, r in enumerate(results):  # in line order (the batches go by length)
        _warn_blocked(r.hypotheses, source_name, first_line_no + k)
    return results


@contextmanager
def eval_mode(model) -> Iterator[None]:
    """``model`` in eval mode for the block, then back in its mode (nothing for a model that is
    not an ``nn.Module``)."""
    was_training = getattr(model, "training", None)
    if was_training is None:
        yield
        return
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def _warn_blocked(hyps: Sequence[Hypothesis], source_name: str, line_no: int) -> None:
    """Warn of a line whose best hypothesis ended because every token was forbidden."""
    if hyps and hyps[0].blocked is not None:
        log.warning(
            "%s line %d: every token is forbidden after %d output tokens by %s; the translation "
            "ends there, without EOS; relax them (a lower --min-len, a larger --no-repeat-ngram)",
            source_name,
            line_no,
            len(hyps[0].tokens),
            hyps[0].blocked,
        )


def _warn_min_len(cfg: DecodeConfig, ids: Sequence[list[int]]) -> None:
    """Warn when ``min_len`` leaves some sources no room to end: their maximum output length
    floor(a·S + b) is not above it, so EOS is blocked to the end and they stop cut."""
    if cfg.min_len <= 0 or not ids:
        return
    lengths = max_lengths(torch.tensor([len(x) for x in ids]), cfg.max_len_a, cfg.max_len_b)
    stuck = int((lengths <= cfg.min_len).sum())
    if stuck:
        log.warning(
            "--min-len %d is not below the maximum output length floor(%g * source tokens + %d) "
            "of %s: they cannot end with EOS and stop cut at the limit; lower --min-len or raise "
            "--max-len-a/--max-len-b",
            cfg.min_len,
            cfg.max_len_a,
            cfg.max_len_b,
            counted(stuck, "source line")
            if stuck < len(ids)
            else ("the source line" if stuck == 1 else f"all {stuck} source lines"),
        )


def _batches(
    order: list[int], ids: list[list[int]], batch_size: int, batch_tokens: int | None
) -> Iterator[list[int]]:
    """Cut ``order`` (sorted by length, shortest first) into batches of ``batch_size`` sentences,
    or of at most ``batch_tokens`` padded tokens (a longer sentence goes alone)."""
    if batch_tokens is None:
        for k in range(0, len(order), batch_size):
            yield order[k : k + batch_size]
        return
    chunk: list[int] = []
    for j in order:
        if chunk and (len(chunk) + 1) * len(ids[j]) > batch_tokens:
            yield chunk
            chunk = []
        chunk.append(j)
    if chunk:
        yield chunk


def _prepare(
    tok: Tokenizer, sentences: Sequence[str], limit: int, first_line_no: int, source_name: str
) -> tuple[list[Translation], list[int], list[list[int]]]:
    """A Translation per sentence (empty so far), the positions that need the model, and their
    cleaned and encoded ids cut to ``limit`` tokens."""
    cleaned = [clean_line(s) for s in sentences]
    nonblank = [i for i, s in enumerate(cleaned) if s]
    encoded = tok.encode_src([cleaned[i] for i in nonblank])
    results = [Translation(s, [], []) for s in sentences]
    jobs, ids = [], []
    for i, e in zip(nonblank, encoded, strict=True):
        if not e:  # a line that normalises to no tokens at all is treated like an empty line
            continue
        results[i].uncovered = UNK in e
        if len(e) > limit:
            log.warning(
                "%s line %d: %d source tokens, cut to the first %d (decode.max_src_len, or "
                "the model's max_positions)",
                source_name,
                first_line_no + i,
                len(e),
                limit,
            )
            results[i].truncated, e = True, e[:limit]
        results[i].source_ids = e
        jobs.append(i)
        ids.append(e)
    return results, jobs, ids

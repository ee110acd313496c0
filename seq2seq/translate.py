"""Sentences -> batches -> search -> detokenised text; shared by ``translate``, ``eval`` and
validation.

Empty and blank-looking inputs are never sent to the model: they come back as empty outputs in
their place, so the output always has one line per input line, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .batch import pad_sequences
from .config import DecodeConfig
from .data import clean_line
from .models import Seq2SeqModel
from .search import Hypothesis, beam_search, greedy_search
from .tokenizer import PAD, Tokenizer


@dataclass
class Translation:
    """A source sentence's n-best outputs, best first (empty list for an empty input)."""

    source: str
    hypotheses: list[Hypothesis]
    texts: list[str]

    @property
    def text(self) -> str:
        return self.texts[0] if self.texts else ""


def search(
    model: Seq2SeqModel, src: torch.Tensor, src_mask: torch.Tensor, cfg: DecodeConfig,
    n_best: int = 1, need_attention: bool = False,
) -> list[list[Hypothesis]]:
    """Greedy when the beam is 1, else beam search; (B, S) ids -> B lists of hypotheses."""
    if cfg.beam_size == 1:
        hyps = greedy_search(model, src, src_mask, cfg.max_len_a, cfg.max_len_b, cfg.min_len,
                             need_attention)
        return [[h] for h in hyps]
    return beam_search(model, src, src_mask, cfg.beam_size, cfg.length_penalty, n_best,
                       cfg.max_len_a, cfg.max_len_b, cfg.min_len, need_attention)


def translate_sentences(
    model: Seq2SeqModel,
    tok: Tokenizer,
    sentences: Sequence[str],
    cfg: DecodeConfig,
    device: torch.device | str = "cpu",
    n_best: int = 1,
    need_attention: bool = False,
    progress=None,
) -> list[Translation]:
    """Translate in length-sorted batches of ``cfg.batch_size`` sentences; output in input order.

    ``progress`` (optional) is called with the number of sentences finished after each batch.
    """
    cleaned = [clean_line(s) for s in sentences]
    nonblank = [i for i, s in enumerate(cleaned) if s]
    encoded = tok.encode_src([cleaned[i] for i in nonblank])
    # A line that normalises to no tokens at all is treated like an empty line.
    jobs = [i for i, e in zip(nonblank, encoded, strict=True) if e]
    ids = [e for e in encoded if e]
    results = [Translation(s, [], []) for s in sentences]
    order = sorted(range(len(jobs)), key=lambda j: len(ids[j]))
    was_training = model.training
    model.eval()
    with torch.inference_mode():
        for k in range(0, len(order), cfg.batch_size):
            chunk = order[k : k + cfg.batch_size]
            src = pad_sequences([ids[j] for j in chunk]).to(device)
            nbest = search(model, src, src != PAD, cfg, n_best, need_attention)
            for j, hyps in zip(chunk, nbest, strict=True):
                texts = tok.decode_tgt([h.tokens for h in hyps])
                results[jobs[j]] = Translation(sentences[jobs[j]], hyps, texts)
            if progress is not None:
                progress(len(chunk))
    model.train(was_training)
    return results

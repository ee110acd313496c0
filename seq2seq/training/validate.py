"""Validation: loss and perplexity over the tokenized validation split, and greedy BLEU / chrF over
its raw text. Shapes: B batch, S source length, T target length, V target vocabulary."""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch

from seq2seq.config import Config
from seq2seq.data.batch import Batch, length_batches
from seq2seq.data.text import ParallelText, TokenizedPairs
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decoding.translate import translate_sentences
from seq2seq.evaluation.metrics import corpus_score
from seq2seq.models import Seq2SeqModel
from seq2seq.training.loss import token_loss_sum


@torch.no_grad()
def validate(
    model: Seq2SeqModel,
    tok: Tokenizer,
    valid: TokenizedPairs,
    valid_text: ParallelText,
    cfg: Config,
    device: torch.device,
) -> dict:
    """Validation loss (un-smoothed, nats per token) and perplexity over ``valid``, and with
    ``train.valid_bleu`` greedy BLEU / chrF over every sentence of ``valid_text`` (the over-long
    ones cut, not skipped) with the first three (source, hypothesis, reference) as samples:
    {"loss", "ppl"} and, with ``valid_bleu``, {"bleu", "chrf", "samples"}."""
    model.eval()
    try:
        total, n = 0.0, 0
        for _, b in eval_batches(valid, cfg.train.batch_tokens, device):
            logits = model(b.src, b.src_mask, b.tgt_in)  # (B, T, V)
            total += float(token_loss_sum(logits, b.tgt_out))
            n += b.n_tokens
        if n == 0:  # prepare_data refuses such a set; a loss over zero tokens is never reported
            raise ValueError("validation: no target token to compute a loss over")
        out = {"loss": total / n, "ppl": math.exp(min(total / n, 50))}
        if cfg.train.valid_bleu:
            srcs, refs, greedy = valid_text.src, valid_text.tgt, cfg.decode.with_method("greedy")
            hyps = [t.text for t in translate_sentences(model, tok, srcs, greedy, device)]
            out["bleu"] = corpus_score("bleu", hyps, [refs], cfg.data.tgt_lang).score
            out["chrf"] = corpus_score("chrf", hyps, [refs]).score
            out["samples"] = list(zip(srcs[:3], hyps[:3], refs[:3], strict=True))
        return out
    finally:
        model.train()


def eval_batches(pairs: TokenizedPairs, batch_tokens: int, device) -> Iterator[tuple[list, Batch]]:
    """(indices into ``pairs``, their Batch on ``device``) for every pair, in a fixed order, by
    ``batch_tokens`` padded tokens; a budget below the longest pair is raised to fit it, so no
    pair is ever dropped (validation, and the study's teacher-forced NLL)."""
    lens = [len(s) for s in pairs.src], [len(t) for t in pairs.tgt]
    budget = max([batch_tokens] + [max(s, t + 1) for s, t in zip(*lens, strict=True)])
    for idx in (b.tolist() for b in length_batches(*lens, budget, shuffle=False)):
        yield idx, pairs.batch(idx).to(device)

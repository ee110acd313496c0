"""Greedy search, and the left-to-right loop it shares with sampling (``sample.py``). Shapes: B
sentences, C copies of each, b rows still decoding, L maximum output length, S source length, V
vocabulary; the conventions of every search are in ``base.py``."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from seq2seq.config import DecodeConfig
from seq2seq.data.tokenizer import BOS, EOS, PAD
from seq2seq.decoding.base import (
    NEG_INF,
    Hypothesis,
    allowed_tokens,
    block_repeated_ngrams,
    blocking_constraints,
    length_penalty,
    max_lengths,
    step_log_probs,
)
from seq2seq.models.base import Seq2SeqModel

Choose = Callable[[Tensor], Tensor]
"""(b, V) step log-probabilities (blocked tokens at -inf) -> (b,) the next token of each row."""


@torch.no_grad()
def left_to_right(
    model: Seq2SeqModel,
    src: Tensor,
    src_mask: Tensor,
    choose: Choose,
    cfg: DecodeConfig,
    copies: int = 1,
    need_attention: bool = False,
) -> list[Hypothesis]:
    """Extend every row of (B, S) ``src`` ids and mask by the token ``choose`` picks (after
    ``base``'s limits), a step at a time; a row leaves at EOS or its maximum length, or, every
    token blocked, before the step (``blocked`` set). ``copies``: C rows per sentence from one
    encoding. Returns B x C hypotheses, row i * C + j copy j of sentence i."""
    dev, S = src.device, src.shape[1]
    allowed = allowed_tokens(model, cfg.target_vocab_mask, dev)
    state = model.init_state(model.encode(src, src_mask))
    if copies > 1:  # one encoding, C decoder rows per sentence
        rows = torch.arange(src.shape[0], device=dev).repeat_interleave(copies)
        state, src_mask = model.select_state(state, rows), src_mask[rows]
    b = src_mask.shape[0]
    max_len = max_lengths(src_mask.sum(1), cfg.max_len_a, cfg.max_len_b)
    L = int(max_len.max())
    tokens = torch.full((b, L), PAD, dtype=torch.long, device=dev)
    logp_sum = torch.zeros(b, device=dev)
    token_lp = torch.zeros(b, L, device=dev)  # each chosen token's log-probability
    attn = torch.zeros(b, L, S, device=dev) if need_attention else None
    length = torch.zeros(b, dtype=torch.long, device=dev)
    alive = torch.arange(b, device=dev)  # original rows still decoding
    prev = torch.full((b,), BOS, dtype=torch.long, device=dev)
    blocked: dict[int, str] = {}  # row -> the constraints that left it no token
    for t in range(L):
        logits, a, state = model.decode_step(prev, state, need_attention)
        logp = step_log_probs(logits, t, cfg.min_len, allowed)
        if cfg.no_repeat_ngram:
            block_repeated_ngrams(logp, tokens[alive, :t], cfg.no_repeat_ngram)
        stuck = logp.amax(-1) == NEG_INF  # (b,) every token blocked: the row ends here
        if stuck.any():
            why = blocking_constraints(t, cfg.min_len, cfg.no_repeat_ngram, allowed)
            blocked.update(dict.fromkeys(alive[stuck].tolist(), why))
            logp[stuck, EOS] = 0.0  # something for ``choose`` to pick; nothing is kept of it
        best = choose(logp)  # (b,)
        ok = alive[~stuck]
        tokens[ok, t] = best[~stuck]
        chosen = logp.gather(1, best.unsqueeze(1)).squeeze(1)[~stuck]
        token_lp[ok, t] = chosen
        logp_sum[ok] += chosen
        length[ok] = t + 1
        if a is None:
            attn = None
        elif attn is not None:
            attn[ok, t] = a.float()[~stuck]
        keep = (best != EOS) & (t + 1 < max_len[alive]) & ~stuck
        if not keep.any():
            break
        if not keep.all():
            idx = keep.nonzero().squeeze(1)
            state, alive, best = model.select_state(state, idx), alive[idx], best[idx]
        prev = best
    score = logp_sum / length_penalty(length, cfg.length_penalty).to(dev)
    hyps = []
    rows = zip(length.tolist(), score.tolist(), logp_sum.tolist(), token_lp.tolist(), strict=True)
    for i, (n, s, lp, tlp) in enumerate(rows):
        toks = tokens[i, :n].tolist()
        att = None if attn is None else attn[i, :n][:, src_mask[i]]
        finished = bool(toks) and toks[-1] == EOS
        hyps.append(Hypothesis(toks, s, lp, finished, att, tlp[:n], blocked.get(i)))
    return hyps


def greedy_search(
    model: Seq2SeqModel,
    src: Tensor,
    src_mask: Tensor,
    cfg: DecodeConfig,
    need_attention: bool = False,
) -> list[Hypothesis]:
    """The most probable allowed token at every step (``left_to_right``): (B, S) ids and mask ->
    B hypotheses, in input order."""
    return left_to_right(model, src, src_mask, lambda logp: logp.argmax(-1), cfg, 1, need_attention)

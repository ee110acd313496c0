"""Batched beam search, against the model protocol only (``models.base``).

Shape notation: B sentences (b of them still decoding), K beam size, N n-best kept, L maximum output
length, S source length, V vocabulary. The conventions every search follows are in ``base.py``.

Beam search keeps, per sentence, the K best open hypotheses and a pool of the N best finished ones,
all in (b, K, ·) / (b, N, ·) tensors: no Python loop runs over sentences or beams. Of the 2K best
expansions of a step, those ending in EOS among the top K enter the pool; the K best that do not
stay open (as in fairseq). A sentence stops as soon as its N-th pooled score is at least every open
beam's best reachable score (log-probabilities only fall and lp grows with length, so that bound
is its log-probability over lp(max_len)): early stopping is exact. Cut hypotheses only fill an
n-best list short of N finished ones (``_n_best``), which stays sorted and may hold fewer than N.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


@dataclass
class _Rows:
    """Tensors whose first dimension is the b sentences still decoding."""

    def select(self, keep: Tensor) -> Any:
        """The sentences ``keep`` of every tensor, as the same type."""
        return type(self)(*(None if x is None else x[keep] for x in vars(self).values()))


@dataclass
class _Beams(_Rows):
    """The K open hypotheses of each of b sentences, best first; an empty slot has lp -inf."""

    lp: Tensor  # (b, K) cumulative log-probabilities
    tok: Tensor  # (b, K, L)
    tlp: Tensor  # (b, K, L) each token's log-probability at its step
    att: Tensor | None  # (b, K, L, S)


@dataclass
class _Pool(_Rows):
    """The N best finished hypotheses of each of b sentences, best first; empty slots score -inf."""

    score: Tensor  # (b, N)
    lp: Tensor  # (b, N)
    tok: Tensor  # (b, N, L)
    tlp: Tensor  # (b, N, L)
    length: Tensor  # (b, N)
    att: Tensor | None  # (b, N, L, S)


def _start(B: int, K: int, N: int, L: int, S: int | None, dev) -> tuple[_Beams, _Pool]:
    """Open beams with only beam 0 live (lp 0, the others -inf) and an empty pool."""
    lp = torch.full((B, K), NEG_INF, device=dev)
    lp[:, 0] = 0.0
    tok = torch.full((B, K, L), PAD, dtype=torch.long, device=dev)
    att = None if S is None else torch.zeros(B, K, L, S, device=dev)
    pool = _Pool(
        torch.full((B, N), NEG_INF, device=dev),
        torch.full((B, N), NEG_INF, device=dev),
        torch.full((B, N, L), PAD, dtype=torch.long, device=dev),
        torch.zeros(B, N, L, device=dev),
        torch.zeros(B, N, dtype=torch.long, device=dev),
        None if S is None else torch.zeros(B, N, L, S, device=dev),
    )
    return _Beams(lp, tok, torch.zeros(B, K, L, device=dev), att), pool


def _expand(beams: _Beams, logp: Tensor, att: Tensor | None, t: int) -> tuple[_Beams, Tensor]:
    """From (b*K, V) step ``logp`` and (b*K, S) ``att`` (or None): the best 2K one-token
    expansions (b, 2K, ·), best first, with their histories, and each one's parent beam (b, 2K).
    Every beam has at most one EOS expansion, so the 2K hold K that do not end in EOS."""
    b, K = beams.lp.shape
    n, L = min(2 * K, logp.shape[-1]), beams.tok.shape[-1]
    # 1) each beam's n best tokens: the 2K best of all K x V expansions are among these K x n
    #    (no (b, K, V) sum needed); 2) their cumulative log-probability
    row_top, row_tok = logp.topk(n, dim=1)  # (b*K, n)
    cand = (row_top + beams.lp.view(-1, 1)).view(b, K * n)
    # 3) the 2K best, sorted
    top_lp, top_idx = cand.topk(min(2 * K, K * n), dim=1)
    parent, token = top_idx // n, row_tok.view(b, K * n).gather(1, top_idx)
    # 4) copy each parent's history and append the new token (its log-probability, attention row)
    history = parent.unsqueeze(2).expand(-1, -1, L)
    tok = beams.tok.gather(1, history).clone()
    tok[:, :, t] = token
    tlp = beams.tlp.gather(1, history).clone()
    tlp[:, :, t] = row_top.view(b, K * n).gather(1, top_idx)
    cand_att = None
    if beams.att is not None and att is not None:
        S = beams.att.shape[-1]
        cand_att = beams.att.gather(1, parent[:, :, None, None].expand(-1, -1, L, S)).clone()
        step_att = att.float().view(b, K, S)
        cand_att[:, :, t] = step_att.gather(1, parent.unsqueeze(2).expand(-1, -1, S))
    return _Beams(top_lp, tok, tlp, cand_att), parent


def _keep_open(cand: _Beams, parent: Tensor, K: int, t: int) -> tuple[_Beams, Tensor]:
    """The K best candidates that do not end in EOS, best first, and their parents (b, K)."""
    is_eos = cand.tok[:, :, t] == EOS
    rank = torch.arange(cand.lp.shape[1], device=cand.lp.device).expand_as(cand.lp)
    rank = torch.where(is_eos, rank + cand.lp.shape[1], rank)  # EOS candidates sort last
    pos = rank.argsort(1)[:, :K]  # (b, K)
    att = (
        None
        if cand.att is None
        else cand.att.gather(1, pos[:, :, None, None].expand(-1, -1, *cand.att.shape[2:]))
    )
    history = pos.unsqueeze(2).expand(-1, -1, cand.tok.shape[2])
    tok, tlp = cand.tok.gather(1, history), cand.tlp.gather(1, history)
    return _Beams(cand.lp.gather(1, pos), tok, tlp, att), parent.gather(1, pos)


def _merge(pool: _Pool, cand: _Beams, K: int, t: int, alpha: float) -> _Pool:
    """Add the candidates that end in EOS among the top K ranks to the pool; keep the N best."""
    N, L = pool.score.shape[1], pool.tok.shape[2]
    lp, tok = cand.lp[:, :K], cand.tok[:, :K]
    ends = tok[:, :, t] == EOS
    score = torch.where(ends, lp / length_penalty(t + 1, alpha).item(), NEG_INF)
    best, pick = torch.cat([pool.score, score], 1).topk(N, dim=1)
    length = torch.cat([pool.length, torch.full_like(tok[:, :, 0], t + 1)], 1)
    att = None
    if pool.att is not None and cand.att is not None:
        merged = torch.cat([pool.att, cand.att[:, :K]], 1)
        att = merged.gather(1, pick[:, :, None, None].expand(-1, -1, *merged.shape[2:]))
    history = pick.unsqueeze(2).expand(-1, -1, L)
    return _Pool(
        best,
        torch.cat([pool.lp, lp], 1).gather(1, pick),
        torch.cat([pool.tok, tok], 1).gather(1, history),
        torch.cat([pool.tlp, cand.tlp[:, :K]], 1).gather(1, history),
        length.gather(1, pick),
        att,
    )


@torch.no_grad()
def beam_search(
    model: Seq2SeqModel,
    src: Tensor,
    src_mask: Tensor,
    cfg: DecodeConfig,
    n_best: int = 1,
    need_attention: bool = False,
) -> list[list[Hypothesis]]:
    """Beam search over (B, S) ``src`` ids and mask (True = real token), K = ``cfg.beam_size``
    beams ranked by the GNMT score of ``cfg.length_penalty`` α: N = ``n_best`` hypotheses per
    sentence, best first (finished ones first). Raises ValueError for N > K."""
    K, alpha, no_repeat_ngram = cfg.beam_size, cfg.length_penalty, cfg.no_repeat_ngram
    if n_best > K:
        raise ValueError(f"n_best ({n_best}) cannot exceed the beam size ({K})")
    dev, B = src.device, src.shape[0]
    max_len = max_lengths(src_mask.sum(1), cfg.max_len_a, cfg.max_len_b)
    L = int(max_len.max())
    bound_lp = length_penalty(max_len, alpha).to(dev)  # (B,) most favourable lp
    allowed = allowed_tokens(model, cfg.target_vocab_mask, dev)
    state = model.init_state(model.encode(src, src_mask))
    beams, pool = _start(B, K, n_best, L, src.shape[1] if need_attention else None, dev)
    results: list[list[Hypothesis]] = [[] for _ in range(B)]
    alive = torch.arange(B, device=dev)  # original index of each sentence still decoding
    prev = torch.full((B,), BOS, dtype=torch.long, device=dev)
    for t in range(L):
        logits, att, state = model.decode_step(prev, state, need_attention)
        logp = step_log_probs(logits, t, cfg.min_len, allowed)
        if t == 0:  # a sentence's K beams are all still BOS: decoded once, copied to K rows here
            rows = torch.arange(B, device=dev).repeat_interleave(K)
            state, logp = model.select_state(state, rows), logp[rows]
            att = None if att is None else att[rows]
        elif no_repeat_ngram:  # each beam's history: (b*K, t), in logp's row order
            block_repeated_ngrams(logp, beams.tok[:, :, :t].reshape(-1, t), no_repeat_ngram)
        # an open beam none of whose tokens (EOS included) is allowed ends before this step
        old, stuck = beams, (logp.amax(-1) == NEG_INF).view(-1, K)  # (b, K)
        cand, parent = _expand(beams, logp, att, t)
        pool = _merge(pool, cand, K, t, alpha)
        beams, parent = _keep_open(cand, parent, K, t)
        at_max = t + 1 >= max_len[alive]
        dead = beams.lp[:, 0] == NEG_INF  # no open beam left: the constraints blocked them all
        done = at_max | dead | (pool.score[:, -1] >= beams.lp[:, 0] / bound_lp[alive])
        for i in done.nonzero().squeeze(1).tolist():
            j = int(alive[i])
            if dead[i]:  # n-best filler, like cut ones: the beams that could not go on
                why = blocking_constraints(t, cfg.min_len, no_repeat_ngram, allowed)
                cut = _cut(old, i, t - 1, alpha, stuck[i], why)
            else:
                cut = _cut(beams, i, t, alpha) if at_max[i] else []
            results[j] = _n_best(_finished(pool, i), cut, n_best)
            for h in results[j] if need_attention else []:
                h.attention = None if h.attention is None else h.attention[:, src_mask[j]]
        if done.all():
            break
        # Move each kept beam's decoder state to its parent's and drop finished sentences, in one
        # index: source-side entries are equal across a sentence's beams, so any row of it will do.
        keep = (~done).nonzero().squeeze(1)
        rows = (parent + torch.arange(len(alive), device=dev).unsqueeze(1) * K)[keep].view(-1)
        if len(keep) < len(alive):
            state = model.select_state(state, rows)
        else:
            state = model.reorder_state(state, rows)
        beams, pool, alive = beams.select(keep), pool.select(keep), alive[keep]
        prev = beams.tok[:, :, t].reshape(-1)
    return results


def _n_best(finished: list[Hypothesis], cut: list[Hypothesis], n: int) -> list[Hypothesis]:
    """The finished hypotheses, filled up to ``n`` with unfinished ones that score no higher than
    the last finished one (a score without EOS's probability above it would rank a prefix over a
    whole output), so the list stays sorted by its score and may hold fewer than n."""
    floor = finished[-1].score if finished else float("inf")
    return (finished + [h for h in cut if h.score <= floor])[:n]


def _finished(pool: _Pool, i: int) -> list[Hypothesis]:
    """Sentence i's pooled hypotheses, best first, without empty slots."""
    out = []
    rows = zip(pool.score[i].tolist(), pool.lp[i].tolist(), pool.length[i].tolist(), strict=True)
    for j, (s, lp, n) in enumerate(rows):
        if s != NEG_INF:
            att = None if pool.att is None else pool.att[i, j, :n]
            toks, tlp = pool.tok[i, j, :n].tolist(), pool.tlp[i, j, :n].tolist()
            out.append(Hypothesis(toks, s, lp, True, att, tlp))
    return out


def _cut(
    beams: _Beams,
    i: int,
    t: int,
    alpha: float,
    only: Tensor | None = None,
    blocked: str | None = None,
) -> list[Hypothesis]:
    """Sentence i's open beams of t + 1 tokens, best first, as unfinished hypotheses: all (cut at
    the maximum length), or those ``only`` ((K,) bool) marks, which no token could extend
    (``blocked``)."""
    penalty = length_penalty(t + 1, alpha).item()
    out = []
    for j, lp in enumerate(beams.lp[i].tolist()):
        if lp != NEG_INF and (only is None or bool(only[j])):
            att = None if beams.att is None else beams.att[i, j, : t + 1]
            toks, tlp = beams.tok[i, j, : t + 1].tolist(), beams.tlp[i, j, : t + 1].tolist()
            out.append(Hypothesis(toks, lp / penalty, lp, False, att, tlp, blocked))
    return out

"""Greedy and batched beam search, against the model protocol only (``models.base``).

Shape notation: B sentences, K beam size, N n-best kept, L maximum output length, S source length,
V vocabulary.

Conventions shared by both searches:
- A hypothesis's length |Y| counts its generated tokens, EOS once; BOS and padding never.
- ``max_len`` of sentence i is ``floor(max_len_a * src_len_i + max_len_b)`` tokens, EOS included.
  A hypothesis still open at that length is returned with ``finished=False`` ("cut").
- ``min_len`` tokens must come before EOS: EOS is blocked while fewer have been generated.
- PAD and BOS are never generated.

Beam search keeps, per sentence, the K best open hypotheses and a pool of the N best finished ones,
all in (B, K, ·) / (B, N, ·) tensors: each step is a fixed number of tensor operations whatever B
is, and no Python loop runs over sentences or beams. An expansion ending in EOS enters the pool when
it ranks among the step's top K; the top K expansions that do not end in EOS stay open. A sentence
stops as soon as its N-th best pooled score beats every open beam's best reachable score (the
length penalty taken at its most favourable, the maximum length), so early stopping is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .models.base import Seq2SeqModel
from .tokenizer import BOS, EOS, PAD


@dataclass
class Hypothesis:
    """One output. ``tokens`` has no BOS and ends with EOS iff ``finished``; ``score`` is the
    length-normalised log-probability (equal to ``log_prob`` when α = 0); ``attention`` (T, S)."""

    tokens: list[int]
    score: float
    log_prob: float
    finished: bool
    attention: Tensor | None = None


def max_lengths(src_mask: Tensor, a: float, b: int) -> Tensor:
    """(B,) maximum output lengths, at least 1."""
    return (src_mask.sum(1).float() * a + b).floor().long().clamp(min=1)


def length_penalty(length: Tensor, alpha: float) -> Tensor:
    """GNMT length penalty ((5 + |Y|) / 6)^α (Wu et al. 2016, eq. 14); 1 when α = 0."""
    return ((5.0 + length.float()) / 6.0) ** alpha


def _block(logp: Tensor, step: int, min_len: int) -> Tensor:
    logp[:, PAD] = float("-inf")
    logp[:, BOS] = float("-inf")
    if step < min_len:
        logp[:, EOS] = float("-inf")
    return logp


@torch.no_grad()
def greedy_search(
    model: Seq2SeqModel,
    src: Tensor,
    src_mask: Tensor,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
    min_len: int = 0,
    need_attention: bool = False,
) -> list[Hypothesis]:
    """Pick the most probable token at every step, for a whole batch at once.

    Args:
        src: (B, S) ids.  src_mask: (B, S) bool, True = real token.

    Returns:
        B hypotheses, in input order.
    """
    b = src.shape[0]
    max_len = max_lengths(src_mask, max_len_a, max_len_b)
    L = int(max_len.max())
    state = model.init_state(model.encode(src, src_mask))
    tokens = torch.full((b, L), PAD, dtype=torch.long, device=src.device)
    logp_sum = torch.zeros(b, device=src.device)
    attn = src.new_zeros(b, L, src.shape[1], dtype=torch.float) if need_attention else None
    length = torch.zeros(b, dtype=torch.long, device=src.device)
    finished = torch.zeros(b, dtype=torch.bool, device=src.device)
    alive = torch.arange(b, device=src.device)  # original rows still decoding
    prev = torch.full((b,), BOS, dtype=torch.long, device=src.device)
    for t in range(L):
        logits, a, state = model.decode_step(prev, state, need_attention)
        logp = _block(torch.log_softmax(logits.float(), -1), t, min_len)
        best_lp, best = logp.max(-1)
        tokens[alive, t] = best
        logp_sum[alive] += best_lp
        length[alive] = t + 1
        if attn is not None:
            attn[alive, t, : a.shape[-1]] = a.float()
        ended = best == EOS
        finished[alive] = ended
        keep = ~(ended | (t + 1 >= max_len[alive]))
        if not keep.any():
            break
        if not keep.all():
            idx = keep.nonzero().squeeze(1)
            state, alive, best = model.select_state(state, idx), alive[idx], best[idx]
        prev = best
    out = []
    for i in range(b):
        n = int(length[i])
        out.append(Hypothesis(tokens[i, :n].tolist(), float(logp_sum[i]), float(logp_sum[i]),
                              bool(finished[i]), None if attn is None else attn[i, :n]))
    return out


@torch.no_grad()
def beam_search(
    model: Seq2SeqModel,
    src: Tensor,
    src_mask: Tensor,
    beam_size: int = 5,
    length_penalty_alpha: float = 0.0,
    n_best: int = 1,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
    min_len: int = 0,
    need_attention: bool = False,
) -> list[list[Hypothesis]]:
    """Batched beam search over B sentences x K beams.

    Args:
        src: (B, S) ids.  src_mask: (B, S) bool, True = real token.
        beam_size: K.  n_best: N <= K hypotheses returned per sentence, best first.
        length_penalty_alpha: α of the GNMT penalty; 0 ranks by raw log-probability.

    Returns:
        For each sentence in input order, its N best hypotheses.

    Raises:
        ValueError: n_best > beam_size.
    """
    if n_best > beam_size:
        raise ValueError(f"n_best ({n_best}) cannot exceed the beam size ({beam_size})")
    dev, B, K, N, V = src.device, src.shape[0], beam_size, n_best, model.tgt_vocab_size
    S = src.shape[1]
    max_len = max_lengths(src_mask, max_len_a, max_len_b)
    L = int(max_len.max())
    lp_max = length_penalty(max_len, length_penalty_alpha)  # (B,) most favourable penalty

    state = model.init_state(model.encode(src, src_mask))
    state = model.select_state(state, torch.arange(B, device=dev).repeat_interleave(K))
    # Open beams: cumulative log-probs (only beam 0 is live at the start), token history, attention.
    beam_lp = torch.full((B, K), float("-inf"), device=dev)
    beam_lp[:, 0] = 0.0
    beam_tok = torch.full((B, K, L), PAD, dtype=torch.long, device=dev)
    beam_att = torch.zeros(B, K, L, S, device=dev) if need_attention else None
    # Pool of finished (or cut) hypotheses.
    pool_score = torch.full((B, N), float("-inf"), device=dev)
    pool_lp = torch.full((B, N), float("-inf"), device=dev)
    pool_tok = torch.full((B, N, L), PAD, dtype=torch.long, device=dev)
    pool_len = torch.zeros(B, N, dtype=torch.long, device=dev)
    pool_fin = torch.zeros(B, N, dtype=torch.bool, device=dev)
    pool_att = torch.zeros(B, N, L, S, device=dev) if need_attention else None

    results: list[list[Hypothesis] | None] = [None] * B
    alive = torch.arange(B, device=dev)  # original index of each row of the (b, ...) tensors
    prev = torch.full((B * K,), BOS, dtype=torch.long, device=dev)
    for t in range(L):
        b = alive.shape[0]
        logits, a, state = model.decode_step(prev, state, need_attention)
        logp = _block(torch.log_softmax(logits.float(), -1), t, min_len)  # (b*K, V)
        # 1) rank all K x V expansions by cumulative log-prob; 2K of them hold >= K without EOS
        cand = (beam_lp.unsqueeze(2) + logp.view(b, K, V)).view(b, K * V)
        top_lp, top_idx = cand.topk(min(2 * K, K * V), dim=1)  # (b, 2K)
        top_beam, top_tok = top_idx // V, top_idx % V
        length = torch.full_like(top_lp, t + 1)
        # 2) EOS expansions in the top K ranks are finished hypotheses
        is_eos = top_tok == EOS
        eos_in_top = is_eos.clone()
        eos_in_top[:, K:] = False
        # 3) the first K expansions that are not EOS stay open
        rank = torch.where(is_eos, torch.full_like(top_lp, float("inf")),
                           torch.arange(top_lp.shape[1], device=dev).float().expand_as(top_lp))
        open_pos = rank.argsort(1)[:, :K]  # (b, K) positions in the 2K list
        new_lp = top_lp.gather(1, open_pos)
        new_beam = top_beam.gather(1, open_pos)
        new_tok = top_tok.gather(1, open_pos)
        # 4) move histories to the new beams (index into the flat b*K rows)
        flat = (new_beam + torch.arange(b, device=dev).unsqueeze(1) * K).view(-1)
        cand_tok_hist = beam_tok.gather(1, top_beam.unsqueeze(2).expand(-1, -1, L)).clone()
        cand_tok_hist[:, :, t] = top_tok
        beam_tok = cand_tok_hist.gather(1, open_pos.unsqueeze(2).expand(-1, -1, L))
        if need_attention:
            step_att = a.float().view(b, K, -1)  # (b, K, S_b)
            cand_att = beam_att.gather(1, top_beam[:, :, None, None].expand(-1, -1, L, S)).clone()
            cand_att[:, :, t, : step_att.shape[-1]] = step_att.gather(
                1, top_beam.unsqueeze(2).expand(-1, -1, step_att.shape[-1]))
            beam_att = cand_att.gather(1, open_pos[:, :, None, None].expand(-1, -1, L, S))
        beam_lp = new_lp
        # 5) at a sentence's maximum length its open beams are cut and pooled too
        at_max = (t + 1) >= max_len[alive]  # (b,)
        lp_now = length_penalty(length, length_penalty_alpha)
        cand_score = torch.where(eos_in_top, top_lp / lp_now, torch.full_like(top_lp, -float("inf")))
        cut_score = torch.where(at_max.unsqueeze(1), new_lp / lp_now[:, :K],
                                torch.full_like(new_lp, -float("inf")))
        merged_score = torch.cat([pool_score, cand_score, cut_score], 1)
        merged_lp = torch.cat([pool_lp, top_lp, new_lp], 1)
        merged_tok = torch.cat([pool_tok, cand_tok_hist, beam_tok], 1)
        merged_len = torch.cat([pool_len, length.long(), length[:, :K].long()], 1)
        merged_fin = torch.cat([pool_fin, torch.ones_like(is_eos), torch.zeros_like(at_max)
                                .unsqueeze(1).expand(-1, K)], 1)
        pool_score, pick = merged_score.topk(N, dim=1)
        pool_lp = merged_lp.gather(1, pick)
        pool_tok = merged_tok.gather(1, pick.unsqueeze(2).expand(-1, -1, L))
        pool_len = merged_len.gather(1, pick)
        pool_fin = merged_fin.gather(1, pick)
        if need_attention:
            merged_att = torch.cat([pool_att, cand_att, beam_att], 1)
            pool_att = merged_att.gather(1, pick[:, :, None, None].expand(-1, -1, L, S))
        # 6) a sentence is done at its maximum length, or when no open beam can beat its pool
        best_open = beam_lp.max(1).values / lp_max[alive]
        done = at_max | (pool_score[:, N - 1] >= best_open)
        for i in done.nonzero().squeeze(1).tolist():
            results[int(alive[i])] = _collect(pool_tok[i], pool_len[i], pool_score[i], pool_lp[i],
                                              pool_fin[i], None if pool_att is None else pool_att[i])
        if done.all():
            break
        state = model.reorder_state(state, flat)
        prev = new_tok.view(-1)
        if done.any():
            keep = (~done).nonzero().squeeze(1)
            rows = (keep.unsqueeze(1) * K + torch.arange(K, device=dev)).view(-1)
            state = model.select_state(state, rows)
            prev = prev[rows]
            alive, beam_lp, beam_tok = alive[keep], beam_lp[keep], beam_tok[keep]
            pool_score, pool_lp, pool_tok = pool_score[keep], pool_lp[keep], pool_tok[keep]
            pool_len, pool_fin = pool_len[keep], pool_fin[keep]
            if need_attention:
                beam_att, pool_att = beam_att[keep], pool_att[keep]
    return results  # type: ignore[return-value]


def _collect(tok, length, score, lp, fin, att) -> list[Hypothesis]:
    """One sentence's pool (N, ·) -> hypotheses, best first, dropping empty slots."""
    out = []
    for j in range(tok.shape[0]):
        if score[j] == float("-inf"):
            continue
        n = int(length[j])
        out.append(Hypothesis(tok[j, :n].tolist(), float(score[j]), float(lp[j]), bool(fin[j]),
                              None if att is None else att[j, :n]))
    return out

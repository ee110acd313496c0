"""Ancestral sampling with temperature, top-k and nucleus (top-p) filtering. Shapes: B sentences,
N samples each, b rows still decoding, S source length, V vocabulary; conventions in ``base.py``.

At every step the next token is drawn from the model's distribution reshaped in three steps:
1) temperature τ: softmax(logits / τ); τ < 1 sharpens it, τ > 1 flattens it;
2) top-k: only the k most probable tokens keep their probability (Fan et al. 2018);
3) top-p: only the smallest set of most probable tokens whose probability reaches p keeps it
   (nucleus sampling, Holtzman et al. 2020, §3.1);
each step renormalising what is left. Top-k 1 (or τ -> 0) is greedy search; a τ so small that
logits / τ overflows float32 (1e-45) draws among the most probable tokens only, as greedy picks.

Draws come from a ``torch.Generator`` on the decode device, seeded with the seed and the batch's
source ids: the global RNG plays no part, the same input with the same batching repeats exactly,
and batches of other sentences draw other numbers. Without a seed every batch gets a fresh one.
"""

from __future__ import annotations

import zlib

import torch
from torch import Tensor

from seq2seq.config import DecodeConfig
from seq2seq.decoding.base import NEG_INF, Hypothesis
from seq2seq.decoding.greedy import left_to_right
from seq2seq.models.base import Seq2SeqModel


def sampling_log_probs(
    logp: Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float = 1.0
) -> Tensor:
    """(b, V) step log-probabilities -> (b, V) log-probabilities of the distribution to draw from:
    steps 1-3 of the module docstring; filtered tokens (and blocked ones) get -inf."""
    # 1) softmax(logits / τ) over allowed tokens, from the row's best (at 0): a τ so small that
    # logits / τ overflows (1e-45) leaves the best tokens, not -inf everywhere (greedy's choice)
    x = torch.log_softmax((logp - logp.amax(-1, keepdim=True)) / temperature, -1)
    if top_k is not None and top_k < x.shape[-1]:  # 2) exactly k tokens, even with ties
        keep = torch.zeros_like(x, dtype=torch.bool).scatter(1, x.topk(top_k, -1).indices, True)
        x = torch.log_softmax(x.masked_fill(~keep, NEG_INF), -1)
    if top_p < 1.0:  # 3) drop a token once the more probable ones already hold p
        sorted_lp, order = x.sort(-1, descending=True)
        p = sorted_lp.exp()
        drop = (p.cumsum(-1) - p) >= top_p  # the most probable token always stays
        x = torch.log_softmax(x.masked_fill(drop.scatter(1, order, drop), NEG_INF), -1)
    return x


def _generator(seed: int | None, src: Tensor) -> torch.Generator:
    """A generator on ``src``'s device seeded with (seed, the batch's ids), or afresh."""
    gen = torch.Generator(device=src.device)
    if seed is None:
        gen.seed()
    else:
        # CRC-32 of the ids started from the seed: one-to-one in the seed (< 2**32, DecodeConfig)
        # for given ids, and 32 bits, all that the CPU generator (mt19937) reads of a seed
        gen.manual_seed(zlib.crc32(src.cpu().numpy().tobytes(), seed))
    return gen


def sample_search(
    model: Seq2SeqModel,
    src: Tensor,
    src_mask: Tensor,
    cfg: DecodeConfig,
    n_best: int = 1,
    need_attention: bool = False,
) -> list[list[Hypothesis]]:
    """N = ``n_best`` draws per sentence of (B, S) ``src`` ids and mask (duplicates possible, from
    one encoding), each stopping at EOS or its maximum length; ``cfg``'s ``temperature``,
    ``top_k``, ``top_p`` are steps 1-3 of the module docstring, applied after ``base``'s limits.
    Returns each sentence's draws, highest ``score`` first; ``log_prob`` is the model's
    unfiltered log-probability of the tokens, comparable with greedy and beam search."""
    gen = _generator(cfg.seed, src)

    def draw(logp: Tensor) -> Tensor:
        probs = sampling_log_probs(logp, cfg.temperature, cfg.top_k, cfg.top_p).exp()
        return torch.multinomial(probs, 1, generator=gen).squeeze(1)

    hyps = left_to_right(model, src, src_mask, draw, cfg, n_best, need_attention)
    per_sentence = [hyps[i : i + n_best] for i in range(0, len(hyps), n_best)]
    return [sorted(h, key=lambda x: -x.score) for h in per_sentence]

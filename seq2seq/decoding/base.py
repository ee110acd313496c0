"""What every search shares: the ``Hypothesis`` it returns, output length limits, the GNMT length
penalty, and the step log-probabilities with the tokens no search may emit blocked. Shapes: B
sentences (b of them still decoding), S source length, V target vocabulary.

Conventions shared by all searches (``greedy``, ``beam``, ``sample``):
- A hypothesis's length |Y| counts its generated tokens, EOS once; BOS and padding never.
- Its ``score`` is log P(Y|X) / lp(|Y|) with the GNMT length penalty lp(|Y|) = ((5 + |Y|) / 6)^α
  (Wu et al. 2016, eq. 14); α = 0 ranks by the raw log-probability (``log_prob``).
- ``max_len`` of sentence i is ``floor(max_len_a * src_len_i + max_len_b)`` tokens, EOS included.
  A hypothesis still open at that length is *cut*: returned with ``finished=False`` and no EOS; its
  score lacks the EOS probability, so it is not comparable with a finished one.
- Blocking never renormalises (scores stay the model's log-probabilities; sampling renormalises
  over what is left, as after top-k). Blocked in every search: PAD and BOS; EOS while fewer than
  ``min_len`` tokens came before it; with ``target_vocab_mask``, the pieces the model's
  ``target_vocab`` ((V,) bool, carried by the checkpoint; None: none blocked) leaves out, such
  as a joint vocabulary's source-only pieces; with ``no_repeat_ngram`` N > 0, a token that would
  complete an n-gram of N tokens already in the hypothesis (fairseq's ``--no-repeat-ngram-size``).
- When they block every token at a step, the hypothesis ends there, unfinished and without EOS,
  its ``blocked`` naming them (``blocking_constraints``); beam search returns such a hypothesis
  only to fill an n-best list, as it does a cut one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from seq2seq.data.tokenizer import BOS, EOS, PAD

NEG_INF = float("-inf")


@dataclass
class Hypothesis:
    """One output: ``tokens`` (no BOS; EOS last iff ``finished``, False for one cut), ``score`` =
    ``log_prob`` / lp(|Y|), ``log_prob`` = log P(tokens | source); ``attention``: (T, S_i) over
    the real source positions only (so batching changes nothing), or None; ``token_log_probs``:
    T floats summing to ``log_prob`` (up to float32 rounding); ``blocked``: the constraints that
    forbade every token after ``tokens`` (``blocking_constraints``), or None."""

    tokens: list[int]
    score: float
    log_prob: float
    finished: bool
    attention: Tensor | None = None
    token_log_probs: list[float] | None = None
    blocked: str | None = None


def max_lengths(src_len: Tensor, a: float, b: int) -> Tensor:
    """(B,) source lengths -> (B,) maximum output lengths floor(a * src_len + b), at least 1: the
    one length rule of every search (ours and CTranslate2's) and of ``translate``'s warnings."""
    return (src_len.float() * a + b).floor().long().clamp(min=1)


def length_penalty(length: Tensor | int, alpha: float) -> Tensor:
    """GNMT length penalty ((5 + |Y|) / 6)^α (Wu et al. 2016, eq. 14); 1 when α = 0."""
    return ((5.0 + torch.as_tensor(length, dtype=torch.float)) / 6.0) ** alpha


def allowed_tokens(model, use: bool, device: torch.device | str) -> Tensor | None:
    """The (V,) bool mask of the pieces ``model`` may output (its ``target_vocab`` attribute; an
    ``Ensemble``'s is its members' union) on ``device``, or None when ``use`` is False or the model
    has none: every piece is allowed."""
    mask = getattr(model, "target_vocab", None) if use else None
    return None if mask is None else mask.to(device=device, dtype=torch.bool)


def step_log_probs(
    logits: Tensor, step: int, min_len: int, allowed: Tensor | None = None
) -> Tensor:
    """(b, V) logits -> (b, V) log-probabilities with PAD, BOS (and EOS before ``min_len``) at -inf,
    and every piece that ``allowed`` ((V,) bool, or None) leaves out; after the softmax, so it
    never renormalises."""
    logp = torch.log_softmax(logits.float(), -1)
    if allowed is not None:
        logp.masked_fill_(~allowed, NEG_INF)
    logp[:, PAD] = NEG_INF
    logp[:, BOS] = NEG_INF
    if step < min_len:
        logp[:, EOS] = NEG_INF
    return logp


def blocking_constraints(step: int, min_len: int, no_repeat_ngram: int, allowed) -> str:
    """The constraints that forbid tokens at ``step`` (0-based), as the options a user gives:
    ``--no-repeat-ngram N``, ``--min-len M`` (while EOS is blocked), the target vocabulary mask
    (``allowed`` is not None); "the model" when none is on (it gave every token probability 0)."""
    names = [f"--no-repeat-ngram {no_repeat_ngram}"] if no_repeat_ngram else []
    if step < min_len:
        names.append(f"--min-len {min_len}")
    if allowed is not None:
        names.append("the target vocabulary mask (decode.target_vocab_mask)")
    return ", ".join(names) if names else "the model (it gives every token probability 0)"


def block_repeated_ngrams(logp: Tensor, history: Tensor, n: int) -> Tensor:
    """Set to -inf in (b, V) ``logp``, in place, every token that would complete an n-gram of
    ``n`` tokens already in the row's (b, t) ``history`` (no BOS; fairseq's
    ``--no-repeat-ngram-size``): the tokens that followed the history's last n - 1 before. n = 1
    blocks every token generated; n = 0 nothing. Returns ``logp``."""
    t = history.shape[1]
    if n <= 0 or t < n:
        return logp
    windows = history.unfold(1, n, 1)  # (b, t - n + 1, n): every n-gram so far
    suffix = history[:, t - n + 1 :]  # (b, n - 1): the n-gram the next token would complete
    seen = (windows[:, :, :-1] == suffix.unsqueeze(1)).all(-1)  # (b, t - n + 1)
    hits = torch.zeros_like(logp).scatter_add_(1, windows[:, :, -1], seen.to(logp.dtype))
    return logp.masked_fill_(hits > 0, NEG_INF)

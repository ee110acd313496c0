"""The references' teacher-forced loss, which involves no search at all: how well a model itself
scores the right answer on long inputs.

Two measures:

- by k (``nll_lines_by_k``, ``nll_by_k``, ``nll_rise_difference_ci``): NLL per reference token of
  each k's lines, EOS included, and the paired interval of its rise from k = 1 to K. A joined
  reference is scored as a new sentence, so its rise mixes how well a caption is scored with how
  well the decoder handles the joins and the one EOS.
- per caption in context (``rho.CaptionNLL.gaps``, ``caption_gap_ci``,
  ``caption_gap_difference_ci``): each caption's own target tokens scored inside its k-join minus
  the same tokens scored alone, with the caption's own source, EOS excluded. Both scores cover
  exactly the same tokens, so the gap measures only what the long input costs the caption.
  Positive gap = the model scores a caption worse when it sits in a long input.

Shape notation: B batch, T target length (EOS included), V target vocabulary, U units of the
bootstrap (joined lines), K sentences joined into one line.
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from seq2seq.data.text import ParallelText, TokenizedPairs, tokenize_pairs
from seq2seq.data.tokenizer import PAD, Tokenizer
from seq2seq.models import Seq2SeqModel
from seq2seq.study.cells import _lines_of, retention_units
from seq2seq.study.evalsets import EvalSet
from seq2seq.study.stats import SACREBLEU_SEED, bootstrap_ci, paired_difference_ci
from seq2seq.training.loss import row_loss_sums
from seq2seq.training.validate import eval_batches

__all__ = [
    "caption_gap_ci",
    "caption_gap_difference_ci",
    "nll_by_k",
    "nll_lines_by_k",
    "nll_rise_difference_ci",
    "nll_rows",
]

Lines = dict[int, tuple[np.ndarray, np.ndarray]]
"""k -> (per line a float64 quantity in nats, per line its int64 token count)."""


def nll_lines_by_k(
    model: Seq2SeqModel,
    tok: Tokenizer,
    evalset: EvalSet,
    device: torch.device,
    batch_tokens: int = 3000,
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Teacher-forced negative log-likelihood of every reference given its source, line by line:
    how well the model itself scores the right answer, with no search involved.

    Every line counts (no length filter); each k's lines are batched by ``batch_tokens`` padded
    tokens as validation batches them (a budget below the longest line is raised to fit it);
    padding never counts, so a line's loss does not depend on its batch. The model runs in eval
    mode without gradients; its training mode is restored afterwards.

    Returns:
        k -> (nats, tokens): per line of that k, in evalset order, the un-smoothed loss summed over
        its reference tokens (EOS included), in nats (float64), and their count (int64).

    Raises:
        ValueError: a line whose source or reference encodes to no token, or, for a model with a
            position limit (the Transformer's ``max_positions``), lines longer than it (counted).
    """
    out = {}
    was_training = model.training
    model.eval()
    try:
        for k in sorted(set(evalset.k)):
            pairs = _encoded(tok, evalset, k, model.max_positions)
            out[k] = _line_losses(model, pairs, batch_tokens, device)
    finally:
        model.train(was_training)
    return out


def _line_losses(model: Seq2SeqModel, pairs: TokenizedPairs, batch_tokens: int, device):
    nats = np.zeros(len(pairs), dtype=np.float64)
    tokens = np.array([len(t) + 1 for t in pairs.tgt], dtype=np.int64)
    with torch.no_grad():
        for idx, b in eval_batches(pairs, batch_tokens, device):
            logits = model(b.src, b.src_mask, b.tgt_in)  # (B, T, V)
            nats[idx] = row_loss_sums(logits, b.tgt_out).double().cpu().numpy()
    return nats, tokens


def nll_by_k(
    model: Seq2SeqModel,
    tok: Tokenizer,
    evalset: EvalSet,
    device: torch.device,
    batch_tokens: int = 3000,
) -> list[dict]:
    """Teacher-forced NLL per reference token by k (``nll_lines_by_k`` summed over each k).

    Returns:
        ``{"k", "nll", "tokens", "sentences"}`` per k (ascending): mean un-smoothed loss in nats
        per reference token (EOS included, padding not), the token count, the line count.

    Raises:
        ValueError: as ``nll_lines_by_k``.
    """
    return nll_rows(nll_lines_by_k(model, tok, evalset, device, batch_tokens))


def nll_rows(lines: dict[int, tuple[np.ndarray, np.ndarray]]) -> list[dict]:
    """``nll_by_k``'s rows from ``nll_lines_by_k``'s lines."""
    return [
        {
            "k": k,
            "nll": float(nats.sum() / tokens.sum()),
            "tokens": int(tokens.sum()),
            "sentences": len(nats),
        }
        for k, (nats, tokens) in sorted(lines.items())
    ]


def nll_rise_difference_ci(
    lines_a: dict[int, tuple[np.ndarray, np.ndarray]],
    lines_b: dict[int, tuple[np.ndarray, np.ndarray]],
    evalset: EvalSet,
    k_hi: int = 4,
    n_bootstrap: int = 1000,
    seed: int | None = SACREBLEU_SEED,
) -> dict:
    """Paired bootstrap 95% interval of rise(A) - rise(B), where a model's rise is its NLL per
    reference token on the ``k_hi`` lines minus that on the k = 1 lines they were joined from
    (nats; ``nll_lines_by_k``). Units as ``cells.retention_difference_ci``: each joined line
    with its own single lines, for both models. Below 0: A's loss grows less on long inputs than
    B's.

    Returns:
        ``{"a", "b", "difference", "low", "high", "mean", "units"}``: the two rises and their
        difference in nats per token, the interval, the resampled differences' mean, the units.

    Raises:
        ValueError: lines missing for k = 1 or ``k_hi``, line counts that do not match the
            evalset, or as ``retention_units`` and ``paired_difference_ci``.
    """
    units = retention_units(evalset, k_hi)  # (U, K) positions among the k = 1 lines
    want = {1: len(_lines_of(evalset, 1)), k_hi: len(_lines_of(evalset, k_hi))}
    for name, lines in (("A", lines_a), ("B", lines_b)):
        got = {k: len(lines[k][0]) if k in lines else 0 for k in want}
        if got != want:
            raise ValueError(f"model {name}: NLL of {got} lines by k, the evalset has {want}")

    def stat(lines):
        n1, t1 = lines[1]
        nh, th = lines[k_hi]

        def rise(idx: np.ndarray) -> float:
            u = units[idx].ravel()
            return float(nh[idx].sum() / th[idx].sum() - n1[u].sum() / t1[u].sum())

        return rise

    rise_a, rise_b = stat(lines_a), stat(lines_b)
    everything = np.arange(len(units))
    d = paired_difference_ci(rise_a, rise_b, len(units), n_bootstrap, seed)
    return {"a": rise_a(everything), "b": rise_b(everything), **d, "units": len(units)}


def _encoded(tok: Tokenizer, evalset: EvalSet, k: int, n_pos: int | None) -> TokenizedPairs:
    """Every k line encoded (``tokenize_pairs`` with no length limit), or ValueError."""
    idx = _lines_of(evalset, k)
    src, ref = [evalset.src[i] for i in idx], [evalset.ref[i] for i in idx]
    text = ParallelText(src, ref, list(range(1, len(idx) + 1)), f"{evalset.name} k={k}")
    text.n_read = len(idx)
    pairs = tokenize_pairs(text, tok.encode_src, tok.encode_tgt, sys.maxsize, "nll")
    if len(pairs) != len(idx):
        raise ValueError(
            f"{evalset.origin}: {len(idx) - len(pairs)} of {len(idx)} k = {k} lines encode to "
            "no token on one side; their loss is undefined"
        )
    if n_pos is not None:
        over = sum(
            max(len(s), len(t) + 1) > n_pos for s, t in zip(pairs.src, pairs.tgt, strict=True)
        )
        if over:
            raise ValueError(
                f"{over} of {len(idx)} k = {k} lines are longer than the model's max_positions "
                f"({n_pos}); raise it to score them"
            )
    return pairs


# ---- per caption, in context against alone --------------------------------------------------


def _check_positions(pairs: TokenizedPairs, n_pos: int | None) -> None:
    if n_pos is None:
        return
    over = sum(max(len(s), len(t) + 1) > n_pos for s, t in zip(pairs.src, pairs.tgt, strict=True))
    if over:
        raise ValueError(
            f"{over} of {len(pairs)} examples are longer than the model's max_positions "
            f"({n_pos}); raise it to score them"
        )


def _token_nats(
    model: Seq2SeqModel, pairs: TokenizedPairs, batch_tokens: int, device
) -> list[np.ndarray]:
    """Per example, the teacher-forced loss of each target position (T,) float64 nats, EOS
    last; padded positions are cut off."""
    out: list[np.ndarray] = [np.empty(0)] * len(pairs)
    with torch.no_grad():
        for idx, b in eval_batches(pairs, batch_tokens, device):
            logp = torch.log_softmax(model(b.src, b.src_mask, b.tgt_in).float(), -1)  # (B, T, V)
            nats = -logp.gather(-1, b.tgt_out.unsqueeze(-1)).squeeze(-1)  # (B, T)
            nats = nats.masked_fill(b.tgt_out == PAD, 0.0).double().cpu().numpy()
            for row, i in enumerate(idx):
                out[i] = nats[row, : len(pairs.tgt[i]) + 1]
    return out


def _gap_lines(lines_by_k: Lines, k: int, name: str = "") -> tuple[np.ndarray, np.ndarray]:
    if k not in lines_by_k:
        raise ValueError(f"{name}no caption gaps for k = {k} (have k = {sorted(lines_by_k)})")
    gaps, tokens = lines_by_k[k]
    if len(gaps) != len(tokens):
        raise ValueError(f"{name}k = {k}: {len(gaps)} gaps but {len(tokens)} token counts")
    return np.asarray(gaps, dtype=np.float64), np.asarray(tokens, dtype=np.int64)


def _per_token(gaps: np.ndarray, tokens: np.ndarray):
    return lambda idx: float(gaps[idx].sum() / tokens[idx].sum())


def caption_gap_ci(
    lines_by_k: Lines,
    k: int,
    n_bootstrap: int = 1000,
    seed: int | None = SACREBLEU_SEED,
) -> dict:
    """One model's caption gap at ``k`` (``rho.CaptionNLL.gaps``) per caption token, with a
    bootstrap 95% interval over the joined lines (``stats.bootstrap_ci``: the percentile rule of
    ``stats.paired_difference_ci``).

    Returns:
        ``{"gap", "low", "high", "units"}``: the summed gaps over the summed caption tokens (nats
        per token; above 0: captions are scored worse in the join), the interval, and the number
        of joined lines.

    Raises:
        ValueError: no gaps for ``k``, or as ``bootstrap_ci``.
    """
    gaps, tokens = _gap_lines(lines_by_k, k)
    d = bootstrap_ci(_per_token(gaps, tokens), len(gaps), n_bootstrap, seed)
    return {"gap": d["value"], "low": d["low"], "high": d["high"], "units": len(gaps)}


def caption_gap_difference_ci(
    a_lines: Lines,
    b_lines: Lines,
    k: int,
    n_bootstrap: int = 1000,
    seed: int | None = SACREBLEU_SEED,
) -> dict:
    """Paired bootstrap 95% interval of gap(A) - gap(B) at ``k`` (nats per caption token;
    ``stats.paired_difference_ci`` over the joined lines, the same lines for both models).
    Below 0: A's captions lose less in long inputs than B's.

    Returns:
        ``{"a", "b", "difference", "low", "high", "mean", "units"}``: the two gaps and their
        difference, the interval, the resampled differences' mean, the number of joined lines.

    Raises:
        ValueError: no gaps for ``k`` in either, line counts that differ, or as
            ``paired_difference_ci``.
    """
    ga, ta = _gap_lines(a_lines, k, "model A: ")
    gb, tb = _gap_lines(b_lines, k, "model B: ")
    if len(ga) != len(gb):
        raise ValueError(
            f"k = {k}: models A and B were scored on different lines ({len(ga)} and {len(gb)})"
        )
    stat_a, stat_b = _per_token(ga, ta), _per_token(gb, tb)
    everything = np.arange(len(ga))
    d = paired_difference_ci(stat_a, stat_b, len(ga), n_bootstrap, seed)
    return {"a": stat_a(everything), "b": stat_b(everything), **d, "units": len(ga)}

"""The study's cells: per number of sentences joined (k), the score with its interval and the
evidence that tells a weak model from a weak search -- how short the outputs are, how many were
cut at the maximum length or ended early, the paired interval of a difference in retention
(BLEU on joined lines over BLEU on single lines), and the references' teacher-forced loss, which
involves no search at all.

Shape notation: U units of the paired bootstrap, K sentences joined into one line.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import numpy as np
import torch

from seq2seq.data.text import ParallelText, TokenizedPairs, tokenize_pairs
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.models import Seq2SeqModel
from seq2seq.study.evalsets import EvalSet
from seq2seq.study.stats import (
    SACREBLEU_SEED,
    BleuStats,
    bleu_ci,
    claim_refusal,
    paired_difference_ci,
)
from seq2seq.training.loss import row_loss_sums
from seq2seq.training.validate import eval_batches

__all__ = [
    "cell_scores",
    "nll_by_k",
    "nll_lines_by_k",
    "nll_rise_difference_ci",
    "nll_rows",
    "retention",
    "retention_difference_ci",
    "retention_units",
]


def _lines_of(evalset: EvalSet, k: int) -> list[int]:
    return [i for i, x in enumerate(evalset.k) if x == k]


def _pct(flags: Sequence[bool]) -> float:
    return 100.0 * sum(flags) / len(flags)


def cell_scores(
    evalset: EvalSet,
    hyps: Sequence[str],
    cut: Sequence[bool],
    tgt_lang: str | None = None,
    n_bootstrap: int = 1000,
    seed: int | None = SACREBLEU_SEED,
) -> list[dict]:
    """One row per k in ``evalset.k`` (ascending): BLEU of that k's lines, sacreBLEU's 95%
    bootstrap interval of it, and what explains it.

    Args:
        hyps: one hypothesis per evalset line.  cut: per line, whether decoding stopped at the
            maximum length without EOS (``Translation.cut``).
        tgt_lang: picks sacreBLEU's tokenizer.  n_bootstrap, seed: as ``stats.bleu_ci``.

    Returns:
        ``{"k", "sentences", "bleu", "low", "high", "bp", "ratio", "cut", "early",
        "mean_src_words", "refusal"}`` per k: BLEU and its interval in points (0-100); ``bp``
        BLEU's brevity penalty (0-1); ``ratio`` hypothesis over reference length in sacreBLEU
        tokens; ``cut`` the percentage of lines cut at the maximum length; ``early`` the
        percentage whose hypothesis has fewer than half its reference's whitespace words;
        ``mean_src_words`` whitespace words per source; ``refusal`` ``stats.claim_refusal``'s
        one-line reason or None.

    Raises:
        ValueError: ``hyps`` or ``cut`` not one per evalset line, or ``n_bootstrap`` < 2.
    """
    n = len(evalset.src)
    if len(hyps) != n or len(cut) != n:
        raise ValueError(
            f"{len(hyps)} hypotheses and {len(cut)} cut flags for {n} lines of {evalset.name}"
        )
    rows = []
    for k in sorted(set(evalset.k)):
        idx = _lines_of(evalset, k)
        hk, rk = [hyps[i] for i in idx], [evalset.ref[i] for i in idx]
        ci = bleu_ci(hk, rk, n_bootstrap, seed, tgt_lang)
        stats = BleuStats(hk, rk, tgt_lang)
        whole = stats.metric._compute_score_from_stats(stats.stats.sum(0).tolist())
        ratio = stats.length_ratio()
        early = [len(h.split()) < 0.5 * len(r.split()) for h, r in zip(hk, rk, strict=True)]
        rows.append(
            {
                "k": k,
                "sentences": len(idx),
                "bleu": ci["score"],
                "low": ci["low"],
                "high": ci["high"],
                "bp": float(whole.bp),
                "ratio": ratio,
                "cut": _pct([bool(cut[i]) for i in idx]),
                "early": _pct(early),
                "mean_src_words": sum(len(evalset.src[i].split()) for i in idx) / len(idx),
                "refusal": claim_refusal(len(idx), ratio),
            }
        )
    return rows


def retention(stats_by_k: dict[int, BleuStats], k_hi: int) -> float:
    """BLEU of the ``k_hi`` lines over BLEU of the k = 1 lines, as a fraction (nan when the
    k = 1 BLEU is 0).

    Raises:
        ValueError: ``stats_by_k`` lacks k = 1 or ``k_hi``.
    """
    missing = [k for k in (1, k_hi) if k not in stats_by_k]
    if missing:
        raise ValueError(f"retention: no BLEU statistics for k = {missing[0]}")
    base = stats_by_k[1].score()
    return stats_by_k[k_hi].score() / base if base else math.nan


def retention_units(evalset: EvalSet, k_hi: int) -> np.ndarray:
    """The paired bootstrap's units for retention at ``k_hi``: unit j is the joined ``k_hi``
    line j with the k = 1 lines it was joined from, k_hi·j .. k_hi·j + k_hi - 1 among the k = 1
    lines (``build_eval_set`` joins consecutive non-overlapping groups of the first lines).

    Returns:
        (U, K) int64: per unit, the positions among the k = 1 lines of its single lines.

    Raises:
        ValueError: ``k_hi`` < 2, no ``k_hi`` line, or a joined line whose source or reference is
            not the space-join of those single lines (the evalset was not built that way).
    """
    if k_hi < 2:
        raise ValueError(f"k_hi {k_hi}: retention compares joined lines (k >= 2) with k = 1")
    single, joined = _lines_of(evalset, 1), _lines_of(evalset, k_hi)
    if not joined:
        raise ValueError(f"{evalset.name}: no line joined from k = {k_hi} sentences")
    units = np.arange(len(joined) * k_hi, dtype=np.int64).reshape(len(joined), k_hi)
    for j, line in enumerate(joined):
        members = [single[p] for p in units[j] if p < len(single)]
        ok = len(members) == k_hi and all(
            getattr(evalset, side)[line] == " ".join(getattr(evalset, side)[m] for m in members)
            for side in ("src", "ref")
        )
        if not ok:
            raise ValueError(
                f"{evalset.name}: k = {k_hi} line {j} is not k = 1 lines {k_hi * j}..."
                f"{k_hi * j + k_hi - 1} joined by a space; cannot pair it with its sentences"
            )
    return units


def retention_difference_ci(
    hyps_a: Sequence[str],
    hyps_b: Sequence[str],
    evalset: EvalSet,
    k_hi: int = 4,
    tgt_lang: str | None = None,
    n_bootstrap: int = 1000,
    seed: int | None = SACREBLEU_SEED,
) -> dict:
    """Paired bootstrap 95% interval of retention(A) - retention(B) at ``k_hi``
    (``stats.paired_difference_ci``; units from ``retention_units``, so a resample keeps each
    joined line together with its own single lines, for both systems).

    Retention here is BLEU of the ``k_hi`` lines over BLEU of the k = 1 lines they were joined
    from; it equals ``retention`` when those cover every k = 1 line.

    Args:
        hyps_a, hyps_b: one hypothesis per evalset line, of systems A and B.
        tgt_lang: picks sacreBLEU's tokenizer.  n_bootstrap, seed: as ``paired_difference_ci``.

    Returns:
        ``{"a", "b", "difference", "low", "high", "mean", "units"}``: the two retentions and
        their difference as fractions, the interval and the resampled differences' mean, and the
        number of units.

    Raises:
        ValueError: hypotheses not one per evalset line, or as ``retention_units`` and
            ``paired_difference_ci``.
    """
    n = len(evalset.src)
    if len(hyps_a) != n or len(hyps_b) != n:
        raise ValueError(
            f"{len(hyps_a)} and {len(hyps_b)} hypotheses for {n} lines of {evalset.name}"
        )
    units = retention_units(evalset, k_hi)
    single, joined = _lines_of(evalset, 1), _lines_of(evalset, k_hi)

    def stat(hyps: Sequence[str]):
        s1 = BleuStats([hyps[i] for i in single], [evalset.ref[i] for i in single], tgt_lang)
        hi = BleuStats([hyps[i] for i in joined], [evalset.ref[i] for i in joined], tgt_lang)

        def ret(idx: np.ndarray) -> float:
            base = s1.score(units[idx].ravel())
            return hi.score(idx) / base if base else math.nan

        return ret

    ret_a, ret_b = stat(hyps_a), stat(hyps_b)
    everything = np.arange(len(units))
    d = paired_difference_ci(ret_a, ret_b, len(units), n_bootstrap, seed)
    return {"a": ret_a(everything), "b": ret_b(everything), **d, "units": len(units)}


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
    (nats; ``nll_lines_by_k``). Units as ``retention_difference_ci``: each joined line with its
    own single lines, for both models. Below 0: A's loss grows less on long inputs than B's.

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

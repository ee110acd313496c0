"""The references' teacher-forced loss, which involves no search at all: how well a model itself
scores the right answer on long inputs.

Two measures: by k (``nll_lines_by_k``, ``nll_rows``), NLL per reference token of each k's lines,
EOS included, whose rise from k = 1 mixes how well a caption is scored with how well the decoder
handles the joins and the one EOS; and per caption in context (``rho.CaptionNLL.gaps``,
``caption_gap_ci``), each caption's own target tokens (EOS excluded) scored inside its k-join
minus the same tokens scored alone: what the long input costs the caption (above 0: worse).

Every line counts (no length filter). Examples are batched as validation batches them
(``validate.eval_batches``); padding never counts, so no score depends on its batch.

Shape notation: B batch, T target length (EOS included), V target vocabulary.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from seq2seq.data.text import ParallelText, TokenizedPairs, tokenize_pairs
from seq2seq.data.tokenizer import PAD, Tokenizer
from seq2seq.models import Seq2SeqModel
from seq2seq.study.evalsets import EvalSet, lines_of
from seq2seq.study.stats import SACREBLEU_SEED, bootstrap_ci
from seq2seq.training.loss import row_loss_sums
from seq2seq.training.validate import eval_batches

Lines = dict[int, tuple[np.ndarray, np.ndarray]]
"""k -> (per line a float64 quantity in nats, per line its int64 token count)."""


@contextmanager
def eval_mode(model: Seq2SeqModel) -> Iterator[None]:
    """The model in eval mode, its training mode restored afterwards."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def nll_lines_by_k(
    model: Seq2SeqModel,
    tok: Tokenizer,
    evalset: EvalSet,
    device: torch.device,
    batch_tokens: int = 3000,
) -> Lines:
    """Teacher-forced negative log-likelihood of every reference given its source, line by line,
    each k's lines batched apart (module docstring).

    Returns:
        k -> (nats, tokens): per line of that k, in evalset order, the un-smoothed loss summed over
        its reference tokens (EOS included), in nats (float64), and their count (int64).

    Raises:
        ValueError: a line whose source or reference encodes to no token, or, for a model with a
            position limit (the Transformer's ``max_positions``), lines longer than it (counted).
    """
    out = {}
    with eval_mode(model):
        for k in sorted(set(evalset.k)):
            pairs = _encoded(tok, evalset, k)
            check_positions(pairs, model.max_positions, f"k = {k} lines")
            out[k] = _line_losses(model, pairs, batch_tokens, device)
    return out


def _line_losses(model: Seq2SeqModel, pairs: TokenizedPairs, batch_tokens: int, device):
    nats = np.zeros(len(pairs), dtype=np.float64)
    tokens = np.array([len(t) + 1 for t in pairs.tgt], dtype=np.int64)
    with torch.no_grad():
        for idx, b in eval_batches(pairs, batch_tokens, device):
            logits = model(b.src, b.src_mask, b.tgt_in)  # (B, T, V)
            nats[idx] = row_loss_sums(logits, b.tgt_out).double().cpu().numpy()
    return nats, tokens


def nll_rows(lines: Lines) -> list[dict]:
    """NLL per reference token by k from ``nll_lines_by_k``'s lines.

    Returns:
        ``{"k", "nll", "tokens", "sentences"}`` per k (ascending): mean un-smoothed loss in nats
        per reference token (EOS included, padding not), the token count, the line count.
    """
    return [
        {
            "k": k,
            "nll": float(nats.sum() / tokens.sum()),
            "tokens": int(tokens.sum()),
            "sentences": len(nats),
        }
        for k, (nats, tokens) in sorted(lines.items())
    ]


def _encoded(tok: Tokenizer, evalset: EvalSet, k: int) -> TokenizedPairs:
    """Every k line encoded (``tokenize_pairs`` with no length limit), or ValueError."""
    idx = lines_of(evalset.k, k)
    src, ref = [evalset.src[i] for i in idx], [evalset.ref[i] for i in idx]
    text = ParallelText(src, ref, list(range(1, len(idx) + 1)), f"{evalset.name} k={k}")
    text.n_read = len(idx)
    pairs = tokenize_pairs(text, tok.encode_src, tok.encode_tgt, sys.maxsize, "nll")
    if len(pairs) != len(idx):
        raise ValueError(
            f"{evalset.origin}: {len(idx) - len(pairs)} of {len(idx)} k = {k} lines encode to "
            "no token on one side; their loss is undefined"
        )
    return pairs


def check_positions(pairs: TokenizedPairs, n_pos: int | None, what: str = "examples") -> None:
    """Raises ValueError naming how many of ``pairs`` (``what``) exceed ``n_pos`` positions."""
    if n_pos is None:
        return
    over = sum(max(len(s), len(t) + 1) > n_pos for s, t in zip(pairs.src, pairs.tgt, strict=True))
    if over:
        raise ValueError(
            f"{over} of {len(pairs)} {what} are longer than the model's max_positions "
            f"({n_pos}); raise it to score them"
        )


def token_nats(
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


def caption_gap_ci(
    lines_by_k: Lines, k: int, n_bootstrap: int = 1000, seed: int | None = SACREBLEU_SEED
) -> dict:
    """One model's caption gap at ``k`` (``rho.CaptionNLL.gaps``) per caption token, with a
    bootstrap 95% interval over the joined lines (``stats.bootstrap_ci``).

    Returns:
        ``{"gap", "low", "high", "units"}``: the summed gaps over the summed caption tokens (nats
        per token), the interval, and the number of joined lines.

    Raises:
        ValueError: no gaps for ``k``, gaps and token counts of different lengths, or as
            ``bootstrap_ci``.
    """
    if k not in lines_by_k:
        raise ValueError(f"no caption gaps for k = {k} (have k = {sorted(lines_by_k)})")
    gaps, tokens = lines_by_k[k]
    if len(gaps) != len(tokens):
        raise ValueError(f"k = {k}: {len(gaps)} gaps but {len(tokens)} token counts")
    gaps, tokens = np.asarray(gaps, dtype=np.float64), np.asarray(tokens, dtype=np.int64)
    d = bootstrap_ci(
        lambda idx: float(gaps[idx].sum() / tokens[idx].sum()), len(gaps), n_bootstrap, seed
    )
    return {"gap": d["value"], "low": d["low"], "high": d["high"], "units": len(gaps)}

"""The study's statistic (rule v3, ``verdict_v3``): the share of what a caption's source tells
the model that survives joining captions into one long input.

Per caption i of the N test captions (the k = 1 lines), three teacher-forced scores of exactly
the same target tokens (the caption's own, EOS excluded), in nats:

- A_i, alone: the caption with its own source;
- C_i^k, in context: the caption's span inside its k-join (``data.text.concat_pairs``' layout:
  the captions' id lists concatenated, one EOS at the end of the join);
- F_i, free: the caption alone with a wrong source, that of caption (i + N // 2) mod N (a
  derangement for N >= 2, the same for every model).

F_i - A_i is what the right source is worth to the model on that caption; F_i - C_i^k what is left
of it inside the join. Pooled over the captions of the k-joined lines as a ratio of sums,

    rho_k = sum_i (F_i - C_i^k) / sum_i (F_i - A_i),

1 when joining costs nothing, 0 when the join leaves the caption no better off than a wrong
source. It involves no search (so no runaway decoding), and it divides out each model's k = 1
level: a weaker model has a smaller F - A, and only the share it keeps counts. Intervals are
paired bootstraps over the joined lines (``stats.bootstrap_ci``), each line with its captions.

Beside it, kept in each per-line file: the references' teacher-forced loss by k
(``nll_lines_by_k``), per line of each k, EOS included. Every line counts (no length filter).
Examples are batched as validation batches them (``validate.eval_batches``); padding never
counts, so no score depends on its batch.

Shape notation: B batch, T target length (EOS included), V target vocabulary; N captions, U
joined lines of one k, K captions per joined line.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from seq2seq.data.text import ParallelText, TokenizedPairs, tokenize_pairs
from seq2seq.data.tokenizer import PAD, Tokenizer
from seq2seq.decoding.translate import eval_mode
from seq2seq.models import Seq2SeqModel
from seq2seq.study.cells import retention_units
from seq2seq.study.evalsets import EvalSet, lines_of
from seq2seq.study.stats import paired_difference_ci
from seq2seq.training.loss import row_loss_sums
from seq2seq.training.validate import eval_batches

Lines = dict[int, tuple[np.ndarray, np.ndarray]]
"""k -> (per line a float64 quantity in nats, per line its int64 token count)."""


def nll_lines_by_k(
    model: Seq2SeqModel,
    tok: Tokenizer,
    evalset: EvalSet,
    device: torch.device,
    batch_tokens: int = 3000,
) -> Lines:
    """Teacher-forced NLL of every reference given its source, each k's lines batched apart:
    k -> (nats, tokens), per line of that k in evalset order the un-smoothed loss summed over its
    reference tokens (EOS included; float64) and their count (int64). ValueError: a line that
    encodes to no token on one side, or lines longer than the model's ``max_positions``."""
    out = {}
    with eval_mode(model), torch.no_grad():
        for k in sorted(set(evalset.k)):
            pairs = _encoded(tok, evalset, k)
            check_positions(pairs, model.max_positions, f"k = {k} lines")
            nats = np.zeros(len(pairs), dtype=np.float64)
            for idx, b in eval_batches(pairs, batch_tokens, device):
                logits = model(b.src, b.src_mask, b.tgt_in)  # (B, T, V)
                nats[idx] = row_loss_sums(logits, b.tgt_out).double().cpu().numpy()
            out[k] = nats, np.array([len(t) + 1 for t in pairs.tgt], dtype=np.int64)
    return out


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


def derangement(n: int) -> np.ndarray:
    """(N,) int64: caption i gets the wrong source (i + n // 2) mod n, never its own; ValueError
    for n < 2 (one caption has no other source)."""
    if n < 2:
        raise ValueError(f"{n} caption(s): a wrong source needs at least 2 captions")
    return (np.arange(n, dtype=np.int64) + n // 2) % n


@dataclass
class CaptionNLL:
    """One model's per-caption scores on one evaluation set (module docstring).

    Attributes:
        tokens: (N,) int64 target tokens per caption (EOS excluded).
        alone, free: (N,) float64 nats: A_i and F_i.
        ctx: k -> (U, K) float64 nats: C_i^k of the captions of each k-joined line, in the order
            of ``units[k]``.
        units: k -> (U, K) int64 caption positions of each k-joined line
            (``cells.retention_units``).
    """

    tokens: np.ndarray
    alone: np.ndarray
    free: np.ndarray
    ctx: dict[int, np.ndarray]
    units: dict[int, np.ndarray]

    def rho(self, k: int, idx: np.ndarray | None = None) -> float:
        """rho_k over the joined lines ``idx`` (repeats counted; None: all), nan where the
        source is worth nothing (sum of F - A is 0)."""
        rows = slice(None) if idx is None else idx
        return self.kept(self.units[k][rows], self.ctx[k][rows])

    def kept(self, u: np.ndarray, ctx: np.ndarray) -> float:
        """sum(F - C) / sum(F - A) over the captions ``u`` whose in-context nats are ``ctx`` (the
        same shape), nan where the source is worth nothing (sum of F - A is 0)."""
        worth = float((self.free[u] - self.alone[u]).sum())
        return float((self.free[u] - ctx).sum()) / worth if worth else math.nan

    def to_json(self) -> dict:
        """Plain lists, for a per-line file (``study.lines``)."""
        return {
            "tokens": self.tokens.tolist(),
            "alone": self.alone.tolist(),
            "free": self.free.tolist(),
            "ctx": {str(k): v.tolist() for k, v in self.ctx.items()},
            "units": {str(k): v.tolist() for k, v in self.units.items()},
        }

    @classmethod
    def from_json(cls, d: dict) -> CaptionNLL:
        """The inverse of ``to_json``; ValueError when the arrays' sizes do not agree."""
        out = cls(
            np.asarray(d["tokens"], dtype=np.int64),
            np.asarray(d["alone"], dtype=np.float64),
            np.asarray(d["free"], dtype=np.float64),
            {int(k): np.asarray(v, dtype=np.float64) for k, v in d["ctx"].items()},
            {int(k): np.asarray(v, dtype=np.int64) for k, v in d["units"].items()},
        )
        n = len(out.tokens)
        if len(out.alone) != n or len(out.free) != n or set(out.ctx) != set(out.units):
            raise ValueError("caption NLLs: sizes do not agree")
        for k, u in out.units.items():
            if out.ctx[k].shape != u.shape or (u.size and u.max() >= n):
                raise ValueError(f"caption NLLs: k = {k} spans do not match its units")
        return out


def caption_nlls(
    model: Seq2SeqModel,
    tok: Tokenizer,
    evalset: EvalSet,
    device: torch.device,
    batch_tokens: int = 3000,
) -> CaptionNLL:
    """A, F and C^k of every caption of ``evalset`` (module docstring), by teacher forcing.

    Each caption is encoded on its own; a k-join's example concatenates its captions' id lists,
    source and target alike, with one EOS at the end, as training's joined pairs have, so each
    caption's span in the joined target is exact.

    Raises:
        ValueError: fewer than 2 captions, a caption whose source or reference encodes to no
            token, an example longer than the model's ``max_positions`` (counted), or as
            ``retention_units`` (a joined line that is not its captions joined by a space).
    """
    single = lines_of(evalset.k, 1)
    src = tok.encode_src([evalset.src[i] for i in single])
    tgt = tok.encode_tgt([evalset.ref[i] for i in single])
    empty = sum(not s or not t for s, t in zip(src, tgt, strict=True))
    if empty:
        raise ValueError(
            f"{evalset.origin}: {empty} of {len(single)} captions (k = 1 lines) encode to no "
            "token on one side; their loss is undefined"
        )
    n = len(single)
    wrong = derangement(n)
    units = {k: retention_units(evalset, k) for k in sorted(set(evalset.k)) if k >= 2}
    pairs = TokenizedPairs(list(src), list(tgt), list(range(n)))
    pairs.src += [src[j] for j in wrong]  # the free examples: n .. 2n - 1
    pairs.tgt += list(tgt)
    first = {}  # k -> index of its first joined example in ``pairs``
    for k, u in units.items():
        first[k] = len(pairs.src)
        for row in u:
            pairs.src.append([x for p in row for x in src[p]])
            pairs.tgt.append([x for p in row for x in tgt[p]])
    pairs.line_no = list(range(len(pairs.src)))
    check_positions(pairs, model.max_positions)
    with eval_mode(model):
        nats = token_nats(model, pairs, batch_tokens, device)
    lengths = np.array([len(t) for t in tgt], dtype=np.int64)
    alone = np.array([x[:-1].sum() for x in nats[:n]], dtype=np.float64)
    free = np.array([x[:-1].sum() for x in nats[n : 2 * n]], dtype=np.float64)
    ctx = {}
    for k, u in units.items():
        spans = np.zeros(u.shape, dtype=np.float64)
        for j, row in enumerate(u):
            ends = np.cumsum(lengths[row])
            per_pos = nats[first[k] + j]
            for c, (start, end) in enumerate(zip(ends - lengths[row], ends, strict=True)):
                spans[j, c] = per_pos[start:end].sum()
        ctx[k] = spans
    return CaptionNLL(lengths, alone, free, ctx, units)


def position_rho(c: CaptionNLL, k: int, position: int) -> float:
    """rho_k of the captions at ``position`` (0-based) of every k-joined line."""
    return c.kept(c.units[k][:, position], c.ctx[k][:, position])


def rho_spread(caps: Sequence[CaptionNLL]) -> dict:
    """One design over its seeds (``caps``, one per seed, scored on the same lines): rho by k
    (k = 1 is 1 by definition) and rho by caption position in the widest join, each ``{"mean",
    "low", "high", "n"}`` (the seeds' mean, smallest and largest; fractions)."""
    k_max = max(caps[0].units)
    by_k = {1: [1.0] * len(caps)} | {k: [c.rho(k) for c in caps] for k in sorted(caps[0].units)}
    by_pos = {p + 1: [position_rho(c, k_max, p) for c in caps] for p in range(k_max)}
    return {
        "by_k": {k: _spread(v) for k, v in by_k.items()},
        "by_position": {p: _spread(v) for p, v in by_pos.items()},
    }


def _spread(values) -> dict:
    return {
        "mean": float(np.mean(values)),
        "low": min(values),
        "high": max(values),
        "n": len(values),
    }


def rho_difference_ci(
    a: CaptionNLL, b: CaptionNLL, k: int, n_bootstrap: int = 1000, level: float = 0.95
) -> dict:
    """Paired bootstrap interval of rho_k(A) - rho_k(B) over the same resampled joined lines
    (``stats.paired_difference_ci``, plus ``"units"`` and ``"level"``). ValueError: no k-joined
    lines in either, the two scored on different lines, or as ``paired_difference_ci``."""

    for name, x in (("A", a), ("B", b)):
        if k not in x.units:
            raise ValueError(f"rho: model {name} has no k = {k} lines")
    if not np.array_equal(a.units[k], b.units[k]):
        raise ValueError(f"rho: k = {k}: models A and B were scored on different lines")
    n = len(a.units[k])
    d = paired_difference_ci(
        lambda i: a.rho(k, i), lambda i: b.rho(k, i), n, n_bootstrap, level=level
    )
    return {**d, "units": n, "level": level}

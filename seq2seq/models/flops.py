"""Model FLOPs of a training step, counted the usual way (Kaplan et al. 2020, §2.1; PaLM, App. B).
Shapes: B batch, S source length, T target length (EOS included; real lengths, padding not
counted). A weight used once per token costs 2 FLOPs forward and 4 backward, so a step costs
``6 · (N_src · ΣS + N_tgt · ΣT) + attention``: N_src the weights applied per source token (the
encoder, attention's key and value projections), N_tgt per target token (the decoder, queries, the
output projection); lookups, biases, norms and per-sentence bridges are not counted; attention
matmuls cost a·T·S + b·S² + c·T² per sentence. Each model says where its weights run
(``Seq2SeqModel.flop_sides``) and what its attention costs (``attention_flops``)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from seq2seq.models.base import FlopSide, Seq2SeqModel


@dataclass
class WeightCount:
    """Weights used per token on each side; ``names`` say which parameters went where (a weight
    split between sides is named once per side with its rows, ``name[rows a:b]``)."""

    src: int
    tgt: int
    names: dict[str, list[str]]


def _key(name: str, sides: dict) -> str | None:
    """The longest key of ``sides`` that names parameter ``name`` or a module above it."""
    keys = [k for k in sides if name == k or name.startswith(k + ".")]
    return max(keys, key=len) if keys else None


def _blocks(name: str, p: torch.Tensor, side) -> list[tuple[FlopSide, str, int]]:
    """(side, label, weights) of one parameter; a tuple of sides splits its rows into equal
    blocks, and neighbouring blocks on the same side are joined."""
    if isinstance(side, str):
        return [(side, name, p.numel())]
    rows, per_row = p.shape[0] // len(side), p[0].numel()
    out: list[tuple[FlopSide, str, int]] = []
    start = 0
    for i, s in enumerate(side):
        end = (i + 1) * rows
        if i + 1 == len(side) or side[i + 1] != s:
            out.append((s, f"{name}[rows {start}:{end}]", (end - start) * per_row))
            start = end
    return out


def count_weights(model: Seq2SeqModel) -> WeightCount:
    """Split the model's parameters into source-side, target-side, per-pair and uncounted ones."""
    sides = model.flop_sides()
    tables = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    names: dict[str, list[str]] = {"src": [], "tgt": [], "pair": [], "uncounted": []}
    n = dict.fromkeys(names, 0)
    for name, p in model.named_parameters():
        key = _key(name, sides)
        own_key = key in (name, name.rpartition(".")[0])
        if p.dim() < 2 or (id(p) in tables and not own_key):
            side = "uncounted"  # a vector, or a lookup table nobody named as a projection
        else:
            side = sides[key] if key is not None else "tgt"
        for s, label, weights in _blocks(name, p, side):
            names[s].append(label)
            n[s] += weights
    return WeightCount(n["src"], n["tgt"], names)


def step_flops(model: Seq2SeqModel, src_lens: torch.Tensor, tgt_lens: torch.Tensor) -> float:
    """Model FLOPs of one training step (forward + backward) on sentences of these real lengths:
    src_lens (B,) source tokens per sentence, tgt_lens (B,) target tokens (EOS included)."""
    w, a = count_weights(model), model.attention_flops()
    s, t = src_lens.double(), tgt_lens.double()
    dense = 6.0 * (w.src * s.sum() + w.tgt * t.sum())
    attn = (
        a.per_pair * (t * s).sum()
        + a.per_src_square * (s**2).sum()
        + a.per_tgt_square * (t**2).sum()
    )
    return float(dense + attn)


def formula(model: Seq2SeqModel) -> str:
    """The count, with this model's numbers, for printing beside the figure."""
    w, a = count_weights(model), model.attention_flops()
    terms = [f"6·({w.src:,}·ΣS + {w.tgt:,}·ΣT)"]
    for coef, sum_ in (
        (a.per_src_square, "ΣS²"),
        (a.per_tgt_square, "ΣT²"),
        (a.per_pair, "Σ(T·S)"),
    ):
        if coef:
            terms.append(f"{coef:.0f}·{sum_}")
    return " + ".join(terms)

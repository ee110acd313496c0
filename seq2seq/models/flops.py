"""Model FLOPs of a training step, counted the usual way (Kaplan et al. 2020, §2.1; PaLM, App. B).

Shape notation: S source length, T target length (EOS included), D model size, V target vocabulary.

A weight matrix used once per token costs 2 FLOPs per weight forward and 4 backward, so a training
step costs 6 x (weights used per token) per token, on each side:

    6 · (N_src · ΣS + N_tgt · ΣT) + attention

N_src counts the weights applied to every source token (the encoder, and the projections of the
encoder states that attention reads: keys and values); N_tgt those applied to every target token
(the decoder, attention queries, the output projection to V, tied or not). Embedding lookups,
biases, norms and per-sentence bridges are not counted. The attention matmuls (score and weighted
sum) cost, per sentence, forward: 2·d per (query, key) pair for each product, times 3 for training:

- Transformer: 12·D · (L_enc·S² + L_dec·(T² + T·S)) (causal self-attention counted over the full
  T², as PaLM counts it)
- RNN attention: 6 · (score + context) · T·S, with score 2·A (additive: v_aᵀ tanh(·)), 2·H (dot,
  general) and context 2·D_enc; ``rnn`` has none.

Padding is not counted: S and T are each sentence's real lengths.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from seq2seq.config import ModelConfig


@dataclass
class WeightCount:
    """Weights used per token on each side; ``names`` say which parameters went where."""

    src: int
    tgt: int
    names: dict[str, list[str]]


def _side(name: str, p: torch.Tensor, cfg: ModelConfig) -> str:
    """Where a parameter is counted: ``src``, ``tgt``, ``pair`` (additive attention's v_a, in the
    per-pair attention cost) or ``uncounted``."""
    parts = name.split(".")
    if p.dim() < 2 or "embed" in name or name == "pos" or parts[0] in _BRIDGES:
        return "uncounted"
    if parts[-2] == "v_a":
        return "pair"
    general_keys = cfg.name == "luong" and cfg.score == "general" and parts[-2] == "W_a"
    if parts[0] == "encoder" or parts[-2] in ("U_a", "W_h") or general_keys:
        return "src"
    return "tgt"


_BRIDGES = ("bridge", "bridge_c", "W_s", "W_s_c")  # applied once per sentence


def count_weights(model: nn.Module, cfg: ModelConfig) -> WeightCount:
    """Split the model's parameters into source-side, target-side and uncounted ones."""
    names: dict[str, list[str]] = {"src": [], "tgt": [], "pair": [], "uncounted": []}
    n = {"src": 0, "tgt": 0, "pair": 0, "uncounted": 0}
    for name, p in model.named_parameters():
        side = _side(name, p, cfg)
        if side == "tgt" and ".cross_attn.in_proj" in name:
            # Q (first third) per target token; K and V (two thirds) per source token.
            q = p.shape[0] // 3 * p.shape[1]
            names["tgt"].append(name + "[Q]")
            names["src"].append(name + "[KV]")
            n["tgt"], n["src"] = n["tgt"] + q, n["src"] + p.numel() - q
            continue
        names[side].append(name)
        n[side] += p.numel()
    out = _tied_output(model)
    if out is not None:
        names["tgt"].append(f"{out[0]} (as the output projection)")
        n["tgt"] += out[1]
    return WeightCount(n["src"], n["tgt"], names)


def _tied_output(model: nn.Module) -> tuple[str, int] | None:
    """The output projection when it is an embedding matrix (not counted as a lookup)."""
    if getattr(model, "out_proj", 1) is None:  # Transformer with shared embeddings
        return "tgt_embed.weight", model.tgt_embed.weight.numel()
    out = getattr(model, "out", None)
    if out is not None and getattr(out, "tie_with", None) is not None:
        return "tgt_embed.weight", out.tie_with.weight.numel()
    return None


def attention_flops_per_pair(model: nn.Module, cfg: ModelConfig) -> float:
    """Training FLOPs of the attention matmuls per (target, source) position pair, for the RNN
    attention models (the Transformer is counted by ``step_flops``)."""
    if cfg.name == "rnn":
        return 0.0
    enc = model.encoder.out_size
    if cfg.name == "bahdanau" or (cfg.name == "luong" and cfg.score == "concat"):
        score = 2 * cfg.attention_size
    else:
        score = 2 * cfg.hidden_size
    return 3.0 * (score + 2 * enc)


def step_flops(
    model: nn.Module, cfg: ModelConfig, src_lens: torch.Tensor, tgt_lens: torch.Tensor
) -> float:
    """Model FLOPs of one training step (forward + backward) on sentences of these real lengths.

    Args:
        src_lens: (B,) source tokens per sentence.  tgt_lens: (B,) target tokens (EOS included).
    """
    w = count_weights(model, cfg)
    s, t = src_lens.double(), tgt_lens.double()
    dense = 6.0 * (w.src * s.sum() + w.tgt * t.sum())
    if cfg.name == "transformer":
        attn = (
            12.0
            * cfg.d_model
            * (cfg.n_encoder_layers * (s**2).sum() + cfg.n_decoder_layers * (t**2 + t * s).sum())
        )
    else:
        attn = attention_flops_per_pair(model, cfg) * (t * s).sum()
    return float(dense + attn)


def formula(model: nn.Module, cfg: ModelConfig) -> str:
    """The count, with this model's numbers, for printing beside the figure."""
    w = count_weights(model, cfg)
    head = f"6·({w.src:,}·ΣS + {w.tgt:,}·ΣT)"
    if cfg.name == "transformer":
        return (
            f"{head} + 12·{cfg.d_model}·({cfg.n_encoder_layers}·ΣS² + "
            f"{cfg.n_decoder_layers}·Σ(T²+T·S))"
        )
    per_pair = attention_flops_per_pair(model, cfg)
    return f"{head} + {per_pair:.0f}·Σ(T·S)" if per_pair else head

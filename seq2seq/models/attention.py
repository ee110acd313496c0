"""Attention for the RNN decoders: score -> mask -> softmax -> context. Shapes: B batch, S source
length, T query steps (1 while decoding), A attention size. ``project_keys`` runs once per sentence
on the encoder states h_1..h_S (U_a h_i in Bahdanau's terms), ``forward`` once per query."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from seq2seq.models.base import FlopSide, masked_softmax


class BahdanauAttention(nn.Module):
    """Additive attention (Bahdanau et al. 2015, §3.1 eq. 6 and appendix A.1.2).

    e_{t,i} = v_aᵀ tanh(W_a s_{t-1} + U_a h_i);  α_{t,i} = softmax_i(e_{t,i});  c_t = Σ α_{t,i} h_i

    The query is whatever the decoder passes; the Bahdanau decoder passes s_{t-1}."""

    def __init__(self, query_size: int, key_size: int, attention_size: int):
        super().__init__()
        self.key_size, self.attention_size = key_size, attention_size
        self.W_a = nn.Linear(query_size, attention_size, bias=False)
        self.U_a = nn.Linear(key_size, attention_size, bias=True)
        self.v_a = nn.Linear(attention_size, 1, bias=False)

    def project_keys(self, keys: Tensor) -> Tensor:
        """(B, S, key_size) -> U_a h: (B, S, A), computed once per sentence."""
        return self.U_a(keys)

    def flop_sides(self) -> dict[str, FlopSide]:
        """U_a runs per source position, v_a per (query, key) pair, W_a (unnamed) per query."""
        return {"U_a": "src", "v_a": "pair"}

    def forward_flops_per_pair(self) -> int:
        """Forward FLOPs per (query, key) pair: the score v_aᵀ tanh(·), 2·A, and its share of the
        context Σ α h, 2·key_size (the values are the keys)."""
        return 2 * self.attention_size + 2 * self.key_size

    def forward(
        self, query: Tensor, proj_keys: Tensor, values: Tensor, mask: Tensor
    ) -> tuple[Tensor, Tensor]:
        """query (B, T, query_size), proj_keys (B, S, A) from ``project_keys``, values (B, S, Dv)
        the encoder states, mask (B, S) bool, True = real -> context (B, T, Dv), weights (B, T, S).
        """
        # 1) energies e = v_a^T tanh(W_a q + U_a h): (B, T, 1, A) + (B, 1, S, A) -> (B, T, S)
        energy = self.v_a(torch.tanh(self.W_a(query).unsqueeze(2) + proj_keys.unsqueeze(1)))
        # 2) softmax over real source positions only
        weights = masked_softmax(energy.squeeze(-1), mask)
        # 3) context c = sum_i alpha_i h_i: (B, T, S) @ (B, S, Dv)
        return torch.bmm(weights, values), weights


class LuongAttention(nn.Module):
    """Global attention with the scores of Luong et al. 2015, §3.1 eq. 8.

    - dot:     score(s_t, h_i) = s_tᵀ h_i               (needs equal sizes)
    - general: score(s_t, h_i) = s_tᵀ W_a h_i           (W_a h_i precomputed per sentence)
    - concat:  score(s_t, h_i) = v_aᵀ tanh(W_a [s_t; h_i]) = v_aᵀ tanh(W_q s_t + W_h h_i)
    """

    def __init__(self, score: str, query_size: int, key_size: int, attention_size: int):
        super().__init__()
        self.score = score
        self.query_size, self.key_size, self.attention_size = query_size, key_size, attention_size
        if score == "dot" and query_size != key_size:
            raise ValueError(f"dot score needs equal sizes, got {query_size} and {key_size}")
        if score == "general":
            self.W_a = nn.Linear(key_size, query_size, bias=False)
        elif score == "concat":
            # W_a [s; h] split into its query and key halves so the key half runs once.
            self.W_q = nn.Linear(query_size, attention_size, bias=False)
            self.W_h = nn.Linear(key_size, attention_size, bias=True)
            self.v_a = nn.Linear(attention_size, 1, bias=False)

    def project_keys(self, keys: Tensor) -> Tensor:
        """(B, S, key_size) -> h (dot), W_a h (general) or W_h h (concat)."""
        if self.score == "general":
            return self.W_a(keys)
        if self.score == "concat":
            return self.W_h(keys)
        return keys

    def flop_sides(self) -> dict[str, FlopSide]:
        """W_a (general) and W_h (concat) run per source position, v_a per (query, key) pair, W_q
        (unnamed) per query."""
        if self.score == "general":
            return {"W_a": "src"}
        if self.score == "concat":
            return {"W_h": "src", "v_a": "pair"}
        return {}

    def forward_flops_per_pair(self) -> int:
        """Forward FLOPs per (query, key) pair: the score, 2·A (concat: v_aᵀ tanh(·)) or
        2·query_size (dot, general: a dot product with h or W_a h), and its share of the context
        Σ α h, 2·key_size (the values are the keys)."""
        score = self.attention_size if self.score == "concat" else self.query_size
        return 2 * score + 2 * self.key_size

    def forward(
        self, query: Tensor, proj_keys: Tensor, values: Tensor, mask: Tensor
    ) -> tuple[Tensor, Tensor]:
        """As ``BahdanauAttention.forward``, queried with the decoder states s_t."""
        if self.score == "concat":
            energy = self.v_a(torch.tanh(self.W_q(query).unsqueeze(2) + proj_keys.unsqueeze(1)))
            energy = energy.squeeze(-1)
        else:
            energy = torch.bmm(query, proj_keys.transpose(1, 2))  # (B, T, S)
        weights = masked_softmax(energy, mask)
        return torch.bmm(weights, values), weights

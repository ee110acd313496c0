"""The Transformer (Vaswani et al. 2017), in paper names. Shapes: B batch, S source length, T
target length, D = d_model, H heads, d_k = D / H, V vocabulary. Attention runs through
``F.scaled_dot_product_attention``, or explicitly when the weights are asked for (a test proves
the two agree). Incremental decoding keeps each decoder layer's keys and values (``k{i}``,
``v{i}``: (B, H, t, d_k)), so step t costs O(t), and the encoder output's cross-attention keys and
values once per sentence (``ck{i}``, ``cv{i}``)."""

from __future__ import annotations

import contextlib
import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seq2seq.models.base import AttentionFlops, Dropout, FlopSide, Lengths, Seq2SeqModel, State
from seq2seq.models.configs import TransformerConfig


def sinusoidal_positions(n: int, d_model: int) -> Tensor:
    """PE(pos, 2i) = sin(pos / 10000^{2i/D}), PE(pos, 2i+1) = cos(same)  (§3.5). Returns (n, D)."""
    pos = torch.arange(n, dtype=torch.float32).unsqueeze(1)
    inv = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model)
    )
    pe = torch.zeros(n, d_model)
    pe[:, 0::2] = torch.sin(pos * inv)
    pe[:, 1::2] = torch.cos(pos * inv[: d_model // 2])
    return pe


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    causal: bool,
    dropout: float,
    need_weights: bool,
) -> tuple[Tensor, Tensor | None]:
    """Scaled dot-product attention, softmax(QKᵀ/√d_k + mask) V  (§3.2.1, eq. 1), of q (B, H, T,
    d_k) over k, v (B, H, S, d_k); ``mask``: bool, broadcastable to (B, H, T, S), True = may attend,
    or None; ``causal``: t attends to positions <= t only (T == S). Returns (B, H, T, d_k) outputs
    and, if ``need_weights``, the (B, H, T, S) weights (explicit path)."""
    if not need_weights:
        # torch's CPU flash attention in bf16 (autocast training) ran its backward ~6x slower than
        # in fp32 on a Zen 4 (28% of a bf16 Transformer step); in fp32 the whole bf16 step is
        # 1.26x faster on one thread, 1.08x on two (docs/results/README.md, training speed). The
        # matmuls around it stay bf16.
        upcast = q.device.type == "cpu" and q.dtype == torch.bfloat16
        with torch.autocast("cpu", enabled=False) if upcast else contextlib.nullcontext():
            qkv = (t.float() for t in (q, k, v)) if upcast else (q, k, v)
            out = F.scaled_dot_product_attention(
                *qkv, attn_mask=mask, dropout_p=dropout, is_causal=causal
            )
        return out.to(q.dtype), None
    # 1) scores  2) mask  3) softmax  4) weighted sum — the same formula, weights kept.
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        t, s = scores.shape[-2:]
        scores = scores.masked_fill(
            ~torch.ones(t, s, dtype=torch.bool, device=q.device).tril(), float("-inf")
        )
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return F.dropout(weights, dropout, training=dropout > 0) @ v, weights


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_H) W_O, head_i = Attention(QW_i^Q, KW_i^K, VW_i^V)
    (§3.2.2). The three input projections live in one (3D, D) matrix so self-attention needs one
    matmul; cross-attention uses its query third and its key/value two thirds."""

    def __init__(self, d_model: int, n_heads: int, dropout: float):
        super().__init__()
        self.h, self.d_k, self.dropout = n_heads, d_model // n_heads, dropout
        self.in_proj = nn.Linear(d_model, 3 * d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def _heads(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.h, self.d_k).transpose(1, 2)  # (B, H, t, d_k)

    def project_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        return self._heads(q), self._heads(k), self._heads(v)

    def project_q(self, x: Tensor) -> Tensor:
        d = x.shape[-1]
        return self._heads(F.linear(x, self.in_proj.weight[:d], self.in_proj.bias[:d]))

    def project_kv(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        d = memory.shape[-1]
        kv = F.linear(memory, self.in_proj.weight[d:], self.in_proj.bias[d:])
        k, v = kv.chunk(2, dim=-1)
        return self._heads(k), self._heads(v)

    def attend(self, q, k, v, mask=None, causal=False, need_weights=False):
        """Heads (B, H, T, d_k) -> output (B, T, D) and weights (B, H, T, S) or None."""
        p = self.dropout if self.training else 0.0
        out, w = attention(q, k, v, mask, causal, p, need_weights)
        b, _, t, _ = out.shape
        return self.W_o(out.transpose(1, 2).reshape(b, t, self.h * self.d_k)), w


class FeedForward(nn.Module):
    """FFN(x) = W_2 ReLU(W_1 x + b_1) + b_2  (§3.3); ``dropout`` here acts on the ReLU output
    (``activation_dropout``, not in the paper, 0 by default as in fairseq)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float):
        super().__init__()
        self.W_1, self.W_2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.W_2(self.dropout(F.relu(self.W_1(x))))


class Sublayer(nn.Module):
    """Residual + LayerNorm around a sub-layer: post-norm LN(x + Dropout(f(x))) as in the paper
    (§5.4), or pre-norm x + Dropout(f(LN(x))) (Wang et al. 2019)."""

    def __init__(self, d_model: int, dropout: float, pre_norm: bool):
        super().__init__()
        self.norm, self.dropout = nn.LayerNorm(d_model), Dropout(dropout)
        self.pre_norm = pre_norm

    def forward(self, x: Tensor, f) -> tuple[Tensor, Tensor | None]:
        y, extra = f(self.norm(x) if self.pre_norm else x)
        x = x + self.dropout(y)
        return (x if self.pre_norm else self.norm(x)), extra


class EncoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attention_dropout)
        self.ffn = FeedForward(cfg.d_model, cfg.ffn_size, cfg.activation_dropout)
        self.sub1 = Sublayer(cfg.d_model, cfg.dropout, cfg.pre_norm)
        self.sub2 = Sublayer(cfg.d_model, cfg.dropout, cfg.pre_norm)

    def forward(self, x: Tensor, key_mask: Tensor) -> Tensor:
        """x (B, S, D), key_mask (B, 1, 1, S) -> (B, S, D)."""
        x, _ = self.sub1(
            x, lambda y: self.self_attn.attend(*self.self_attn.project_qkv(y), mask=key_mask)
        )
        x, _ = self.sub2(x, lambda y: (self.ffn(y), None))
        return x


class DecoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attention_dropout)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attention_dropout)
        self.ffn = FeedForward(cfg.d_model, cfg.ffn_size, cfg.activation_dropout)
        self.subs = nn.ModuleList(
            Sublayer(cfg.d_model, cfg.dropout, cfg.pre_norm) for _ in range(3)
        )

    def forward(
        self,
        x: Tensor,
        cross_k: Tensor,
        cross_v: Tensor,
        key_mask: Tensor,
        cache: tuple[Tensor, Tensor] | None,
        need_weights: bool,
    ) -> tuple[Tensor, Tensor | None, tuple[Tensor, Tensor]]:
        """x (B, T, D) (T = 1 with a ``cache``: this layer's earlier keys and values, (B, H, t,
        d_k) each; None attends causally over x itself) over the projected encoder output
        cross_k, cross_v (B, H, S, d_k) with key_mask (B, 1, 1, S) -> (B, T, D), cross-attention
        weights (B, H, T, S) or None, the new (keys, values)."""
        kv: tuple[Tensor, Tensor] = ()  # type: ignore[assignment]

        def self_attend(y: Tensor):
            nonlocal kv
            q, k, v = self.self_attn.project_qkv(y)
            if cache is not None:
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
            kv = (k, v)
            # With a cache the one new query may see every cached key; otherwise mask the future.
            return self.self_attn.attend(q, k, v, causal=cache is None)

        def cross_attend(y: Tensor):
            q = self.cross_attn.project_q(y)
            return self.cross_attn.attend(q, cross_k, cross_v, key_mask, need_weights=need_weights)

        x, _ = self.subs[0](x, self_attend)
        x, w = self.subs[1](x, cross_attend)
        x, _ = self.subs[2](x, lambda y: (self.ffn(y), None))
        return x, w, kv


class Transformer(Seq2SeqModel):
    """``transformer``: encoder and decoder stacks of multi-head attention (Vaswani et al. 2017).

    Embeddings are scaled by √d_model and summed with sinusoidal (or learned) positions (§3.4,
    §3.5). With ``share_embeddings`` the output projection is the target embedding matrix, and with
    a joint vocabulary the source embedding is that matrix too (§3.4). The returned alignment is the
    last decoder layer's cross-attention averaged over heads; ``cross_attention_maps`` gives every
    layer's heads."""

    has_attention = True

    def __init__(self, cfg: TransformerConfig, src_vocab: int, tgt_vocab: int, joint_vocab: bool):
        super().__init__()
        self.cfg = cfg
        self.src_vocab_size, self.tgt_vocab_size = src_vocab, tgt_vocab
        self.max_positions = cfg.max_positions
        d = cfg.d_model
        self.n_dec = cfg.n_decoder_layers
        self.static_state_keys = frozenset(
            {"src_mask", *(f"c{kv}{i}" for kv in "kv" for i in range(self.n_dec))}
        )
        self.tgt_embed = nn.Embedding(tgt_vocab, d, padding_idx=0)
        share = cfg.share_embeddings and joint_vocab and src_vocab == tgt_vocab
        self.src_embed = self.tgt_embed if share else nn.Embedding(src_vocab, d, padding_idx=0)
        for emb in dict.fromkeys([self.src_embed, self.tgt_embed]):  # a shared table once
            nn.init.normal_(emb.weight, 0.0, d**-0.5)
            nn.init.zeros_(emb.weight[0])
        if cfg.learned_positions:
            self.pos = nn.Parameter(torch.randn(cfg.max_positions, d) * 0.02)
        else:
            self.register_buffer(
                "pos", sinusoidal_positions(cfg.max_positions, d), persistent=False
            )
        self.dropout = Dropout(cfg.dropout)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        self.enc_norm = nn.LayerNorm(d) if cfg.pre_norm else nn.Identity()
        self.dec_norm = nn.LayerNorm(d) if cfg.pre_norm else nn.Identity()
        # §3.4: the pre-softmax projection shares the target embedding matrix.
        self.out_proj = None if cfg.share_embeddings else nn.Linear(d, tgt_vocab, bias=False)
        self.out_bias = nn.Parameter(torch.zeros(tgt_vocab))
        for name, p in self.named_parameters():
            if p.dim() == 2 and "embed" not in name and name != "pos":
                nn.init.xavier_uniform_(p)

    def flop_sides(self) -> dict[str, FlopSide | tuple[FlopSide, ...]]:
        """The encoder runs per source token. Cross-attention's fused [W^Q; W^K; W^V] projects the
        queries per target token and the keys and values per source token. With shared embeddings
        the target table is also the output projection; learned positions are a lookup."""
        sides: dict[str, FlopSide | tuple[FlopSide, ...]] = {"encoder": "src"}
        for i in range(self.n_dec):
            sides[f"decoder.{i}.cross_attn.in_proj.weight"] = ("tgt", "src", "src")
        if self.out_proj is None:
            sides["tgt_embed"] = "tgt"
        if self.cfg.learned_positions:
            sides["pos"] = "uncounted"
        return sides

    def attention_flops(self) -> AttentionFlops:
        """QKᵀ and αV cost 2·D per (query, key) pair each, x3 for training: 12·D per pair in each
        layer; S² pairs in encoder self-attention, T² in causal decoder self-attention (counted
        over the full square, as PaLM counts it, App. B), T·S in cross-attention."""
        per_layer = 12.0 * self.cfg.d_model
        n_enc, n_dec = self.cfg.n_encoder_layers, self.cfg.n_decoder_layers
        return AttentionFlops(
            per_pair=per_layer * n_dec,
            per_src_square=per_layer * n_enc,
            per_tgt_square=per_layer * n_dec,
        )

    def _embed(self, emb: nn.Embedding, ids: Tensor, start: int = 0) -> Tensor:
        n = ids.shape[1]
        if start + n > self.pos.shape[0]:
            raise ValueError(
                f"sequence of {start + n} tokens exceeds max_positions {self.pos.shape[0]}"
            )
        return self.dropout(emb(ids) * math.sqrt(self.cfg.d_model) + self.pos[start : start + n])

    @staticmethod
    def _key_mask(src_mask: Tensor) -> Tensor:
        """(B, S) -> (B, 1, 1, S); a row with no real token may attend anywhere (finite, no NaN)."""
        return (src_mask | ~src_mask.any(1, keepdim=True))[:, None, None, :]

    def encode(self, src: Tensor, src_mask: Tensor, src_lengths: Lengths | None = None) -> State:
        """src (B, S) -> enc_out (B, S, D) and src_mask (``src_lengths`` is not needed)."""
        x, mask = self._embed(self.src_embed, src), self._key_mask(src_mask)
        for layer in self.encoder:
            x = layer(x, mask)
        return {"enc_out": self.enc_norm(x), "src_mask": src_mask}

    def init_state(self, enc: State) -> State:
        out = enc["enc_out"]
        b, h, dk = out.shape[0], self.cfg.n_heads, self.cfg.d_model // self.cfg.n_heads
        state = {"src_mask": enc["src_mask"]}
        for i, layer in enumerate(self.decoder):
            state[f"ck{i}"], state[f"cv{i}"] = layer.cross_attn.project_kv(out)
            state[f"k{i}"] = state[f"v{i}"] = out.new_zeros(b, h, 0, dk)
        return state

    def _decode(
        self, tgt_in: Tensor, state: State, incremental: bool, need_weights: bool, every_layer=False
    ) -> tuple[Tensor, list[Tensor], State]:
        """Decoder stack over tgt_in (B, T) -> logits (B, T, V), the cross-attention weights
        (B, H, T, S) of the last layer (of every layer with ``every_layer``; none without
        ``need_weights``), and the next state."""
        start = state["k0"].shape[2] if incremental else 0
        x, mask = self._embed(self.tgt_embed, tgt_in, start), self._key_mask(state["src_mask"])
        new = {k: state[k] for k in self.static_state_keys}
        weights = []
        for i, layer in enumerate(self.decoder):
            cache = (state[f"k{i}"], state[f"v{i}"]) if incremental else None
            want = need_weights and (every_layer or i == self.n_dec - 1)
            x, w_i, (new[f"k{i}"], new[f"v{i}"]) = layer(
                x, state[f"ck{i}"], state[f"cv{i}"], mask, cache, want
            )
            if w_i is not None:
                weights.append(w_i)
        out_w = self.tgt_embed.weight if self.out_proj is None else self.out_proj.weight
        logits = F.linear(self.dec_norm(x), out_w, self.out_bias)
        return logits, weights, new

    def forward_attention(self, src, src_mask, tgt_in, need_attention=True, src_lengths=None):
        state = self.init_state(self.encode(src, src_mask))
        logits, weights, _ = self._decode(
            tgt_in, state, incremental=False, need_weights=need_attention
        )
        return logits, weights[-1].mean(1) if weights else None

    def cross_attention_maps(self, src, src_mask, tgt_in):
        state = self.init_state(self.encode(src, src_mask))
        _, weights, _ = self._decode(tgt_in, state, False, need_weights=True, every_layer=True)
        return torch.stack(weights, 1)  # L x (B, H, T, S) -> (B, L, H, T, S)

    def decode_step(self, prev_tokens, state, need_attention=False):
        logits, weights, state = self._decode(prev_tokens.unsqueeze(1), state, True, need_attention)
        attn = weights[-1].mean(1).squeeze(1) if weights else None  # (B, H, 1, S) -> (B, S)
        return logits.squeeze(1), attn, state

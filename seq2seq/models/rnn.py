"""RNN encoder-decoders: the fixed-vector bottleneck, Bahdanau's and Luong's attention wirings,
and RNNsearch's fixed-context ablation.

Shapes: B batch, S source length, T target steps, L layers, E embedding size, H decoder state size,
He encoder state size per direction, V vocabulary. Each model decodes through one method,
``_decode(tgt_in (B, T), state)``: training with the whole target, ``decode_step`` with T = 1, so
incremental decoding is the same computation as training, step for step."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from seq2seq.models.attention import BahdanauAttention, LuongAttention
from seq2seq.models.base import AttentionFlops, Dropout, FlopSide, Lengths, Seq2SeqModel, State
from seq2seq.models.configs import BahdanauConfig, LuongConfig, RNNConfig


def _rnn(cell: str, input_size: int, hidden: int, layers: int, dropout: float, bidir: bool):
    cls = nn.GRU if cell == "gru" else nn.LSTM
    return cls(
        input_size,
        hidden,
        num_layers=layers,
        dropout=dropout if layers > 1 else 0.0,
        bidirectional=bidir,
        batch_first=True,
    )


def _final_by_layer(h_n: Tensor, layers: int, dirs: int) -> Tensor:
    """nn.GRU/LSTM's (L*dirs, B, He) final state -> (B, L, dirs*He): [fwd; bwd] per layer."""
    _, b, he = h_n.shape
    return h_n.view(layers, dirs, b, he).permute(2, 0, 1, 3).reshape(b, layers, dirs * he)


class RNNEncoder(nn.Module):
    """Embedding + (bi)directional GRU/LSTM over the real tokens only (packed sequences)."""

    def __init__(self, vocab: int, cfg: RNNConfig | BahdanauConfig | LuongConfig):
        super().__init__()
        bidir = cfg.bidirectional
        self.dirs = 2 if bidir else 1
        self.layers = cfg.num_layers
        self.embed = nn.Embedding(vocab, cfg.emb_size, padding_idx=0)
        self.rnn = _rnn(cfg.cell, cfg.emb_size, cfg.enc_size, cfg.num_layers, cfg.dropout, bidir)
        self.dropout = Dropout(cfg.dropout)
        self.out_size = self.dirs * cfg.enc_size

    def forward(self, src: Tensor, src_mask: Tensor, src_lengths: Lengths | None = None) -> State:
        """enc_out (B, S, dirs*He), the states h_1..h_S (zeros at pads); enc_h (B, L, dirs*He), the
        final states per layer, [→h_S; ←h_1]; for LSTM also enc_c, the final cell states.
        ``src_lengths`` as in ``Seq2SeqModel.forward``."""
        lengths = src_mask.sum(1).cpu() if src_lengths is None else torch.as_tensor(src_lengths)
        lengths = lengths.clamp(min=1)  # an empty row reads one pad, stays finite
        packed = pack_padded_sequence(
            self.dropout(self.embed(src)), lengths, batch_first=True, enforce_sorted=False
        )
        out, final = self.rnn(packed)
        # unpacked in length order, then put back in batch order on the device: unpacking with
        # the indices would also return lengths, copying the indices to the host (a sync)
        out, _ = pad_packed_sequence(
            PackedSequence(out.data, out.batch_sizes), batch_first=True, total_length=src.shape[1]
        )
        out = out.index_select(0, packed.unsorted_indices)
        h_n, c_n = final if isinstance(final, tuple) else (final, None)
        state = {"enc_out": out, "enc_h": _final_by_layer(h_n, self.layers, self.dirs)}
        if c_n is not None:
            state["enc_c"] = _final_by_layer(c_n, self.layers, self.dirs)
        return {**state, "src_mask": src_mask}


class OutputLayer(nn.Module):
    """pre-output (…, P) -> logits (…, V); with a tied embedding, W_o = Eᵀ (Press & Wolf 2017),
    after a projection P -> E when the sizes differ."""

    def __init__(self, pre_size: int, vocab: int, dropout: float, tie_with: nn.Embedding | None):
        super().__init__()
        self.dropout = Dropout(dropout)
        self.tie_with = tie_with
        if tie_with is None:
            self.proj = nn.Linear(pre_size, vocab)
        else:
            emb = tie_with.embedding_dim
            self.to_emb = nn.Linear(pre_size, emb, bias=False) if pre_size != emb else None
            self.bias = nn.Parameter(torch.zeros(vocab))

    def forward(self, x: Tensor) -> Tensor:
        x = self.dropout(x)
        if self.tie_with is None:
            return self.proj(x)
        if self.to_emb is not None:
            x = self.to_emb(x)
        return F.linear(x, self.tie_with.weight, self.bias)


class _RNNDecoderModel(Seq2SeqModel):
    """Shared plumbing: encoder, target embedding, state <-> nn.RNN layout, the protocol methods.
    ``joint_vocab`` is not used: source and target keep their own embeddings. ``bridges``: the
    s_0 (and c_0) projections, run once per sentence."""

    bridges = ("bridge", "bridge_c")

    def __init__(self, src_vocab: int, tgt_vocab: int, cfg):
        super().__init__()
        self.cfg = cfg
        self.src_vocab_size, self.tgt_vocab_size = src_vocab, tgt_vocab
        self.encoder = RNNEncoder(src_vocab, cfg)
        self.tgt_embed = nn.Embedding(tgt_vocab, cfg.emb_size, padding_idx=0)
        self.dropout = Dropout(cfg.dropout)
        self.lstm = cfg.cell == "lstm"

    def _bridge_state(self, enc: State, bridge: nn.Linear, bridge_c: nn.Linear | None) -> State:
        """s_0 = tanh(W_b h_final) per layer (and c_0 = W_c c_final for an LSTM)."""
        state = {"h": torch.tanh(bridge(enc["enc_h"]))}
        if self.lstm:
            state["c"] = bridge_c(enc["enc_c"])
        return state

    def _hx(self, state: State):
        """The state's batch-first h (B, L, H) [and c] -> nn.GRU/LSTM's (L, B, H) [(h, c)]; done
        once per ``_decode``, not per step."""
        h = state["h"].transpose(0, 1).contiguous()
        return (h, state["c"].transpose(0, 1).contiguous()) if self.lstm else h

    def _state(self, hx, state: State) -> State:
        """nn.GRU/LSTM's hidden state -> the batch-first h [and c] of a decoding state, with the
        static entries of ``state``."""
        new = {"h": (hx[0] if self.lstm else hx).transpose(0, 1)}
        if self.lstm:
            new["c"] = hx[1].transpose(0, 1)
        return new | {k: state[k] for k in self.static_state_keys if k in state}

    def encode(self, src: Tensor, src_mask: Tensor, src_lengths: Lengths | None = None) -> State:
        return self.encoder(src, src_mask, src_lengths)

    def forward_attention(self, src, src_mask, tgt_in, need_attention=True, src_lengths=None):
        state = self.init_state(self.encode(src, src_mask, src_lengths))
        logits, attn, _ = self._decode(tgt_in, state)
        return logits, attn

    def decode_step(self, prev_tokens, state, need_attention=False):
        logits, attn, state = self._decode(prev_tokens.unsqueeze(1), state)
        return logits.squeeze(1), None if attn is None else attn.squeeze(1), state

    def _decode(self, tgt_in: Tensor, state: State) -> tuple[Tensor, Tensor | None, State]:
        raise NotImplementedError

    def flop_sides(self) -> dict[str, FlopSide]:
        """The encoder runs per source token; the ``bridges`` once per sentence (uncounted); a tied
        target embedding is also the output projection, per target token; then attention's."""
        sides: dict[str, FlopSide] = {"encoder": "src"}
        sides.update({b: "uncounted" for b in self.bridges if getattr(self, b) is not None})
        if self.out.tie_with is not None:
            sides["tgt_embed"] = "tgt"
        if self.has_attention:
            sides.update({f"attention.{k}": v for k, v in self.attention.flop_sides().items()})
        return sides

    def attention_flops(self) -> AttentionFlops:
        """Attention reads every (target, source) pair once: 3 x its forward FLOPs per pair."""
        if not self.has_attention:
            return AttentionFlops()
        return AttentionFlops(per_pair=3.0 * self.attention.forward_flops_per_pair())


class RNNSeq2Seq(_RNNDecoderModel):
    """``rnn``: the fixed-vector encoder-decoder (Sutskever et al. 2014; Cho et al. 2014).

    s_0 = tanh(W_b h_S);  s_t = RNN_dec(E(y_{t-1}), s_{t-1});  p(y_t) = softmax(W_o s_t), where h_S
    is [→h_S; ←h_1] for a bidirectional encoder. With ``feed_context`` (Cho et al. 2014, §2.2) the
    fixed c = h_S (top layer) also enters every step: s_t = RNN_dec([E(y_{t-1}); c], s_{t-1}) and
    p(y_t) = softmax(W_o [s_t; c; E(y_{t-1})]). No other encoder state reaches the decoder: that is
    the bottleneck. Returns no attention weights."""

    has_attention = False

    def __init__(self, cfg: RNNConfig, src_vocab: int, tgt_vocab: int, joint_vocab: bool):
        super().__init__(src_vocab, tgt_vocab, cfg)
        enc = self.encoder.out_size
        self.feed_context = cfg.feed_context
        self.static_state_keys = frozenset({"src_mask", "context"})
        self.bridge = nn.Linear(enc, cfg.hidden_size)
        self.bridge_c = nn.Linear(enc, cfg.hidden_size) if self.lstm else None
        ctx = enc if cfg.feed_context else 0
        self.rnn = _rnn(
            cfg.cell, cfg.emb_size + ctx, cfg.hidden_size, cfg.num_layers, cfg.dropout, False
        )
        pre = cfg.hidden_size + (ctx + cfg.emb_size if cfg.feed_context else 0)
        tie = self.tgt_embed if cfg.tie_embeddings else None
        self.out = OutputLayer(pre, tgt_vocab, cfg.dropout, tie)

    def init_state(self, enc: State) -> State:
        state = self._bridge_state(enc, self.bridge, self.bridge_c)
        state["src_mask"] = enc["src_mask"]
        if self.feed_context:
            state["context"] = enc["enc_h"][:, -1]  # (B, dirs*He): c = h_S of the top layer
        return state

    def _decode(self, tgt_in, state):
        emb = self.dropout(self.tgt_embed(tgt_in))  # (B, T, E)
        if not self.feed_context:
            out, hx = self.rnn(emb, self._hx(state))
            return self.out(out), None, self._state(hx, state)
        c = state["context"].unsqueeze(1).expand(-1, emb.shape[1], -1)  # (B, T, dirs*He)
        out, hx = self.rnn(torch.cat([emb, c], -1), self._hx(state))
        return self.out(torch.cat([out, c, emb], -1)), None, self._state(hx, state)


class BahdanauSeq2Seq(_RNNDecoderModel):
    """``bahdanau``: RNNsearch (Bahdanau et al. 2015, §3.1, appendix A): attend *before* the step.

    Wiring (the paper's, not the Luong-style "additive score after the step" some toolkits ship):
        s_0   = tanh(W_s ←h_1)                                   (A.2.2; per layer)
        e_t,i = v_aᵀ tanh(W_a s_{t-1} + U_a h_i)                   (query: the PREVIOUS state)
        c_t   = Σ_i softmax_i(e_t,i) h_i
        s_t   = RNN_dec([E(y_{t-1}); c_t], s_{t-1})               (context enters the RNN input)
        t_t   = maxout(U_o s_t + V_o E(y_{t-1}) + C_o c_t)         (deep output, pool size 2)
        p(y_t) = softmax(W_o t_t)
    The output layer conditions on s_t, following §3.1 eq. 4 (appendix A.2.2 writes s_{t-1}); most
    reimplementations do the same. With several decoder layers the query is the top layer's state.
    """

    has_attention = True
    bridges = ("W_s", "W_s_c")

    def __init__(self, cfg: BahdanauConfig, src_vocab: int, tgt_vocab: int, joint_vocab: bool):
        super().__init__(src_vocab, tgt_vocab, cfg)
        enc, self.he = self.encoder.out_size, cfg.enc_size
        self.static_state_keys = frozenset({"src_mask", "enc_out", "keys", "context"})
        self.W_s = nn.Linear(cfg.enc_size, cfg.hidden_size)
        self.W_s_c = nn.Linear(cfg.enc_size, cfg.hidden_size) if self.lstm else None
        if self.has_attention:  # the fixed-context ablation (RNNEncDec) has none
            self.attention = BahdanauAttention(cfg.hidden_size, enc, cfg.attention_size)
        self.rnn = _rnn(
            cfg.cell, cfg.emb_size + enc, cfg.hidden_size, cfg.num_layers, cfg.dropout, False
        )
        self.maxout_size = cfg.maxout_size
        self.pre_output = nn.Linear(cfg.hidden_size + cfg.emb_size + enc, 2 * cfg.maxout_size)
        tie = self.tgt_embed if cfg.tie_embeddings else None
        self.out = OutputLayer(cfg.maxout_size, tgt_vocab, cfg.dropout, tie)

    def _initial_state(self, enc: State) -> State:
        """s_0 = tanh(W_s ←h_1), with ←h_1 the backward half of the final state (the forward half
        if unidirectional), and the source mask."""
        back = {"enc_h": enc["enc_h"][..., -self.he :]}
        if self.lstm:
            back["enc_c"] = enc["enc_c"][..., -self.he :]
        state = self._bridge_state(back, self.W_s, self.W_s_c)
        state["src_mask"] = enc["src_mask"]
        return state

    def init_state(self, enc: State) -> State:
        state = self._initial_state(enc)
        state.update(enc_out=enc["enc_out"], keys=self.attention.project_keys(enc["enc_out"]))
        return state

    def _deep_output(self, s: Tensor, emb: Tensor, c: Tensor) -> Tensor:
        """logits = W_o maxout(U_o s_t + V_o E(y_{t-1}) + C_o c_t), pool size 2 (appendix A.2.2):
        s (B, T, H), emb (B, T, E), c (B, T, 2He) -> (B, T, V)."""
        t_pre = self.pre_output(torch.cat([s, emb, c], -1))
        t_max = t_pre.view(*t_pre.shape[:-1], self.maxout_size, 2).amax(-1)
        return self.out(t_max)

    def _decode(self, tgt_in, state):
        emb = self.dropout(self.tgt_embed(tgt_in))  # (B, T, E)
        hx = self._hx(state)
        outs, contexts, weights = [], [], []
        # unbind, not emb[:, t]: its backward is one stack instead of T full-size zero-and-add
        for emb_t in emb.unsqueeze(2).unbind(1):  # T x (B, 1, E)
            query = (hx[0] if self.lstm else hx)[-1].unsqueeze(1)  # s_{t-1}, top layer (B, 1, H)
            c, a = self.attention(query, state["keys"], state["enc_out"], state["src_mask"])
            out, hx = self.rnn(torch.cat([emb_t, c], -1), hx)
            outs.append(out)
            contexts.append(c)
            weights.append(a)
        s, c = torch.cat(outs, 1), torch.cat(contexts, 1)  # (B, T, H), (B, T, 2He)
        return self._deep_output(s, emb, c), torch.cat(weights, 1), self._state(hx, state)


class LuongSeq2Seq(_RNNDecoderModel):
    """``luong``: global attention (Luong et al. 2015, §3.1 and §3.3), attend *after* the step.

        s_t   = RNN_dec(E(y_{t-1}), s_{t-1})     or, with input feeding (§3.3),
        s_t   = RNN_dec([E(y_{t-1}); h̃_{t-1}], s_{t-1})
        α_t   = softmax(score(s_t, h_i)),  score ∈ {dot, general, concat};  c_t = Σ_i α_t,i h_i
        h̃_t   = tanh(W_c [c_t; s_t]);  p(y_t) = softmax(W_s h̃_t)
    s_0 = tanh(W_b [→h_S; ←h_1]) per layer. Without input feeding the whole target runs through the
    RNN in one call and all steps attend at once."""

    has_attention = True

    def __init__(self, cfg: LuongConfig, src_vocab: int, tgt_vocab: int, joint_vocab: bool):
        super().__init__(src_vocab, tgt_vocab, cfg)
        enc, h = self.encoder.out_size, cfg.hidden_size
        self.input_feeding = cfg.input_feeding
        self.static_state_keys = frozenset({"src_mask", "enc_out", "keys"})
        self.bridge = nn.Linear(enc, h)
        self.bridge_c = nn.Linear(enc, h) if self.lstm else None
        self.attention = LuongAttention(cfg.score, h, enc, cfg.attention_size)
        feed = h if cfg.input_feeding else 0
        self.rnn = _rnn(cfg.cell, cfg.emb_size + feed, h, cfg.num_layers, cfg.dropout, False)
        self.W_c = nn.Linear(enc + h, h, bias=False)
        tie = self.tgt_embed if cfg.tie_embeddings else None
        self.out = OutputLayer(h, tgt_vocab, cfg.dropout, tie)

    def init_state(self, enc: State) -> State:
        state = self._bridge_state(enc, self.bridge, self.bridge_c)
        state.update(
            src_mask=enc["src_mask"],
            enc_out=enc["enc_out"],
            keys=self.attention.project_keys(enc["enc_out"]),
        )
        if self.input_feeding:
            state["feed"] = state["h"].new_zeros(state["h"].shape[0], state["h"].shape[-1])
        return state

    def _attend(self, s: Tensor, state: State) -> tuple[Tensor, Tensor]:
        c, a = self.attention(s, state["keys"], state["enc_out"], state["src_mask"])
        return torch.tanh(self.W_c(torch.cat([c, s], -1))), a  # h̃ (B, T, H), α (B, T, S)

    def _decode(self, tgt_in, state):
        emb = self.dropout(self.tgt_embed(tgt_in))  # (B, T, E)
        hx = self._hx(state)
        if not self.input_feeding:
            s, hx = self.rnn(emb, hx)
            h_tilde, weights = self._attend(s, state)
            return self.out(h_tilde), weights, self._state(hx, state)
        feed, tildes, ws = state["feed"], [], []
        for emb_t in emb.unsqueeze(2).unbind(1):  # T x (B, 1, E)
            x = torch.cat([emb_t, self.dropout(feed).unsqueeze(1)], -1)
            s, hx = self.rnn(x, hx)
            h_t, a = self._attend(s, state)
            feed = h_t.squeeze(1)
            tildes.append(h_t)
            ws.append(a)
        new = {**self._state(hx, state), "feed": feed}
        return self.out(torch.cat(tildes, 1)), torch.cat(ws, 1), new


class RNNEncDec(BahdanauSeq2Seq):
    """``rnnencdec``: RNNsearch's own ablation, the fixed-context baseline (Bahdanau et al. 2015,
    §4.2 and appendix A.2.1; Cho et al. 2014a, eq. 5-6):

        s_0  = tanh(W_s ←h_1)                                    (as in ``bahdanau``)
        c    = [→h_S; ←h_1]                                      (fixed: the same for every t)
        s_t  = RNN_dec([E(y_{t-1}); c], s_{t-1})
        t_t  = maxout(U_o s_t + V_o E(y_{t-1}) + C_o c);  p(y_t) = softmax(W_o t_t)

    Every weight keeps its ``bahdanau`` shape, the attention's (W_a, U_a, v_a) aside, so a
    difference in how BLEU falls with source length is attention's alone. No encoder state other
    than the two final ones reaches the decoder. As c does not depend on t, the whole target runs
    through the RNN in one call. Returns no attention weights.

    ``context: mean`` (the mean-pool design; not in the paper): the masked mean of the
    annotations, m = (1/S) Σ_i h_i (B, 2He), stands exactly where the final states stand:
    c = m, and s_0 = tanh(W_s m←) with m← its backward half (for an LSTM, c_0 from m← too),
    every layer alike. The same shapes and one vector, but every position reaches it equally and
    none is selected: it separates "attention selects" from "final states favour the ends of the
    input"."""

    has_attention = False

    def init_state(self, enc: State) -> State:
        if self.cfg.context == "mean":
            mask = enc["src_mask"].unsqueeze(-1).to(enc["enc_out"].dtype)  # (B, S, 1)
            mean = (enc["enc_out"] * mask).sum(1) / mask.sum(1).clamp(min=1)  # (B, 2He)
            final = mean.unsqueeze(1).expand(-1, self.cfg.num_layers, -1)  # (B, L, 2He)
            enc = {**enc, "enc_h": final} | ({"enc_c": final} if self.lstm else {})
        state = self._initial_state(enc)
        state["context"] = enc["enc_h"][:, -1]  # (B, 2He): [→h_S; ←h_1] (or m) of the top layer
        return state

    def _decode(self, tgt_in: Tensor, state: State) -> tuple[Tensor, None, State]:
        emb = self.dropout(self.tgt_embed(tgt_in))  # (B, T, E)
        c = state["context"].unsqueeze(1).expand(-1, emb.shape[1], -1)  # (B, T, 2He)
        s, hx = self.rnn(torch.cat([emb, c], -1), self._hx(state))  # (B, T, H)
        return self._deep_output(s, emb, c), None, self._state(hx, state)

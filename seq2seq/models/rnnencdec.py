"""``rnnencdec``: RNNsearch's own ablation, the fixed-context baseline of Bahdanau et al. 2015.

Shapes: B batch, T target steps, E embedding size, H decoder state size, He encoder state size per
direction, V vocabulary. Every weight keeps its ``bahdanau`` shape, the attention's (W_a, U_a, v_a)
aside, so a difference in how BLEU falls with source length is attention's alone.
"""

from __future__ import annotations

import torch
from torch import Tensor

from seq2seq.models.base import State
from seq2seq.models.rnn import BahdanauSeq2Seq


class RNNEncDec(BahdanauSeq2Seq):
    """``rnnencdec`` (Bahdanau et al. 2015, §4.2 and appendix A.2.1; Cho et al. 2014a, eq. 5-6):

        s_0  = tanh(W_s ←h_1)                                    (as in ``bahdanau``)
        c    = [→h_S; ←h_1]                                      (fixed: the same for every t)
        s_t  = RNN_dec([E(y_{t-1}); c], s_{t-1})
        t_t  = maxout(U_o s_t + V_o E(y_{t-1}) + C_o c);  p(y_t) = softmax(W_o t_t)

    No encoder state other than the two final ones reaches the decoder. As c does not depend on
    t, the whole target runs through the RNN in one call. Returns no attention weights.
    """

    has_attention = False

    def init_state(self, enc: State) -> State:
        state = self._initial_state(enc)
        state["context"] = enc["enc_h"][:, -1]  # (B, 2He): [→h_S; ←h_1] of the top layer
        return state

    def _decode(self, tgt_in: Tensor, state: State) -> tuple[Tensor, None, State]:
        emb = self.dropout(self.tgt_embed(tgt_in))  # (B, T, E)
        c = state["context"].unsqueeze(1).expand(-1, emb.shape[1], -1)  # (B, T, 2He)
        s, hx = self.rnn(torch.cat([emb, c], -1), self._hx(state))  # (B, T, H)
        return self._deep_output(s, emb, c), None, self._state(hx, state)

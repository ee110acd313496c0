"""``seq2seq/models/rnn.py``: tied output embeddings, and the attention query of Bahdanau and
Luong."""

from __future__ import annotations

import pytest
import torch

from seq2seq.models import build_model
from seq2seq.models.configs import LuongConfig, RNNConfig
from tests.toys import tiny_model, toy_batch


@pytest.mark.parametrize("name", ["rnn", "bahdanau", "luong"])
def test_tied_decoder_embeddings_are_the_output_matrix(name):
    """Press & Wolf 2017: W_o = E^T; the tied model has exactly V x E fewer weights."""
    extra = {"maxout_size": 8} if name == "bahdanau" else {}
    sizes = dict(name=name, emb_size=8, hidden_size=8, dropout=0.0, **extra)
    from seq2seq.models.configs import BahdanauConfig

    cls = {"rnn": RNNConfig, "bahdanau": BahdanauConfig, "luong": LuongConfig}[name]
    tied = build_model(cls(tie_embeddings=True, **sizes), 20, 25, joint_vocab=False)
    untied = build_model(cls(tie_embeddings=False, **sizes), 20, 25, joint_vocab=False)
    assert tied.out.tie_with is tied.tgt_embed
    assert untied.num_parameters() - tied.num_parameters() == 25 * 8


@pytest.mark.parametrize("name", ["bahdanau", "bahdanau_lstm_2l", "luong_general_uni", "luong_dot"])
def test_attention_query_is_previous_state_for_bahdanau_current_for_luong(name):
    """Bahdanau attends with s_{t-1}: the weights at step t do not depend on y_{t-1}, the token fed
    at step t. Luong attends with s_t, which already read y_{t-1}: its weights at step t do."""
    model = tiny_model(name)
    src, mask, tgt = toy_batch()
    _, attn = model.forward_attention(src, mask, tgt)
    changed = tgt.clone()
    changed[:, 2] = (changed[:, 2] + 5) % 41 + 4
    _, attn2 = model.forward_attention(src, mask, changed)
    torch.testing.assert_close(attn2[:, :2], attn[:, :2])
    if name.startswith("bahdanau"):
        torch.testing.assert_close(attn2[:, 2], attn[:, 2], atol=1e-7, rtol=0)
        assert not torch.allclose(attn2[:, 3], attn[:, 3])
    else:
        assert not torch.allclose(attn2[:, 2], attn[:, 2])

"""``seq2seq/models/rnn.py`` ``RNNEncDec``: RNNencdec is Bahdanau's model without attention."""

from __future__ import annotations

import pytest
import torch

from tests.toys import tiny_model, toy_batch


@pytest.mark.parametrize(
    "pair",
    [
        ("rnnencdec", "bahdanau"),
        ("rnnencdec_mean", "bahdanau"),
        ("rnnencdec_lstm_2l", "bahdanau_lstm_2l"),
    ],
)
def test_rnnencdec_is_bahdanau_without_attention(pair):
    """The ablation keeps every weight of RNNsearch at its shape; only the attention's are gone."""
    ablation, search = (tiny_model(n).state_dict() for n in pair)
    shapes = {k: v.shape for k, v in search.items() if not k.startswith("attention.")}
    assert {k: v.shape for k, v in ablation.items()} == shapes
    assert len(shapes) < len(search)  # bahdanau had attention weights to drop


def _logits(model, enc, tgt):
    return model._decode(tgt, model.init_state(enc))[0]


def test_mean_pool_sees_the_masked_mean_of_every_annotation_and_nothing_else():
    """``context: mean``: noise with a zero masked mean per row leaves the logits as they were
    (only the mean reaches the decoder: no selection, no final state); noise on one position
    alone changes them (every position is reachable), and noise on the pads changes nothing."""
    torch.manual_seed(0)
    model = tiny_model("rnnencdec_mean")
    src, mask, tgt = toy_batch()
    enc = model.encode(src, mask)
    ref = _logits(model, enc, tgt)
    m = mask[..., None].float()
    noise = torch.randn_like(enc["enc_out"]) * m
    centred = noise - m * noise.sum(1, keepdim=True) / m.sum(1, keepdim=True)
    same = _logits(model, {**enc, "enc_out": enc["enc_out"] + centred}, tgt)
    torch.testing.assert_close(same, ref, atol=1e-5, rtol=0)
    on_pads = _logits(model, {**enc, "enc_out": enc["enc_out"] + 5.0 * (1 - m)}, tgt)
    torch.testing.assert_close(on_pads, ref, atol=1e-6, rtol=0)
    first = torch.zeros_like(noise)
    first[:, 0] = 1.0  # the first position of every row: what the final forward state forgets
    assert not torch.allclose(_logits(model, {**enc, "enc_out": enc["enc_out"] + first}, tgt), ref)
    final = {**enc, "enc_h": torch.randn_like(enc["enc_h"])}  # the final states: not read
    torch.testing.assert_close(_logits(model, final, tgt), ref, atol=0, rtol=0)

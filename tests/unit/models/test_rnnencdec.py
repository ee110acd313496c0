"""``seq2seq/models/rnn.py`` ``RNNEncDec``: RNNencdec is Bahdanau's model without attention."""

from __future__ import annotations

import pytest

from tests.toys import tiny_model


@pytest.mark.parametrize(
    "pair", [("rnnencdec", "bahdanau"), ("rnnencdec_lstm_2l", "bahdanau_lstm_2l")]
)
def test_rnnencdec_is_bahdanau_without_attention(pair):
    """The ablation keeps every weight of RNNsearch at its shape; only the attention's are gone."""
    ablation, search = (tiny_model(n).state_dict() for n in pair)
    shapes = {k: v.shape for k, v in search.items() if not k.startswith("attention.")}
    assert {k: v.shape for k, v in ablation.items()} == shapes
    assert len(shapes) < len(search)  # bahdanau had attention weights to drop

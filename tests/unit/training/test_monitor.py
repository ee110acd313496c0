"""``seq2seq/training/monitor.py``: the short-update note and the attention heatmap."""

from __future__ import annotations

import logging

from seq2seq.training.monitor import attention_heatmap, note_short_update
from tests.toys import tiny_model


def test_update_freq_note_only_when_an_epoch_ends_with_a_short_update(caplog):
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        note_short_update(4, 3)
        note_short_update(6, 3)
        note_short_update(5, 1)
        note_short_update(1, 3)
        note_short_update(4, 3, main=False)  # another rank than the first: no line
    assert [r.getMessage() for r in caplog.records] == [
        "update_freq 3: an epoch of 4 batches ends with an update of 1 batch (groups do not span "
        "epochs)",
        "update_freq 3: an epoch of 1 batch ends with an update of 1 batch (groups do not span "
        "epochs)",
    ]


def test_attention_heatmap_only_for_attention_models(synth_tokenizer):
    v = synth_tokenizer.src_vocab_size
    img = attention_heatmap(tiny_model("bahdanau", v, v), synth_tokenizer, "Ein Hund.", "cpu")
    assert img.ndim == 3 and img.shape[2] == 3 and img.dtype.name == "uint8"
    assert attention_heatmap(tiny_model("rnn", v, v), synth_tokenizer, "Ein Hund.", "cpu") is None

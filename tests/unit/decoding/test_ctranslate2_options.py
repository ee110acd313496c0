"""``seq2seq/decoding/ctranslate2.py`` ``search_options``, without ctranslate2: every decode
setting is mapped onto ``translate_batch`` or handled around it, so that a new one cannot be
silently ignored by an export."""

from __future__ import annotations

from seq2seq.config import DecodeConfig
from seq2seq.decoding.ctranslate2 import search_options

# translate_batch options: a value other than the base config's, and the search that reads it
MAPPED = {
    "method": ("greedy", "beam"),
    "beam_size": ("beam", 4),
    "length_penalty": ("beam", 0.5),
    "min_len": ("beam", 3),
    "no_repeat_ngram": ("beam", 2),
    "temperature": ("sample", 0.5),
    "top_k": ("sample", 3),
    "top_p": ("sample", 0.5),
}
# handled around translate_batch, where
AROUND = {
    "max_len_a": "each sentence's output limit (max_lengths -> search_options' max_len)",
    "max_len_b": "each sentence's output limit (max_lengths -> search_options' max_len)",
    "seed": "the translator's seed (CTranslate2Model.search_ids)",
    "max_src_len": "sources cut before (translate.source_limit)",
    "batch_size": "our batches (files.LineTranslator)",
    "target_vocab_mask": "suppress_sequences, from the export's target_vocab (_translate_chunk)",
}


def test_every_decode_setting_is_mapped_or_handled_for_ctranslate2():
    assert set(MAPPED) | set(AROUND) == set(DecodeConfig.model_fields), (
        "a DecodeConfig field a CTranslate2 export neither maps nor refuses: map it in "
        "decoding/ctranslate2.py (search_options) or refuse it for an export, and list it here"
    )
    for name, (method, value) in MAPPED.items():
        base = DecodeConfig().with_method(method, **({"beam_size": 2} if method == "beam" else {}))
        changed = base.model_copy(update={name: value})
        assert search_options(changed, 1, 20) != search_options(base, 1, 20), name

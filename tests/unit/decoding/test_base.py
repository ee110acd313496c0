"""``seq2seq/decoding/base.py``: what every search shares -- output lengths from the source length,
and ``min_len`` blocking EOS."""

from __future__ import annotations

import pytest
import torch

from seq2seq.config import DecodeConfig
from seq2seq.data.tokenizer import EOS
from seq2seq.decoding.search import beam_search, greedy_search
from seq2seq.decoding.translate import translate_sentences
from seq2seq.models import Seq2SeqModel
from tests.corpora import FIVE
from tests.toys import SENT, A, Oracle


class EagerEOS(Seq2SeqModel):
    """A scripted model that always ranks EOS first and one word second, whatever it has read:
    an undertrained model's worst habit, made certain."""

    def __init__(self, vocab: int, word: int):
        super().__init__()
        self.src_vocab_size = self.tgt_vocab_size = vocab
        self.logits = torch.full((vocab,), -10.0)
        self.logits[EOS], self.logits[word] = 0.0, -1.0

    def encode(self, src, src_mask):
        return {"src_mask": src_mask}

    def init_state(self, enc):
        return dict(enc)

    def decode_step(self, prev_tokens, state, need_attention=False):
        return self.logits.repeat(prev_tokens.shape[0], 1), None, state  # search writes to it


@pytest.mark.parametrize("beam", [1, 5])
def test_min_len_blocks_the_empty_translation_an_eager_eos_prefers(toy, beam):
    tok = toy["tok"]
    word = tok.encode_tgt(["the"])[0][0]
    model = EagerEOS(tok.tgt_vocab_size, word)
    (word_text,) = tok.decode_tgt([[word]])  # the first piece of "the": "the", "th" or "t"
    assert word_text and "the".startswith(word_text)
    for min_len, expected in ((0, ""), (1, word_text)):
        cfg = DecodeConfig(beam_size=beam, min_len=min_len)
        assert [r.text for r in translate_sentences(model, tok, FIVE, cfg)] == [expected] * 5


def test_max_len_follows_the_source_length():
    never_ends = {p: {A: 1.0} for p in [(A,) * n for n in range(20)]}
    model = Oracle({(s, p): d for s in (SENT, SENT + 1) for p, d in never_ends.items()})
    src = torch.tensor([[SENT, 9, 9, 9], [SENT + 1, 0, 0, 0]])  # 4 and 1 real tokens
    out = beam_search(model, src, src != 0, beam_size=2, max_len_a=1.5, max_len_b=2)
    assert [len(h[0].tokens) for h in out] == [8, 3]  # floor(1.5 * 4 + 2), floor(1.5 * 1 + 2)
    g = greedy_search(model, src, src != 0, max_len_a=1.5, max_len_b=2)
    assert [len(h.tokens) for h in g] == [8, 3] and not any(h.finished for h in g)

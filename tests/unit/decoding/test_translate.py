"""``seq2seq/decoding/translate.py``: sentences to text -- the model never sees a blank line, long
sources are cut with a warning, unseen characters are reported, empty rows stay finite."""

from __future__ import annotations

import math

import pytest
import torch

from seq2seq.config import DecodeConfig
from seq2seq.data.batch import Batch, pad_sequences
from seq2seq.data.tokenizer import PAD
from seq2seq.decoding.translate import source_limit, translate_sentences
from seq2seq.training.loss import token_loss_sum
from tests.corpora import SIX, UNSEEN, WORDS
from tests.toys import tiny_model, translate_cli


def spy_encode(model):
    """Record every source batch the model is asked to encode."""
    seen: list[torch.Tensor] = []
    encode = model.encode

    def spy(src, src_mask):
        seen.append(src.clone())
        return encode(src, src_mask)

    model.encode = spy
    return seen


def long_lines(tok) -> tuple[str, str]:
    long = " ".join(WORDS[i % len(WORDS)] for i in range(2000))
    assert len(tok.encode_src([long])[0]) >= 2000
    return long, " ." * 300


def test_counts_of_one_are_singular():
    from seq2seq.config import ConfigError, DecodeConfig
    from seq2seq.decoding.search import check_n_best
    from seq2seq.decoding.translate import TranslationReport

    said = TranslationReport(lines=1, truncated=1, cut=1).summary()
    assert "1 source line cut" in said and "1 translation stopped" in said
    with pytest.raises(ConfigError, match="at most 1 hypothesis per sentence"):
        check_n_best(DecodeConfig(), 2)


@pytest.mark.parametrize("batch,beam", [(1, 1), (1, 4), (2, 1), (2, 4)])
def test_the_model_never_sees_a_blank_line(toy, batch, beam):
    model, tok = toy["model"], toy["tok"]
    seen = spy_encode(model)
    try:
        cfg = DecodeConfig(batch_size=batch, beam_size=beam)
        res = translate_sentences(model, tok, SIX, cfg)
    finally:
        del model.encode
    rows = [row[row != PAD].tolist() for src in seen for row in src]
    assert sorted(rows) == sorted(tok.encode_src([SIX[0], SIX[2], SIX[5]]))
    assert [bool(r.hypotheses) for r in res] == [True, False, True, False, False, True]
    assert [res[k].text for k in (1, 3, 4)] == ["", "", ""]


def test_translate_cuts_long_sources_with_a_warning_per_line(toy, tmp_path):
    long, dots = long_lines(toy["tok"])
    # Toy max_positions 128, max_len 1.5 S + 10: a source fits if floor(1.5 S + 10) <= 128.
    assert source_limit(toy["model"], toy["cfg"].decode) == 78
    n_long, n_dots = (len(x) for x in toy["tok"].encode_src([long, dots]))
    lines = ["the cat sleeps", long, dots, "we walk home"]
    code, out, err = translate_cli(
        toy["run"], "--max-len-a", 0, "--max-len-b", 1, "--beam", 2, lines=lines, tmp_path=tmp_path
    )
    assert code == 0 and len(out.split("\n")) == 5
    # With max_len 0 S + 1 the output needs one position, so all 128 can hold the source.
    src = tmp_path / "in.txt"
    assert f"{src} line 2: {n_long} source tokens, cut to the first 128" in err
    assert f"{src} line 3: {n_dots} source tokens, cut to the first 128" in err
    # min_len 1 blocks EOS at step 0 and max length 1 stops every hypothesis there: all four cut.
    summary = [x for x in err.splitlines() if x.startswith("translate: ")]
    assert summary == [
        "translate: 2 source lines cut to the length limit; 4 translations stopped "
        "at the maximum length without EOS (see --max-len-a/--max-len-b)"
    ]


def test_max_src_len_bounds_any_model_and_positions_are_respected(toy):
    long, dots = long_lines(toy["tok"])
    cfg = toy["cfg"].decode.model_copy(update={"max_src_len": 50})
    seen = spy_encode(toy["model"])
    try:
        res = translate_sentences(toy["model"], toy["tok"], [long, dots, "a cat"], cfg)
    finally:
        del toy["model"].encode
    assert max(src.shape[1] for src in seen) == 50
    assert [r.truncated for r in res] == [True, True, False]
    for r in res:  # 50 source tokens -> at most floor(1.5 * 50 + 10) = 85 output tokens
        assert len(r.hypotheses[0].tokens) <= 85
    # With the default max_src_len the Transformer's 128 positions still bound the source.
    res = translate_sentences(toy["model"], toy["tok"], [long], toy["cfg"].decode)
    assert res[0].truncated and len(res[0].hypotheses[0].tokens) <= 128


def test_unseen_characters_translate_without_unk_and_are_reported(toy, tmp_path):
    assert set("blorptak") <= set("".join(WORDS))  # the invented word is made of known letters
    code, out, err = translate_cli(toy["run"], lines=UNSEEN, tmp_path=tmp_path)
    assert code == 0
    lines = out.split("\n")
    assert len(lines) == 7 and lines[-1] == ""
    assert "⁇" not in out and "<unk>" not in out
    assert (
        "translate: 4 of 6 source lines (66.7%) have characters the tokenizer does not cover" in err
    )
    res = translate_sentences(toy["model"], toy["tok"], UNSEEN, toy["cfg"].decode)
    assert [r.uncovered for r in res] == [True, True, True, True, False, False]


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_empty_rows_in_a_transformer_batch(toy, mode):
    tok = toy["tok"]
    model = tiny_model("transformer", tok.src_vocab_size, tok.tgt_vocab_size)
    model.train(mode == "train")
    seen = spy_encode(model)
    res = translate_sentences(model, tok, ["", "a b c", ""], DecodeConfig(beam_size=2))
    del model.encode
    assert model.training == (mode == "train")  # translation restores the mode
    assert [src.shape[0] for src in seen] == [1]
    assert [r.text for r in res][::2] == ["", ""] and not res[0].hypotheses
    assert all(math.isfinite(h.score) for h in res[1].hypotheses)
    # The encoder, asked directly, keeps (B, S_max, D) and stays finite for an all-padding row.
    src = pad_sequences([[], tok.encode_src(["a b c"])[0], [], [5, 6]])
    for mask in (src != PAD, torch.zeros_like(src, dtype=torch.bool)):
        enc = model.encode(src, mask)["enc_out"]
        assert enc.shape == (4, src.shape[1], 32) and torch.isfinite(enc).all()
    batch = Batch.from_ids([[], [5, 6, 7], []], [[8], [9, 10], [11]])
    assert torch.isfinite(
        token_loss_sum(model(batch.src, batch.src_mask, batch.tgt_in), batch.tgt_out)
    )


def test_a_wide_beam_takes_fewer_sentences_per_batch_and_the_same_outputs(toy, monkeypatch):
    """sentences x K rows at most MAX_SEARCH_ROWS: a beam of 1,000,000 ran a machine out of
    memory (a new-user trial); the outputs do not depend on the batch."""
    from seq2seq.decoding import translate as tr

    model, tok = toy["model"], toy["tok"]
    lines = [SIX[0], SIX[2], SIX[5]] * 3
    cfg = DecodeConfig(method="beam", beam_size=4, batch_size=100)
    whole = [r.text for r in translate_sentences(model, tok, lines, cfg)]
    monkeypatch.setattr(tr, "MAX_SEARCH_ROWS", 8)
    seen = spy_encode(model)
    try:
        split = [r.text for r in translate_sentences(model, tok, lines, cfg)]
    finally:
        del model.encode
    assert [len(src) for src in seen] == [2, 2, 2, 2, 1] and split == whole


def test_a_min_len_that_leaves_no_room_to_end_is_a_warning(toy, caplog):
    model, tok = toy["model"], toy["tok"]
    cfg = DecodeConfig(min_len=12, max_len_a=0.0, max_len_b=12)
    with caplog.at_level("WARNING", logger="seq2seq"):
        res = translate_sentences(model, tok, [SIX[0], SIX[2]], cfg)
    assert "--min-len 12 is not below the maximum output length" in caplog.text
    assert "all 2 source lines" in caplog.text and all(r.cut for r in res)
    caplog.clear()
    with caplog.at_level("WARNING", logger="seq2seq"):
        translate_sentences(model, tok, [SIX[0]], DecodeConfig(min_len=11, max_len_b=12))
    assert "--min-len" not in caplog.text


def test_decode_counts_are_bounded_before_torch_overflows():
    from pydantic import ValidationError

    for field, value in (("beam_size", 1001), ("top_k", 10**20), ("max_len_b", 10**20)):
        with pytest.raises(ValidationError, match="less than or equal to"):
            DecodeConfig(**{field: value})
    assert DecodeConfig(method="beam", beam_size=1000).beam_size == 1000

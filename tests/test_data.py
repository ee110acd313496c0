"""Reading, cleaning, tokenising and batching parallel text."""

from __future__ import annotations

import gzip
import logging

import pytest

from seq2seq.config import DataConfig, HFSource, TokenizerConfig
from seq2seq.data.batch import token_batches
from seq2seq.data.text import (
    DataError,
    load_split,
    read_lines,
    read_parallel_files,
    tokenize_pairs,
)
from seq2seq.data.tokenizer import BOS, EOS, PAD, UNK, Tokenizer


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_crlf_bom_and_gzip_read_as_plain_text(tmp_path):
    plain = _write(tmp_path / "a.txt", "\ufeffeins\r\nzwei\r\ndrei".encode())
    gz = tmp_path / "b.txt.gz"
    with gzip.open(gz, "wb") as f:
        f.write(b"eins\nzwei\ndrei\n")
    assert read_lines(plain) == ["eins", "zwei", "drei"]
    assert read_lines(gz) == ["eins", "zwei", "drei"]


@pytest.mark.parametrize("odd", ["\u2028", "\u0085", "\r", "\x0b", "\x0c", "\u2029"])
def test_line_break_like_characters_never_split_a_line(tmp_path, odd):
    src = _write(tmp_path / "s.de", f"a\nb{odd}c\nd\n".encode())
    tgt = _write(tmp_path / "t.en", b"x\ny\nz\n")
    text = read_parallel_files(src, tgt)
    assert text.src == ["a", "b c", "d"]  # normalised to a space
    assert text.tgt == ["x", "y", "z"]


def test_nul_byte_is_removed_with_a_warning_naming_the_line(tmp_path, caplog):
    src = _write(tmp_path / "s.de", b"a\nb\x00c\nd\n")
    with caplog.at_level(logging.WARNING, logger="seq2seq"):
        assert read_lines(src) == ["a", "bc", "d"]
    assert f"{src} line 2: NUL byte removed" in caplog.text


def test_invalid_utf8_names_file_and_line(tmp_path):
    bad = _write(tmp_path / "bad.de", b"gut\nschl\xe9cht\n")
    with pytest.raises(DataError, match=r"bad\.de line 2: not valid UTF-8"):
        read_lines(bad)


def test_line_count_mismatch_names_both_files_and_counts(tmp_path):
    src = _write(tmp_path / "s.de", b"a\nb\nc\n")
    tgt = _write(tmp_path / "t.en", b"a\nb\nc\nd\n")
    with pytest.raises(DataError) as e:
        read_parallel_files(src, tgt)
    msg = str(e.value)
    assert f"{src} has 3 lines" in msg and f"{tgt} has 4" in msg


def test_empty_pairs_dropped_as_pairs_and_counted(tmp_path):
    src = _write(tmp_path / "s.de", "eins\n\nzwei\n \t\ndrei\n\u200b\u200b\n".encode())
    tgt = _write(tmp_path / "t.en", b"one\nlost\n\ntwo\nthree\nfour\n")
    text = read_parallel_files(src, tgt)
    assert list(zip(text.src, text.tgt, strict=True)) == [("eins", "one"), ("drei", "three")]
    assert text.line_no == [1, 5]
    assert text.dropped["empty"] == [2, 3, 4, 6]


def test_missing_corpus_file_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQ2SEQ_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match="SEQ2SEQ_DATA_DIR"):
        load_split(DataConfig(train="nowhere/train"), "train")


def test_max_len_filter_counts_and_names_lines(tmp_path, caplog):
    long = " ".join(["wort"] * 300)
    src = _write(tmp_path / "s.de", f"ein haus\n{long}\nein hund\n".encode())
    tgt = _write(tmp_path / "t.en", b"a house\nlong\na dog\n")
    text = read_parallel_files(src, tgt)
    tok = Tokenizer.train(text.src, text.tgt, TokenizerConfig(vocab_size=30))
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        pairs = tokenize_pairs(text, tok.encode_src, tok.encode_tgt, max_len=20, what="train")
    assert pairs.line_no == [1, 3]
    assert "dropped 1 pairs (over max_len 20 tokens) at lines 2" in caplog.text


def test_token_batches_respect_budget_and_cover_every_example_once():
    import random

    rng = random.Random(0)
    src = [rng.randint(1, 60) for _ in range(500)]
    tgt = [rng.randint(1, 60) for _ in range(500)]
    batches = token_batches(src, tgt, batch_tokens=400, seed=1, epoch=0)
    assert sorted(i for b in batches for i in b) == list(range(500))
    for b in batches:
        width = max(max(src[i], tgt[i] + 1) for i in b)
        assert width * len(b) <= 400
    again = token_batches(src, tgt, batch_tokens=400, seed=1, epoch=0)
    assert again == batches  # a pure function of (seed, epoch): resumable
    assert token_batches(src, tgt, batch_tokens=400, seed=1, epoch=1) != batches


def test_example_over_budget_is_a_clear_error():
    with pytest.raises(DataError, match="raise train.batch_tokens or lower data.max_len"):
        token_batches([10, 500], [10, 10], batch_tokens=100)


def test_tokenizer_round_trip_and_fixed_ids(synth_corpus, synth_tokenizer, tmp_path):
    tok = synth_tokenizer
    assert (tok.pad_id, tok.unk_id, tok.bos_id, tok.eos_id) == (PAD, UNK, BOS, EOS) == (0, 1, 2, 3)
    assert tok.tgt_sp.id_to_piece(PAD) == "<pad>" and tok.tgt_sp.id_to_piece(EOS) == "</s>"
    lines = (synth_corpus / "train.en").read_text().splitlines()[:50]
    assert tok.decode_tgt(tok.encode_tgt(lines)) == lines
    tok.save(tmp_path)
    again = Tokenizer.load(tmp_path)
    assert again.encode_src(lines) == tok.encode_src(lines)
    assert Tokenizer.from_state_dict(tok.state_dict()).encode_tgt(lines) == tok.encode_tgt(lines)


def test_separate_vocabularies(synth_corpus):
    src = (synth_corpus / "train.de").read_text().splitlines()
    tgt = (synth_corpus / "train.en").read_text().splitlines()
    tok = Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=300, joint=False, type="bpe"))
    assert not tok.joint
    assert tok.src_proto != tok.tgt_proto
    assert tok.decode_tgt(tok.encode_tgt(tgt[:20])) == tgt[:20]


def test_hugging_face_dataset_offline(tmp_path):
    """The ``datasets`` path, offline: a DatasetDict saved to disk, read like a hub dataset."""
    import datasets

    rows = {"de": ["ein hund", "", "zwei katzen"], "en": ["a dog", "nothing", "two cats"]}
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows)}).save_to_disk(tmp_path / "ds")
    cfg = DataConfig(hf=HFSource(path=str(tmp_path / "ds"), src_field="de", tgt_field="en"))
    text = load_split(cfg, "train")
    assert text.src == ["ein hund", "zwei katzen"] and text.tgt == ["a dog", "two cats"]
    assert text.dropped["empty"] == [2]
    cfg_bad = DataConfig(hf=HFSource(path=str(tmp_path / "ds"), src_field="fr", tgt_field="en"))
    with pytest.raises(DataError, match="no field 'fr'"):
        load_split(cfg_bad, "train")


def test_drop_log_counts_each_pair_once(tmp_path, caplog):
    """Read = kept + every drop, whatever dropped it (cleaning, max_len, max_src_words)."""
    from seq2seq.data.text import drop_long_sources, log_dropped

    src = _write(tmp_path / "s.de", b"ein haus\n\nein sehr sehr langer satz\nhund\n")
    tgt = _write(tmp_path / "t.en", b"a house\nx\na very long sentence\ndog\n")
    text = read_parallel_files(src, tgt)
    drop_long_sources(text, 3)
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        log_dropped(text, "train")
    assert f"train: 4 pairs read from {src}, 2 kept" in caplog.text

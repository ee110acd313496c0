"""``seq2seq/data/text.py``: reading, cleaning and tokenising parallel text by the reading policy --
a line ends at ``\\n`` only, blank and empty pairs dropped and counted, over-long pairs named."""

from __future__ import annotations

import gzip
import logging
from pathlib import Path

import pytest

from seq2seq.config import ConfigError, DataConfig, TokenizerConfig, load_config, validate_config
from seq2seq.data.batch import length_batches
from seq2seq.data.text import (
    DataError,
    ParallelText,
    drop_long_sources,
    iter_lines,
    load_split,
    read_lines,
    read_parallel_files,
    tokenize_pairs,
)
from seq2seq.data.tokenizer import Tokenizer
from tests.corpora import (
    BLANK_SRC_LINE,
    EMPTY_TGT_LINE,
    MONSTER_LINE,
    ODD,
    SIX,
    ZWSP_LINE,
    toy_pairs,
    write_bytes,
    write_raw_lines,
)


def test_streamed_lines_follow_the_reading_policy(tmp_path):
    raw = "\ufeffeins\r\nzwei\u2028drei\nvi\x00er\n\nfünf".encode()
    plain = write_bytes(tmp_path / "a.txt", raw)
    gz = tmp_path / "a.txt.gz"
    with gzip.open(gz, "wb") as f:
        f.write(raw)
    expected = ["eins", "zwei drei", "vier", "", "fünf"]
    assert list(iter_lines(plain)) == list(iter_lines(gz)) == read_lines(plain) == expected


def test_crlf_bom_and_gzip_read_as_plain_text(tmp_path):
    plain = write_bytes(tmp_path / "a.txt", "\ufeffeins\r\nzwei\r\ndrei".encode())
    gz = tmp_path / "b.txt.gz"
    with gzip.open(gz, "wb") as f:
        f.write(b"eins\nzwei\ndrei\n")
    assert read_lines(plain) == ["eins", "zwei", "drei"]
    assert read_lines(gz) == ["eins", "zwei", "drei"]


@pytest.mark.parametrize("odd", ["\u2028", "\u0085", "\r", "\x0b", "\x0c", "\u2029"])
def test_line_break_like_characters_never_split_a_line(tmp_path, odd):
    src = write_bytes(tmp_path / "s.de", f"a\nb{odd}c\nd\n".encode())
    tgt = write_bytes(tmp_path / "t.en", b"x\ny\nz\n")
    text = read_parallel_files(src, tgt)
    assert text.src == ["a", "b c", "d"]  # normalised to a space
    assert text.tgt == ["x", "y", "z"]


def test_nul_byte_is_removed_with_a_warning_naming_the_line(tmp_path, caplog):
    src = write_bytes(tmp_path / "s.de", b"a\nb\x00c\nd\n")
    with caplog.at_level(logging.WARNING, logger="seq2seq"):
        assert read_lines(src) == ["a", "bc", "d"]
    assert f"{src} line 2: NUL byte removed" in caplog.text


def test_invalid_utf8_names_file_and_line(tmp_path):
    bad = write_bytes(tmp_path / "bad.de", b"gut\nschl\xe9cht\n")
    with pytest.raises(DataError, match=r"bad\.de line 2: not valid UTF-8.*; convert the file"):
        read_lines(bad)
    # in a .gz, damage decompresses to garbage before the CRC is read: gzip -t is named first
    gz = tmp_path / "bad.de.gz"
    gz.write_bytes(gzip.compress(b"gut\nschl\xe9cht\n"))
    with pytest.raises(DataError) as e:
        read_lines(gz)
    assert str(e.value).startswith(f"{gz} line 2: not valid UTF-8 (byte 5 of the line); gzip -t")
    # gzip data in a file not named .gz (read as text): its name wants .gz, not iconv
    plain = gz.rename(tmp_path / "gz.de")
    with pytest.raises(DataError) as e:
        read_lines(plain)
    assert str(e.value).endswith(
        "; it is gzip data: decompress it with zcat, or read it from a file named *.gz"
    )


def test_line_count_mismatch_names_both_files_and_counts(tmp_path):
    src = write_bytes(tmp_path / "s.de", b"a\nb\nc\n")
    tgt = write_bytes(tmp_path / "t.en", b"a\nb\nc\nd\n")
    with pytest.raises(DataError) as e:
        read_parallel_files(src, tgt)
    msg = str(e.value)
    assert f"{src} has 3 lines" in msg and f"{tgt} has 4" in msg


def test_empty_pairs_dropped_as_pairs_and_counted(tmp_path):
    src = write_bytes(tmp_path / "s.de", "eins\n\nzwei\n \t\ndrei\n\u200b\u200b\n".encode())
    tgt = write_bytes(tmp_path / "t.en", b"one\nlost\n\ntwo\nthree\nfour\n")
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
    src = write_bytes(tmp_path / "s.de", f"ein haus\n{long}\nein hund\n".encode())
    tgt = write_bytes(tmp_path / "t.en", b"a house\nlong\na dog\n")
    text = read_parallel_files(src, tgt)
    tok = Tokenizer.train(text.src, text.tgt, TokenizerConfig(vocab_size=30))
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        pairs = tokenize_pairs(text, tok.encode_src, tok.encode_tgt, max_len=20, what="train")
    assert pairs.line_no == [1, 3]
    assert "dropped 1 pairs (over max_len 20 tokens) at lines 2" in caplog.text


def test_drop_log_counts_each_pair_once(tmp_path, caplog):
    """Read = kept + every drop, whatever dropped it (cleaning, max_len, max_src_words)."""
    from seq2seq.data.text import drop_long_sources, log_dropped

    src = write_bytes(tmp_path / "s.de", b"ein haus\n\nein sehr sehr langer satz\nhund\n")
    tgt = write_bytes(tmp_path / "t.en", b"a house\nx\na very long sentence\ndog\n")
    text = read_parallel_files(src, tgt)
    drop_long_sources(text, 3)
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        log_dropped(text, "train")
    assert f"train: 4 pairs read from {src}, 2 kept" in caplog.text


def test_training_drops_pairs_with_an_empty_side_and_counts_them(toy):
    log = "\n".join(toy["log"])
    src = toy["dir"] / "train.de"
    lines = ", ".join(map(str, (ZWSP_LINE, EMPTY_TGT_LINE, BLANK_SRC_LINE)))
    assert f"train: dropped 3 pairs (empty) at lines {lines} of {src}" in log


def test_validation_data_drops_empty_pairs_too(tmp_path):
    write_raw_lines(tmp_path / "v.de", SIX)
    write_raw_lines(tmp_path / "v.en", ["a", "b", "c", "d", "e", "f"])
    text = load_split(validate_config({"data": {"valid": str(tmp_path / "v")}}).data, "valid")
    assert text.src == ["the cat sleeps", "a red door", "we walk home"]
    assert text.tgt == ["a", "c", "f"] and text.line_no == [1, 3, 6]
    assert text.dropped == {"empty": [2, 4, 5]}


@pytest.mark.parametrize("name", list(ODD))
def test_odd_characters_never_split_a_line(tmp_path, caplog, name):
    odd, expected = ODD[name]
    (tmp_path / "s.de").write_bytes(f"a\nb{odd}c\nd\n".encode())
    (tmp_path / "t.en").write_bytes(b"x\ny\nz\n")
    with caplog.at_level(logging.WARNING, logger="seq2seq"):
        text = read_parallel_files(tmp_path / "s.de", tmp_path / "t.en")
    assert list(zip(text.src, text.tgt, strict=True)) == [("a", "x"), (expected, "y"), ("d", "z")]
    nul_warnings = [r.getMessage() for r in caplog.records if "NUL" in r.getMessage()]
    assert nul_warnings == (
        [f"{tmp_path / 's.de'} line 2: NUL byte removed"] if odd == "\x00" else []
    )


def test_monster_training_line_is_filtered_before_batching_and_named(toy):
    log = "\n".join(toy["log"])
    assert (
        f"train: dropped 1 pairs (over max_len 60 tokens) at lines {MONSTER_LINE} of "
        f"{toy['dir'] / 'train.de'}"
    ) in log


def test_monster_line_with_max_len_100_and_length_batches(tmp_path, caplog):
    src, tgt = toy_pairs(30, seed=3)
    src[2] = " ".join(["house"] * 3000)
    write_raw_lines(tmp_path / "s.de", src)
    write_raw_lines(tmp_path / "t.en", tgt)
    text = read_parallel_files(tmp_path / "s.de", tmp_path / "t.en")
    tok = Tokenizer.train(text.src, text.tgt, TokenizerConfig(vocab_size=60))
    assert len(tok.encode_src([src[2]])[0]) >= 3000
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        pairs = tokenize_pairs(text, tok.encode_src, tok.encode_tgt, max_len=100, what="train")
    assert pairs.line_no == [i for i in range(1, 31) if i != 3]
    assert f"dropped 1 pairs (over max_len 100 tokens) at lines 3 of {tmp_path / 's.de'}" in (
        caplog.text
    )
    budget = 120
    src_lens, tgt_lens = [len(s) for s in pairs.src], [len(t) for t in pairs.tgt]
    batches = [b.tolist() for b in length_batches(src_lens, tgt_lens, budget, seed=0, epoch=0)]
    assert sorted(i for b in batches for i in b) == list(range(29))
    for b in batches:
        assert len(b) * max(max(src_lens[i], tgt_lens[i] + 1) for i in b) <= budget


def test_zero_width_space_source_is_filtered_in_training(toy):
    text = load_split(toy["cfg"].data, "train")
    assert ZWSP_LINE in text.dropped["empty"] and ZWSP_LINE not in text.line_no
    assert len(text) == 400 - 3  # the monster goes later, at tokenisation (case 3)


def test_max_src_words_drops_long_training_sources():
    text = ParallelText(["a b c", "a", "a b", "a b c d"], ["1", "2", "3", "4"], [1, 2, 4, 5], "f")
    drop_long_sources(text, 2)
    assert (text.src, text.tgt, text.line_no) == (["a", "a b"], ["2", "3"], [2, 4])
    assert text.dropped == {"over max_src_words 2": [1, 5]}
    with pytest.raises(ConfigError, match="max_src_words needs backend 'memory'"):
        load_config(None, ["data.max_src_words=10", "data.backend=arrow"])


def test_a_folder_named_as_a_corpus_or_a_config_says_it_is_a_folder(tmp_path):
    from seq2seq.config import ConfigError, load_config
    from seq2seq.data.text import DataError, resolve_corpus_file

    with pytest.raises(DataError, match=r"is a folder; a corpus is named by a file prefix"):
        resolve_corpus_file(str(tmp_path), "de")
    with pytest.raises(ConfigError, match=r"is a folder; give a config file \(YAML\)$"):
        load_config(tmp_path)
    (tmp_path / "config.yaml").write_text("name: x\n")
    with pytest.raises(ConfigError, match=r"e\.g\. .*config\.yaml"):
        load_config(tmp_path)


def test_a_damaged_gzip_names_the_last_line_read_and_what_to_do(tmp_path):
    from seq2seq.data.text import DataError, read_lines

    whole = gzip.compress(b"Ein Hund.\nZwei.\n")
    (tmp_path / "tail.de.gz").write_bytes(whole + b"garbage\n")
    (tmp_path / "cut.de.gz").write_bytes(whole[:30])
    member = bytes([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF])  # a second gzip member's header,
    (tmp_path / "inside.de.gz").write_bytes(whole + member + b"\x07" + bytes(20))  # bad deflate
    for name in ("tail.de.gz", "cut.de.gz", "inside.de.gz"):
        with pytest.raises(DataError, match=r"cannot read after line \d .*gzip -t checks it"):
            read_lines(tmp_path / name)


def test_a_missing_corpus_names_where_it_looked_and_only_points_multi30k_at_the_fetch_script(
    tmp_path, monkeypatch
):
    from seq2seq.data.text import DataError, resolve_corpus_file

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SEQ2SEQ_DATA_DIR", str(tmp_path / "root"))
    with pytest.raises(DataError) as e:
        resolve_corpus_file("multi30k/train", "de")
    assert str(e.value) == (
        f"multi30k/train.de: corpus file not found (nor .gz) in {tmp_path} nor under "
        f"{tmp_path / 'root'}; set SEQ2SEQ_DATA_DIR to the folder holding multi30k/, or fetch it "
        "with scripts/get_multi30k.sh DIR"
    )
    with pytest.raises(DataError, match=r"^mine/train\.de: .* fix the path in the config") as e:
        resolve_corpus_file("mine/train", "de")
    assert "get_multi30k" not in str(e.value)
    absolute = tmp_path / "abs" / "train"
    with pytest.raises(DataError) as e:
        resolve_corpus_file(str(absolute), "de")
    assert str(e.value).startswith(f"{absolute}.de: corpus file not found (nor .gz); fix the path")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "train.de").write_text("a\n")  # the working directory is tried first
    assert resolve_corpus_file("mine/train", "de") == Path("mine/train.de")
    (tmp_path / "mine" / "train.en").mkdir()  # said 'not found (nor .gz)' (a new-user trial)
    with pytest.raises(DataError) as e:
        resolve_corpus_file("mine/train", "en")
    assert str(e.value) == "mine/train.en: is a folder, not a corpus file; give the files' PREFIX"

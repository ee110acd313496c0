"""``seq2seq/data/arrow.py`` (``data.backend: arrow``): the memory backend's pairs and drops, a
cache reused and keyed by content, the same corpus from two processes."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from seq2seq.data.arrow import open_arrow
from seq2seq.data.text import DataError, load_split, tokenize_pairs
from tests.corpora import arrow_config, table_ids


def test_arrow_holds_the_memory_backends_pairs_and_drops(
    synth_corpus, synth_tokenizer, tmp_path, caplog
):
    tok = synth_tokenizer
    cfg = arrow_config(synth_corpus, tmp_path, max_len=20)
    text = load_split(cfg, "train")
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        pairs = tokenize_pairs(text, tok.encode_src, tok.encode_tgt, 20, "train")
        memory_log = caplog.text
        caplog.clear()
        corpus = open_arrow(cfg, tok)
    assert len(corpus) == len(pairs) and 0 < len(pairs) < 1000  # max_len 20 drops some
    table = corpus.ds[corpus.rows.tolist()]
    assert table_ids(table) == list(zip(map(tuple, pairs.src), map(tuple, pairs.tgt), strict=True))
    assert table.column("line_no").to_pylist() == pairs.line_no
    drop_line = next(ln for ln in memory_log.splitlines() if "over max_len 20" in ln)
    assert drop_line.split("train: ")[1] in caplog.text
    batch = corpus.batch(np.array([0, 1]))
    assert batch.src[0, : len(pairs.src[0])].tolist() == pairs.src[0]


def test_arrow_cache_is_reused_and_keyed_by_content(
    synth_corpus, synth_tokenizer, tmp_path, caplog
):
    data = tmp_path / "data"
    data.mkdir()
    for lang in ("de", "en"):
        (data / f"train.{lang}").write_bytes((synth_corpus / f"train.{lang}").read_bytes())
    cfg = arrow_config(data, tmp_path)
    first = open_arrow(cfg, synth_tokenizer)
    ids_files = sorted((tmp_path / "c").rglob("ids*.arrow"))
    stamps = [p.stat().st_mtime_ns for p in ids_files]
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        second = open_arrow(cfg, synth_tokenizer)
    assert "writing cleaned text" not in caplog.text
    assert [p.stat().st_mtime_ns for p in sorted((tmp_path / "c").rglob("ids*.arrow"))] == stamps
    assert np.array_equal(first.rows, second.rows)
    open_arrow(cfg.model_copy(update={"max_len": 10}), synth_tokenizer)  # new ids, same text
    assert len(list((tmp_path / "c").glob("train-*"))) == 1
    assert len(list((tmp_path / "c").glob("train-*/ids-*"))) == 2
    with open(data / "train.en", "a") as f:  # one more pair: new content, new cache
        f.write("one more line\n")
    with open(data / "train.de", "a") as f:
        f.write("noch eine zeile\n")
    assert len(open_arrow(cfg, synth_tokenizer)) == len(first) + 1
    assert len(list((tmp_path / "c").glob("train-*"))) == 2


def test_arrow_with_two_processes_gives_the_same_corpus(synth_corpus, synth_tokenizer, tmp_path):
    one = open_arrow(arrow_config(synth_corpus, tmp_path / "1"), synth_tokenizer)
    two = open_arrow(arrow_config(synth_corpus, tmp_path / "2", num_proc=2), synth_tokenizer)
    assert len(list((tmp_path / "2" / "c").rglob("ids_0000*_of_00002.arrow"))) == 2
    assert np.array_equal(one.rows, two.rows) and np.array_equal(one.src_lens, two.src_lens)
    assert table_ids(one.ds[one.rows.tolist()]) == table_ids(two.ds[two.rows.tolist()])


def test_a_cache_folder_that_cannot_be_written_names_the_setting_that_moves_it(
    synth_corpus, synth_tokenizer, tmp_path
):
    """A read-only home (here: a file where the cache's folder should be, unwritable even for
    root) is one line naming data.cache_dir and SEQ2SEQ_CACHE_DIR, not the bare OSError."""
    (tmp_path / "home").write_text("a file, not a folder\n")
    cfg = arrow_config(synth_corpus, tmp_path).model_copy(
        update={"cache_dir": str(tmp_path / "home" / ".cache")}
    )
    with pytest.raises(DataError) as e:
        open_arrow(cfg, synth_tokenizer)
    msg = str(e.value)
    assert "data.cache_dir" in msg and "SEQ2SEQ_CACHE_DIR" in msg and str(tmp_path / "home") in msg
    assert "\n" not in msg

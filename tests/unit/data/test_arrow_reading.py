"""The disk backends' reading of files and Hugging Face datasets (``seq2seq/data/arrow.py``)."""

from __future__ import annotations

import pytest

from seq2seq.config import DataConfig
from seq2seq.config.sections import HFSource
from seq2seq.data.arrow import clean_rows, open_arrow
from seq2seq.data.stream import StreamCorpus
from seq2seq.data.text import DataError, iter_lines
from tests.corpora import table_ids, write_bytes


def test_streamed_errors_name_file_and_line(tmp_path):
    bad = write_bytes(tmp_path / "bad.de", b"gut\nschl\xe9cht\n")
    with pytest.raises(DataError, match=r"bad\.de line 2: not valid UTF-8"):
        list(iter_lines(bad))
    write_bytes(tmp_path / "s.de", b"a\nb\nc\n")
    write_bytes(tmp_path / "s.en", b"a\nb\nc\nd\n")
    cfg = DataConfig(train=str(tmp_path / "s"))
    with pytest.raises(DataError, match=r"s\.de has 3 lines but .*s\.en has 4"):
        list(clean_rows(cfg.model_dump_json(), "train"))


def test_hugging_face_dataset_through_both_disk_backends(synth_tokenizer, tmp_path):
    import datasets

    pairs = [("ein hund", "a dog"), ("", "nothing"), ("zwei katzen", "two cats")]
    rows = [{"translation": {"de": de, "en": en}} for de, en in pairs]
    datasets.DatasetDict({"train": datasets.Dataset.from_list(rows)}).save_to_disk(tmp_path / "ds")
    hf = HFSource(path=str(tmp_path / "ds"), src_field="translation.de", tgt_field="translation.en")
    cfg = DataConfig(hf=hf, backend="arrow", cache_dir=str(tmp_path / "c"))
    tok = synth_tokenizer
    expected = [
        (tuple(tok.encode_src([de])[0]), tuple(tok.encode_tgt([en])[0]))
        for de, en in (pairs[0], pairs[2])
    ]
    arrow = open_arrow(cfg, tok)
    table = arrow.ds[arrow.rows.tolist()]
    assert table.column("line_no").to_pylist() == [1, 3] and table_ids(table) == expected
    stream = StreamCorpus(cfg.model_copy(update={"backend": "stream"}), tok)
    (batch,) = stream.epoch_batches(1000, seed=0, epoch=0)[0:1]
    assert len(stream) == 2 and sorted(table_ids(batch)) == sorted(expected)

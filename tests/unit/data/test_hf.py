"""``seq2seq/data/hf.py``: Hugging Face datasets offline, and a field that does not hold one
sentence per row refused in one line naming the field, the row and the key."""

from __future__ import annotations

import pytest

from seq2seq.config import DataConfig
from seq2seq.config.sections import HFSource
from seq2seq.data.text import DataError, load_split
from seq2seq.training.loop import train
from tests.corpora import DICT_FIELD, SENTENCES, hf_dataset, translation_rows
from tests.toys import copy_run_config


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


@pytest.mark.parametrize("given_tokenizer", [False, True], ids=["trained", "given"])
@pytest.mark.parametrize("backend", ["memory", "arrow", "stream"])
def test_an_hf_dict_field_is_refused_naming_the_field_the_row_and_the_key(
    tmp_path, backend, given_tokenizer
):
    from seq2seq.data.tokenizer import Tokenizer

    path = hf_dataset(tmp_path / "ds", translation_rows(SENTENCES * 3))
    hf = {"path": path, "src_field": "translation", "tgt_field": "translation.en"}
    data = {"hf": hf, "backend": backend, "cache_dir": str(tmp_path / "cache")}
    cfg = copy_run_config(tmp_path, data=data)
    tok = Tokenizer.train(SENTENCES, SENTENCES, cfg.tokenizer) if given_tokenizer else None
    with pytest.raises(DataError) as e:
        train(cfg, tmp_path / "run", tokenizer=tok)
    assert str(e.value) == DICT_FIELD
    assert not (tmp_path / "run" / "last.pt").exists()


@pytest.mark.parametrize(
    ("field", "message"),
    [
        (
            "translation.fr",
            "data.hf.src_field 'translation.fr': row 0 has no key 'fr' in translation (a dict "
            "with keys de, en); use translation.de",
        ),
        (
            "translation.de.x",
            "data.hf.src_field 'translation.de.x': row 0 holds text at translation.de, not a "
            "dict with a key 'x'; use translation.de",
        ),
        (
            "id",
            "data.hf.src_field 'id': row 0 holds a value of type int (0), not text; point "
            "data.hf.src_field at a field that holds one sentence per row",
        ),
        (
            "toks",
            "data.hf.src_field 'toks': row 0 holds a list of 6 values, not text; point "
            "data.hf.src_field at a field that holds one sentence per row",
        ),
        (
            "text",
            "data.hf.src_field 'text': the dataset has no field 'text'; its fields are id, "
            "toks, translation",
        ),
    ],
    ids=["missing-key", "path-past-text", "number", "list", "no-column"],
)
@pytest.mark.parametrize("streaming", [False, True], ids=["dataset", "streamed"])
def test_an_hf_field_that_does_not_reach_text_is_one_line_naming_it(
    tmp_path, field, message, streaming
):
    from seq2seq.data.arrow import clean_rows

    hf = HFSource(path=hf_dataset(tmp_path / "ds", translation_rows(SENTENCES[:3])))
    cfg = DataConfig(hf=hf.model_copy(update={"src_field": field, "tgt_field": "translation.en"}))
    with pytest.raises(DataError) as e:
        if streaming:
            list(clean_rows(cfg.model_dump_json(), "train", streaming=True))
        else:
            load_split(cfg, "train")
    assert str(e.value) == message


def test_a_later_row_of_another_shape_is_named_by_its_row():
    """Rows read without a schema (a streamed JSON set) may differ: each is checked."""
    from seq2seq.data.hf import hf_text

    rows = [{"src": "ein hund"}, {"src": {"de": "zwei katzen"}}, {"src": {"fr": "trois"}}]
    assert hf_text(rows[0], "src", "data.hf.src_field", 0, "de") == "ein hund"
    with pytest.raises(DataError) as e:
        hf_text(rows[1], "src", "data.hf.src_field", 1, "de")
    assert str(e.value) == (
        "data.hf.src_field 'src': row 1 holds a dict with keys de, not text; use src.de"
    )
    with pytest.raises(DataError) as e:
        hf_text(rows[2], "src.de", "data.hf.src_field", 2, "de")
    assert str(e.value) == (
        "data.hf.src_field 'src.de': row 2 has no key 'de' in src (a dict with keys fr); "
        "use one of src.fr"
    )


def test_a_null_hf_value_is_dropped_and_counted_like_an_empty_line(tmp_path):
    rows = translation_rows(["ein hund", "zwei katzen", "drei vögel"])
    rows[1]["translation"]["de"] = None  # a null key
    rows[2]["translation"] = None  # a null row
    hf = HFSource(path=hf_dataset(tmp_path / "ds", rows))
    cfg = DataConfig(hf=hf.model_copy(update={"src_field": "translation.de", "tgt_field": "id"}))
    with pytest.raises(DataError, match="'id': row 0 holds a value of type int"):
        load_split(cfg, "train")
    cfg = DataConfig(
        hf=hf.model_copy(update={"src_field": "translation.de", "tgt_field": "translation.en"})
    )
    text = load_split(cfg, "train")
    assert text.src == ["ein hund"] and text.dropped == {"empty": [2, 3]}

"""What a run trains on is what it says: a Hugging Face field resolves to one sentence per row,
a resume refuses data changed since the run started, and a sampled tokenizer is reproducible.

Toy runs: ``test_badinput``'s copy corpus and 2-update Transformer, everything in tmp_path.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from seq2seq.config import DataConfig, HFSource, to_yaml
from seq2seq.data.text import DataError, load_split
from seq2seq.training.loop import train

from .test_badinput import SENTENCES, toy_config
from .toys import run_main

REPO = Path(__file__).resolve().parents[1]


# ---- a Hugging Face field that does not hold one sentence per row -----------------------------


def _hf_dataset(folder: Path, rows: list[dict]) -> str:
    """``rows`` as the train and validation splits of a local dataset (``save_to_disk``)."""
    import datasets

    ds = datasets.Dataset.from_list(rows)
    datasets.DatasetDict({"train": ds, "validation": ds}).save_to_disk(folder)
    return str(folder)


def _translation_rows(sentences: list[str]) -> list[dict]:
    return [
        {"translation": {"de": s, "en": s}, "id": i, "toks": s.split()}
        for i, s in enumerate(sentences)
    ]


DICT_FIELD = (
    "data.hf.src_field 'translation': row 0 holds a dict with keys de, en, not text; "
    "use translation.de"
)


@pytest.mark.parametrize("given_tokenizer", [False, True], ids=["trained", "given"])
@pytest.mark.parametrize("backend", ["memory", "arrow", "stream"])
def test_an_hf_dict_field_is_refused_naming_the_field_the_row_and_the_key(
    tmp_path, backend, given_tokenizer
):
    from seq2seq.data.tokenizer import Tokenizer

    path = _hf_dataset(tmp_path / "ds", _translation_rows(SENTENCES * 3))
    hf = {"path": path, "src_field": "translation", "tgt_field": "translation.en"}
    data = {"hf": hf, "backend": backend, "cache_dir": str(tmp_path / "cache")}
    cfg = toy_config(tmp_path, data=data)
    tok = Tokenizer.train(SENTENCES, SENTENCES, cfg.tokenizer) if given_tokenizer else None
    with pytest.raises(DataError) as e:
        train(cfg, tmp_path / "run", tokenizer=tok)
    assert str(e.value) == DICT_FIELD
    assert not (tmp_path / "run" / "last.pt").exists()


def test_train_exits_2_with_one_line_for_an_hf_dict_field(tmp_path, monkeypatch, capsys):
    path = _hf_dataset(tmp_path / "ds", _translation_rows(SENTENCES * 3))
    hf = {"path": path, "src_field": "translation", "tgt_field": "translation.en"}
    (tmp_path / "config.yaml").write_text(to_yaml(toy_config(tmp_path, data={"hf": hf})))
    capsys.readouterr()  # save_to_disk's progress bar
    code, err = run_main(
        monkeypatch, capsys, "train", tmp_path / "config.yaml", "--run-dir", tmp_path / "run"
    )
    assert code == 2
    assert err.strip().splitlines() == [f"error: {DICT_FIELD}"]


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
    from seq2seq.data.corpus import clean_rows

    hf = HFSource(path=_hf_dataset(tmp_path / "ds", _translation_rows(SENTENCES[:3])))
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
    rows = _translation_rows(["ein hund", "zwei katzen", "drei vögel"])
    rows[1]["translation"]["de"] = None  # a null key
    rows[2]["translation"] = None  # a null row
    hf = HFSource(path=_hf_dataset(tmp_path / "ds", rows))
    cfg = DataConfig(hf=hf.model_copy(update={"src_field": "translation.de", "tgt_field": "id"}))
    with pytest.raises(DataError, match="'id': row 0 holds a value of type int"):
        load_split(cfg, "train")
    cfg = DataConfig(
        hf=hf.model_copy(update={"src_field": "translation.de", "tgt_field": "translation.en"})
    )
    text = load_split(cfg, "train")
    assert text.src == ["ein hund"] and text.dropped == {"empty": [2, 3]}


# ---- data changed under a resume --------------------------------------------------------------


def _reorder(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("".join(x + "\n" for x in reversed(lines)), encoding="utf-8")


def test_resume_refuses_a_train_file_whose_lines_were_reordered(tmp_path, monkeypatch, capsys):
    from seq2seq.data.text import sha256_file

    cfg = toy_config(tmp_path, train=None, max_steps=2)
    run = tmp_path / "run"
    train(cfg, run)
    more = cfg.model_copy(update={"train": cfg.train.model_copy(update={"max_steps": 4})})
    (tmp_path / "config.yaml").write_text(to_yaml(more))
    info, last = (run / "run_info.json").read_bytes(), (run / "last.pt").read_bytes()
    train_de = Path(f"{cfg.data.train}.de")
    old = sha256_file(train_de)
    _reorder(train_de)
    new = sha256_file(train_de)

    capsys.readouterr()  # the first run's progress
    code, err = run_main(monkeypatch, capsys, "train", tmp_path / "config.yaml", "--resume", run)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert (
        f"--resume {run}: data changed since the run started, as run_info.json recorded it: "
        f"{train_de} (sha256 {old[:12]} -> {new[:12]}); restore the file, or train afresh "
        "with --overwrite"
    ) in line
    assert (run / "run_info.json").read_bytes() == info  # the record of the start is kept
    assert (run / "last.pt").read_bytes() == last

    _reorder(train_de)  # restored: the resume goes on
    assert train(more, run, resume=True)["steps"] == 4
    after = json.loads((run / "run_info.json").read_text())["data_files_sha256"]
    assert after == json.loads(info)["data_files_sha256"]


def test_resume_refuses_a_local_hf_dataset_saved_again_with_other_rows(tmp_path):
    path = _hf_dataset(tmp_path / "ds", _translation_rows(SENTENCES * 3))
    hf = {"path": path, "src_field": "translation.de", "tgt_field": "translation.en"}
    cfg = toy_config(tmp_path, data={"hf": hf}, max_steps=2)
    run = tmp_path / "run"
    train(cfg, run)
    recorded = json.loads((run / "run_info.json").read_text())["data_files_sha256"]
    assert any("/train/" in p and p.endswith(".arrow") for p in recorded)
    info = (run / "run_info.json").read_bytes()
    _hf_dataset(tmp_path / "ds", _translation_rows(list(reversed(SENTENCES * 3))))
    more = cfg.model_copy(update={"train": cfg.train.model_copy(update={"max_steps": 4})})
    with pytest.raises(DataError, match=r"data changed since the run started.*train/data-"):
        train(more, run, resume=True)
    assert (run / "run_info.json").read_bytes() == info


def test_a_recorded_file_found_under_another_path_is_matched_by_its_name(tmp_path):
    from seq2seq.data.text import sha256_file
    from seq2seq.training.run_info import check_data_unchanged

    cfg = toy_config(tmp_path)
    train_de = Path(f"{cfg.data.train}.de")
    moved = {f"/elsewhere/{train_de.name}": sha256_file(train_de)}
    (tmp_path / "run_info.json").write_text(json.dumps({"data_files_sha256": moved}))
    check_data_unchanged(tmp_path, cfg)  # the same bytes: no error
    moved = {f"/elsewhere/{train_de.name}": "0" * 64}
    (tmp_path / "run_info.json").write_text(json.dumps({"data_files_sha256": moved}))
    with pytest.raises(DataError, match=rf"{train_de} \(sha256 000000000000 -> "):
        check_data_unchanged(tmp_path, cfg)


# ---- a tokenizer trained on a sample of the corpus ----------------------------------------------

_TRAIN_TOKENIZER = """
import sys
from seq2seq.config import TokenizerConfig
from seq2seq.data.tokenizer import Tokenizer
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
cfg = TokenizerConfig(vocab_size=120, max_sentences=int(sys.argv[2]))
print(Tokenizer.train(lines, lines, cfg).digest())
"""


def test_a_sampled_tokenizer_is_byte_identical_in_two_processes(tmp_path):
    """max_sentences below the corpus size: sentencepiece's own sampler drew another sample in
    every process; the sample is now seeded."""
    from .conftest import synth_pairs

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"{s}\n" for s, _ in synth_pairs(400, seed=5)), encoding="utf-8")
    env = {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    digests = [
        subprocess.run(
            [sys.executable, "-c", _TRAIN_TOKENIZER, str(corpus), "150"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=120,
        ).stdout.strip()
        for _ in range(2)
    ]
    assert len(digests[0]) == 64 and digests[0] == digests[1]


def test_the_sample_is_uniform_seeded_in_corpus_order_and_whole_when_small():
    from seq2seq.data.tokenizer import sample_sentences

    lines = [f"s{i}" for i in range(1000)]
    assert sample_sentences(iter(lines), 1000) == lines  # the corpus as it is
    assert sample_sentences(iter(lines), 5000) == lines
    sample = sample_sentences(iter(lines), 100)
    assert sample == sample_sentences(iter(lines), 100)
    assert len(set(sample)) == 100 and sample == sorted(sample, key=lambda s: int(s[1:]))
    # every line equally likely: over 200 seeds each line is drawn about 20 times
    counts = [0] * 1000
    for seed in range(200):
        for s in sample_sentences(iter(lines), 100, seed=seed):
            counts[int(s[1:])] += 1
    assert 5 <= min(counts) and max(counts) <= 40
    first, last = sum(counts[:500]), sum(counts[500:])
    assert abs(first - last) < 0.1 * (first + last)

"""Training corpora kept on disk (``data.backend`` arrow and stream).

They must hold the same pairs as the memory backend, batch by the same rule, replay exactly, reuse
a cache keyed by content, and keep resident memory flat as the corpus grows.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from seq2seq.config import ConfigError, DataConfig, HFSource, validate_config
from seq2seq.data.arrow import open_arrow
from seq2seq.data.batch import cut_runs, length_batches
from seq2seq.data.corpus import clean_rows
from seq2seq.data.stream import StreamCorpus
from seq2seq.data.text import DataError, iter_lines, load_split, read_lines, tokenize_pairs
from seq2seq.data.tokenizer import Tokenizer
from tests.conftest import MULTI30K

REPO = Path(__file__).resolve().parents[1]


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _arrow_cfg(folder: Path, tmp_path: Path, **kw) -> DataConfig:
    return DataConfig(
        train=str(folder / "train"), backend="arrow", cache_dir=str(tmp_path / "c"), **kw
    )


def _ids(table) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    return list(
        zip(
            map(tuple, table.column("src_ids").to_pylist()),
            map(tuple, table.column("tgt_ids").to_pylist()),
            strict=True,
        )
    )


# ---- reading, one line at a time -----------------------------------------------------------


def test_streamed_lines_follow_the_reading_policy(tmp_path):
    raw = "\ufeffeins\r\nzwei\u2028drei\nvi\x00er\n\nfünf".encode()
    plain = _write(tmp_path / "a.txt", raw)
    gz = tmp_path / "a.txt.gz"
    with gzip.open(gz, "wb") as f:
        f.write(raw)
    expected = ["eins", "zwei drei", "vier", "", "fünf"]
    assert list(iter_lines(plain)) == list(iter_lines(gz)) == read_lines(plain) == expected


def test_streamed_errors_name_file_and_line(tmp_path):
    bad = _write(tmp_path / "bad.de", b"gut\nschl\xe9cht\n")
    with pytest.raises(DataError, match=r"bad\.de line 2: not valid UTF-8"):
        list(iter_lines(bad))
    _write(tmp_path / "s.de", b"a\nb\nc\n")
    _write(tmp_path / "s.en", b"a\nb\nc\nd\n")
    cfg = DataConfig(train=str(tmp_path / "s"))
    with pytest.raises(DataError, match=r"s\.de has 3 lines but .*s\.en has 4"):
        list(clean_rows(cfg.model_dump_json(), "train"))


# ---- batching on arrays ---------------------------------------------------------------------


def test_length_batches_cover_each_example_once_within_budget():
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(1, 60, 500), rng.integers(1, 60, 500)
    batches = length_batches(src, tgt, 400, seed=1, epoch=0)
    assert sorted(np.concatenate(batches).tolist()) == list(range(500))
    for b in batches:
        assert np.maximum(src[b], tgt[b] + 1).max() * len(b) <= 400
    again = length_batches(src, tgt, 400, seed=1, epoch=0)
    assert all(np.array_equal(a, b) for a, b in zip(again, batches, strict=True))
    other = length_batches(src, tgt, 400, seed=1, epoch=1)
    assert [b.tolist() for b in other] != [b.tolist() for b in batches]
    # the stream backend counts the batches from a histogram of (target, source) lengths alone
    pairs, counts = np.unique(np.stack([tgt, src], 1), axis=0, return_counts=True)
    widths = np.maximum(pairs[:, 1], pairs[:, 0] + 1)
    assert len(cut_runs(zip(widths.tolist(), counts.tolist(), strict=True), 400)) == len(batches)
    with pytest.raises(DataError, match="raise train.batch_tokens or lower data.max_len"):
        length_batches(np.array([10, 500]), np.array([10, 10]), 100)


# ---- the arrow backend ------------------------------------------------------------------------


def test_arrow_holds_the_memory_backends_pairs_and_drops(
    synth_corpus, synth_tokenizer, tmp_path, caplog
):
    tok = synth_tokenizer
    cfg = _arrow_cfg(synth_corpus, tmp_path, max_len=20)
    text = load_split(cfg, "train")
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        pairs = tokenize_pairs(text, tok.encode_src, tok.encode_tgt, 20, "train")
        memory_log = caplog.text
        caplog.clear()
        corpus = open_arrow(cfg, tok)
    assert len(corpus) == len(pairs) and 0 < len(pairs) < 1000  # max_len 20 drops some
    table = corpus.ds[corpus.rows.tolist()]
    assert _ids(table) == list(zip(map(tuple, pairs.src), map(tuple, pairs.tgt), strict=True))
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
    cfg = _arrow_cfg(data, tmp_path)
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
    one = open_arrow(_arrow_cfg(synth_corpus, tmp_path / "1"), synth_tokenizer)
    two = open_arrow(_arrow_cfg(synth_corpus, tmp_path / "2", num_proc=2), synth_tokenizer)
    assert len(list((tmp_path / "2" / "c").rglob("ids_0000*_of_00002.arrow"))) == 2
    assert np.array_equal(one.rows, two.rows) and np.array_equal(one.src_lens, two.src_lens)
    assert _ids(one.ds[one.rows.tolist()]) == _ids(two.ds[two.rows.tolist()])


# ---- the stream backend -----------------------------------------------------------------------


def test_stream_epoch_sees_every_pair_once_and_replays_exactly(
    synth_corpus, synth_tokenizer, tmp_path
):
    arrow = open_arrow(_arrow_cfg(synth_corpus, tmp_path, max_len=40), synth_tokenizer)
    cfg = _arrow_cfg(synth_corpus, tmp_path, max_len=40).model_copy(
        update={"backend": "stream", "shuffle_buffer": 300}
    )
    corpus = StreamCorpus(cfg, synth_tokenizer)
    assert len(corpus) == len(arrow)
    epoch = corpus.epoch_batches(600, seed=3, epoch=0)
    batches = epoch[0 : len(epoch)]
    assert len(batches) == len(epoch) > 4  # the counting pass predicted the number of batches
    seen = Counter(p for b in batches for p in _ids(b))
    assert seen == Counter(_ids(arrow.ds[arrow.rows.tolist()]))
    for b in batches:
        x = corpus.batch(b)
        assert max(x.src.shape[1], x.tgt_in.shape[1]) * x.src.shape[0] <= 600
    again = corpus.epoch_batches(600, seed=3, epoch=0)
    assert again[3:5][1].equals(batches[4])  # a resume at batch 3 replays to the same batches
    assert again[5].equals(batches[5])
    assert again[1].equals(batches[1])  # an earlier batch: the epoch is replayed from its start
    halves = [corpus.epoch_batches(600, 3, 0, rank=r, world=2) for r in (0, 1)]
    assert len(halves[0]) == len(halves[1]) == len(batches) // 2
    assert halves[1][2].equals(batches[5]) and halves[0][2].equals(batches[4])
    later = corpus.epoch_batches(600, seed=3, epoch=1)
    assert not later[0].equals(batches[0])


# ---- training end to end ----------------------------------------------------------------------


def _train_cfg(folder: Path, tmp_path: Path, backend: str, max_steps: int):
    return validate_config(_train_raw(folder, tmp_path, backend, max_steps))


def _train_raw(folder: Path, tmp_path: Path, backend: str, max_steps: int) -> dict:
    return {
        "data": {
            "train": str(folder / "train"),
            "valid": str(folder / "val"),
            "max_len": 40,
            "max_valid_pairs": 20,
            "backend": backend,
            "cache_dir": str(tmp_path / "c"),
            "shuffle_buffer": 400,
        },
        "tokenizer": {"vocab_size": 300},
        "model": {
            "name": "transformer",
            "d_model": 16,
            "n_heads": 2,
            "d_ff": 32,
            "n_encoder_layers": 1,
            "n_decoder_layers": 1,
            "dropout": 0.0,
        },
        "train": {
            "max_steps": max_steps,
            "batch_tokens": 400,
            "valid_every": 1000,
            "valid_bleu": False,
            "best_metric": "loss",
            "seed": 2,
            "device": "cpu",
        },
    }


def _losses(run_dir: Path) -> list[float]:
    rows = [json.loads(ln) for ln in (run_dir / "train_log.jsonl").read_text().splitlines()]
    return [r["loss"] for r in rows if "loss" in r and "valid" not in r]


@pytest.mark.e2e  # a training run
@pytest.mark.parametrize(
    "backend", ["stream", pytest.param("arrow", marks=pytest.mark.slow)]
)  # arrow's batches are a pure function of (seed, epoch), like the memory backend's
def test_training_resumes_exactly_on_a_disk_backend(multi30k_slice, tmp_path, backend):
    """The stream replays the interrupted epoch up to the batch the checkpoint stopped at."""
    from seq2seq.training.loop import train

    straight = train(_train_cfg(multi30k_slice, tmp_path, backend, 4), tmp_path / "a")
    assert straight["steps"] == 4
    train(_train_cfg(multi30k_slice, tmp_path, backend, 2), tmp_path / "b")
    train(_train_cfg(multi30k_slice, tmp_path, backend, 4), tmp_path / "b", resume=True)
    a, b = _losses(tmp_path / "a"), _losses(tmp_path / "b")
    assert len(a) == 4 and a == pytest.approx(b, abs=1e-6)


@pytest.mark.e2e  # a training run
def test_training_on_the_arrow_backend(multi30k_slice, tmp_path):
    from seq2seq.training.loop import train

    summary = train(_train_cfg(multi30k_slice, tmp_path, "arrow", 2), tmp_path / "run")
    assert summary["steps"] == 2 and len(_losses(tmp_path / "run")) == 2
    info = json.loads((tmp_path / "run" / "run_info.json").read_text())
    tok = Tokenizer.load(tmp_path / "run")  # the memory backend keeps as many pairs
    text = load_split(DataConfig(train=str(multi30k_slice / "train")), "train")
    assert info["train_pairs"] == len(tokenize_pairs(text, tok.encode_src, tok.encode_tgt, 40, "t"))


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["arrow", "stream"])
def test_torchrun_two_ranks_on_a_disk_backend(multi30k_slice, tmp_path, backend):
    """Rank 0 builds the cache and the tokenizer while rank 1 waits; the replicas stay identical."""
    raw = _train_raw(multi30k_slice, tmp_path, backend, 3)
    raw["train"]["num_threads"] = 1
    (tmp_path / "config.yaml").write_text(json.dumps(raw))  # JSON is YAML
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "seq2seq",
        "train",
        str(tmp_path / "config.yaml"),
        "--run-dir",
        str(tmp_path / "run"),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    digests = json.loads(r.stdout)["rank_weights_sha256"]
    assert len(digests) == 2 and digests[0] == digests[1]


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
    assert table.column("line_no").to_pylist() == [1, 3] and _ids(table) == expected
    stream = StreamCorpus(cfg.model_copy(update={"backend": "stream"}), tok)
    (batch,) = stream.epoch_batches(1000, seed=0, epoch=0)[0:1]
    assert len(stream) == 2 and sorted(_ids(batch)) == sorted(expected)


def test_disk_backends_refuse_concatenation():
    with pytest.raises(ConfigError, match="concat_k > 1 needs backend 'memory'"):
        validate_config({"data": {"backend": "arrow", "concat_k": 2}})
    with pytest.raises(ConfigError, match="data.backend"):
        validate_config({"data": {"backend": "mmap"}})


# ---- resident memory as the corpus grows --------------------------------------------------------

# Run in a fresh process: open the corpus and make every batch of one epoch. Peak anonymous RSS
# (RssAnon sampled every 2 ms) is what a corpus held in Python objects grows; the pages of the
# memory-mapped Arrow files count as RssFile, page cache the kernel drops under pressure, so
# VmHWM (anonymous + file) is reported but not judged.
_MEASURE = r"""
import json, sys, threading, time
import datasets, pyarrow, torch  # imported before the baseline, whichever the backend

def kb(key):
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith(key))

peak = [kb("RssAnon:")]
def sample():
    while True:
        peak[0] = max(peak[0], kb("RssAnon:"))
        time.sleep(0.002)
threading.Thread(target=sample, daemon=True).start()

from seq2seq.data import text as data
from seq2seq.data.batch import Batch, token_batches
from seq2seq.config import DataConfig
from seq2seq.data.arrow import open_arrow
from seq2seq.data.tokenizer import Tokenizer

backend, prefix, tok_dir, cache = sys.argv[1:5]
tok = Tokenizer.load(tok_dir)
cfg = DataConfig(train=prefix, backend=backend, cache_dir=cache, max_len=100)
n = 0
if backend == "memory":
    pairs = data.tokenize_pairs(data.load_split(cfg, "train"), tok.encode_src, tok.encode_tgt,
                                cfg.max_len, "train")
    lens = [len(s) for s in pairs.src], [len(t) for t in pairs.tgt]
    for idx in token_batches(*lens, 4000, 1, 0):
        n += Batch.from_ids([pairs.src[i] for i in idx], [pairs.tgt[i] for i in idx]).n_tokens
else:
    corpus = open_arrow(cfg, tok)
    for item in corpus.epoch_batches(4000, 1, 0):
        n += corpus.batch(item).n_tokens
peak[0] = max(peak[0], kb("RssAnon:"))
print(json.dumps({"tokens": n, "peak_anon_mb": peak[0] / 1024, "hwm_mb": kb("VmHWM:") / 1024}))
"""


def _repeated_corpus(folder: Path, n_pairs: int | None, times: int) -> Path:
    folder.mkdir(parents=True)
    for lang in ("de", "en"):
        with gzip.open(MULTI30K / f"train.{lang}.gz", "rt", encoding="utf-8") as f:
            lines = f.readlines()[:n_pairs]
        (folder / f"train.{lang}").write_text("".join(lines) * times, encoding="utf-8")
    return folder / "train"


def _peak(backend: str, prefix: Path, tok_dir: Path, cache: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    r = subprocess.run(
        [sys.executable, "-c", _MEASURE, backend, str(prefix), str(tok_dir), str(cache)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _growth(backend: str, tmp_path: Path, tok_dir: Path, n_pairs: int | None) -> tuple[dict, dict]:
    x1 = _peak(
        backend, _repeated_corpus(tmp_path / f"{backend}1", n_pairs, 1), tok_dir, tmp_path / "c"
    )
    x10 = _peak(
        backend, _repeated_corpus(tmp_path / f"{backend}10", n_pairs, 10), tok_dir, tmp_path / "c"
    )
    assert x10["tokens"] == 10 * x1["tokens"]  # the whole corpus went through the batches
    return x1, x10


# Growth allowed from 2,000 to 20,000 pairs: the index (16 bytes a pair) and allocator noise fit;
# the same corpus held as Python lists (the memory backend) grows by ~25 MB.
MARGIN_MB = 8.0


@pytest.mark.e2e  # two fresh processes on 2,000 and 20,000 Multi30k pairs
def test_arrow_peak_memory_does_not_grow_with_the_corpus(slice_tokenizer, tmp_path):
    slice_tokenizer.save(tmp_path / "tok")
    x1, x10 = _growth("arrow", tmp_path, tmp_path / "tok", 2000)
    assert x10["peak_anon_mb"] - x1["peak_anon_mb"] < MARGIN_MB, (x1, x10)


@pytest.mark.slow
def test_the_margin_catches_a_corpus_held_in_lists(slice_tokenizer, tmp_path):
    slice_tokenizer.save(tmp_path / "tok")
    m1, m10 = _growth("memory", tmp_path, tmp_path / "tok", 2000)
    assert m10["peak_anon_mb"] - m1["peak_anon_mb"] > MARGIN_MB, (m1, m10)


@pytest.mark.slow
def test_arrow_peak_memory_flat_on_multi30k_x1_and_x10(slice_tokenizer, tmp_path):
    """All of Multi30k (29,000 pairs) and ten copies of it (290,000)."""
    slice_tokenizer.save(tmp_path / "tok")
    x1, x10 = _growth("arrow", tmp_path, tmp_path / "tok", None)
    assert x10["peak_anon_mb"] - x1["peak_anon_mb"] < 30.0, (x1, x10)
    m1, m10 = _growth("memory", tmp_path, tmp_path / "tok", None)
    assert m10["peak_anon_mb"] - m1["peak_anon_mb"] > 100.0, (m1, m10)

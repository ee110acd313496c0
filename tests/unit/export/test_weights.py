"""``seq2seq/export/weights.py`` (and ``export/folder.py``): an export holds the weights, the
tokenizer and the target vocabulary (when its source has one) alone, translates as its source
does, halves in fp16/bf16, and is written whole or not at all."""

from __future__ import annotations

import shutil

import pytest
import torch

from seq2seq.checkpoint import (
    load_checkpoint,
    model_from_checkpoint,
    weights_digest,
)
from seq2seq.decoding.runs import load
from seq2seq.decoding.translate import translate_sentences
from seq2seq.export import ExportError
from seq2seq.export.weights import (
    cast_weights,
    export_checkpoint,
    export_payload,
    weight_bytes,
)

EXPORT_KEYS = {"format", "version", "config", "model", "tokenizer", "target_vocab", "exported_from"}


def _sources(synth_corpus, n=40):
    return (synth_corpus / "val.de").read_text().splitlines()[:n]


def _translate(path, lines, **decode):
    run = load(path, "cpu")
    model, tok, cfg = run.model, run.tok, run.cfg
    dcfg = cfg.decode.with_method(decode.pop("method", "greedy"), **decode)
    return [r.text for r in translate_sentences(model, tok, lines, dcfg)]


def test_an_fp32_export_translates_as_its_source_and_holds_no_training_state(
    synth_transformer_run, synth_corpus, tmp_path
):
    done = export_checkpoint(synth_transformer_run, tmp_path / "export")
    source = load_checkpoint(synth_transformer_run)
    assert {"optimizer", "rng", "train_state", "scaler"} <= set(source)
    exported = load_checkpoint(tmp_path / "export")  # the folder means its model.pt
    assert set(exported) == EXPORT_KEYS
    assert exported["exported_from"]["step"] == source["train_state"]["step"]
    assert exported["exported_from"]["dtype"] == "fp32"
    assert weights_digest(exported["model"]) == weights_digest(source["model"])
    assert exported["tokenizer"] == source["tokenizer"]
    assert exported["target_vocab"] == source["target_vocab"]  # the run's target vocabulary
    assert load(tmp_path / "export", "cpu").model.target_vocab.equal(
        load(synth_transformer_run, "cpu").model.target_vocab
    )
    assert done.files == {"model.pt": (tmp_path / "export" / "model.pt").stat().st_size}
    assert done.out_bytes < done.source_bytes  # the optimizer's two moments are gone
    lines = _sources(synth_corpus)
    for decode in ({}, {"method": "beam", "beam_size": 3}):
        ours = _translate(synth_transformer_run, lines, **decode)
        assert _translate(tmp_path / "export", lines, **decode) == ours
        assert _translate(tmp_path / "export" / "model.pt", lines, **decode) == ours


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_a_half_precision_export_halves_the_weights_and_decodes(
    synth_transformer_run, synth_corpus, tmp_path, dtype
):
    export_checkpoint(synth_transformer_run, tmp_path / "fp32")
    export_checkpoint(synth_transformer_run, tmp_path / dtype, dtype=dtype)
    full, half = load_checkpoint(tmp_path / "fp32"), load_checkpoint(tmp_path / dtype)
    want = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    assert {t.dtype for t in half["model"].values() if t.is_floating_point()} == {want}
    assert weight_bytes(half["model"]) * 2 == weight_bytes(full["model"])
    # the tied embeddings stay one tensor
    emb = half["model"]["src_embed.weight"]
    assert emb.untyped_storage().data_ptr() == half["model"]["tgt_embed.weight"].data_ptr()
    model, _, _ = model_from_checkpoint(half)
    assert next(model.parameters()).dtype == torch.float32  # widened when loaded
    lines = _sources(synth_corpus) + ["", "   "]
    out = _translate(tmp_path / dtype, lines)
    assert len(out) == len(lines) and all(isinstance(t, str) for t in out)
    assert out[-2:] == ["", ""] and sum(bool(t) for t in out) >= len(lines) - 4


def test_fp16_refuses_a_weight_beyond_its_range():
    weights = {"w": torch.tensor([1.0, 7e4]), "i": torch.tensor([3])}
    with pytest.raises(ExportError) as e:
        cast_weights(weights, "fp16")
    assert "w" in str(e.value) and "bf16" in str(e.value) and "\n" not in str(e.value)
    assert cast_weights(weights, "bf16")["i"].dtype == torch.int64


def test_the_runs_decode_file_travels_along(synth_transformer_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(synth_transformer_run, run)
    (run / "decode.yaml").write_text("method: beam\nbeam_size: 3\n")
    done = export_checkpoint(run, tmp_path / "export", dtype="bf16")
    assert set(done.files) == {"model.pt", "decode.yaml"}
    cfg = load(tmp_path / "export", "cpu").cfg
    assert (cfg.decode.method, cfg.decode.beam_size) == ("beam", 3)


def test_the_output_folder_is_checked_before_anything_is_read(synth_transformer_run, tmp_path):
    out = tmp_path / "export"
    export_checkpoint(synth_transformer_run, out)
    with pytest.raises(ExportError, match="already exists; give --overwrite"):
        export_checkpoint(synth_transformer_run, out)
    before = (out / "model.pt").stat().st_mtime_ns
    export_checkpoint(synth_transformer_run, out, dtype="fp16", overwrite=True)
    assert (out / "model.pt").stat().st_mtime_ns != before
    assert load_checkpoint(out)["exported_from"]["dtype"] == "fp16"
    with pytest.raises(ExportError, match="holds the checkpoint being exported"):
        export_checkpoint(synth_transformer_run, synth_transformer_run, overwrite=True)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ExportError, match="replaces only an earlier export"):
        export_checkpoint(synth_transformer_run, other, overwrite=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ExportError, match="is a file"):
        export_checkpoint(synth_transformer_run, tmp_path / "file")
    with pytest.raises(ExportError, match="--dtype fp8"):
        export_checkpoint(synth_transformer_run, tmp_path / "new", dtype="fp8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "file", "other"]


def test_a_failed_export_leaves_the_earlier_one_as_it_was(
    synth_transformer_run, tmp_path, monkeypatch
):
    import seq2seq.export.weights as weights

    out = tmp_path / "export"
    export_checkpoint(synth_transformer_run, out)
    before = (out / "model.pt").read_bytes()

    def broken(path, payload):
        path.write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(weights, "save_checkpoint", broken)
    with pytest.raises(OSError, match="No space"):
        export_checkpoint(synth_transformer_run, out, overwrite=True)
    assert (out / "model.pt").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["export"]  # no temporary folder left


def test_an_export_of_a_checkpoint_without_a_target_vocabulary_has_none(tmp_path):
    old = {"config": {}, "model": {}, "tokenizer": {"src": b"", "tgt": None}}
    assert "target_vocab" not in export_payload(old, tmp_path / "old.pt", "fp32")
    kept = export_payload({**old, "target_vocab": [3, 7]}, tmp_path / "new.pt", "fp16")
    assert kept["target_vocab"] == [3, 7]

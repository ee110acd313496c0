"""``seq2seq/checkpoint.py``: non-finite weights are never saved, and a run's tuned decode.yaml is
read or refused in one line."""

from __future__ import annotations

import pytest

from seq2seq.checkpoint import CheckpointError, save_checkpoint, with_tuned_decode
from seq2seq.config import Config
from tests.toys import tiny_model


def test_a_tuned_decode_file_with_a_key_twice_is_refused(tmp_path):
    from seq2seq.checkpoint import CheckpointError, with_tuned_decode
    from seq2seq.config import Config

    (tmp_path / "decode.yaml").write_text("method: beam\nbeam_size: 4\nbeam_size: 5\n")
    with pytest.raises(CheckpointError) as e:
        with_tuned_decode(Config(), tmp_path)
    msg = str(e.value)
    assert "decode.yaml" in msg and "beam_size is given twice (lines 2 and 3)" in msg
    assert "\n" not in msg


def test_save_checkpoint_refuses_non_finite_weights(tmp_path):
    model = tiny_model("rnn")
    save_checkpoint(tmp_path / "c.pt", {"model": model.state_dict()})
    before = (tmp_path / "c.pt").read_bytes()
    bad = {k: v.clone() for k, v in model.state_dict().items()}
    next(iter(bad.values()))[0] = float("inf")
    with pytest.raises(CheckpointError, match="is not finite"):
        save_checkpoint(tmp_path / "c.pt", {"model": bad})
    assert (tmp_path / "c.pt").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("method: beam\nbeam_size: 0\n", "beam_size"),
        ("method: beam\nbeam: 5\n", "unknown key"),
        ("- 5\n", "expected decode keys"),
        ("method: [\n", "not valid decode settings"),
    ],
)
def test_a_bad_decode_file_is_refused_in_one_line(tmp_path, text, needle):
    (tmp_path / "decode.yaml").write_text(text)
    with pytest.raises(CheckpointError, match=needle) as e:
        with_tuned_decode(Config(), tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and "decode.yaml" in msg and "tune-decode" in msg


def test_a_folder_means_best_pt_then_last_pt_then_an_exports_model_pt(tmp_path):
    from seq2seq.checkpoint import CTRANSLATE2_META, resolve_checkpoint

    for name in ("model.pt", "last.pt", "best.pt"):
        (tmp_path / name).write_bytes(b"")
        assert resolve_checkpoint(tmp_path) == tmp_path / name
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="holds no best.pt or last.pt"):
        resolve_checkpoint(tmp_path / "empty")
    ct2 = tmp_path / "ct2"
    ct2.mkdir()
    (ct2 / CTRANSLATE2_META).write_text("{}")
    with pytest.raises(CheckpointError) as e:
        resolve_checkpoint(ct2)
    msg = str(e.value)
    assert "CTranslate2 export" in msg and f"seq2seq translate -c {ct2}" in msg
    assert "eval --hyp" in msg and "\n" not in msg

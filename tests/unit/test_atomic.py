"""``seq2seq/atomic.py``: an interrupted write leaves the old file."""

from __future__ import annotations

import pytest

from seq2seq.atomic import atomic_write_bytes


def test_atomic_write_keeps_the_old_file_on_a_crash(tmp_path, monkeypatch):
    target = tmp_path / "last.pt"
    atomic_write_bytes(target, b"old")

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("seq2seq.atomic.os.replace", crash)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["last.pt"]  # no temporary file left


def test_a_file_that_cannot_be_made_is_named_as_the_user_gave_it(tmp_path, monkeypatch):
    """The error named the hidden temporary file beside the output (a new-user trial)."""
    import errno
    import tempfile

    from seq2seq.atomic import atomic_write_text

    def refuse(dir, prefix, suffix):
        raise PermissionError(errno.EACCES, "Permission denied", f"{dir}/{prefix}x{suffix}")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(PermissionError) as e:
        atomic_write_text(tmp_path / "scores.json", "{}")
    assert e.value.filename == str(tmp_path / "scores.json") and e.value.strerror


def test_a_path_ending_in_gz_is_written_gzip_compressed(tmp_path):
    import gzip

    from seq2seq.atomic import atomic_write_text, write_output

    text = "ein Satz\nzwei Sätze\n"
    write_output(tmp_path / "hyp.txt.gz", text)
    atomic_write_text(tmp_path / "scores.json.gz", text)
    atomic_write_bytes(tmp_path / "b.gz", b"\x1f\x8b bytes as given")  # e.g. a checkpoint
    for name in ("hyp.txt.gz", "scores.json.gz"):
        assert gzip.decompress((tmp_path / name).read_bytes()).decode("utf-8") == text
    assert (tmp_path / "b.gz").read_bytes() == b"\x1f\x8b bytes as given"
    write_output(tmp_path / "plain.txt", text)  # any other name: as written
    assert (tmp_path / "plain.txt").read_bytes() == text.encode("utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "b.gz", "hyp.txt.gz", "plain.txt", "scores.json.gz"
    ]  # fmt: skip

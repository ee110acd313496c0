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


def test_a_symbolic_link_stays_a_link_and_its_target_is_replaced(tmp_path):
    """A rename over the link replaced the link with a regular file (a new-user trial)."""
    from seq2seq.atomic import atomic_write_text

    target, link = tmp_path / "real.txt", tmp_path / "link.txt"
    target.write_text("old")
    link.symlink_to(target)
    atomic_write_text(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "real.txt"]


def test_a_fifo_is_written_through_not_replaced_by_a_regular_file(tmp_path):
    """-o FIFO (or /dev/null, or a shell's >(...)) became a regular file and the reader got
    nothing (a new-user trial); it is written as a shell redirect writes it."""
    import os
    import stat
    import threading

    from seq2seq.atomic import atomic_write_text

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    atomic_write_text(fifo, "through\n")
    reader.join(10)
    assert got == ["through\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]

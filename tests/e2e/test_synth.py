"""``seq2seq synth`` end to end: a corpus is replaced only with ``--overwrite`` (the first corpus
is written by a subprocess, the command's end-to-end path; the refusal and the overwrite run in
process)."""

from __future__ import annotations

from tests.e2e.helpers import one_line_exit_2, run


def test_synth_refuses_to_replace_a_corpus_without_overwrite(tmp_path, run_in_process):
    args = ["synth", "--task", "copy", "--n", "100", "--out", tmp_path / "c"]
    assert run(*args).returncode == 0
    before = (tmp_path / "c" / "train.src").read_text()
    one_line_exit_2(run_in_process(*args, "--seed", "2"), "exists already; pass --overwrite")
    assert (tmp_path / "c" / "train.src").read_text() == before
    r = run_in_process(*args, "--seed", "2", "--overwrite")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "c" / "train.src").read_text() != before

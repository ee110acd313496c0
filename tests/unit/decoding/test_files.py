"""``seq2seq/decoding/files.py``: line-oriented translation -- one output line per input line in
its place whatever the line holds, what Ctrl-C keeps, and an n-best TSV of three fields per row."""

from __future__ import annotations

import gzip
import os
import re
import signal
import socket
import sys
import types

import pytest

from seq2seq.decoding.files import (
    WINDOW_BATCHES,
    escape_tsv_field,
    window_sizes,
    windows_of,
)
from seq2seq.decoding.translate import translate_sentences
from tests.corpora import ODD, SIX
from tests.toys import FakeStdin, run_cli, run_main, translate_cli


def interrupt_search_at(monkeypatch, call_no: int, sig: int | None = None) -> None:
    """Make the ``call_no``-th search (one per batch) raise KeyboardInterrupt, as Ctrl-C would
    (``sig``: send this process that signal there instead)."""
    import seq2seq.decoding.translate as translate

    real, calls = translate.search, []

    def search(*args, **kwargs):
        calls.append(1)
        if len(calls) == call_no:
            if sig is None:
                raise KeyboardInterrupt
            os.kill(os.getpid(), sig)
        return real(*args, **kwargs)

    monkeypatch.setattr(translate, "search", search)


@pytest.fixture
def sources(synth_corpus, tmp_path):
    """20 source lines of the synthetic validation set, as a file."""
    lines = (synth_corpus / "val.de").read_text(encoding="utf-8").splitlines()[:20]
    path = tmp_path / "src.de"
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


def test_ctrl_c_in_translate_keeps_the_finished_lines_in_out_partial_and_out_untouched(
    synth_run, sources, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "out.en"
    code, _, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", sources, "-o", out,
        "--batch-size", "1",
    )  # fmt: skip
    assert code == 0, err
    full = out.read_text(encoding="utf-8").splitlines()
    assert len(full) == 20 and not (tmp_path / "out.en.partial").exists()

    out.write_text("an older translation\n", encoding="utf-8")
    window = 3  # the first two windows at --batch-size 1: 1 line, then 2
    interrupt_search_at(monkeypatch, window + 1)  # the first batch of the third window
    code, _, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", sources, "-o", out,
        "--batch-size", "1",
    )  # fmt: skip
    partial = tmp_path / "out.en.partial"
    assert code == 130
    assert (
        f"interrupted after {window} of 20 lines: {partial} holds the first {window} "
        "translations" in err
    )
    assert len(err.strip().splitlines()) == 1
    assert partial.read_text(encoding="utf-8").splitlines() == full[:window]
    assert out.read_text(encoding="utf-8") == "an older translation\n"  # never looks complete
    # a second run refuses to start over the kept lines: it had truncated them (a new-user trial)
    code, _, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", sources, "-o", out
    )
    assert code == 2 and err.strip() == (
        f"error: --output {out}: {partial} holds the lines a stopped translate kept; move it "
        "away (or delete it), then run again"
    )
    assert partial.read_text(encoding="utf-8").splitlines() == full[:window]


def test_a_second_translate_into_an_output_being_written_is_refused_naming_the_writer(
    synth_run, sources, tmp_path, monkeypatch, capsys
):
    """It was told the live OUT.partial held a stopped run's lines, to delete (a tester's trial);
    two started together could both write it."""
    import seq2seq.decoding.translate as translate

    out, real, calls, second = tmp_path / "out.en", translate.search, [], []

    def search(*args, **kwargs):  # the first translate, 3 lines written, starts a second one
        calls.append(1)
        if len(calls) == 4:
            argv = ("translate", "-c", synth_run, "-i", sources, "-o", out)
            second.append(run_cli(monkeypatch, capsys, *argv))
        return real(*args, **kwargs)

    monkeypatch.setattr(translate, "search", search)
    code, _, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", sources, "-o", out,
        "--batch-size", "1",
    )  # fmt: skip
    assert code == 0, err
    assert len(out.read_text(encoding="utf-8").splitlines()) == 20
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.en", "src.de"]  # no lock left
    code, _, err = second[0]
    assert code == 2 and err.strip() == (
        f"error: --output {out}: another process is writing it (PID {os.getpid()} on host "
        f"{socket.gethostname()}; lock {out}.lock); wait for it to finish or stop it, or give "
        "another --output"
    )


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_in_translate_keeps_the_lines_as_ctrl_c_does(
    sig, synth_run, sources, tmp_path, monkeypatch, capsys
):
    """They ended translate at once, with no word and an empty OUT.partial (a new-user trial)."""
    out = tmp_path / "out.en"
    interrupt_search_at(monkeypatch, 4, getattr(signal, sig))  # after windows of 1 and 2 lines
    code, _, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", sources, "-o", out,
        "--batch-size", "1",
    )  # fmt: skip
    partial = tmp_path / "out.en.partial"
    assert code == 130 and f"interrupted after 3 of 20 lines: {partial} holds" in err, err
    assert len(partial.read_text(encoding="utf-8").splitlines()) == 3 and not out.exists()


def test_ctrl_c_before_the_first_window_writes_nothing(
    synth_run, sources, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "out.en"
    interrupt_search_at(monkeypatch, 1)
    code, _, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", sources, "-o", out
    )
    assert code == 130 and "interrupted after 0 of 20 lines: nothing written" in err
    assert not out.exists() and not (tmp_path / "out.en.partial").exists()
    # the folders made for an output left nothing behind either (they stayed, empty: a trial)
    (tmp_path / "kept").mkdir()
    deep = tmp_path / "kept" / "new" / "deeper" / "out.en"
    interrupt_search_at(monkeypatch, 1)
    code, _, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", sources, "-o", deep
    )
    assert code == 130 and "nothing written" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept", "src.de"]
    assert not any((tmp_path / "kept").iterdir())


def test_ctrl_c_while_streaming_stdin_to_a_file_keeps_the_lines_already_written(
    synth_run, sources, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "out.en"
    monkeypatch.setattr(sys, "stdin", FakeStdin(sources.read_text(encoding="utf-8")))
    interrupt_search_at(monkeypatch, 4)  # after windows of 1 and 2 lines
    code, _, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-o", out, "--batch-size", "1"
    )
    partial = tmp_path / "out.en.partial"
    assert code == 130
    assert f"stopped: interrupted after 3 lines: {partial} holds the first 3 translations" in err
    assert len(partial.read_text(encoding="utf-8").splitlines()) == 3
    assert not out.exists()


def test_gzip_data_on_stdin_is_named_as_gzip_not_an_encoding_to_convert(
    synth_run, monkeypatch, capsys
):
    """cat test.de.gz | translate said: not valid UTF-8 ...; convert the file with iconv."""
    r, w = os.pipe()
    os.write(w, gzip.compress(b"ein hund .\n"))
    os.close(w)
    stdin = types.SimpleNamespace(buffer=os.fdopen(r, "rb"), isatty=lambda: False)
    monkeypatch.setattr(sys, "stdin", stdin)
    code, out, err = run_cli(monkeypatch, capsys, "translate", "-c", synth_run, "-i", "-")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "<stdin> line 1: not valid UTF-8 (byte 2 of the line); it is gzip data: " in err
    assert "decompress it with zcat, or read it from a file named *.gz" in err


def test_ctrl_c_translating_to_stdout_says_how_many_lines_it_printed(
    synth_run, sources, monkeypatch, capsys
):
    interrupt_search_at(monkeypatch, 8)  # after windows of 1, 2 and 4 lines
    code, out, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", sources, "--batch-size", "1"
    )
    assert code == 130
    assert len(out.splitlines()) == 7
    assert "interrupted after 7 of 20 lines: standard output holds the first 7 translations" in err


def test_windows_grow_from_one_batch_to_window_batches_and_cover_every_line_once():
    sizes = window_sizes(3)
    assert [next(sizes) for _ in range(6)] == [3, 6, 12] + [3 * WINDOW_BATCHES] * 3
    lines = [str(k) for k in range(100)]
    spans = list(windows_of(lines, 3))
    assert [start for start, _ in spans] == [0, 3, 9, 21, 45, 69, 93]
    assert [x for _, window in spans for x in window] == lines
    assert list(windows_of([], 3)) == []


@pytest.mark.parametrize("final_newline", [True, False])
@pytest.mark.parametrize("batch,beam", [(1, 1), (1, 4), (2, 1), (2, 4)])
def test_blank_lines_keep_their_place_in_translate(toy, tmp_path, final_newline, batch, beam):
    code, out, _ = translate_cli(
        toy["run"],
        "--batch-size",
        batch,
        "--beam",
        beam,
        lines=SIX,
        tmp_path=tmp_path,
        final_newline=final_newline,
    )
    assert code == 0
    lines = out.split("\n")
    assert len(lines) == 7 and lines[-1] == ""  # six lines, each newline-terminated
    assert lines[1] == lines[3] == lines[4] == ""
    for k in (0, 2, 5):
        _, alone, _ = translate_cli(toy["run"], "--beam", beam, lines=[SIX[k]], tmp_path=tmp_path)
        assert lines[k] == alone.rstrip("\n")


@pytest.mark.parametrize("name", list(ODD))
def test_odd_characters_keep_translate_aligned(toy, tmp_path, name):
    odd, _ = ODD[name]
    (tmp_path / "in.txt").write_bytes(f"the cat\nthe{odd}dog\nwe walk\n".encode())
    code, out, _ = translate_cli(toy["run"], "-i", tmp_path / "in.txt")
    assert code == 0 and len(out.split("\n")) == 4
    same = "thedog" if odd == "\x00" else "the dog"  # NUL removed, the others a space
    res = translate_sentences(toy["model"], toy["tok"], [f"the{odd}dog", same], toy["cfg"].decode)
    assert res[0].text == res[1].text  # normalised the same way in the Python API


def unescape_tsv_field(field: str) -> str:
    """The text an n-best TSV field holds (``escape_tsv_field`` reversed)."""
    unescape = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}
    return re.sub(r"\\([\\tnr])", lambda m: unescape[m[1]], field)


@pytest.mark.parametrize(
    "text", ["a\tb", "tab\tand\nnewline", "back\\slash\\t", "\r\n\t\\", "", "plain words ."]
)
def test_an_nbest_field_has_no_tab_or_newline_and_parses_back(text):
    field = escape_tsv_field(text)
    assert not {"\t", "\n", "\r"} & set(field)
    assert unescape_tsv_field(field) == text
    row = f"1\t-0.5000\t{field}"
    assert len(row.split("\t")) == 3 and unescape_tsv_field(row.split("\t")[2]) == text


def test_hypotheses_with_tabs_keep_the_nbest_tsv_at_three_fields_per_row(
    synth_run, tmp_path, monkeypatch, capsys
):
    from seq2seq.data.tokenizer import Tokenizer

    src = tmp_path / "src.txt"
    src.write_text("ein hund läuft .\n\ndie katze sitzt auf dem baum .\n")
    args = ["translate", "-c", synth_run, "-i", src, "--beam", "2", "--n-best", "2"]
    code, err = run_main(monkeypatch, capsys, *args, "-o", tmp_path / "plain.tsv")
    assert code == 0, err
    plain = (tmp_path / "plain.tsv").read_text().split("\n")[:-1]

    suffix = "\tx\\ty\nz"  # a tab, a backslash and a newline the tokenizer might spell out
    decode = Tokenizer.decode_tgt
    monkeypatch.setattr(
        Tokenizer, "decode_tgt", lambda self, ids, **k: [t + suffix for t in decode(self, ids, **k)]
    )
    code, err = run_main(monkeypatch, capsys, *args, "-o", tmp_path / "odd.tsv")
    assert code == 0, err
    odd = (tmp_path / "odd.tsv").read_text().split("\n")[:-1]
    assert len(odd) == len(plain) == 5  # 2 + 2 hypotheses, one row for the blank line
    for row, want in zip(odd, plain, strict=True):
        fields, wanted = row.split("\t"), want.split("\t")
        assert len(fields) == 3 and fields[:2] == wanted[:2]
        if wanted[2]:
            assert unescape_tsv_field(fields[2]) == unescape_tsv_field(wanted[2]) + suffix
        else:
            assert fields[2] == ""


def test_translate_creates_the_missing_folders_of_its_output_as_its_help_says(
    synth_run, sources, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "new" / "deeper" / "out.en"
    code, _, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", sources, "-o", out
    )
    assert code == 0, err
    assert len(out.read_text(encoding="utf-8").splitlines()) == 20
    said = " ".join(run_cli(monkeypatch, capsys, "translate", "--help")[1].split())
    assert "missing folders on its path are created" in said

"""``seq2seq translate`` end to end: lines kept in order and in place, file to file, n-best,
option errors, sampling seeds, interactive stdin, attention plots, batching."""

from __future__ import annotations

import os
import select
import subprocess
import sys

import pytest

from seq2seq.decoding.translate import translate_sentences
from tests.corpora import SIX, write_lines
from tests.e2e.helpers import run
from tests.toys import run_seq2seq


def test_translate_keeps_lines_in_order(trained_run, multi30k_slice):
    run_dir, _ = trained_run
    text = "Ein Hund läuft.\n\n   \nZwei Männer spielen Fußball.\nEin Hund läuft.\n"
    r = run("translate", "-c", run_dir, stdin=text)
    assert r.returncode == 0, r.stderr
    out = r.stdout.split("\n")
    assert len(out) == 6 and out[-1] == ""  # five lines, each newline-terminated
    assert out[1] == "" and out[2] == ""
    assert out[0] == out[4] and out[0]
    assert "no text to translate" not in r.stderr


def test_empty_input_says_so_on_stderr_and_writes_nothing(trained_run, tmp_path, run_in_process):
    empty = tmp_path / "empty.de"
    empty.write_text("")
    for args, stdin, name in ((("-i", empty), None, str(empty)), ((), "", "stdin")):
        r = run_in_process("translate", "-c", trained_run[0], *args, stdin=stdin)
        assert r.returncode == 0 and r.stdout == "", r.stderr
        assert f"translate: {name}: no text to translate (empty input)" in r.stderr


def test_translate_file_to_file_and_nbest(trained_run, multi30k_slice, tmp_path):
    run_dir, _ = trained_run
    src = multi30k_slice / "val.de"
    r = run("translate", "-c", run_dir, "-i", src, "-o", tmp_path / "hyp.en", "--beam", "3")
    assert r.returncode == 0, r.stderr
    assert len((tmp_path / "hyp.en").read_text().splitlines()) == 100
    r = run("translate", "-c", run_dir, "--beam", "3", "--n-best", "2", stdin="Ein Hund.\n\n")
    rows = [x.split("\t") for x in r.stdout.splitlines()]
    assert [x[0] for x in rows] == ["1", "1", "2"]
    assert float(rows[0][1]) >= float(rows[1][1])


def test_translate_option_errors_name_the_option_and_missing_folders_are_made(
    trained_run, tmp_path
):
    run_dir, _ = trained_run
    r = run("translate", "-c", run_dir, "--beam", "0", stdin="Ein Hund.\n")
    assert r.returncode == 2 and r.stderr.startswith("error: --beam:"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    out = tmp_path / "new" / "dir" / "hyp.en"  # stdin to a file in a folder not yet made
    r = run("translate", "-c", run_dir, "-o", out, stdin="Ein Hund.\nEine Katze.\n")
    assert r.returncode == 0, r.stderr
    assert len(out.read_text().splitlines()) == 2


def test_outputs_follow_the_umask(trained_run, tmp_path):
    run_dir, _ = trained_run
    out = tmp_path / "hyp.en"
    r = run("translate", "-c", run_dir, "-o", out, stdin="Ein Hund.\n")
    assert r.returncode == 0, r.stderr
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask
    assert (run_dir / "last.pt").stat().st_mode & 0o777 == 0o666 & ~mask


def test_sampling_repeats_with_its_seed_in_translate_and_eval(
    trained_run, multi30k_slice, tmp_path
):
    run_dir, _ = trained_run
    src, ref = multi30k_slice / "val.de", multi30k_slice / "val.en"
    sample = ("--method", "sample", "--seed", "1")
    first = run("translate", "-c", run_dir, "-i", src, *sample)
    assert first.returncode == 0, first.stderr
    assert len(first.stdout.splitlines()) == 100
    assert run("translate", "-c", run_dir, "-i", src, *sample).stdout == first.stdout
    other = run("translate", "-c", run_dir, "-i", src, "--method", "sample", "--seed", "2")
    assert other.returncode == 0 and other.stdout != first.stdout
    r = run("eval", "-c", run_dir, "--src", src, "--ref", ref, *sample, "-o", tmp_path / "e")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "e").read_text() == first.stdout
    r = run("translate", "-c", run_dir, *sample, "--n-best", "3", stdin="Ein Hund.\n")
    assert [x.split("\t")[0] for x in r.stdout.splitlines()] == ["1", "1", "1"]  # three draws


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--method", "greedy", "--beam", "5"], "error: --beam: 5 is a setting of method beam"),
        (["--temperature", "0.5"], "error: --temperature: 0.5 is a setting of method sample"),
        (["--method", "sample", "--top-p", "2"], "error: --top-p: Input should be less than"),
        (["--n-best", "2"], "error: --n-best 2: method greedy returns at most 1"),
    ],
)
def test_search_option_errors_name_the_option(trained_run, options, says):
    r = run("translate", "-c", trained_run[0], *options, stdin="Ein Hund.\n")
    assert r.returncode == 2 and r.stderr.startswith(says), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_translate_answers_each_stdin_line_before_stdin_closes(trained_run):
    """Interactive use: a translation comes back while the input is still open."""
    run_dir, _ = trained_run
    proc = subprocess.Popen(
        [sys.executable, "-m", "seq2seq", "translate", "-c", str(run_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        proc.stdin.write("Ein Hund läuft.\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready, "no translation while stdin is still open"
        first = proc.stdout.readline()
        assert first.endswith("\n") and first.strip()
        proc.stdin.write("Zwei Männer.\n")
        proc.stdin.close()
        rest = proc.stdout.read().splitlines()
        assert proc.wait(timeout=120) == 0
        assert len(rest) == 1 and rest[0].strip()
    finally:
        proc.kill()


def test_translate_plots_attention_for_the_first_lines(monkeypatch, capsys, tmp_path, tiny_run):
    src = write_lines(
        tmp_path / "in.de",
        ["Ein Hund läuft.", "", "Zwei Männer spielen Fußball.", "Eine Frau liest."],
    )
    plain, att = tmp_path / "plain.en", tmp_path / "att.en"
    code, _, err = run_seq2seq(
        monkeypatch, capsys, "translate", "-c", tiny_run, "-i", src, "-o", plain
    )
    assert code == 0, err
    code, _, err = run_seq2seq(
        monkeypatch,
        capsys,
        "translate",
        "-c",
        tiny_run,
        "-i",
        src,
        "-o",
        att,
        "--attention-dir",
        tmp_path / "att",
        "--attention-n",
        3,
    )
    assert code == 0, err
    assert att.read_text() == plain.read_text() and len(plain.read_text().splitlines()) == 4
    # lines 1 and 3 are plotted; line 2 is blank, line 4 is past --attention-n
    assert sorted(p.name for p in (tmp_path / "att").iterdir()) == [
        "line00001.png",
        "line00003.png",
    ]
    assert (tmp_path / "att" / "line00001.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_batching_by_sentences_or_tokens_gives_the_same_lines(
    monkeypatch, capsys, tmp_path, tiny_run, multi30k_slice
):
    src = write_lines(tmp_path / "in.de", (multi30k_slice / "val.de").read_text().splitlines()[:30])
    outs = []
    for opts in (["--batch-size", "30"], ["--batch-size", "7"], ["--batch-tokens", "60"]):
        out = tmp_path / f"out{len(outs)}.en"
        code, stdout, err = run_seq2seq(
            monkeypatch,
            capsys,
            "translate",
            "-c",
            tiny_run,
            "-i",
            src,
            "-o",
            out,
            "--beam",
            "3",
            *opts,
        )
        assert code == 0, err
        assert stdout == "" and "translating" not in err  # no progress bar off a terminal
        outs.append(out.read_text())
    assert outs[0] == outs[1] == outs[2] and len(outs[0].splitlines()) == 30


def test_blank_lines_and_a_nul_through_stdin_without_a_final_newline(toy, run_in_process):
    """stdin is read by the file rules (through a pipe, as a shell gives it)."""
    lines = [*SIX, "the\x00cat sleeps"]
    r = run_in_process("translate", "-c", toy["run"], "--batch-size", 2, stdin="\n".join(lines))
    assert r.returncode == 0, r.stderr
    out = r.stdout.split("\n")
    assert len(out) == 8 and out[-1] == ""  # seven lines, each newline-terminated
    res = translate_sentences(toy["model"], toy["tok"], [*SIX, "thecat sleeps"], toy["cfg"].decode)
    assert out[:7] == [x.text for x in res]
    assert [out[k] for k in (1, 3, 4)] == ["", "", ""]
    assert "<stdin> line 7: NUL byte removed" in r.stderr

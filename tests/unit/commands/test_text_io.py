"""Text in and out of the command line whatever the environment: UTF-8 under a locale whose
encoding is not (``LC_ALL=C`` without Python's UTF-8 mode), and no plotting library imported by a
command that draws nothing. Both run the CLI in a subprocess: the environment is the point."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.toys import REPO

# A locale whose encoding is ASCII, with Python's UTF-8 mode and locale coercion off: what a
# server with LANG unset (or LC_ALL=C) gives an older Python, and what a Latin-1 locale is like.
ASCII_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
SOURCES = "Der Hund läuft über die Straße.\nZwei Männer sind müde.\n"


def seq2seq(*args, stdin: bytes = b"", env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m seq2seq ARGS`` in a subprocess under ``ASCII_LOCALE`` (bytes in, bytes out)."""
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONIOENCODING"}
    environ.update(ASCII_LOCALE if env is None else env)
    cmd = [sys.executable, "-m", "seq2seq", *map(str, args)]
    return subprocess.run(cmd, input=stdin, capture_output=True, cwd=REPO, env=environ)


def test_text_in_and_out_is_utf8_under_an_ascii_locale(synth_run, tmp_path):
    src = tmp_path / "in.de"
    src.write_bytes(SOURCES.encode("utf-8"))
    # jsonl to standard output: its pieces (▁) are not ASCII
    piped = seq2seq("translate", "-c", synth_run, "--format", "jsonl", stdin=src.read_bytes())
    assert piped.returncode == 0, piped.stderr.decode("utf-8", "replace")
    records = [json.loads(x) for x in piped.stdout.decode("utf-8").splitlines()]
    assert len(records) == 2 and any("\u2581" in t for t in records[0]["tokens"])
    # > FILE and -o FILE write the same bytes
    out = tmp_path / "out.jsonl"
    written = seq2seq("translate", "-c", synth_run, "-i", src, "-o", out, "--format", "jsonl")
    assert written.returncode == 0, written.stderr.decode("utf-8", "replace")
    assert out.read_bytes() == piped.stdout
    # translate | translate: the tool reads its own (non-ASCII) output as input
    again = seq2seq("translate", "-c", synth_run, stdin=piped.stdout)
    assert again.returncode == 0, again.stderr.decode("utf-8", "replace")
    assert len(again.stdout.decode("utf-8").splitlines()) == 2


def test_eval_writes_utf8_json_naming_a_non_ascii_file_under_an_ascii_locale(tmp_path):
    """The JSON names the files; a folder named in German (its bytes undecodable in the C
    locale) comes back as the same UTF-8 bytes."""
    folder = tmp_path / "Übersetzungen"
    folder.mkdir()
    hyp, ref = folder / "hyp.en", folder / "ref.en"
    hyp.write_text("a dog runs über the street\n", encoding="utf-8")
    ref.write_text("a dog runs across the street\n", encoding="utf-8")
    proc = seq2seq("eval", "--hyp", hyp, "--ref", ref, "--json", "-")
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    report = json.loads(proc.stdout.decode("utf-8"))
    assert report["hyp"] == str(hyp) and report["bleu"]["score"] > 0


def test_translating_imports_no_plotting_library(synth_run, tmp_path):
    """translate without --attention-dir draws nothing, so it imports no matplotlib (whose import
    complains about a read-only home folder on every run)."""
    src = tmp_path / "in.de"
    src.write_text("Der Hund.\n", encoding="utf-8")
    code = (
        "import sys; from seq2seq.cli import main; "
        f"sys.argv = ['seq2seq', 'translate', '-c', {str(synth_run)!r}, '-i', {str(src)!r}]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "plots = sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'PIL'))\n"
        "assert not plots, plots"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_a_file_name_that_is_not_utf8_is_written_escaped_and_the_work_completes(
    tmp_path, monkeypatch, capsys
):
    """``eval --hyp`` of a name with a Latin-1 byte died writing its JSON (a tester's trial). The
    JSON's escape, ``\\udce9``, reads back as the name; the log and the messages escape it too."""
    import logging

    from seq2seq.console import setup_logging
    from tests.toys import run_cli

    hyp, ref = tmp_path / os.fsdecode(b"caf\xe9.en"), tmp_path / "ref.en"
    hyp.write_text("a dog runs over the street\n", encoding="utf-8")
    ref.write_text("a dog runs across the street\n", encoding="utf-8")
    for json_out in (tmp_path / "report.json", "-"):
        code, out, err = run_cli(
            monkeypatch, capsys, "eval", "--hyp", hyp, "--ref", ref, "--json", json_out
        )
        assert code == 0, err
        text = out if json_out == "-" else json_out.read_text(encoding="utf-8")
        assert "caf\\udce9.en" in text and json.loads(text[text.index("{") :])["hyp"] == str(hyp)
    # a run's log file is UTF-8, strictly (training's train.log): the line is there, escaped
    setup_logging()
    log_file = tmp_path / "train.log"
    handler = logging.FileHandler(log_file, encoding="utf-8")
    logging.getLogger("seq2seq").addHandler(handler)
    try:
        logging.getLogger("seq2seq").warning("%s: read", hyp)
    finally:
        handler.close()
        logging.getLogger("seq2seq").removeHandler(handler)
    assert log_file.read_text(encoding="utf-8") == f"{tmp_path}/caf\\udce9.en: read\n"
    assert "Logging error" not in capsys.readouterr().err

"""The command line run in this process: ``run_cli`` (exit code, stdout, stderr) and its
variants; ``cli_result``, answered as a subprocess is (the ``run_in_process`` fixture); and a fake
standard input."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from seq2seq.cli import app, main
from tests.corpora import write_raw_lines


def run_cli(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """``seq2seq ARGS`` in this process: (exit code, stdout, stderr). The ``seq2seq`` logger the
    command sets up is put back afterwards, so later tests' ``caplog`` still sees its records."""
    logger = logging.getLogger("seq2seq")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    monkeypatch.setattr(sys, "argv", ["seq2seq", *map(str, args)])
    try:
        try:
            main()
            code = 0
        except SystemExit as e:
            code = e.code or 0
    finally:
        logger.handlers[:] = saved[0]
        logger.setLevel(saved[1])
        logger.propagate = saved[2]
    out = capsys.readouterr()
    return code, out.out, out.err


def cli_result(
    monkeypatch, capsys, *args, stdin: str | None = None, cwd=None, env_extra=None
) -> subprocess.CompletedProcess:
    """``seq2seq ARGS`` in this process, answered as ``tests/e2e/helpers.run`` answers for a
    subprocess: ``returncode``, ``stdout`` and ``stderr`` (text). ``stdin``: what standard input
    holds (a pipe, not a terminal; empty by default); ``cwd``: the folder to run in; ``env_extra``:
    environment variables to set. The folder, environment and stdin are put back afterwards; what
    the test printed before the call is not part of the answer."""
    capsys.readouterr()
    fake_stdin = FakeStdin(stdin or "")
    try:
        with monkeypatch.context() as m:
            m.setenv("COLUMNS", "200")
            for key, value in (env_extra or {}).items():
                m.setenv(key, str(value))
            if cwd is not None:
                m.chdir(cwd)
            m.setattr(sys, "stdin", fake_stdin)
            code, out, err = run_cli(m, capsys, *args)
    finally:
        fake_stdin.buffer.close()
    if isinstance(code, str):  # sys.exit("message"), as the interpreter would say it
        code, err = 1, err + code + "\n"
    return subprocess.CompletedProcess(["seq2seq", *map(str, args)], code, out, err)


def run_main(monkeypatch, capsys, *args) -> tuple[int, str]:
    """``run_cli`` without its stdout: (exit code, stderr)."""
    code, _, err = run_cli(monkeypatch, capsys, *args)
    return code, err


def run_seq2seq(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """Run the CLI in-process: (exit code, stdout, stderr), errors mapped as ``main`` maps them;
    ``main`` must exit."""
    monkeypatch.setattr(sys, "argv", ["seq2seq", *map(str, args)])
    with pytest.raises(SystemExit) as e:
        main()
    out = capsys.readouterr()
    return e.value.code or 0, out.out, out.err


def translate_cli(
    run_dir, *args, lines: list[str] | None = None, tmp_path=None, final_newline: bool = True
):
    """``seq2seq translate`` in this process on a file; returns (exit code, stdout, stderr)."""
    logger = logging.getLogger("seq2seq")
    saved = (list(logger.handlers), logger.propagate, logger.level)
    extra = []
    if lines is not None:
        write_raw_lines(tmp_path / "in.txt", lines, final_newline)
        extra = ["-i", str(tmp_path / "in.txt")]
    try:
        r = CliRunner().invoke(app, ["translate", "-c", str(run_dir), *extra, *map(str, args)])
    finally:  # the CLI installs its own log handler; give pytest's caplog its logger back
        logger.handlers[:], logger.propagate, logger.level = saved
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


class FakeStdin:
    """Standard input read from a pipe that already holds ``text`` (and is closed), a terminal
    or not."""

    def __init__(self, text: str, tty: bool = False):
        r, w = os.pipe()
        os.write(w, text.encode("utf-8"))
        os.close(w)
        self.buffer = os.fdopen(r, "rb")
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

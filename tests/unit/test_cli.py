"""``seq2seq/cli.py``: ``--version``, ``-h`` for every command, whole command summaries in an
80-column help, and metavars that say what an option takes."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from seq2seq.cli import SUMMARIES, app


def test_version_prints_the_package_version():
    from importlib.metadata import version

    r = CliRunner().invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output == f"seq2seq {version('seq2seq')}\n"


@pytest.mark.parametrize("command", list(SUMMARIES))
def test_dash_h_is_help_for_every_command(command):
    r = CliRunner().invoke(app, [command, "-h"], prog_name="seq2seq")
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"Usage: seq2seq {command} [OPTIONS]")


def test_command_summaries_are_whole_in_an_80_column_help():
    r = CliRunner().invoke(app, ["-h"], terminal_width=80)
    assert r.exit_code == 0
    rows = r.output.split("Commands:\n")[1].splitlines()
    assert len(rows) == len(SUMMARIES)
    for row in rows:
        name, summary = row.split(maxsplit=1)
        assert summary == SUMMARIES[name] and not summary.endswith("...")


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("translate", ["--checkpoint RUN", "--input FILE", "--output FILE", "--attention-dir DIR"]),
        ("eval", ["--checkpoint RUN", "--src FILE", "--ref FILE", "--hyp FILE", "--json FILE"]),
        ("tune-decode", ["--checkpoint RUN", "--src FILE", "--ref FILE", "--json FILE"]),
    ],
)
def test_file_and_run_options_show_what_they_take(command, shown):
    r = CliRunner().invoke(app, [command, "-h"], terminal_width=200)
    for option in shown:
        assert option in r.output
    assert "<str>" not in r.output and "<path>" not in r.output

"""``seq2seq/cli.py``: ``--version``, ``-h`` for every command, whole command summaries in an
80-column help, and metavars that say what an option takes."""

from __future__ import annotations

import os
import re
import sys

import pytest
from typer.testing import CliRunner

from seq2seq.cli import COMMANDS, app


def test_version_prints_the_package_version():
    from importlib.metadata import version

    r = CliRunner().invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output == f"seq2seq {version('seq2seq')}\n"


@pytest.mark.parametrize("command", list(COMMANDS))
def test_dash_h_is_help_for_every_command(command):
    r = CliRunner().invoke(app, [command, "-h"], prog_name="seq2seq")
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"Usage: seq2seq {command} [OPTIONS]")


def test_command_summaries_are_whole_in_an_80_column_help():
    r = CliRunner().invoke(app, ["-h"], terminal_width=80)
    assert r.exit_code == 0
    rows = r.output.split("Commands:\n")[1].splitlines()
    assert len(rows) == len(COMMANDS)
    for row in rows:
        name, summary = row.split(maxsplit=1)
        assert summary == COMMANDS[name][1] and not summary.endswith("...")


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (
            "translate",
            [
                "--checkpoint RUN",
                "--input FILE",
                "--output FILE",
                "--attention-dir DIR",
                "--n-best N",
            ],
        ),
        ("eval", ["--checkpoint RUN", "--src FILE", "--ref FILE", "--hyp FILE", "--json FILE"]),
        ("tune-decode", ["--checkpoint RUN", "--src FILE", "--ref FILE", "--json FILE"]),
    ],
)
def test_file_and_run_options_show_what_they_take(command, shown):
    r = CliRunner().invoke(app, [command, "-h"], terminal_width=200)
    for option in shown:
        assert option in r.output


@pytest.mark.parametrize("command", list(COMMANDS))
def test_no_help_shows_typers_labels_of_python_types(command):
    """``--port <int range>``, ``[NAME=]RUN <list[str]>``, ``--host <str>``: Python's names, not
    what to give."""
    r = CliRunner().invoke(app, [command, "-h"], terminal_width=200)
    assert r.exit_code == 0, r.output
    assert not re.findall(r"<(?:str|path|list\[\w+\]|\w+ range)>", r.output)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("translate", "--beam", "x", "-c", "run"), "Invalid value for '--beam'"),
        (("translate", "--bem", "3"), "No such option: --bem"),
        (("train",), "Missing argument 'CONFIG'."),
        (("nosuch",), "No such command 'nosuch'."),
        (("translate", "-c", "run", "-i"), "Option '-i' requires an argument."),  # click gives
        (("eval", "--ref"), "Option '--ref' requires an argument."),  # these errors no context
    ],
)
def test_a_usage_error_is_one_line_naming_the_commands_help(monkeypatch, capsys, args, said):
    from tests.toys import run_cli

    code, out, err = run_cli(monkeypatch, capsys, *args)
    where = "seq2seq" if args[0] == "nosuch" else f"seq2seq {args[0]}"
    assert code == 2 and out == "" and said in err and f"(see {where} -h)" in err
    assert len(err.strip().splitlines()) == 1 and "Usage:" not in err


def test_plain_seq2seq_shows_the_help(monkeypatch, capsys):
    from tests.toys import run_cli

    code, out, err = run_cli(monkeypatch, capsys)
    assert code == 2 and "Usage: seq2seq [OPTIONS] COMMAND" in out + err and "train" in out + err


def test_a_ctrl_c_in_a_command_or_while_starting_says_stopped(monkeypatch, capsys):
    """typer turns a KeyboardInterrupt in a command into exit code 130 without a word; the entry
    point's import of the CLI (typer, rich, torch) can be interrupted too."""
    import sys

    from seq2seq import entry
    from seq2seq.commands import training
    from tests.toys import run_cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "setup_logging", interrupted)
    code, out, err = run_cli(monkeypatch, capsys, "train", "any.yaml")
    assert code == 130 and out == "" and err.strip() == "stopped: interrupted"

    class Starting:  # `from seq2seq.cli import main` lands on the Ctrl-C
        def __getattr__(self, name):
            raise KeyboardInterrupt

    monkeypatch.setitem(sys.modules, "seq2seq.cli", Starting())
    with pytest.raises(SystemExit) as e:
        entry.main()
    assert e.value.code == 130
    assert capsys.readouterr().err == "stopped: interrupted while starting\n"


def test_seq2seq_debug_shows_the_traceback_then_the_same_line_for_every_kind_of_error(
    tmp_path, monkeypatch, capsys
):
    """A user error (config, checkpoint, an option), and an unexpected one: SEQ2SEQ_DEBUG=1 adds the
    traceback, with the error the line was raised from, above the line it prints anyway."""
    from seq2seq.commands import training
    from tests.toys import run_cli

    (tmp_path / "x.yaml").write_text("name: x\ntrain:\n  max_steps: 5\n  lrr: 1\n")

    def broken(*args, **kwargs):
        raise RuntimeError("something inside broke")

    cases = [
        (("train", tmp_path / "x.yaml"), 2, "train.lrr: unknown key; did you mean train.lr?"),
        (("translate", "-c", tmp_path / "none"), 2, "no such checkpoint or run directory"),
        (("average", "-c", tmp_path, "--last", "1", "-o", tmp_path), 2, "is a folder"),
        (("train", "any.yaml"), 1, "RuntimeError: something inside broke"),
    ]
    for args, exit_code, line in cases:
        if exit_code == 1:
            monkeypatch.setattr(training, "setup_logging", broken)
        monkeypatch.delenv("SEQ2SEQ_DEBUG", raising=False)
        code, _, quiet = run_cli(monkeypatch, capsys, *args)
        assert code == exit_code and line in quiet and "Traceback" not in quiet, quiet
        monkeypatch.setenv("SEQ2SEQ_DEBUG", "1")
        code, _, loud = run_cli(monkeypatch, capsys, *args)
        assert code == exit_code and loud.startswith("Traceback (most recent call last):"), loud
        last = loud.strip().splitlines()[-1]
        assert last == quiet.strip().replace(" (set SEQ2SEQ_DEBUG=1 for the traceback)", "")
        if args[0] == "train" and exit_code == 2:  # what the one line was made from
            assert "ValidationError" in loud
    monkeypatch.setenv("SEQ2SEQ_DEBUG", "0")
    code, _, err = run_cli(monkeypatch, capsys, *cases[0][0])
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("option", "key"),
    [
        ("--lr", "train.lr"),
        ("--learning-rate", "train.lr"),
        ("--warmup", "train.warmup_steps"),
        ("--dropout", "model.dropout"),
        ("--beam", "decode.beam_size"),
        ("--batch-size", "train.batch_tokens"),  # training's batch, not decode.batch_size
    ],
)
def test_an_unknown_train_option_naming_a_config_key_points_at_set(
    monkeypatch, capsys, option, key
):
    from tests.toys import run_cli

    code, _, err = run_cli(monkeypatch, capsys, "train", "x.yaml", option, "1")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"No such option: {option}" in err and f"did you mean --set {key}=VALUE?" in err
    assert "Possible options" not in err  # click's guess for --lr was --help
    code, _, err = run_cli(monkeypatch, capsys, "train", "x.yaml", "--zzqq", "1")
    assert "did you mean" not in err


@pytest.mark.parametrize(
    ("command", "usage"), [("export", "seq2seq export RUN -o DIR"), ("serve", "seq2seq serve RUN")]
)
def test_checkpoint_option_given_to_a_command_that_takes_runs_as_arguments_says_how(
    monkeypatch, capsys, command, usage
):
    """translate, eval, average and tune-decode take -c RUN; export and serve take the run as an
    argument, and their -c said only 'No such option'."""
    from tests.toys import run_cli

    for flag in ("-c", "--checkpoint"):
        code, out, err = run_cli(monkeypatch, capsys, command, flag, "run", "-o", "out")
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert f"No such option: {flag}" in err and "without -c: " + usage in err
    code, _, err = run_cli(monkeypatch, capsys, "translate", "--zzqq", "1")
    assert "without -c" not in err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["train", "x.yaml", "--run-dir", ""], "--run-dir ''"),
        (["synth", "--task", "copy", "--out="], "--out ''"),
        (["translate", "-c", "run", "-o", ""], "-o ''"),
        (["eval", "", "--ref", "r"], "an empty argument ''"),
    ],
)
def test_an_empty_value_is_refused_before_it_becomes_the_current_folder(
    monkeypatch, capsys, tmp_path, args, said
):
    """train --run-dir '' wrote its checkpoints into the current folder; synth --out '' its
    corpus (a new-user trial)."""
    from tests.toys import run_cli

    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(monkeypatch, capsys, *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"error: {said}: give a value" in err
    assert list(tmp_path.iterdir()) == []


def test_run_in_process_answers_as_a_subprocess_and_puts_the_process_back(run_in_process, tmp_path):
    """The tests' in-process command line (``toys.cli_result``): exit code, stdout and stderr as a
    subprocess gives them; the folder, stdin and environment as they were."""
    folder, stdin = os.getcwd(), sys.stdin
    r = run_in_process("train", "nope.yaml", cwd=tmp_path, env_extra={"SEQ2SEQ_H43": "1"})
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == "error: nope.yaml: config file not found\n"
    assert os.getcwd() == folder and sys.stdin is stdin and "SEQ2SEQ_H43" not in os.environ
    r = run_in_process("--version")
    assert r.returncode == 0 and r.stdout.startswith("seq2seq ") and r.stderr == ""

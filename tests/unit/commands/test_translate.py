"""``seq2seq translate`` (``seq2seq/commands/translate.py``): its help, and its prompt when
standard input is a terminal."""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from seq2seq.cli import app
from tests.toys import FakeStdin, run_cli


def test_translate_says_ctrl_c_and_partial_in_its_help():
    r = CliRunner().invoke(app, ["translate", "--help"])
    said = " ".join(r.output.split())
    assert "FILE.partial" in said and "Ctrl-C" in said


@pytest.mark.parametrize("tty", [True, False])
def test_translate_says_ready_after_loading_only_on_a_terminal(synth_run, monkeypatch, capsys, tty):
    import seq2seq.decoding.runs as runs

    load = runs.load

    def loaded(*args, **kwargs):
        run = load(*args, **kwargs)
        print("model loaded", file=sys.stderr)
        return run

    monkeypatch.setattr(runs, "load", loaded)
    monkeypatch.setattr(sys, "stdin", FakeStdin("Ein Hund.\n", tty=tty))
    code, out, err = run_cli(monkeypatch, capsys, "translate", "-c", synth_run)
    assert code == 0, err
    assert len(out.splitlines()) == 1
    ready = "ready: type a sentence, Ctrl-D ends"
    if tty:
        assert err.index("model loaded") < err.index(ready)
    else:
        assert ready not in err


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--method", "greedy"], "--n-best 2: method greedy returns at most 1 hypothesis"),
        (["--beam", "1"], "--n-best 2: method greedy returns at most 1 hypothesis"),
        (["--method", "beam", "--beam", "1"], "--n-best 2: method beam returns at most 1"),
    ],
)
def test_an_n_best_the_options_method_cannot_return_is_refused_before_loading(
    tmp_path, monkeypatch, capsys, options, says
):
    """The checkpoint does not exist: the --n-best error comes first, as nothing was loaded."""
    args = ["translate", "-c", tmp_path / "none", "--n-best", "2", *options]
    code, out, err = run_cli(monkeypatch, capsys, *args)
    assert code == 2 and not out and err.startswith(f"error: {says}"), err
    assert len(err.strip().splitlines()) == 1
    code, _, err = run_cli(
        monkeypatch, capsys, "translate", "-c", tmp_path / "none", "--n-best", "2"
    )
    assert code == 2 and "no such checkpoint or run directory" in err  # the run's method: loaded


def test_attention_plots_of_a_model_without_attention_are_refused_before_anything_is_written(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    """The fixed-vector rnn has no attention: refused after loading, before the first window is
    translated, so neither the output file's folder nor the plots' folder is made."""
    out, plots = tmp_path / "new" / "out.txt", tmp_path / "plots"
    code, stdout, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", synth_corpus / "val.de",
        "-o", out, "--attention-dir", plots,
    )  # fmt: skip
    assert code == 2 and stdout == "" and len(err.strip().splitlines()) == 1, err
    assert "error: --attention-dir: this model has no attention to plot" in err
    assert sorted(tmp_path.iterdir()) == []

"""Decoding options that would be accepted and do nothing are refused in one line (exit 2):
``--length-penalty`` under a method that ranks nothing, ``--attention-n`` without plots,
``--batch-size`` together with ``--batch-tokens``."""

from __future__ import annotations

import pytest

from tests.corpora import eval_files
from tests.toys import run_cli


@pytest.mark.parametrize("method", [[], ["--method", "greedy"], ["--method", "sample"]])
@pytest.mark.parametrize("command", ["translate", "eval"])
def test_a_length_penalty_without_beam_search_is_refused(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys, method, command
):
    """synth_run decodes greedy: --length-penalty changed nothing it outputs."""
    src, ref = eval_files(synth_corpus, tmp_path)
    io = ["-i", src] if command == "translate" else ["--src", src, "--ref", ref]
    args = [command, "-c", synth_run, *io, *method, "--length-penalty", "0.6"]
    code, out, err = run_cli(monkeypatch, capsys, *args)
    assert code == 2 and not out
    used = method[1] if method else "greedy"
    assert f"--length-penalty 0.6: only beam search ranks by the length penalty; method {used}" in (
        err
    )
    assert len(err.strip().splitlines()) == 1
    if not method:  # with --beam (which implies beam search) it is used
        code, _, err = run_cli(monkeypatch, capsys, *args, "--beam", "2")
        assert code == 0, err


@pytest.mark.parametrize("command", ["translate", "eval"])
def test_method_beam_alone_on_a_greedy_run_searches_with_a_beam_of_five(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys, command
):
    """synth_run decodes greedy: --method beam without --beam was beam 1, greedy's output."""
    src, ref = eval_files(synth_corpus, tmp_path)
    io = ["-i", src] if command == "translate" else ["--src", src, "--ref", ref]
    code, _, err = run_cli(monkeypatch, capsys, command, "-c", synth_run, *io, "--method", "beam")
    assert code == 0 and "decoding with beam 5" in err and "beam 1" not in err, err
    code, _, err = run_cli(
        monkeypatch, capsys, command, "-c", synth_run, *io, "--method", "beam", "--beam", "3"
    )
    assert code == 0 and "decoding with beam 3" in err, err


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--attention-n", "3"], "--attention-n 3: plots are drawn only with --attention-dir"),
        (
            ["--batch-size", "4", "--batch-tokens", "100"],
            "--batch-size 4 and --batch-tokens 100: batches are counted in sentences or in tokens",
        ),
    ],
)
def test_options_that_would_do_nothing_are_refused(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys, extra, says
):
    src, _ = eval_files(synth_corpus, tmp_path)
    code, out, err = run_cli(monkeypatch, capsys, "translate", "-c", synth_run, "-i", src, *extra)
    assert code == 2 and not out and says in err
    assert len(err.strip().splitlines()) == 1


def test_every_decoding_command_offers_each_search_option_of_the_one_list():
    """translate, eval and paired take their search options from ``SEARCH`` (written once); each
    is a DecodeConfig field, so ``Translator.decode_settings`` applies it."""
    import typer.main

    from seq2seq.cli import app
    from seq2seq.commands.decode_options import FIELD_OF_OPTION, SEARCH
    from seq2seq.config import DecodeConfig

    assert {FIELD_OF_OPTION.get(n, n) for n in SEARCH} <= set(DecodeConfig.model_fields)
    group = typer.main.get_command(app)
    for name in ("translate", "eval", "paired"):
        params = {p.name for p in group.commands[name].params}
        assert set(SEARCH) <= params and "search" not in params, name


def test_n_best_rows_in_text_format_are_refused_before_the_model_loads(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    """It was refused after loading, below an INFO line (a new-user trial)."""
    src, _ = eval_files(synth_corpus, tmp_path)
    monkeypatch.setattr("seq2seq.decoding.runs.load", lambda *a, **k: pytest.fail("loaded"))
    args = ["translate", "-c", synth_run, "-i", src, "--n-best", "2", "--beam", "2"]
    code, out, err = run_cli(monkeypatch, capsys, *args, "--format", "text")
    assert code == 2 and not out and len(err.strip().splitlines()) == 1, err
    assert "--format text writes one line per input line; --n-best 2 needs" in err

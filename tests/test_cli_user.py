"""The command line as a user meets it: Ctrl-C keeps what ``translate`` finished, ``eval --json``
says how its translations were made, the long commands show progress, a wrong model key is
explained, ``--version`` and ``-h``, help that is not cut mid-phrase, singular counts, and the
prompt of an interactive ``translate``. In-process, on the tiny ``synth_run``."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest
from typer.testing import CliRunner

from seq2seq.cli import SUMMARIES, app
from seq2seq.decoding.files import WINDOW_BATCHES
from seq2seq.decoding.progress import ProgressBar

from .toys import run_cli

cli = run_cli  # (exit code, stdout, stderr) of seq2seq ARGS in this process


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


def interrupt_search_at(monkeypatch, call_no: int) -> None:
    """Make the ``call_no``-th search (one per batch) raise KeyboardInterrupt, as Ctrl-C would."""
    import seq2seq.decoding.translate as translate

    real, calls = translate.search, []

    def search(*args, **kwargs):
        calls.append(1)
        if len(calls) == call_no:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(translate, "search", search)


@pytest.fixture
def sources(synth_corpus, tmp_path):
    """20 source lines of the synthetic validation set, as a file."""
    lines = (synth_corpus / "val.de").read_text(encoding="utf-8").splitlines()[:20]
    path = tmp_path / "src.de"
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


def bars(monkeypatch) -> list[tuple[str, int, int | None]]:
    """Every ProgressBar when it closes, as (description, done, total)."""
    seen: list[tuple[str, int, int | None]] = []
    close = ProgressBar.__exit__

    def spy(self, *exc):
        seen.append((self.description, self.done, self.total))
        return close(self, *exc)

    monkeypatch.setattr(ProgressBar, "__exit__", spy)
    return seen


# ---- 1: Ctrl-C keeps the translated prefix -----------------------------------------------------


def test_ctrl_c_in_translate_keeps_the_finished_lines_in_out_partial_and_out_untouched(
    synth_run, sources, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "out.en"
    code, _, err = cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", sources, "-o", out,
        "--batch-size", "1",
    )  # fmt: skip
    assert code == 0, err
    full = out.read_text(encoding="utf-8").splitlines()
    assert len(full) == 20 and not (tmp_path / "out.en.partial").exists()

    out.write_text("an older translation\n", encoding="utf-8")
    window = WINDOW_BATCHES  # lines per window at --batch-size 1
    interrupt_search_at(monkeypatch, window + 1)  # the first batch of the second window
    code, _, err = cli(
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


def test_ctrl_c_before_the_first_window_writes_nothing(
    synth_run, sources, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "out.en"
    interrupt_search_at(monkeypatch, 1)
    code, _, err = cli(monkeypatch, capsys, "translate", "-c", synth_run, "-i", sources, "-o", out)
    assert code == 130 and "interrupted after 0 of 20 lines: nothing written" in err
    assert not out.exists() and not (tmp_path / "out.en.partial").exists()


def test_ctrl_c_while_streaming_stdin_to_a_file_keeps_the_lines_already_written(
    synth_run, sources, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "out.en"
    monkeypatch.setattr(sys, "stdin", FakeStdin(sources.read_text(encoding="utf-8")))
    interrupt_search_at(monkeypatch, WINDOW_BATCHES + 1)
    code, _, err = cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-o", out, "--batch-size", "1"
    )
    partial = tmp_path / "out.en.partial"
    assert code == 130
    assert (
        f"interrupted after {WINDOW_BATCHES} lines: {partial} holds the first "
        f"{WINDOW_BATCHES} translations" in err
    )
    assert len(partial.read_text(encoding="utf-8").splitlines()) == WINDOW_BATCHES
    assert not out.exists()


def test_ctrl_c_translating_to_stdout_says_how_many_lines_it_printed(
    synth_run, sources, monkeypatch, capsys
):
    interrupt_search_at(monkeypatch, WINDOW_BATCHES + 1)
    code, out, err = cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", sources, "--batch-size", "1"
    )
    assert code == 130
    assert len(out.splitlines()) == WINDOW_BATCHES
    assert (
        f"interrupted after {WINDOW_BATCHES} of 20 lines: standard output holds the first "
        f"{WINDOW_BATCHES} translations" in err
    )


def test_translate_says_ctrl_c_and_partial_in_its_help():
    r = CliRunner().invoke(app, ["translate", "--help"])
    said = " ".join(r.output.split())
    assert "FILE.partial" in said and "Ctrl-C" in said


# ---- 5: eval --json says how its translations were made ----------------------------------------


def _eval_files(synth_corpus, tmp_path, n: int = 10):
    for lang in ("de", "en"):
        lines = (synth_corpus / f"val.{lang}").read_text(encoding="utf-8").splitlines()[:n]
        (tmp_path / f"ev.{lang}").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return tmp_path / "ev.de", tmp_path / "ev.en"


def test_eval_json_records_the_checkpoint_the_decode_settings_and_where_they_came_from(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    import torch

    run = shutil.copytree(synth_run, tmp_path / "run")
    src, ref = _eval_files(synth_corpus, tmp_path)
    report = tmp_path / "scores.json"
    args = ["eval", "-c", run, "--src", src, "--ref", ref, "--json", report]

    code, _, err = cli(monkeypatch, capsys, *args)
    assert code == 0, err
    got = json.loads(report.read_text())
    step = torch.load(run / "best.pt", weights_only=True)["train_state"]["step"]
    assert got["checkpoint"] == {"path": str(run / "best.pt"), "step": step}
    assert got["decode"]["method"] == "greedy" and got["decode"]["batch_size"] == 16
    assert set(got["decode_source"].values()) == {"config"}
    assert "decode.yaml" not in err

    # a tuned run: decode.yaml sets the search, and says so in one line
    (run / "decode.yaml").write_text("method: beam\nbeam_size: 3\nlength_penalty: 1.0\n")
    code, _, err = cli(monkeypatch, capsys, *args)
    assert code == 0, err
    got = json.loads(report.read_text())
    assert (got["decode"]["method"], got["decode"]["beam_size"]) == ("beam", 3)
    assert got["decode"]["length_penalty"] == 1.0
    tuned = "decode.yaml (tune-decode)"
    assert {k for k, v in got["decode_source"].items() if v == tuned} == {
        "method",
        "beam_size",
        "length_penalty",
    }
    assert got["decode_source"]["batch_size"] == "config"
    said = [x for x in err.splitlines() if "decode.yaml" in x]
    assert said == [f"decoding with {run / 'decode.yaml'} (tune-decode): beam 3, alpha 1.0"]

    # an option overrides what decode.yaml says: the command line is named as its source
    code, _, err = cli(monkeypatch, capsys, *args, "--beam", "2")
    assert code == 0, err
    got = json.loads(report.read_text())
    assert got["decode"]["beam_size"] == 2
    assert got["decode_source"]["beam_size"] == "command line"
    assert got["decode_source"]["length_penalty"] == tuned
    assert "alpha 1.0; the command line sets beam 2" in err


def test_beam_search_in_an_untuned_run_names_its_alpha_and_tune_decode(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    src, ref = _eval_files(synth_corpus, tmp_path)
    hint = f"(not tuned: `seq2seq tune-decode -c {synth_run}` chooses beam size and alpha"
    # the default length penalty is GNMT's alpha 1, which beam search uses
    code, out, err = cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", src, "--beam", "2"
    )
    assert code == 0, err
    assert f"translate: decoding with beam 2, alpha 1.0 {hint}" in err
    code, _, err = cli(
        monkeypatch, capsys, "eval", "-c", synth_run, "--src", src, "--ref", ref, "--beam", "2"
    )
    assert code == 0, err
    assert f"decoding with beam 2, alpha 1.0 {hint}" in err
    # greedy search ranks nothing; both settings given on the command line need no hint
    for extra in ([], ["--beam", "2", "--length-penalty", "0.5"]):
        code, _, err = cli(monkeypatch, capsys, "translate", "-c", synth_run, "-i", src, *extra)
        assert code == 0, err
        assert "tune-decode" not in err


def test_eval_json_of_a_hypothesis_file_has_no_checkpoint(tmp_path, monkeypatch, capsys):
    (tmp_path / "h").write_text("a b c d\n")
    (tmp_path / "r").write_text("a b c d\n")
    report = tmp_path / "s.json"
    code, _, err = cli(
        monkeypatch, capsys, "eval", "--hyp", tmp_path / "h", "--ref", tmp_path / "r",
        "--json", report,
    )  # fmt: skip
    assert code == 0, err
    got = json.loads(report.read_text())
    assert got["checkpoint"] is None and got["decode"] is None and got["decode_source"] is None


# ---- 6: progress of eval and tune-decode -------------------------------------------------------


def test_eval_drives_a_progress_bar_over_every_source_line(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    seen = bars(monkeypatch)
    src, ref = _eval_files(synth_corpus, tmp_path, n=12)
    code, _, err = cli(monkeypatch, capsys, "eval", "-c", synth_run, "--src", src, "--ref", ref)
    assert code == 0, err
    assert seen == [("translating", 12, 12)]


def test_tune_decode_reports_every_setting_done_on_its_progress_bar(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    seen = bars(monkeypatch)
    described: list[str] = []
    describe = ProgressBar.describe
    monkeypatch.setattr(
        ProgressBar, "describe", lambda self, text: (described.append(text), describe(self, text))
    )
    src, ref = _eval_files(synth_corpus, tmp_path, n=50)
    code, _, err = cli(
        monkeypatch, capsys, "tune-decode", "-c", synth_run, "--src", src, "--ref", ref,
        "--beams", "2", "--alphas", "0,1", "--no-write", "--json", tmp_path / "sweep.json",
    )  # fmt: skip
    assert code == 0, err
    assert described == ["setting 1/3", "setting 2/3", "setting 3/3"]
    assert seen == [("setting 3/3", 3 * 50, 3 * 50)]  # 3 settings x 50 lines, all done


# ---- 7: an unknown model key names the model and its keys --------------------------------------


def test_a_key_of_another_model_names_the_model_its_keys_and_the_models_that_have_it(tmp_path):
    from seq2seq.config import ConfigError, load_config

    cfg = tmp_path / "t.yaml"
    cfg.write_text("model:\n  name: transformer\n")
    with pytest.raises(ConfigError) as e:
        load_config(cfg, ["model.hidden_size=128"])
    msg = str(e.value)
    assert "did you mean model.hidden_size" not in msg
    assert (
        "model.hidden_size: unknown key of the transformer model (its keys: name, d_model, "
        "n_heads, " in msg
    )
    assert "; hidden_size is a key of rnn, bahdanau, rnnencdec, luong" in msg
    with pytest.raises(ConfigError, match=r"model\.n_head: unknown key of the transformer model; "):
        load_config(cfg, ["model.n_head=4"])
    with pytest.raises(ConfigError, match=r"did you mean model\.n_heads\?"):
        load_config(cfg, ["model.n_head=4"])


# ---- 9: --version, -h, summaries, metavars, singular counts ------------------------------------


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


def test_counts_of_one_are_singular():
    from seq2seq.config import ConfigError, DecodeConfig
    from seq2seq.decoding.search import check_n_best
    from seq2seq.decoding.translate import TranslationReport

    said = TranslationReport(lines=1, truncated=1, cut=1).summary()
    assert "1 source line cut" in said and "1 translation stopped" in said
    with pytest.raises(ConfigError, match="at most 1 hypothesis per sentence"):
        check_n_best(DecodeConfig(), 2)


# ---- 10: interactive translate says when it is ready -------------------------------------------


@pytest.mark.parametrize("tty", [True, False])
def test_translate_says_ready_after_loading_only_on_a_terminal(synth_run, monkeypatch, capsys, tty):
    import seq2seq.commands.translate as cli_module

    load = cli_module.load_model

    def loaded(*args, **kwargs):
        run = load(*args, **kwargs)
        print("model loaded", file=sys.stderr)
        return run

    monkeypatch.setattr(cli_module, "load_model", loaded)
    monkeypatch.setattr(sys, "stdin", FakeStdin("Ein Hund.\n", tty=tty))
    code, out, err = cli(monkeypatch, capsys, "translate", "-c", synth_run)
    assert code == 0, err
    assert len(out.splitlines()) == 1
    ready = "ready: type a sentence, Ctrl-D ends"
    if tty:
        assert err.index("model loaded") < err.index(ready)
    else:
        assert ready not in err

"""``seq2seq/commands/common.py``: what every command shares -- decoding options named in their
errors, the hint to tune an untuned beam, the device a checkpoint is loaded on."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

import seq2seq.decoding.tune as tune
from seq2seq.config import DecodeConfig
from tests.corpora import eval_files
from tests.toys import cuda_run, needs_no_cuda, run_cli, run_with_config


def test_beam_search_in_an_untuned_run_names_its_alpha_and_tune_decode(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    src, ref = eval_files(synth_corpus, tmp_path)
    hint = f"(not tuned: `seq2seq tune-decode -c {synth_run}` chooses beam size and alpha"
    # the default length penalty is GNMT's alpha 1, which beam search uses
    code, out, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", src, "--beam", "2"
    )
    assert code == 0, err
    assert f"decoding with beam 2, alpha 1.0 {hint}" in err
    code, _, err = run_cli(
        monkeypatch, capsys, "eval", "-c", synth_run, "--src", src, "--ref", ref, "--beam", "2"
    )
    assert code == 0, err
    assert f"decoding with beam 2, alpha 1.0 {hint}" in err
    assert "INFO" in err.split("decoding with beam 2")[0].splitlines()[-1]  # a log line in both
    # greedy search ranks nothing; both settings given on the command line need no hint
    for extra in ([], ["--beam", "2", "--length-penalty", "0.5"]):
        code, _, err = run_cli(monkeypatch, capsys, "translate", "-c", synth_run, "-i", src, *extra)
        assert code == 0, err
        assert "tune-decode" not in err


def test_beam_1_is_greedy_search_and_recorded_as_greedy(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    """make demo's greedy pass (eval --beam 1) logged "decoding with beam 1, alpha 1.0 (not
    tuned ...)" and wrote method beam, beam_size 1 into its JSON."""
    src, ref = eval_files(synth_corpus, tmp_path)
    args = ["eval", "-c", synth_run, "--src", src, "--ref", ref, "--beam", "1"]
    code, _, err = run_cli(monkeypatch, capsys, *args, "--json", tmp_path / "g.json")
    assert code == 0, err
    assert "beam 1" not in err and "tune-decode" not in err
    made = json.loads((tmp_path / "g.json").read_text(encoding="utf-8"))
    assert made["decode"]["method"] == "greedy"
    assert made["decode_source"]["method"] == "command line"


def _tuned_on_50_lines(run, synth_corpus, tmp_path, name: str = "run") -> Path:
    """A copy of ``run`` whose data.valid is 50 lines, the fewest tune-decode takes: its sweep
    is half as long."""
    for lang in ("de", "en"):
        lines = (synth_corpus / f"val.{lang}").read_text(encoding="utf-8").splitlines(True)
        (tmp_path / f"tune.{lang}").write_text("".join(lines[:50]), encoding="utf-8")
    return run_with_config(run, tmp_path, "data", "valid", str(tmp_path / "tune"), name=name)


def test_the_not_tuned_hint_names_the_c_given_and_runs_as_written(
    synth_transformer_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    """``average ... -o "my out/avg.pt"`` leaves a checkpoint in a folder without best.pt or
    last.pt: the hint (translate's and the serve card's) names that file, quoted, and following it
    tunes the checkpoint."""
    from seq2seq.serve.runs import load_runs

    avg = tmp_path / "my out" / "avg.pt"
    avg.parent.mkdir()
    shutil.copy(_tuned_on_50_lines(synth_transformer_run, synth_corpus, tmp_path) / "best.pt", avg)
    src, _ = eval_files(synth_corpus, tmp_path)
    code, _, err = run_cli(monkeypatch, capsys, "translate", "-c", avg, "-i", src, "--beam", "2")
    assert code == 0, err
    hint = err.split("(not tuned: `", 1)[1].split("`", 1)[0]
    assert shlex.split(hint) == ["seq2seq", "tune-decode", "-c", str(avg)]
    (served,) = load_runs([avg], "cpu")
    assert f"`{hint}`" in served.info["tune_hint"]
    code, out, err = run_cli(monkeypatch, capsys, *shlex.split(hint)[1:])
    assert code == 0, err
    assert f"-> {avg.parent / 'decode.yaml'}" in out


def test_a_ctranslate2_exports_hint_names_the_checkpoint_it_came_from_and_runs_as_written(
    synth_transformer_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    pytest.importorskip("ctranslate2", reason="ctranslate2 is not installed")
    from seq2seq.export.ctranslate2 import export_ctranslate2

    run = _tuned_on_50_lines(synth_transformer_run, synth_corpus, tmp_path, "my run")
    export_ctranslate2(run, tmp_path / "ct2")
    src, _ = eval_files(synth_corpus, tmp_path)
    args = ["translate", "-c", tmp_path / "ct2", "-i", src, "--beam", "2"]
    code, _, err = run_cli(monkeypatch, capsys, *args)
    assert code == 0, err
    hint = err.split("(not tuned: `", 1)[1].split("`", 1)[0]
    assert shlex.split(hint) == ["seq2seq", "tune-decode", "-c", str(run / "best.pt")]
    code, out, err = run_cli(monkeypatch, capsys, *shlex.split(hint)[1:])
    assert code == 0, err
    assert f"-> {run / 'decode.yaml'}" in out
    shutil.move(run, tmp_path / "moved")  # the checkpoint is gone: the hint says where it was
    code, _, err = run_cli(monkeypatch, capsys, *args)
    assert (
        f"(not tuned: `seq2seq tune-decode` on the checkpoint it came from ({run / 'best.pt'})"
        in err
    )


def test_a_run_configured_with_alpha_0_says_where_it_comes_from_and_eval_can_override_it(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    """Runs configured before alpha 1.0 became the default store alpha 0 in their config."""
    old = run_with_config(synth_run, tmp_path, "decode", "length_penalty", 0.0, name="old")
    src, ref = eval_files(synth_corpus, tmp_path)
    args = ["eval", "-c", old, "--src", src, "--ref", ref, "--beam", "2"]
    code, _, err = run_cli(monkeypatch, capsys, *args, "--json", tmp_path / "a0.json")
    assert code == 0, err
    assert "decoding with beam 2, alpha 0.0 (not tuned" in err
    assert (
        "this alpha is stored in the run's config (runs configured before the default alpha "
        "became 1.0 store 0)" in err
    )
    assert "--length-penalty 1 overrides it" in err
    code, _, err = run_cli(
        monkeypatch, capsys, *args, "--length-penalty", "1", "--min-len", "2",
        "--json", tmp_path / "a1.json",
    )  # fmt: skip
    assert code == 0, err
    assert "tune-decode" not in err
    made = json.loads((tmp_path / "a1.json").read_text(encoding="utf-8"))
    assert made["decode"]["length_penalty"] == 1.0 and made["decode"]["min_len"] == 2
    assert made["decode_source"]["length_penalty"] == "command line"


def test_a_decoding_option_out_of_range_names_the_option_and_its_range():
    from seq2seq.commands.common import UserError, user_errors

    with pytest.raises(UserError) as e, user_errors():
        DecodeConfig().with_method("sample", temperature=float("inf"))
    assert str(e.value) == (
        "--temperature: Input should be a finite number, not inf (valid: a finite number > 0)"
    )
    with pytest.raises(UserError) as e, user_errors():
        DecodeConfig().model_copy(update={"length_penalty": float("nan")})
    assert str(e.value).startswith("--length-penalty: Input should be a finite number, not nan")


@needs_no_cuda
def test_translate_does_not_take_the_runs_train_device(synth_run, tmp_path):
    """Translation decodes where --device says (default auto), whatever the run trained on."""
    from seq2seq.decoding.runs import load

    run = cuda_run(synth_run, tmp_path)
    assert str(load(run, "auto").device) == "cpu"


@pytest.mark.parametrize("command", ["tune-decode", "average"])
def test_a_second_checkpoint_is_refused_not_silently_taken_instead_of_the_first(
    command, synth_run, tmp_path, monkeypatch, capsys
):
    """click keeps the last of a repeated option: ``-c A -c B`` tuned or averaged B alone, while
    translate and eval read it as an ensemble. Both commands take one run and say so."""
    monkeypatch.setattr(tune, "translate_sentences", lambda *a, **k: pytest.fail("decoded"))
    other = Path(shutil.copytree(synth_run, tmp_path / "other"))
    rest = ["--last", "1", "-o", tmp_path / "avg.pt"] if command == "average" else []
    code, _, err = run_cli(monkeypatch, capsys, command, "-c", synth_run, "-c", other, *rest)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"error: -c given 2 times: {command} takes one run" in err
    assert not (tmp_path / "avg.pt").exists() and not (other / "decode.yaml").exists()

"""``seq2seq/commands/common.py``: what every command shares -- decoding options named in their
errors, the hint to tune an untuned beam, the device a checkpoint is loaded on."""

from __future__ import annotations

import pytest

from seq2seq.config import DecodeConfig
from tests.corpora import eval_files
from tests.toys import cuda_run, needs_no_cuda, run_cli


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
    # greedy search ranks nothing; both settings given on the command line need no hint
    for extra in ([], ["--beam", "2", "--length-penalty", "0.5"]):
        code, _, err = run_cli(monkeypatch, capsys, "translate", "-c", synth_run, "-i", src, *extra)
        assert code == 0, err
        assert "tune-decode" not in err


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
    from seq2seq.commands.common import load_model

    run = cuda_run(synth_run, tmp_path)
    *_, dev = load_model(run, "auto")
    assert dev == "cpu"

"""``seq2seq/evaluation/plots.py``: attention plots need a model with attention."""

from __future__ import annotations

import pytest


def test_plotting_a_model_without_attention_is_an_error(tmp_path):
    from seq2seq.decoding.search import Hypothesis
    from seq2seq.decoding.translate import Translation
    from seq2seq.evaluation.plots import plot_translations

    results = [Translation("ein hund", [Hypothesis([4, 3], -1.0, -1.0, True, None)], ["a dog"])]
    with pytest.raises(ValueError, match="no attention"):
        plot_translations(results, None, 1, tmp_path)


def test_dollar_signs_in_data_text_are_drawn_literally_in_every_plot(tmp_path):
    """matplotlib read ``$...$`` as math: ``$x_$`` raised (the translation lost), ``$x$`` came
    out in italics."""
    import numpy as np

    from seq2seq.evaluation.plots import save_attention_panels_png, save_by_length_png

    panels = [("$x_$ cost", np.eye(2), ["$a_", "b$"], ["$c^", "d_$"])]
    assert save_attention_panels_png(tmp_path / "panels.png", panels).is_file()
    by_length = {"greedy $x_$": {"model $y^$": [1.0, 2.0]}}
    assert save_by_length_png(tmp_path / "len.png", ["1-$5_", "$6"], by_length, "$z_$").is_file()


def test_translate_attention_dir_and_training_plot_draw_dollar_signs_literally(
    synth_transformer_run, tmp_path, monkeypatch, capsys
):
    from seq2seq.decoding.runs import load
    from seq2seq.training.monitor import attention_heatmap
    from tests.toys import run_cli

    line = "ein $x_$ hund kostet $5^"
    src = tmp_path / "in.de"
    src.write_text(line + "\n", encoding="utf-8")
    out, plots = tmp_path / "out.en", tmp_path / "plots"
    code, _, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_transformer_run, "-i", src, "-o", out,
        "--attention-dir", plots,
    )  # fmt: skip
    assert code == 0, err
    assert out.is_file() and (plots / "line00001.png").is_file()
    run = load([synth_transformer_run], "cpu")
    picture = attention_heatmap(run.model, run.tok, line, "cpu", tmp_path / "attention.png")
    assert picture is not None and (tmp_path / "attention.png").is_file()

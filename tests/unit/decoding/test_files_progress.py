"""``seq2seq/decoding/files.py`` ``ProgressBar``: the progress bars of ``eval`` and
``tune-decode`` count every line and setting."""

from __future__ import annotations

from seq2seq.decoding.files import ProgressBar
from tests.corpora import eval_files
from tests.toys import run_cli


def bars(monkeypatch) -> list[tuple[str, int, int | None]]:
    """Every ProgressBar when it closes, as (description, done, total)."""
    seen: list[tuple[str, int, int | None]] = []
    close = ProgressBar.__exit__

    def spy(self, *exc):
        seen.append((self.description, self.done, self.total))
        return close(self, *exc)

    monkeypatch.setattr(ProgressBar, "__exit__", spy)
    return seen


def test_eval_drives_a_progress_bar_over_every_source_line(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    seen = bars(monkeypatch)
    src, ref = eval_files(synth_corpus, tmp_path, n=12)
    code, _, err = run_cli(monkeypatch, capsys, "eval", "-c", synth_run, "--src", src, "--ref", ref)
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
    src, ref = eval_files(synth_corpus, tmp_path, n=50)
    code, _, err = run_cli(
        monkeypatch, capsys, "tune-decode", "-c", synth_run, "--src", src, "--ref", ref,
        "--beams", "2", "--alphas", "0,1", "--no-write", "--json", tmp_path / "sweep.json",
    )  # fmt: skip
    assert code == 0, err
    assert described == ["setting 1/3", "setting 2/3", "setting 3/3"]
    assert seen == [("setting 3/3", 3 * 50, 3 * 50)]  # 3 settings x 50 lines, all done

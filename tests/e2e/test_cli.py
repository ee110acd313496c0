"""The command line's error contract end to end: bad devices, paths and conflicts are one line
and exit 2, ``-`` is standard output only where it can hold the output, and ``--help`` lists
every option."""

from __future__ import annotations

import pytest

from tests.e2e.helpers import one_line_exit_2


def test_bad_devices_paths_and_conflicts_are_one_line_exit_2(trained_run, tmp_path, run_in_process):
    run_dir, _ = trained_run
    (tmp_path / "a.en").write_text("a dog .\n")
    (tmp_path / "empty.en").write_text("")
    (tmp_path / "cfg.yaml").write_text("name: x\n")
    one_line_exit_2(
        run_in_process("translate", "-c", run_dir, "--device", "gpu7", stdin="Ein Hund.\n"),
        "--device 'gpu7': choose auto, cpu or cuda",
    )
    one_line_exit_2(
        run_in_process("translate", "-c", run_dir, "-o", tmp_path, stdin="Ein Hund.\n"),
        f"{tmp_path}: is a folder",
    )
    (tmp_path / "same.de").write_text("Ein Hund.\n")
    one_line_exit_2(
        run_in_process(
            "translate", "-c", run_dir, "-i", "same.de", "-o", "./same.de", cwd=tmp_path
        ),
        "is the --input file",
    )
    assert (tmp_path / "same.de").read_text() == "Ein Hund.\n"
    one_line_exit_2(
        run_in_process("eval", "--hyp", "a.en", "--ref", "a.en", "-c", run_dir, cwd=tmp_path),
        "give --hyp (score a file) or --checkpoint (translate --src), not both",
    )
    one_line_exit_2(
        run_in_process("eval", "--hyp", "a.en", "--ref", "a.en", "-o", "out.en", cwd=tmp_path),
        "with --hyp nothing is translated",
    )
    assert not (tmp_path / "out.en").exists()
    one_line_exit_2(
        run_in_process(
            "eval", "--hyp", "a.en", "--ref", "a.en", "--beam", "5", "--seed", "3", cwd=tmp_path
        ),
        "--beam, --seed: with --hyp nothing is translated, so decoding options do not apply",
    )
    one_line_exit_2(
        run_in_process("eval", "--hyp", "empty.en", "--ref", "empty.en", cwd=tmp_path),
        "empty.en: no lines to score",
    )
    one_line_exit_2(
        run_in_process("train", "cfg.yaml", "--run-dir", "cfg.yaml", cwd=tmp_path),
        "--run-dir cfg.yaml: is a file, not a folder",
    )
    one_line_exit_2(run_in_process("train", "cfg.yaml", "--seed", "-1", cwd=tmp_path), "train.seed")
    assert not (tmp_path / "runs").exists()


def test_dash_means_stdout_and_is_refused_where_stdout_cannot_hold_the_output(
    trained_run, tmp_path, run_in_process
):
    run_dir, _ = trained_run
    for args, needle in [
        (["average", "-c", run_dir, "--last", "1", "-o", "-"], "-o -: a checkpoint cannot go"),
        (["synth", "--task", "copy", "--out", "-"], "--out -: a corpus folder cannot go"),
        (["compare", "a.yaml", "--out", "-"], "--out -: the study's folder cannot go"),
        (["train", "a.yaml", "--run-dir", "-"], "--run-dir -: a run folder cannot go"),
        (["translate", "-c", run_dir, "--attention-dir", "-"], "--attention-dir -: a folder"),
    ]:
        one_line_exit_2(run_in_process(*args, cwd=tmp_path, stdin="Ein Hund.\n"), needle)
    (tmp_path / "in.de").write_text("Ein Hund.\nZwei Männer.\n")
    r = run_in_process("translate", "-c", run_dir, "-i", "in.de", "-o", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 2 and all(r.stdout.splitlines())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.de"]  # nothing named "-"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["train", "nope.yaml"], "nope.yaml: config file not found"),
        (["translate", "-c", "no_such_run"], "no_such_run: no such checkpoint"),
        (["eval", "--hyp", "a.txt", "--ref", "b.txt"], "a.txt: file not found"),
    ],
)
def test_user_errors_are_one_line_exit_2(tmp_path, args, needle, run_in_process):
    r = run_in_process(*args, cwd=tmp_path)
    assert r.returncode == 2
    assert needle in r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_help_lists_every_option(run_in_process):
    r = run_in_process("translate", "--help")
    assert r.returncode == 0
    for opt in ("--checkpoint", "--input", "--output", "--beam", "--n-best", "--batch-size"):
        assert opt in r.stdout
    # square brackets in help texts are shown, not eaten as markup
    assert "[default: the run's" in " ".join(r.stdout.split())

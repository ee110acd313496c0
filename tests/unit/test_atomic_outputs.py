"""``seq2seq/atomic.py`` ``check_writable``, ``check_not_input``: every output path is
checked writable before the work starts (one line, exit 2, nothing decoded, trained or
averaged)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from seq2seq.atomic import OutputError, check_not_input, check_writable
from tests.toys import run_main, synth_run_raw

SPIES = {  # what each command's work begins with
    "translate": "seq2seq.decoding.runs.load",
    "eval": "seq2seq.decoding.runs.load",
    "tune-decode": "seq2seq.decoding.runs.load",
    "average": "seq2seq.training.average.average_run",
    "compare": "seq2seq.study.compare.compare",
    "synth": "seq2seq.study.synth.write_corpus",
    "train": "seq2seq.training.loop.train",
}


def _command(name: str, run, src, cfg, bad) -> list:
    """The command line of ``name`` with the output option under test set to ``bad``."""
    return {
        "translate -o": ["translate", "-c", run, "-i", src, "-o", bad],
        "translate --attention-dir": ["translate", "-c", run, "-i", src, "--attention-dir", bad],
        "eval -o": ["eval", "-c", run, "--src", src, "--ref", src, "-o", bad],
        "eval --json": ["eval", "-c", run, "--src", src, "--ref", src, "--json", bad],
        "tune-decode --json": ["tune-decode", "-c", run, "--json", bad],
        "average -o": ["average", "-c", run, "--last", "2", "-o", bad],
        "compare --out": ["compare", cfg, "--out", bad, "--exact-match", "--budget-steps", "1"],
        "synth --out": ["synth", "--task", "copy", "--n", "10", "--out", bad],
        "train --run-dir": ["train", cfg, "--run-dir", bad],
    }[name]


OUTPUTS = {  # command and option -> (option as named in the message, a folder output?)
    "translate -o": ("--output", False),
    "translate --attention-dir": ("--attention-dir", True),
    "eval -o": ("--output", False),
    "eval --json": ("--json", False),
    "tune-decode --json": ("--json", False),
    "average -o": ("-o", False),
    "compare --out": ("--out", True),
    "synth --out": ("--out", True),
    "train --run-dir": ("--run-dir", True),
}


@pytest.fixture
def command_files(tmp_path):
    """A fake run folder (its best.pt is never read), a source file and a valid config."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "best.pt").write_bytes(b"never loaded")
    src = tmp_path / "src.txt"
    src.write_text("ein hund .\n")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(synth_run_raw(tmp_path / "corpus", max_steps=1)))
    return run, src, cfg


@pytest.mark.parametrize("name", list(OUTPUTS))
@pytest.mark.parametrize("under", ["file", "file/missing"])
def test_an_output_under_a_file_is_refused_before_the_work_starts(
    name, under, command_files, tmp_path, monkeypatch, capsys
):
    run, src, cfg = command_files
    started = []

    def work(*args, **kwargs):
        started.append(args)
        raise RuntimeError("the work started")

    monkeypatch.setattr(SPIES[name.split()[0]], work)
    blocker = tmp_path / "somefile.txt"
    blocker.write_text("a file, not a folder\n")
    bad = blocker / under.removeprefix("file").lstrip("/") / "out.txt"
    option, _ = OUTPUTS[name]
    code, err = run_main(monkeypatch, capsys, *_command(name, run, src, cfg, bad))
    assert (code, started) == (2, [])
    assert f"{option} {bad}: cannot write there: {blocker} is a file, not a folder;" in err
    assert len(err.strip().splitlines()) == 1
    assert blocker.read_text() == "a file, not a folder\n"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("name", list(OUTPUTS))
def test_an_output_in_a_folder_where_nothing_can_be_made_is_refused_before_the_work_starts(
    name, command_files, monkeypatch, capsys
):
    """/proc takes no new file, though its permissions let root write (the check tries one)."""
    run, src, cfg = command_files
    monkeypatch.setattr(SPIES[name.split()[0]], lambda *a, **k: pytest.fail("the work started"))
    bad = Path("/proc/no-such-folder/out")
    option, _ = OUTPUTS[name]
    code, err = run_main(monkeypatch, capsys, *_command(name, run, src, cfg, bad))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{option} {bad}: cannot write there: folder /proc is not writable;" in err


@pytest.mark.parametrize("name", [n for n, (_, folder) in OUTPUTS.items() if not folder])
def test_a_file_output_that_is_a_folder_is_refused_before_the_work_starts(
    name, command_files, tmp_path, monkeypatch, capsys
):
    run, src, cfg = command_files
    monkeypatch.setattr(SPIES[name.split()[0]], lambda *a, **k: pytest.fail("the work started"))
    folder = tmp_path / "a_folder"
    folder.mkdir()
    option, _ = OUTPUTS[name]
    code, err = run_main(monkeypatch, capsys, *_command(name, run, src, cfg, folder))
    assert code == 2 and f"{option} {folder}: is a folder; give a file name to write" in err
    assert len(err.strip().splitlines()) == 1


def test_tune_decode_refuses_a_run_folder_it_cannot_write_before_decoding(
    command_files, monkeypatch, capsys
):
    """Root writes into read-only folders, so the folder's permission is made up here."""
    import seq2seq.atomic as outputs

    run, _, _ = command_files
    monkeypatch.setattr(SPIES["tune-decode"], lambda *a, **k: pytest.fail("the model loaded"))
    monkeypatch.setattr(outputs, "_can_write", lambda folder: folder != run)
    code, err = run_main(monkeypatch, capsys, "tune-decode", "-c", run)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert (
        f"--write {run / 'tune_decode.json'}: cannot write there: folder {run} is not writable; "
        "copy the run to a folder you can write to, or pass --no-write"
    ) in err


def test_a_writable_output_passes_even_when_its_folders_are_still_to_be_made(tmp_path):
    check_writable(tmp_path / "new" / "deeper" / "out.txt", "--output")
    check_writable(tmp_path / "new" / "run", "--run-dir", folder=True)
    check_writable("-", "--output")
    check_writable(None, "--json")
    assert not (tmp_path / "new").exists()  # nothing is made by the check
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputError, match="is a file, not a folder; give a folder to write into"):
        check_writable(tmp_path / "f", "--out", folder=True)


def test_translate_into_an_unwritable_file_decodes_nothing(
    synth_run, tmp_path, monkeypatch, capsys
):
    """A real run: the model is never asked for a translation."""
    import seq2seq.decoding.files as files

    src = tmp_path / "src.txt"
    src.write_text("ein hund läuft .\n" * 5)
    monkeypatch.setattr(files, "translate_sentences", lambda *a, **k: pytest.fail("decoded"))
    bad = tmp_path / "somefile.txt"
    bad.write_text("x")
    code, err = run_main(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", src, "-o", bad / "out.txt"
    )
    assert code == 2 and "is a file, not a folder" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("name", "target", "said"),
    [
        ("translate -o", "src", "is the --input file"),
        ("translate -o", "run/best.pt", "would overwrite the run's own best.pt"),
        ("translate -o", "run/config.yaml", "would overwrite the run's own config.yaml"),
        ("eval -o", "src", "is the --src file"),
        ("eval -o", "run/last.pt", "would overwrite the run's own last.pt"),
        ("eval --json", "src", "is the --src file"),
        ("eval --json", "run/spm.tgt.model", "would overwrite the run's own spm.tgt.model"),
        ("translate -o", "run/train_log.jsonl", "would overwrite the run's own train_log.jsonl"),
        ("eval -o", "run/train.lock", "would overwrite the run's own train.lock"),
        ("average -o", "run/config.yaml", "would overwrite the run's own config.yaml"),
        ("average -o", "run/spm.src.model", "would overwrite the run's own spm.src.model"),
        ("average -o", "run/train_summary.json", "would overwrite the run's own train_summary"),
    ],
)
def test_an_output_that_is_an_input_or_a_file_of_the_run_is_refused_before_the_work_starts(
    name, target, said, command_files, tmp_path, monkeypatch, capsys
):
    """eval wrote its translations over --src and its JSON over --ref; translate -o wrote over
    the run's best.pt; average -o over its config.yaml and tokenizer (new-user trials)."""
    run, src, cfg = command_files
    monkeypatch.setattr(SPIES[name.split()[0]], lambda *a, **k: pytest.fail("the work started"))
    bad = src if target == "src" else tmp_path / target
    before = bad.read_bytes() if bad.exists() else None
    option, _ = OUTPUTS[name]
    code, err = run_main(monkeypatch, capsys, *_command(name, run, src, cfg, bad))
    assert code == 2 and f"{option} {bad}" in err and said in err, err
    assert len(err.strip().splitlines()) == 1
    assert (bad.read_bytes() if bad.exists() else None) == before


def test_an_output_beside_the_run_files_that_is_not_one_of_them_passes(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    check_not_input(run / "test_greedy.hyp.en", "-o", [("--input", tmp_path / "a.de")], [run])
    check_not_input("-", "-o", [("--input", "-")], [run / "best.pt"])
    with pytest.raises(OutputError, match="would overwrite the run's own step200.pt"):
        check_not_input(run / "step200.pt", "-o", [], [run / "best.pt"])
    check_not_input(run / "avg_best5.pt", "-o", runs=[run], checkpoints=False)  # make best's


def test_translate_into_a_fifo_writes_through_it_and_into_a_link_keeps_the_link(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    """translate wrote OUTPUT.partial and renamed it over a FIFO, a device (/dev/null) or a
    symbolic link, leaving a regular file there and the reader with nothing (a new-user trial)."""
    import os
    import stat
    import threading

    src = synth_corpus / "val.de"
    fifo, target, link = tmp_path / "pipe", tmp_path / "real.txt", tmp_path / "link.txt"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    code, err = run_main(monkeypatch, capsys, "translate", "-c", synth_run, "-i", src, "-o", fifo)
    reader.join(30)
    assert code == 0, err
    n = len(src.read_text().splitlines())
    assert len(got[0].splitlines()) == n and stat.S_ISFIFO(os.stat(fifo).st_mode)
    target.write_text("old\n")
    link.symlink_to(target)
    code, err = run_main(monkeypatch, capsys, "translate", "-c", synth_run, "-i", src, "-o", link)
    assert code == 0 and link.is_symlink() and target.read_text() == got[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "pipe", "real.txt"]


def test_two_outputs_on_one_file_are_named_as_outputs(command_files, tmp_path, monkeypatch, capsys):
    """eval -o F --json F said '--json F is the --output file: writing it would replace what is
    read'; --output is not read (a new-user trial)."""
    run, src, _ = command_files
    monkeypatch.setattr(SPIES["eval"], lambda *a, **k: pytest.fail("the work started"))
    same = tmp_path / "out.txt"
    args = ["eval", "-c", run, "--src", src, "--ref", src, "-o", same, "--json", same]
    code, err = run_main(monkeypatch, capsys, *args)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"error: --json {same} is also the --output path; give each output its own" in err


def test_translate_refuses_its_output_as_the_attention_folder_before_decoding(
    command_files, tmp_path, monkeypatch, capsys
):
    """-o X --attention-dir X decoded the whole file, then failed to rename X.partial over the
    plots' folder (a new-user trial)."""
    run, src, _ = command_files
    monkeypatch.setattr(SPIES["translate"], lambda *a, **k: pytest.fail("the work started"))
    same = tmp_path / "att"
    args = ["translate", "-c", run, "-i", src, "-o", same, "--attention-dir", same]
    code, err = run_main(monkeypatch, capsys, *args)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"error: --output {same} is also the --attention-dir path; give each output" in err
    assert not same.exists()


def test_a_folder_where_the_partial_output_goes_is_named(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    """With OUT.partial a folder, translate said 'OUT: Is a directory' of an OUT that did not
    exist (a new-user trial)."""
    out = tmp_path / "out.txt"
    (tmp_path / "out.txt.partial").mkdir()
    args = ["translate", "-c", synth_run, "-i", synth_corpus / "val.de", "-o", out]
    code, err = run_main(monkeypatch, capsys, *args)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{out}.partial: is a folder where the lines go before they are renamed to {out}" in err
    assert not out.exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_a_full_disk_names_the_output_it_could_not_write(synth_run, tmp_path, monkeypatch, capsys):
    """translate -o /dev/full and eval --json /dev/full said only '[Errno 28] No space left on
    device' (a new-user trial)."""
    src = tmp_path / "src.txt"
    src.write_text("ein hund läuft .\n" * 3)
    for args in (
        ["translate", "-c", synth_run, "-i", src, "-o", "/dev/full"],
        ["eval", "--hyp", src, "--ref", src, "--json", "/dev/full"],
    ):
        code, err = run_main(monkeypatch, capsys, *args)
        assert code == 2, err
        assert err.strip().splitlines()[-1] == (
            "error: /dev/full: No space left on device; free some space and try again"
        )

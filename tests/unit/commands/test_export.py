"""``seq2seq export`` (``seq2seq/commands/export.py``): it prints the sizes, refuses bad input in
one line, and ``translate``, ``eval`` and ``serve`` read what it writes; ``translate -c DIR`` of a
CTranslate2 export decodes with CTranslate2 (those tests skip without ctranslate2)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import pytest

from tests.toys import run_cli, run_main

try:
    import ctranslate2
except ImportError:
    ctranslate2 = None
needs_ct2 = pytest.mark.skipif(
    ctranslate2 is None,
    reason='ctranslate2 is not installed (pip install -e ".[export]"; make install adds it)',
)
SIZES = re.compile(
    r"exported (\S+) \((\d+\.\d+) MB\) -> (\S+) \((\d+\.\d+) MB; model\.pt: fp16 weights \d+ kB, "
    r"tokenizer \d+ kB\)"
)


@pytest.fixture(scope="module")
def val_file(tmp_path_factory, synth_corpus):
    """The first 30 validation sources, and their references beside them (``val.en``)."""
    folder = tmp_path_factory.mktemp("val")
    for lang in ("de", "en"):
        lines = (synth_corpus / f"val.{lang}").read_text().splitlines()[:30]
        (folder / f"val.{lang}").write_text("\n".join(lines) + "\n")
    return folder / "val.de"


def test_export_prints_the_sizes_and_every_command_reads_the_folder(
    synth_transformer_run, synth_corpus, val_file, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "export"
    code, said, err = run_cli(
        monkeypatch, capsys, "export", synth_transformer_run, "-o", out, "--dtype", "fp16"
    )
    assert code == 0, err
    m = SIZES.search(said)
    assert m and m[1] == str(synth_transformer_run / "best.pt") and m[3] == str(out), said
    assert float(m[4]) < float(m[2])
    code, ours, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_transformer_run, "-i", val_file
    )
    assert code == 0, err
    for c in (out, out / "model.pt"):
        code, theirs, err = run_cli(monkeypatch, capsys, "translate", "-c", c, "-i", val_file)
        assert code == 0, err
        assert len(theirs.splitlines()) == len(ours.splitlines()) == 30
    code, said, err = run_cli(
        monkeypatch,
        capsys,
        "eval",
        "-c",
        out,
        "--src",
        val_file,
        "--ref",
        val_file.with_suffix(".en"),
    )
    assert code == 0 and "BLEU" in said, err
    from seq2seq.serve.runs import load_runs

    (served,) = load_runs([out], "cpu")
    assert served.name == "export" and served.info["checkpoint"] == "model.pt"
    assert served.info["training"]["steps"] == 300


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["{tmp}/missing", "-o", "{tmp}/x"], "missing: no such checkpoint or run directory"),
        (["{run}", "-o", "{tmp}/earlier"], "already exists; give --overwrite"),
        (["{run}", "-o", "{run}", "--overwrite"], "holds the checkpoint being exported"),
        (["{run}", "-o", "{tmp}/x", "--quantize", "int8"], "only with --format ctranslate2"),
        # a new-user trial: int4 was told to add --format ctranslate2, which then refused it
        (["{run}", "-o", "{tmp}/x", "--quantize", "int4"], "int4: only int8 is offered"),
        (["{run}", "-o", "{tmp}/x", "--format", "onnx"], "choose seq2seq or ctranslate2"),
        (["{run}", "-o", "{tmp}/x", "--dtype", "fp64"], "choose fp32, fp16 or bf16"),
        (["{run}", "-o", "-"], "cannot go to standard output"),
    ],
)
def test_bad_input_is_one_line(synth_transformer_run, tmp_path, monkeypatch, capsys, args, needle):
    (tmp_path / "earlier").mkdir()
    (tmp_path / "earlier" / "model.pt").write_bytes(b"")
    given = [a.format(tmp=tmp_path, run=synth_transformer_run) for a in args]
    code, err = run_main(monkeypatch, capsys, "export", *given)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x").exists()


def test_an_output_folder_it_cannot_write_is_refused_before_reading(
    synth_transformer_run, tmp_path, monkeypatch, capsys
):
    """Root writes into read-only folders, so the folder's permission is made up here."""
    import seq2seq.atomic as outputs
    import seq2seq.export.folder as export_folder

    monkeypatch.setattr(outputs, "_can_write", lambda folder: folder != tmp_path)
    monkeypatch.setattr(export_folder, "load_checkpoint", lambda *a: pytest.fail("read the run"))
    code, err = run_main(monkeypatch, capsys, "export", synth_transformer_run, "-o", tmp_path / "x")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"-o {tmp_path / 'x'}: cannot write there: folder {tmp_path} is not writable" in err


@needs_ct2
def test_translate_reads_a_ctranslate2_export_as_our_greedy_search(
    synth_transformer_run, val_file, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "ct2"
    code, said, err = run_cli(
        monkeypatch,
        capsys,
        "export",
        synth_transformer_run,
        "-o",
        out,
        "--format",
        "ctranslate2",
        "--quantize",
        "int8",
    )
    assert code == 0 and "CTranslate2 int8" in said and "model.bin" in said, err
    code, ours, _ = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_transformer_run, "-i", val_file
    )
    # an int8 export, decoded in fp32 by the same command as a fp32 one: --quantize is its own
    code, theirs, err = run_cli(monkeypatch, capsys, "translate", "-c", out, "-i", val_file)
    assert code == 0 and len(theirs.splitlines()) == 30, err
    fp32 = tmp_path / "fp32"
    run_cli(
        monkeypatch, capsys, "export", synth_transformer_run, "-o", fp32, "--format", "ctranslate2"
    )
    code, theirs, err = run_cli(
        monkeypatch, capsys, "translate", "-c", fp32 / "model.bin", "-i", val_file
    )
    assert code == 0 and theirs == ours, err
    for extra, needle in [
        (["-c", synth_transformer_run], "cannot join an ensemble"),
        (["--attention-dir", tmp_path / "plots"], "returns no attention maps"),
    ]:
        code, err = run_main(monkeypatch, capsys, "translate", "-c", fp32, *extra, "-i", val_file)
        assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    code, err = run_main(
        monkeypatch, capsys, "eval", "-c", fp32, "--src", val_file, "--ref", val_file
    )
    assert code == 2 and "only `seq2seq translate -c" in err and len(err.splitlines()) == 1


@needs_ct2
def test_an_rnn_run_is_refused_by_the_ctranslate2_format(synth_run, tmp_path, monkeypatch, capsys):
    code, err = run_main(
        monkeypatch, capsys, "export", synth_run, "-o", tmp_path / "x", "--format", "ctranslate2"
    )
    assert code == 2 and "no RNN decoders" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_a_signal_that_ends_export_cleans_up_as_ctrl_c_does(sig, synth_run, tmp_path):
    """SIGTERM left the temporary folder and a half-written model.pt beside -o (a tester's
    trial). In a subprocess: unhandled, the signal would end pytest itself."""
    script = f"""
import os, signal, sys
import seq2seq.export.weights as weights
signal.signal(signal.{sig}, signal.SIG_DFL)  # as in a shell, even under nohup
def save(path, payload):
    path.write_bytes(b"half a model")
    os.kill(os.getpid(), signal.{sig})
weights.save_checkpoint = save
sys.argv = ["seq2seq", "export", sys.argv[1], "-o", sys.argv[2]]
from seq2seq.cli import main
main()
"""
    out = tmp_path / "exports" / "x"
    (tmp_path / "exports").mkdir()
    r = subprocess.run(
        [sys.executable, "-c", script, str(synth_run), str(out)], capture_output=True, text=True
    )
    assert r.returncode == 130 and r.stderr.strip().endswith("interrupted"), r.stderr
    assert not any((tmp_path / "exports").iterdir())  # no temporary folder, no half a model

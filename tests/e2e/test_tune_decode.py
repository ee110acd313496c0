"""``seq2seq tune-decode`` end to end: it writes the best search to decode.yaml, which
``translate`` then uses (the sweep that writes it runs in a subprocess, the command's end-to-end
path; the rest in process)."""

from __future__ import annotations

import json

import yaml

from tests.e2e.helpers import run


def test_tune_decode_writes_the_best_search_that_translate_then_uses(
    trained_run, tmp_path, run_in_process
):
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(trained_run[0], run_dir)
    r = run("tune-decode", "-c", run_dir, "--beams", "2", "--alphas", "0,1", "--no-extend")
    assert r.returncode == 0, r.stderr
    sweep = json.loads((run_dir / "tune_decode.json").read_text())
    rows = sweep["sweep"]
    assert [(x["method"], x["beam_size"], x["length_penalty"]) for x in rows] == [
        ("greedy", 1, 0.0),
        ("beam", 2, 0.0),
        ("beam", 2, 1.0),
    ]
    assert sweep["best"]["bleu"] == max(x["bleu"] for x in rows) >= sweep["greedy_bleu"]
    assert sweep["tuned_on"]["lines"] == 100 and "val.de" in sweep["tuned_on"]["src"]
    tuned = yaml.safe_load((run_dir / "decode.yaml").read_text())
    assert tuned["method"] == sweep["best"]["method"]
    assert "decode.yaml" in r.stdout and "greedy" in r.stdout
    # translate reads decode.yaml (and says so); its own options still override it
    src = "ein mann fährt fahrrad .\n"
    r1 = run_in_process("translate", "-c", run_dir, stdin=src)
    assert (
        r1.returncode == 0 and f"decoding with {run_dir / 'decode.yaml'} (tune-decode)" in r1.stderr
    )
    r2 = run_in_process(
        "translate",
        "-c",
        trained_run[0],
        "--method",
        tuned["method"],
        *(
            ["--beam", str(tuned["beam_size"]), "--length-penalty", str(tuned["length_penalty"])]
            if tuned["method"] == "beam"
            else []
        ),
        stdin=src,
    )
    assert r1.stdout == r2.stdout
    # --no-write leaves the run folder as it was: decode.yaml and tune_decode.json alike
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    r4 = run_in_process(
        "tune-decode", "-c", run_dir, "--beams", "2", "--alphas", "0.5", "--no-write"
    )
    assert r4.returncode == 0, r4.stderr
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == before
    (run_dir / "decode.yaml").write_text("method: beam\nbeam_size: 0\n")
    r3 = run_in_process("translate", "-c", run_dir, stdin=src)
    assert r3.returncode == 2 and r3.stderr.count("\n") == 1 and "beam_size" in r3.stderr

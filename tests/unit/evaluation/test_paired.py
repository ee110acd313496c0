"""``seq2seq paired``: on three made-up systems, every score, bootstrap mean, interval and p-value
equals what sacreBLEU's ``PairedTest`` API returns for the same inputs, resamples and seed (and the
signatures are its own); bad input is one line and exit code 2."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.significance import PairedTest

from tests.toys import run_cli

WORDS = "the a cat dog sat on mat red blue house runs fast slow big small green tree park".split()


def made_up(n: int = 36, seed: int = 7) -> tuple[list[str], list[list[str]]]:
    """n reference lines and three systems that change 40%, 15% and 45% of their words."""
    rng = random.Random(seed)
    refs, systems = [], [[], [], []]
    for _ in range(n):
        ref = [rng.choice(WORDS) for _ in range(rng.randint(3, 11))]
        refs.append(" ".join(ref))
        for lines, p in zip(systems, (0.4, 0.15, 0.45), strict=True):
            lines.append(" ".join(w if rng.random() > p else rng.choice(WORDS) for w in ref))
    return refs, systems


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path) -> tuple[Path, list[Path], list[str], list[list[str]]]:
    refs, systems = made_up()
    ref = write(tmp_path / "ref.txt", refs)
    hyps = [write(tmp_path / f"{n}.txt", s) for n, s in zip("abc", systems, strict=True)]
    return ref, hyps, refs, systems


def sacrebleu_says(refs, systems, names, test: str, n: int, seed: int, monkeypatch):
    """sacreBLEU's own PairedTest over the systems (a.txt the baseline)."""
    monkeypatch.setenv("SACREBLEU_SEED", str(seed))
    metrics = {"bleu": BLEU(), "chrf": CHRF(), "ter": TER()}
    named = [(f"{s}.txt", lines) for s, lines in zip("abc", systems, strict=True)]
    ps = PairedTest(
        named,
        {k: metrics[k] for k in names},
        references=[refs],
        test_type=test,
        n_samples=n,
        n_ar_confidence=1000 if test == "ar" else -1,
    )
    sigs, scores = ps()
    monkeypatch.delenv("SACREBLEU_SEED")
    return sigs, scores


@pytest.mark.parametrize(
    ("test", "n", "seed", "flags"),
    [
        ("bs", 1000, 12345, ["--bleu", "--chrf", "--ter"]),
        ("bs", 300, 7, ["--chrf"]),
        ("ar", 500, 99, ["--bleu", "--ter"]),
    ],
)
def test_scores_intervals_and_p_values_equal_sacrebleus_paired_test(
    monkeypatch, capsys, files, tmp_path, test, n, seed, flags
):
    ref, hyps, refs, systems = files
    out = tmp_path / "paired.json"
    args = [f"--hyp={h}" for h in hyps] + ["--ref", ref, "--paired-method", test, "--json", out]
    args += ["--paired-n", n, "--paired-seed", seed, *flags]
    code, stdout, err = run_cli(monkeypatch, capsys, "paired", *args)
    assert code == 0, err
    report = json.loads(out.read_text())
    names = [f.removeprefix("--") for f in flags]
    sigs, scores = sacrebleu_says(refs, systems, names, test, n, seed, monkeypatch)
    assert (report["paired"], report["n_samples"], report["seed"]) == (test, n, seed)
    assert [s["name"] for s in report["systems"]] == [str(h) for h in hyps]
    assert report["baseline"] == str(hyps[0]) and report["systems"][0]["baseline"]
    theirs = dict(zip(names, sigs, strict=True))  # ours -> sacrebleu's name (BLEU, chrF2, TER)
    for name, key in theirs.items():
        assert report["signatures"][name] == sigs[key].format()
        assert f"seed:{seed}" in report["signatures"][name]
        for row, want in zip(report["systems"], scores[key], strict=True):
            got = row[name]
            assert got["score"] == pytest.approx(want.score, abs=1e-9)
            assert got["mean"] == pytest.approx(want.mean, abs=1e-9)
            assert got["ci"] == pytest.approx(want.ci, abs=1e-9)
            assert got["p_value"] == want.p_value  # None for the baseline
        assert report["systems"][0][name]["p_value"] is None
        assert all(r[name]["p_value"] is not None for r in report["systems"][1:])
    # the text report: a row per system, the baseline first, each with its signature
    lines = stdout.splitlines()
    assert lines[0].startswith("paired ") and f"{n} " in lines[0] and f"seed {seed}" in lines[0]
    assert lines[2].startswith(f"Baseline: {hyps[0]}")
    assert "p = " in lines[3] and "p = " in lines[4] and "p = " not in lines[2]
    assert sum("signature:" in x for x in lines) == len(names)


def test_the_better_system_is_significant_and_a_copy_of_the_baseline_is_warned_of(
    monkeypatch, capsys, files, tmp_path
):
    ref, hyps, _, _ = files
    same = write(tmp_path / "a_again.txt", hyps[0].read_text().splitlines())
    out = tmp_path / "r.json"
    code, _, err = run_cli(
        monkeypatch, capsys, "paired", "--hyp", hyps[0], "--hyp", hyps[1], "--hyp", same,
        "--ref", ref, "--paired-method", "bs", "--json", out,
    )  # fmt: skip
    assert code == 0, err
    rows = json.loads(out.read_text())["systems"]
    assert rows[1]["bleu"]["score"] > rows[0]["bleu"]["score"]
    assert rows[1]["bleu"]["p_value"] < 0.05
    # sacrebleu's bootstrap counts no resample above a zero difference (p = 1 / 1001, starred):
    # a copy of the baseline is reported as no difference, in the JSON and the table
    assert rows[2]["bleu"]["score"] == rows[0]["bleu"]["score"]
    assert rows[2]["bleu"]["p_value"] == 1.0
    assert f"warning: {same} is line for line the baseline" in err
    code, table, err = run_cli(
        monkeypatch, capsys, "paired", "--hyp", hyps[0], "--hyp", same, "--ref", ref,
        "--paired-method", "ar", "--paired-n", 200,
    )  # fmt: skip
    assert code == 0, err
    row = next(x for x in table.splitlines() if x.startswith(str(same)))
    assert row.endswith("p = 1.0000"), row
    # a space doubled on every line: BLEU, chrF and TER count the same, so no resample differs;
    # it was starred at p = 0.0010 (a new-user trial)
    lines = hyps[0].read_text().splitlines()
    spaced = write(tmp_path / "a_spaced.txt", [x.replace(" ", "  ", 1) for x in lines])
    for method in ("bs", "ar"):
        code, _, err = run_cli(
            monkeypatch, capsys, "paired", "--hyp", hyps[0], "--hyp", spaced, "--ref", ref,
            "--paired-method", method, "--paired-n", 200, "--bleu", "--chrf", "--ter",
            "--json", out,
        )  # fmt: skip
        assert code == 0, err
        row = json.loads(out.read_text())["systems"][1]
        assert [row[m]["p_value"] for m in ("bleu", "chrf", "ter")] == [1.0, 1.0, 1.0], row
        assert f"warning: {spaced} counts as the baseline on every line in bleu, chrf, ter" in err


@pytest.mark.parametrize("paired", [False, True])
def test_a_system_equal_to_the_reference_is_warned_of(monkeypatch, capsys, files, paired):
    ref, hyps, _, _ = files
    command = ["paired", "--hyp", hyps[0], "--hyp", ref] if paired else ["eval", "--hyp", ref]
    code, _, err = run_cli(monkeypatch, capsys, *command, "--ref", ref)
    assert code == 0, err
    assert err.count(f"{ref} is line for line the reference {ref}") == 1, err


def test_sacrebleus_default_seed_and_samples(monkeypatch, capsys, files, tmp_path):
    ref, hyps, _, _ = files
    monkeypatch.delenv("SACREBLEU_SEED", raising=False)
    code, out, err = run_cli(
        monkeypatch, capsys, "paired", "--hyp", hyps[0], "--hyp", hyps[1], "--ref", ref,
        "--paired-method", "bs", "--json", "-",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert (report["n_samples"], report["seed"]) == (1000, 12345)
    assert "bs:1000|seed:12345" in report["signatures"]["bleu"]


def one_line_error(monkeypatch, capsys, *args, command: str = "paired") -> str:
    code, out, err = run_cli(monkeypatch, capsys, command, *args)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_one_system_is_a_one_line_error(monkeypatch, capsys, files):
    ref, hyps, _, _ = files
    err = one_line_error(monkeypatch, capsys, "--hyp", hyps[0], "--ref", ref)
    assert "paired compares two or more systems: --hyp is given once; repeat --hyp" in err


def test_a_hypothesis_file_of_another_length_is_named(monkeypatch, capsys, files, tmp_path):
    ref, hyps, _, systems = files
    short = write(tmp_path / "short.txt", systems[2][:-3])
    err = one_line_error(
        monkeypatch, capsys, "--hyp", hyps[0], "--hyp", hyps[1], "--hyp", short, "--ref", ref,
        "--paired-method", "ar",
    )  # fmt: skip
    assert f"{short} has 33 lines but {ref} has 36" in err


@pytest.mark.parametrize(
    ("command", "extra", "says"),
    [
        ("paired", ["--paired-method", "xy"], "--paired-method xy: choose bs (bootstrap) or ar"),
        ("eval", [], "--hyp given 2 times: several systems are compared with seq2seq paired"),
        ("eval", ["--paired-n", "100"], "No such option: --paired-n"),
        ("paired", ["--by-length"], "--by-length"),
        ("eval", ["--paired", "bs"], "eval --paired moved to its own command: seq2seq paired"),
        # a new-user trial: 100,000,000 resamples were killed for memory with no word
        ("paired", ["--paired-n", "100001"], "--paired-n"),
        ("paired", ["--src", "x.de"], "--src x.de: --hyp systems are scored as they are"),
    ],
)
def test_misused_paired_options_are_one_line_errors(
    monkeypatch, capsys, files, command, extra, says
):
    ref, hyps, _, _ = files
    err = one_line_error(
        monkeypatch, capsys, "--hyp", hyps[0], "--hyp", hyps[1], "--ref", ref, *extra,
        command=command,
    )  # fmt: skip
    assert says in err


def test_eval_paired_without_a_value_says_where_it_moved(monkeypatch, capsys, files):
    """``eval --paired --hyp A ...``: the old flag swallows ``--hyp`` as its value; the answer is
    still the line saying where comparing systems moved, not click's extra-argument error."""
    ref, hyps, _, _ = files
    err = one_line_error(
        monkeypatch, capsys, "--paired", "--hyp", hyps[0], "--hyp", hyps[1], "--ref", ref,
        command="eval",
    )  # fmt: skip
    assert "eval --paired moved to its own command: seq2seq paired" in err
    err = one_line_error(
        monkeypatch, capsys, "--hyp", hyps[0], "--ref", ref, "--paired", command="eval"
    )  # the last option, with no value at all
    assert "eval --paired moved to its own command: seq2seq paired" in err


def test_the_same_file_twice_is_refused(monkeypatch, capsys, files):
    ref, hyps, _, _ = files
    err = one_line_error(monkeypatch, capsys, "--hyp", hyps[0], "--hyp", hyps[0], "--ref", ref)
    assert f"paired: --hyp {hyps[0]} is given twice; give each system once" in err


def test_a_seed_below_1_is_refused_as_sacrebleu_would_not_seed_with_it(monkeypatch, capsys, files):
    ref, hyps, _, _ = files
    code, _, err = run_cli(
        monkeypatch, capsys, "paired", "--hyp", hyps[0], "--hyp", hyps[1], "--ref", ref,
        "--paired-seed", "0",
    )  # fmt: skip
    assert code == 2 and "'--paired-seed': Input should be greater than or equal to 1" in err


@pytest.mark.parametrize("value", ["abc", "-5", "99999999999"])
def test_a_bad_sacrebleu_seed_in_the_environment_is_named(monkeypatch, capsys, files, value):
    """sacrebleu's own int() and numpy's errors said neither the variable nor what to give (a
    new-user trial); --paired-seed still overrides the environment."""
    ref, hyps, _, _ = files
    monkeypatch.setenv("SACREBLEU_SEED", value)
    args = ["--hyp", hyps[0], "--hyp", hyps[1], "--ref", ref, "--paired-n", "10"]
    err = one_line_error(monkeypatch, capsys, *args)
    assert f"SACREBLEU_SEED={value!r} (the environment): give a whole number from 0" in err
    code, _, err = run_cli(monkeypatch, capsys, "paired", *args, "--paired-seed", "3")
    assert code == 0, err

"""Choosing the search on validation (``seq2seq/decoding/tune.py``): the sweep on a scripted oracle
whose best length penalty is known, the tie rule, decode.yaml, and tuning sets that cannot tell
the settings apart."""

from __future__ import annotations

import json
import math

import pytest
import torch
import yaml

from seq2seq.checkpoint import with_tuned_decode
from seq2seq.config import Config, DecodeConfig
from seq2seq.data.tokenizer import EOS
from seq2seq.decoding.search import search
from seq2seq.decoding.tune import (
    MAX_ALPHA,
    MAX_BEAM,
    SweepRow,
    best_row,
    beyond_edge,
    candidates,
    parse_beams,
    parse_floats,
    sweep,
    sweep_inside,
    write_decode_file,
)
from tests.toys import Oracle

A, B, C, D, E, F, G, H, II, J = range(4, 14)

WORDS = dict(enumerate("the cat sat on a mat and then it slept".split(), start=4))


def _path(tokens):
    """Oracle rows for one certain path: after tokens[:i] comes tokens[i]."""
    return {tuple(tokens[:i]): {tokens[i]: 1.0} for i in range(len(tokens))}


def _oracle() -> tuple[Oracle, list[str]]:
    """Two sentences whose best length penalty lies in [0.6, 1.1] (lp = ((5 + n) / 6)^α):

    Sentence 1 ends early with "the cat" (p = .532, greedy's choice) or goes on to the reference
    "the sat on a mat" (p = .468); the reference wins once α > 0.57. Sentence 2 stops at the
    reference (p = .56) or runs on to "... and then it slept" (p = .44), which wins once α > 1.12.
    """
    s1 = _path([A, C, D, E, F, EOS]) | {(A,): {B: 0.532, C: 0.468}, (A, B): {EOS: 1.0}}
    s2 = _path([A, C, D, E, F, G, H, II, J, EOS]) | {(A, C, D, E, F): {EOS: 0.56, G: 0.44}}
    table = {(1, k): v for k, v in s1.items()} | {(2, k): v for k, v in s2.items()}
    ref = " ".join(WORDS[t] for t in (A, C, D, E, F))
    return Oracle(table, vocab=16), [ref, ref]


def _translate(model):
    src = torch.tensor([[1], [2]])

    def translate(cfg: DecodeConfig) -> list[str]:
        hyps = search(model, src, src != 0, cfg)
        return [" ".join(WORDS[t] for t in h[0].tokens if t != EOS) for h in hyps]

    return translate


def _tuning_files(tmp_path, n: int, ref: str | None = None):
    """``n`` validation-like lines of the synthetic corpus (refs: its targets, or ``ref``)."""
    from tests.corpora import synth_pairs

    pairs = synth_pairs(n, seed=5, max_words=6)
    src, tgt = tmp_path / "tune.de", tmp_path / "tune.en"
    src.write_text("".join(s + "\n" for s, _ in pairs))
    tgt.write_text("".join((ref or t) + "\n" for _, t in pairs))
    return src, tgt


def _copy_run(synth_run, tmp_path):
    import shutil

    return shutil.copytree(synth_run, tmp_path / "run")


def test_the_sweep_picks_the_scripted_best_length_penalty():
    model, refs = _oracle()
    base = DecodeConfig(max_len_a=0.0, max_len_b=20)
    rows = sweep(_translate(model), refs, candidates(base, (2, 4), (0.0, 0.4, 0.8, 1.2, 1.6)))
    by = {(r.beam_size, r.length_penalty): r for r in rows if r.method == "beam"}
    # the oracle's arithmetic: α <= 0.4 keeps sentence 1 short, α >= 1.2 runs sentence 2 on
    assert by[2, 0.8].bleu == 100.0
    for a in (0.0, 0.4, 1.2, 1.6):
        assert by[2, a].bleu < 100.0
    assert by[2, 0.0].ratio < 1.0 < by[2, 1.6].ratio  # short at α = 0, long at α = 1.6
    greedy = rows[0]
    assert greedy.method == "greedy" and greedy.bleu < 100.0
    best = best_row(rows)
    assert (best.method, best.beam_size, best.length_penalty) == ("beam", 2, 0.8)


REFS = [f"line {i} of the tuning set" for i in range(100)]


def _peaked(alpha: float, beam: int, calls: list):
    """A scripted search whose BLEU peaks at (``beam``, ``alpha``): the farther a setting is from
    it (0.25 of α or a factor 2 of K a step), the more of its first lines are wrong."""

    def translate(cfg: DecodeConfig) -> list[str]:
        calls.append((cfg.method, cfg.beam_size, cfg.length_penalty))
        if cfg.method == "greedy":
            miss = len(REFS)
        else:
            miss = round(abs(cfg.length_penalty - alpha) * 4 + abs(math.log2(cfg.beam_size / beam)))
        return ["wrong" if i < miss else r for i, r in enumerate(REFS)]

    return translate


def test_a_best_setting_at_the_grids_edge_is_swept_beyond_until_it_lies_inside():
    calls, told = [], []
    base = DecodeConfig()
    rows = sweep_inside(_peaked(2.5, 10, calls), REFS, base, (5, 10), (0, 0.5, 1, 1.5), None,
                        extend=told.append)  # fmt: skip
    best = best_row(rows)
    assert (best.beam_size, best.length_penalty, best.bleu) == (10, 2.5, 100.0)
    # α went up by the grid's step (0.5) and K doubled, one step past the optimum, no further
    assert told == [[(10, 2.0), (20, 1.5)], [(10, 2.5)], [(10, 3.0)]]
    assert len(calls) == len(set(calls)) == 1 + 8 + 4  # no setting decoded twice
    assert not beyond_edge(rows)
    # inside the grid from the start: nothing more is swept
    calls.clear()
    rows = sweep_inside(
        _peaked(0.5, 5, calls), REFS, base, (5, 10), (0, 0.5, 1), extend=told.append
    )
    assert len(calls) == 7 and best_row(rows).length_penalty == 0.5


def test_the_sweep_beyond_the_edge_stops_at_its_caps_and_never_for_greedy():
    calls = []
    rows = sweep_inside(_peaked(20.0, 10, calls), REFS, DecodeConfig(), (10,), (4.0,))
    assert best_row(rows).length_penalty == MAX_ALPHA == max(c[2] for c in calls)
    calls.clear()
    rows = sweep_inside(_peaked(1.0, 1000, calls), REFS, DecodeConfig(), (10,), (1.0,))
    assert best_row(rows).beam_size == MAX_BEAM == max(c[1] for c in calls)
    greedy_best = [SweepRow("greedy", 1, 0.0, 40.0, 1.0, 1.0, 1.0)]
    greedy_best.append(SweepRow("beam", 5, 1.0, 30.0, 1.0, 1.0, 1.0))
    assert beyond_edge(greedy_best) == []


def test_ties_go_to_the_cheaper_search_so_tuning_never_loses_to_greedy():
    rows = [
        SweepRow("greedy", 1, 0.0, 30.0, 1.0, 1.0, 1.0),
        SweepRow("beam", 5, 0.6, 30.0, 1.0, 1.0, 5.0),
        SweepRow("beam", 5, 0.2, 29.0, 0.9, 0.9, 5.0),
    ]
    assert best_row(rows).method == "greedy"
    rows.append(SweepRow("beam", 10, 0.6, 30.01, 1.0, 1.0, 9.0))
    assert best_row(rows).beam_size == 10
    rows.append(SweepRow("beam", 5, 1.0, 30.01, 1.0, 1.0, 5.0))
    assert (best_row(rows).beam_size, best_row(rows).length_penalty) == (5, 1.0)


@pytest.mark.parametrize(
    ("parse", "spec", "needle"),
    [
        (lambda s: parse_floats(s, "--alphas"), "0,x", "comma-separated numbers"),
        (lambda s: parse_floats(s, "--alphas"), "-1", "from 0 to 10"),
        (lambda s: parse_floats(s, "--alphas"), "0.6,nan", "finite numbers"),
        (lambda s: parse_floats(s, "--alphas"), "inf", "finite numbers"),
        (parse_beams, "1,5", "greedy search is always a candidate"),
        (parse_beams, "five", "comma-separated beam sizes"),
        (lambda s: parse_floats(s, "--alphas"), "0,,1", "comma-separated numbers"),
        (parse_beams, "5,", "comma-separated beam sizes"),
        # a new-user trial: --beams 2000 blamed --beam; 5,5 swept beam 5 twice; --alphas 1e30
        (parse_beams, "2000", "from 2 to 1000"),
        (parse_beams, "5,5", "distinct beam sizes"),
        (parse_beams, "10,5", "in increasing order"),
        (lambda s: parse_floats(s, "--alphas"), "0,1e30", "from 0 to 10"),
        (lambda s: parse_floats(s, "--alphas"), "1,0.5", "in increasing order"),
    ],
)
def test_bad_sweep_specs_are_refused_in_one_line(parse, spec, needle):
    with pytest.raises(ValueError, match=needle) as e:
        parse(spec)
    assert "\n" not in str(e.value)


def test_the_decode_file_changes_only_the_search(tmp_path):
    cfg = Config(decode=DecodeConfig(batch_size=7, max_len_b=30))
    assert with_tuned_decode(cfg, tmp_path) is cfg  # no file: the run's own settings
    row = SweepRow("beam", 10, 0.8, 31.0, 1.0, 1.0, 3.0)
    path = write_decode_file(tmp_path, row, [SweepRow("greedy", 1, 0, 30, 1, 1, 1), row], "val")
    assert yaml.safe_load(path.read_text()) == {
        "method": "beam",
        "beam_size": 10,
        "length_penalty": 0.8,
    }
    tuned = with_tuned_decode(cfg, tmp_path).decode
    assert (tuned.method, tuned.beam_size, tuned.length_penalty) == ("beam", 10, 0.8)
    assert (tuned.batch_size, tuned.max_len_b) == (7, 30)
    greedy = SweepRow("greedy", 1, 0.0, 32.0, 1.0, 1.0, 1.0)
    write_decode_file(tmp_path, greedy, [greedy], "val")
    assert with_tuned_decode(cfg, tmp_path).decode.method == "greedy"


def test_the_length_penalty_arithmetic_of_the_oracle():
    """The thresholds the oracle's docstring states, from the GNMT penalty itself."""

    def lp(n, a):
        return ((5 + n) / 6) ** a

    def wins(long_lp, n_long, short_lp, n_short, a):
        return long_lp / lp(n_long, a) > short_lp / lp(n_short, a)

    s1_short, s1_ref = math.log(0.532), math.log(0.468)
    s2_ref, s2_long = math.log(0.56), math.log(0.44)
    assert not wins(s1_ref, 6, s1_short, 3, 0.4) and wins(s1_ref, 6, s1_short, 3, 0.6)
    assert not wins(s2_long, 10, s2_ref, 6, 1.1) and wins(s2_long, 10, s2_ref, 6, 1.2)


def test_tuning_on_fewer_than_50_lines_is_refused_before_decoding(
    synth_run, tmp_path, monkeypatch, capsys
):
    import seq2seq.decoding.tune as tune
    from seq2seq.decoding.tune import MIN_TUNE_LINES
    from tests.toys import run_main

    assert MIN_TUNE_LINES == 50
    run = _copy_run(synth_run, tmp_path)
    before = sorted(p.name for p in run.iterdir())
    monkeypatch.setattr(tune, "translate_sentences", lambda *a, **k: pytest.fail("decoded"))
    for n in (1, 49):
        src, ref = _tuning_files(tmp_path, n)
        code, err = run_main(
            monkeypatch, capsys, "tune-decode", "-c", run, "--src", src, "--ref", ref
        )
        lines = f"{n} non-blank line" + ("s" if n > 1 else "")
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert f"--src {src} has {lines}, too few to tune on (at least 50)" in err
        assert "give a bigger --src/--ref" in err
    assert sorted(p.name for p in run.iterdir()) == before  # no decode.yaml, no tune_decode.json


def test_a_sweep_whose_settings_all_score_alike_writes_nothing(
    synth_run, tmp_path, monkeypatch, capsys
):
    """References the model never comes near: every setting scores BLEU 0.00."""
    from tests.toys import run_main

    run = _copy_run(synth_run, tmp_path)
    before = sorted(p.name for p in run.iterdir())
    src, ref = _tuning_files(tmp_path, 50, ref="qqq zzz xxx")
    args = ["tune-decode", "-c", run, "--src", src, "--ref", ref, "--beams", "2", "--alphas", "0"]
    code, err = run_main(monkeypatch, capsys, *args, "--json", tmp_path / "refused.json")
    assert code == 2
    assert (
        f"error: --src {src}: all 2 settings scored BLEU 0.00, so no output matches its "
        "reference; nothing written, the run keeps its decode settings; check that --ref "
        "translates --src, or train the model longer" in err
    )
    assert sorted(p.name for p in run.iterdir()) == before
    assert len(json.loads((tmp_path / "refused.json").read_text())["sweep"]) == 2  # asked for
    # --no-write only shows the sweep: it warns, and writes nothing but the --json asked for
    code, err = run_main(monkeypatch, capsys, *args, "--no-write", "--json", tmp_path / "s.json")
    assert code == 0 and "warning: --src" in err and "no output matches its reference" in err
    assert (tmp_path / "s.json").is_file() and sorted(p.name for p in run.iterdir()) == before


def test_all_tied_is_true_only_when_every_setting_scores_the_same():
    from seq2seq.decoding.tune import all_tied

    greedy = SweepRow("greedy", 1, 0.0, 12.0, 1.0, 1.0, 1.0)
    assert all_tied([greedy, SweepRow("beam", 5, 0.6, 12.0, 0.9, 0.9, 5.0)])
    assert not all_tied([greedy, SweepRow("beam", 5, 0.6, 12.01, 1.0, 1.0, 5.0)])
    assert not all_tied([greedy])

"""The converged runs' numbers are kept in one place, docs/results/best/results.json (and the
pilots' results files beside it): the Converged table of docs/results/best/README.md is its
rendering by scripts/best_report.py, and every BLEU or chrF figure README.md and
docs/results/README.md quote for those runs is one of its scores."""

from __future__ import annotations

import importlib
import json
import re
import sys

import pytest

from tests.toys import REPO

BEST = REPO / "docs" / "results" / "best"
RESULTS = BEST / "results.json"
PILOTS = [
    BEST / "pilots" / "60min" / "results.json",
    BEST / "pilots" / "transformer_dropout0.1",
    BEST / "pilots" / "transformer_100min_6186" / "results.json",  # the row 41.70 replaced
]
FIXED_VECTOR = ("rnn", "rnn_context")


def _scripts(monkeypatch, name: str):
    """scripts/<name>.py imported (and forgotten after the test, with best_report it imports)."""
    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    yield importlib.import_module(name)
    for module in (name, "best_report"):
        sys.modules.pop(module, None)


@pytest.fixture
def best_report(monkeypatch):
    yield from _scripts(monkeypatch, "best_report")


@pytest.fixture
def demo_report(monkeypatch):
    yield from _scripts(monkeypatch, "demo_report")


def _results() -> list[dict]:
    return json.loads(RESULTS.read_text())


def _pilots() -> list[dict]:
    runs = json.loads(PILOTS[0].read_text())
    replaced = json.loads(PILOTS[2].read_text())
    return [*runs, json.loads((PILOTS[1] / "result.json").read_text()), *replaced]


def _scores(runs: list[dict]) -> set[str]:
    """Every BLEU and chrF score of ``runs``' tests, as the docs write them (two decimals)."""
    return {
        f"{scores[metric]['score']:.2f}"
        for r in runs
        for scores in r["tests"].values()
        for metric in ("bleu", "chrf")
    }


def _converged_quotes() -> dict[str, str]:
    """The text that quotes the converged runs: README.md's Results row and the Converged section
    of docs/results/README.md."""
    readme = (REPO / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| to convergence"))
    results_doc = (REPO / "docs" / "results" / "README.md").read_text()
    section = results_doc.split("\n## Converged models", 1)[1].split("\n## ", 1)[0]
    return {"README.md": row, "docs/results/README.md": section}


@pytest.mark.parametrize("name", ["converged table", "by-length table"])
def test_the_tables_are_rendered_from_results_json(best_report, name):
    doc = (BEST / "README.md").read_text()
    table = best_report.table_in(doc, name)
    assert table, f"docs/results/best/README.md lacks the markers {best_report.markers(name)}"
    assert table == best_report.TABLES[name](_results()), (
        f"the {name} differs from its rendering; run: python scripts/best_report.py "
        "docs/results/best/results.json --write docs/results/best/README.md"
    )
    assert best_report.with_table(doc, name, table) == doc


def test_the_rendering_puts_the_best_first_and_names_the_tuned_search(best_report):
    results = _results()
    rows = best_report.converged_table(results).splitlines()[2:]
    tuned = {r["family"]: r["tests"]["test_2016_flickr_tuned"] for r in results}
    order = [row.split(" | ")[0].removeprefix("| ") for row in rows]
    assert sorted(order) == sorted(tuned)
    assert [tuned[f]["bleu"]["score"] for f in order] == sorted(
        (t["bleu"]["score"] for t in tuned.values()), reverse=True
    )
    for row, r in zip(rows, sorted(results, key=lambda r: order.index(r["family"])), strict=True):
        best, train = r["tune"]["best"], r["train"]
        t = tuned[r["family"]]
        search = f"beam {best['beam_size']}, α {best['length_penalty']:g}"
        assert f"| **{t['bleu']['score']:.2f}** / {t['chrf']['score']:.2f} ({search}) |" in row
        assert f"; best at update {train['best_step']:,} |" in row
        assert f"| {train['steps']:,} |" in row and f"| {r['parameters']:,} |" in row
    assert best_report._checkpoint("avg_best5.pt") == "average of the 5 best"
    assert best_report._checkpoint("avg_last3.pt") == "average of the last 3"
    assert best_report._checkpoint("best.pt") == "best.pt"
    with pytest.raises(ValueError, match="the doc needs the lines"):
        best_report.with_table("no markers here\n", "converged table", "| table |\n")
    by_length = best_report.by_length_table(results).splitlines()[2:]
    assert [row.split(" | ")[0].removeprefix("| ") for row in by_length] == [
        f"{family} {search}" for family in order for search in ("greedy", "tuned")
    ]


def test_every_figure_quoted_for_the_converged_runs_is_in_a_results_file():
    """Two-decimal figures (BLEU, chrF) must be scores of the converged runs or their pilots; a
    ``family **tuned** (greedy G`` quote must be that family's test_2016 scores."""
    results = _results()
    known = _scores(results) | _scores(_pilots())
    by_family = {r["family"]: r["tests"] for r in results}
    for doc, text in _converged_quotes().items():
        stray = [x for x in re.findall(r"(?<![\d.])\d+\.\d\d(?![\d.])", text) if x not in known]
        assert not stray, f"{doc} quotes {stray} for the converged runs, not in a results file"
        quotes = re.findall(r"(\w+) \*\*(\d+\.\d\d)\*\*(?: \(greedy (\d+\.\d\d))?", text)
        for family, tuned, greedy in quotes:
            tests = by_family[family.lower()]
            assert tuned == f"{tests['test_2016_flickr_tuned']['bleu']['score']:.2f}", (doc, family)
            if greedy:
                want = f"{tests['test_2016_flickr_greedy']['bleu']['score']:.2f}"
                assert greedy == want, (doc, family)


def test_the_kept_share_by_source_length_is_the_results_files():
    """ "keep 81-82% of their BLEU, the attention models 98-101%": test_2016, tuned search, the
    11-20 bucket's BLEU over the 1-10 bucket's, for the fixed-vector models and for the attention
    models; quoted only as the exploratory reading it is."""

    def kept(r: dict) -> int:
        buckets = r["tests"]["test_2016_flickr_tuned"]["by_length"]["buckets"]
        bleu = {b["bucket"]: b["bleu"] for b in buckets}
        return round(100 * bleu["11-20"] / bleu["1-10"])

    def span(rs: list[dict]) -> str:
        shares = sorted(kept(r) for r in rs)
        return f"{shares[0]}-{shares[-1]}%"

    results = _results()
    fixed = span([r for r in results if r["family"] in FIXED_VECTOR])
    attention = span([r for r in results if r["family"] not in FIXED_VECTOR])
    quotes = {doc: re.findall(r"\d+-\d+%", text) for doc, text in _converged_quotes().items()}
    assert any(quotes.values())  # the results summary quotes them
    for doc, quoted in quotes.items():
        if quoted:  # marked as the exploratory, test_2016-only reading it is (issue 42)
            assert {fixed, attention} == set(quoted), (doc, quoted)
            assert "exploratory reading, on\ntest_2016_flickr only" in _converged_quotes()[doc]


def test_write_fills_every_table_of_a_doc_and_refuses_a_doc_without_markers(
    best_report, tmp_path, capsys
):
    doc = (BEST / "README.md").read_text()
    emptied = doc
    for name in best_report.TABLES:
        emptied = best_report.with_table(emptied, name, "")
    assert emptied != doc
    target = tmp_path / "README.md"
    target.write_text(emptied)
    assert best_report.main([str(RESULTS), "--write", str(target)]) == 0
    assert target.read_text() == doc
    target.write_text("no markers\n")
    assert best_report.main([str(RESULTS), "--write", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {target}: the doc needs the lines") and err.count("\n") == 1
    assert target.read_text() == "no markers\n"


def test_readme_s_reverse_figures_are_the_committed_study_run_s():
    """README's synthetic-reversal row ("rnn A% -> B%; every attention model C% or more at
    21-30") quotes docs/results/study/reverse/results.json: the fixed-vector rnn's greedy exact
    match at 1-10 and 21-30 symbols, and the lowest attention model's at 21-30."""
    run = json.loads((REPO / "docs" / "results" / "study" / "reverse" / "results.json").read_text())
    exact = {
        m["name"].removeprefix("reverse-"): {
            r["bucket"]: r["exact"] for r in m["decodes"]["greedy"]["by_length"]
        }
        for m in run["models"]
    }
    row = next(
        x for x in (REPO / "README.md").read_text().splitlines() if "make study-quick`) |" in x
    )
    got = re.search(r"rnn (\d+\.\d)% -> (\d+\.\d)%; every attention model (\d+\.\d)% or more", row)
    assert got, row
    lowest = min(v["21-30"] for k, v in exact.items() if k != "rnn")
    want = (exact["rnn"]["1-10"], exact["rnn"]["21-30"], lowest)
    assert got.groups() == tuple(f"{x:.1f}" for x in want)


def test_what_make_demo_gives_is_the_rendering_of_committed_demo_runs(demo_report):
    """README quoted three demos' scores from three machines and code versions, none a committed
    run (issue 55). Now docs/results/README.md's demo table is the rendering of the committed
    records docs/results/demo/*.json (`make demo-record`, one per CPU kind), and README links to
    it without quoting a figure of it."""
    doc = (REPO / "docs" / "results" / "README.md").read_text(encoding="utf-8")
    table = demo_report.table_in(doc, demo_report.NAME, demo_report.BY)
    records = demo_report.committed()
    assert records and table == demo_report.table(records), (
        "the demo table differs from its records; run: python scripts/demo_report.py table "
        "--write docs/results/README.md"
    )
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert readme.count("docs/results/README.md#what-make-demo-gives") >= 2
    for r in records.values():
        for t in r["tests"].values():
            assert f"{t['bleu']:.2f}" not in readme  # one place: README links to it


def _demo_run(folder, **changes) -> None:
    """A finished `make demo` run's files in ``folder``; ``changes``: file name -> a function
    that edits that file's JSON (or None to leave the file out)."""
    step = {"step": 1476}
    files = {
        "run_info.json": {
            "git_commit": "0123456789abcdef",
            "versions": {"seq2seq": "0.1.0", "torch": "2.13.0+cpu"},
            "runtime": {"device": "cpu", "precision": "bf16"},
        },
        "train_summary.json": {
            "steps": 1476,
            "train_seconds": 1200.4,
            "stopped": "max_time",
            "best_step": 1476,
        },
        "test_greedy.json": {
            "hyp": "translations of data/multi30k/test_2016_flickr.de.gz",
            "checkpoint": step,
            "decode": {"method": "greedy", "beam_size": 1},
            "bleu": {"score": 33.6012, "signature": "s"},
            "chrf": {"score": 55.0},
        },
        "test_beam5.json": {
            "hyp": "translations of data/multi30k/test_2016_flickr.de.gz",
            "checkpoint": step,
            "decode": {"method": "beam", "beam_size": 5, "length_penalty": 1.0},
            "bleu": {"score": 35.5949, "signature": "s"},
            "chrf": {"score": 56.1},
        },
    }
    (folder / "config.yaml").write_text("name: multi30k-bahdanau\n")
    (folder / "train.log").write_text("WARNING step 9: ... while the load average (2.5) ...\n")
    for name, d in files.items():
        edit = changes.get(name, lambda d: d)
        if edit is not None:
            (folder / name).write_text(json.dumps(edit(json.loads(json.dumps(d)))))


def test_demo_record_keeps_a_finished_run(demo_report, tmp_path):
    """`make demo-record` reads the run's own files into a record, rendered as one row."""
    _demo_run(tmp_path)
    stem, r = demo_report.record(tmp_path, frozenset({"avx512_bf16", "avx512f"}))
    assert stem == "avx512-bf16" and r["code"] == "0123456" and r["precision"] == "bf16"
    assert (r["updates"], r["train_minutes"], r["busy_warnings"]) == (1476, 20.0, 1)
    assert r["tests"]["greedy"]["bleu"] == 33.60 and r["tests"]["beam5"]["bleu"] == 35.59
    assert "| 1,476 (20) | 1 | 33.60 / 55.00 | 35.59 / 56.10 |" in demo_report.table({stem: r})
    assert demo_report.cpu_kind(frozenset({"amx_bf16", "avx512_bf16"}))[0] == "amx"
    assert demo_report.cpu_kind(frozenset({"avx2"}))[0] == "no-bf16"


def _set(key, value, *path):
    def edit(d):
        for p in path:
            d = d[p]
        d[key] = value

    return lambda d: (edit(d), d)[1]


@pytest.mark.parametrize(
    "changes, flags, says",
    [
        ({"test_beam5.json": None}, {"amx_bf16"}, "test_beam5.json: not found; run `make demo`"),
        ({"train_summary.json": lambda d: []}, {"amx_bf16"}, "train_summary.json: not what"),
        ({"run_info.json": lambda d: None}, {"amx_bf16"}, "run_info.json: not what"),
        ({"train_summary.json": _set("stopped", "interrupted")}, {"amx_bf16"}, "stopped"),
        ({"train_summary.json": _set("steps", "x")}, {"amx_bf16"}, "train_summary.json: not"),
        ({"run_info.json": _set("device", "cuda", "runtime")}, {"amx_bf16"}, "trained on cuda"),
        ({}, set(), "run_info.json: trained in bf16, and this CPU has no native bf16"),
        ({"test_greedy.json": _set("step", 500, "checkpoint")}, {"amx_bf16"}, "at step 500"),
        ({"test_beam5.json": _set("beam_size", 1, "decode")}, {"amx_bf16"}, "not beam search"),
        ({"test_beam5.json": _set("hyp", "test_2017_flickr")}, {"amx_bf16"}, "on test_2016"),
        ({"test_greedy.json": _set("score", None, "bleu")}, {"amx_bf16"}, "test_greedy.json: not"),
    ],
)
def test_demo_record_refuses_what_is_not_a_finished_demo_of_this_cpu_in_one_line(
    demo_report, tmp_path, changes, flags, says
):
    """A run stopped early, scored on another checkpoint, set or search, trained off the CPU or
    on another CPU kind, or a file missing, of another shape or type: one line naming the file
    (issue 55's checks of the recorder, from a new user's trial), never a traceback."""
    _demo_run(tmp_path, **changes)
    with pytest.raises(ValueError, match=re.escape(says)) as e:
        demo_report.record(tmp_path, frozenset(flags))
    assert str(tmp_path) in str(e.value) and "\n" not in str(e.value)


def test_demo_record_writes_nothing_when_any_check_fails(
    demo_report, tmp_path, monkeypatch, capsys
):
    """Every check comes before any write: a doc without the table's markers leaves the records
    and the doc as they were; a stray or broken record is named, with what to do."""
    records, run = tmp_path / "demo", tmp_path / "run"
    records.mkdir(), run.mkdir()
    _demo_run(run, **{"run_info.json": _set("precision", "fp32", "runtime")})
    monkeypatch.setattr(demo_report, "RECORDS", records)
    monkeypatch.setattr(demo_report, "cpu_flags", frozenset)  # a CPU without bf16
    doc = tmp_path / "doc.md"
    doc.write_text("no markers\n")
    assert demo_report.main(["record", str(run), "--write", str(doc)]) == 2
    assert "doc.md: the doc needs the lines" in capsys.readouterr().err
    assert list(records.iterdir()) == [] and doc.read_text() == "no markers\n"
    first, last = demo_report.markers(demo_report.NAME, demo_report.BY)
    doc.write_text(f"{first}\n{last}\n")
    assert demo_report.main(["record", str(run), "--write", str(doc)]) == 0
    assert [p.name for p in records.iterdir()] == ["no-bf16.json"] and "| fp32 |" in doc.read_text()
    (records / "no-bf16.old.json").write_text("{}")
    assert demo_report.main(["table"]) == 2
    assert "no-bf16.old.json: no CPU kind is named so" in capsys.readouterr().err
    (records / "no-bf16.old.json").unlink()
    (records / "amx.json").write_text("[1, 2]")
    assert demo_report.main(["table"]) == 2
    err = capsys.readouterr().err
    assert "amx.json: not what `make demo` writes" in err and "git checkout docs/results" in err

"""``seq2seq eval`` (``seq2seq/commands/evaluate.py``), in this process: scores equal the sacrebleu
command line on the same files, nothing is dropped, misaligned files are one clear error,
tokenisation warnings, BLEU by source length, and ``--json`` says how the translations were made."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import sacrebleu

from seq2seq.evaluation.metrics import bucket_label, parse_buckets
from tests.corpora import eval_files, write_lines
from tests.scoring import SACREBLEU, assert_same_as_cli
from tests.toys import run_cli, run_seq2seq

HYP = [
    "the cat sleeps on the mat",
    "a red door is open",
    "we walk home together tonight",
    "two dogs play in the snow",
]

REF = [
    "the cat sleeps on the mat",
    "a red door stands open",
    "we walk home together tonight",
    "two dogs are playing in the snow",
]


def ours(monkeypatch, capsys, tmp_path, ref: Path, hyp: Path, *extra: str) -> tuple[dict, str]:
    report = tmp_path / "scores.json"
    code, out, err = run_seq2seq(
        monkeypatch,
        capsys,
        "eval",
        "--hyp",
        hyp,
        "--ref",
        ref,
        "--bleu",
        "--chrf",
        "--ter",
        "--json",
        report,
        *extra,
    )
    assert code == 0, err
    return json.loads(report.read_text()), out + err


ZH_HYP = ["猫在垫子上睡觉。", "两只狗在雪地里玩耍。", "我们今晚一起走回家。"]

ZH_REF = ["猫在垫子上睡着了。", "两只狗在雪里玩。", "我们今晚一起走路回家。"]


def test_eval_json_records_the_checkpoint_the_decode_settings_and_where_they_came_from(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    import torch

    run = shutil.copytree(synth_run, tmp_path / "run")
    src, ref = eval_files(synth_corpus, tmp_path)
    report = tmp_path / "scores.json"
    args = ["eval", "-c", run, "--src", src, "--ref", ref, "--json", report]

    code, _, err = run_cli(monkeypatch, capsys, *args)
    assert code == 0, err
    got = json.loads(report.read_text())
    step = torch.load(run / "best.pt", weights_only=True)["train_state"]["step"]
    assert got["checkpoint"] == {"path": str(run / "best.pt"), "step": step}
    assert got["decode"]["method"] == "greedy" and got["decode"]["batch_size"] == 16
    assert set(got["decode_source"].values()) == {"config"}
    assert "decode.yaml" not in err

    # a tuned run: decode.yaml sets the search, and says so in one line
    (run / "decode.yaml").write_text("method: beam\nbeam_size: 3\nlength_penalty: 1.0\n")
    code, _, err = run_cli(monkeypatch, capsys, *args)
    assert code == 0, err
    got = json.loads(report.read_text())
    assert (got["decode"]["method"], got["decode"]["beam_size"]) == ("beam", 3)
    assert got["decode"]["length_penalty"] == 1.0
    tuned = "decode.yaml (tune-decode)"
    assert {k for k, v in got["decode_source"].items() if v == tuned} == {
        "method",
        "beam_size",
        "length_penalty",
    }
    assert got["decode_source"]["batch_size"] == "config"
    said = [x.split(" INFO ", 1) for x in err.splitlines() if "decode.yaml" in x]
    assert said[0][1:] == [f"decoding with {run / 'decode.yaml'} (tune-decode): beam 3, alpha 1.0"]
    assert len(said) == 1

    # an option overrides what decode.yaml says: the command line is named as its source
    code, _, err = run_cli(monkeypatch, capsys, *args, "--beam", "2")
    assert code == 0, err
    got = json.loads(report.read_text())
    assert got["decode"]["beam_size"] == 2
    assert got["decode_source"]["beam_size"] == "command line"
    assert got["decode_source"]["length_penalty"] == tuned
    assert "alpha 1.0; the command line sets beam 2" in err


def test_eval_json_of_a_hypothesis_file_has_no_checkpoint(tmp_path, monkeypatch, capsys):
    (tmp_path / "h").write_text("a b c d\n")
    (tmp_path / "r").write_text("a b c d\n")
    report = tmp_path / "s.json"
    code, _, err = run_cli(
        monkeypatch, capsys, "eval", "--hyp", tmp_path / "h", "--ref", tmp_path / "r",
        "--json", report,
    )  # fmt: skip
    assert code == 0, err
    got = json.loads(report.read_text())
    assert got["checkpoint"] is None and got["decode"] is None and got["decode_source"] is None


def test_scores_equal_the_sacrebleu_cli_on_a_corpus(monkeypatch, capsys, tmp_path, synth_corpus):
    refs = (synth_corpus / "val.en").read_text().splitlines()
    hyps = [" ".join(w for k, w in enumerate(r.split()) if k % 4 != 1) for r in refs]
    ref, hyp = synth_corpus / "val.en", write_lines(tmp_path / "hyp.en", hyps)
    report, printed = ours(monkeypatch, capsys, tmp_path, ref, hyp)
    scores = assert_same_as_cli(report, ref, hyp)
    assert 10 < scores[0] < 90
    assert "signature: nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp" in printed
    assert report["sentences"] == 100 and report["warnings"] == []


@pytest.mark.parametrize(
    ("hyp_lines", "ref_lines"),
    [
        (HYP[:1] + [""] + HYP[2:], REF),  # an empty hypothesis line among good ones
        (HYP, REF[:2] + [""] + REF[3:]),  # an empty reference line
    ],
    ids=["empty-hyp-line", "empty-ref-line"],
)
def test_empty_lines_are_kept_and_scored_like_sacrebleu(
    monkeypatch, capsys, tmp_path, hyp_lines, ref_lines
):
    """nothing dropped, nothing crashes, each score equals the CLI's."""
    ref, hyp = (
        write_lines(tmp_path / "ref.en", ref_lines),
        write_lines(tmp_path / "hyp.en", hyp_lines),
    )
    report, printed = ours(monkeypatch, capsys, tmp_path, ref, hyp)
    assert report["sentences"] == 4
    assert_same_as_cli(report, ref, hyp)
    assert printed.count("signature: nrefs:1|case:mixed|eff:no|tok:13a") == 1
    # dropping the empty line instead would score higher: the CLI equality pins that it is kept
    kept = [(h, r) for h, r in zip(hyp_lines, ref_lines, strict=True) if h and r]
    dropped = sacrebleu.corpus_bleu([h for h, _ in kept], [[r for _, r in kept]]).score
    assert report["bleu"]["score"] < dropped


def test_an_all_empty_hypothesis_file_scores_zero(monkeypatch, capsys, tmp_path):
    """three empty hypothesis lines -> BLEU 0.0, chrF 0.0, TER 100.0."""
    ref, hyp = (
        write_lines(tmp_path / "ref.en", REF[:3]),
        write_lines(tmp_path / "hyp.en", ["", "", ""]),
    )
    report, printed = ours(monkeypatch, capsys, tmp_path, ref, hyp)
    assert [report[m]["score"] for m in ("bleu", "chrf", "ter")] == [0.0, 0.0, 100.0]
    assert_same_as_cli(report, ref, hyp)
    assert "BLEU = 0.00" in printed and "signature:" in printed


def test_json_dash_writes_the_report_alone_to_stdout(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    ref, hyp = write_lines(tmp_path / "ref.en", REF), write_lines(tmp_path / "hyp.en", HYP)
    code, out, err = run_seq2seq(
        monkeypatch, capsys, "eval", "--hyp", hyp, "--ref", ref, "--json", "-"
    )
    assert code == 0, err
    report = json.loads(out)  # stdout holds the JSON and nothing else
    assert report["bleu"]["score"] == pytest.approx(sacrebleu.corpus_bleu(HYP, [REF]).score)
    assert "signature: nrefs:1" in err  # the scores in words moved to stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hyp.en", "ref.en"]  # no file "-"


def test_a_line_count_mismatch_is_one_error_naming_both_files(monkeypatch, capsys, tmp_path):
    """3 hypotheses against 4 references; two references of different lengths."""
    ref, hyp = write_lines(tmp_path / "ref.en", REF), write_lines(tmp_path / "hyp.en", HYP[:3])
    report = tmp_path / "s.json"
    code, out, err = run_seq2seq(
        monkeypatch, capsys, "eval", "--hyp", hyp, "--ref", ref, "--json", report
    )
    assert (code, out) == (2, "")
    assert f"{hyp} has 3 lines but {ref} has 4" in err
    assert len(err.strip().splitlines()) == 1 and not report.exists()

    ref2, hyp4 = write_lines(tmp_path / "ref2.en", REF[:3]), write_lines(tmp_path / "hyp4.en", HYP)
    code, out, err = run_seq2seq(
        monkeypatch, capsys, "eval", "--hyp", hyp4, "--ref", ref, "--ref", ref2
    )
    assert (code, out) == (2, "")
    assert f"{ref2} has 3 lines but {ref} has 4" in err and len(err.strip().splitlines()) == 1


def test_two_references_score_like_sacrebleu(monkeypatch, capsys, tmp_path):
    ref = write_lines(tmp_path / "ref.en", REF)
    ref2 = write_lines(tmp_path / "ref2.en", [r.replace("the", "a") for r in REF])
    hyp = write_lines(tmp_path / "hyp.en", HYP)
    code, out, _ = run_seq2seq(
        monkeypatch, capsys, "eval", "--hyp", hyp, "--ref", ref, "--ref", ref2
    )
    assert code == 0 and "nrefs:2" in out
    expected = subprocess.run(
        [SACREBLEU, ref, ref2, "-i", hyp, "-m", "bleu", "-b", "-w", "4"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert f"BLEU = {float(expected):.2f}" in out


def test_one_reference_file_given_twice_is_refused_not_scored_as_two(monkeypatch, capsys, tmp_path):
    """``--ref R --ref R`` scored nrefs:2; by another name (a link) it is the same file too."""
    ref = write_lines(tmp_path / "ref.en", REF)
    hyp = write_lines(tmp_path / "hyp.en", HYP)
    (tmp_path / "link.en").hardlink_to(ref)
    for again in (ref, tmp_path / "." / "ref.en", tmp_path / "link.en"):
        args = ["eval", "--hyp", hyp, "--ref", ref, "--ref", again]
        code, out, err = run_seq2seq(monkeypatch, capsys, *args)
        assert code == 2 and not out, err
        said = f"error: --ref {again}: the same file as --ref {ref}; give each reference once"
        assert err == said + "\n"


def test_a_sentencepiece_hypothesis_draws_a_loud_warning(monkeypatch, capsys, tmp_path):
    """pieces still in the output; scores still equal the CLI's."""
    hyp = write_lines(tmp_path / "hyp.en", ["▁the ▁cat ▁sleeps ▁on ▁the ▁mat"] + HYP[1:])
    ref = write_lines(tmp_path / "ref.en", REF)
    report, printed = ours(monkeypatch, capsys, tmp_path, ref, hyp)
    assert_same_as_cli(report, ref, hyp)
    warning = [x for x in printed.splitlines() if x.startswith("warning:")]
    assert len(warning) == 1
    assert str(hyp) in warning[0] and "subword-tokenised" in warning[0]
    assert report["warnings"] == [warning[0].removeprefix("warning: ")]


def test_a_pre_tokenised_reference_draws_a_warning(monkeypatch, capsys, tmp_path):
    """``the cat sleeps .`` style references."""
    ref = write_lines(
        tmp_path / "ref.en",
        ["the cat sleeps .", "a red door , open .", "we walk home .", "two dogs play ."],
    )
    hyp = write_lines(
        tmp_path / "hyp.en",
        ["the cat sleeps.", "a red door, open.", "we walk home.", "two dogs play."],
    )
    report, printed = ours(monkeypatch, capsys, tmp_path, ref, hyp)
    assert_same_as_cli(report, ref, hyp)
    assert len(report["warnings"]) == 1
    assert str(ref) in report["warnings"][0] and "pre-tokenised" in report["warnings"][0]
    assert f"warning: {report['warnings'][0]}" in printed


def test_chinese_uses_the_zh_tokenizer_only_when_the_language_is_given(
    monkeypatch, capsys, tmp_path
):
    """without spaces, 13a sees one token per line; --tgt-lang zh splits
    characters, exactly as ``sacrebleu -l xx-zh``."""
    ref, hyp = write_lines(tmp_path / "ref.zh", ZH_REF), write_lines(tmp_path / "hyp.zh", ZH_HYP)
    plain, _ = ours(monkeypatch, capsys, tmp_path, ref, hyp)
    zh, printed = ours(monkeypatch, capsys, tmp_path, ref, hyp, "--tgt-lang", "zh")
    assert_same_as_cli(plain, ref, hyp)
    assert_same_as_cli(zh, ref, hyp, "-l", "en-zh")
    assert "tok:13a" in plain["bleu"]["signature"] and "tok:zh" in zh["bleu"]["signature"]
    assert plain["bleu"]["score"] == 0.0 and zh["bleu"]["score"] > 20
    assert "signature: nrefs:1|case:mixed|eff:no|tok:zh" in printed


def test_lowercase_folds_cyrillic_case(monkeypatch, capsys, tmp_path):
    """a hypothesis that differs only in (Cyrillic) case scores 100.0."""
    ref = write_lines(
        tmp_path / "ref.ru", ["кошка спит на коврике у двери", "две собаки играют в снегу"]
    )
    hyp = write_lines(
        tmp_path / "hyp.ru", ["Кошка Спит На Коврике У Двери", "ДВЕ СОБАКИ ИГРАЮТ В СНЕГУ"]
    )
    cased, _ = ours(monkeypatch, capsys, tmp_path, ref, hyp)
    folded, _ = ours(monkeypatch, capsys, tmp_path, ref, hyp, "--lowercase")
    assert_same_as_cli(cased, ref, hyp)
    assert assert_same_as_cli(folded, ref, hyp, "-lc", "--chrf-lowercase") == [100.0, 100.0, 0.0]
    assert cased["bleu"]["score"] < 20 and "case:lc" in folded["bleu"]["signature"]
    assert cased["ter"]["score"] == 0.0  # TER ignores case by default, as sacrebleu's does


def test_a_language_whose_tokenizer_is_missing_is_one_error(monkeypatch, capsys, tmp_path):
    try:
        import MeCab  # noqa: F401

        pytest.skip("MeCab is installed: ja scoring works")
    except ImportError:
        pass
    ref, hyp = write_lines(tmp_path / "ref.ja", ["猫"]), write_lines(tmp_path / "hyp.ja", ["猫"])
    code, out, err = run_seq2seq(
        monkeypatch, capsys, "eval", "--hyp", hyp, "--ref", ref, "--tgt-lang", "ja"
    )
    assert (code, out) == (2, "")
    assert "sacrebleu[ja]" in err and len(err.strip().splitlines()) == 1


def test_bleu_by_source_length(monkeypatch, capsys, tmp_path):
    src_lines = ["ein", "zwei drei", "vier fünf sechs sieben", "a b c d e f g h", ""]
    hyp_lines = ["a cat", "two dogs run", "we walk home now", "the red door is open today", ""]
    ref_lines = ["a cat", "two dogs ran", "we walk home now", "a red door is open today", "hi"]
    src, hyp = (
        write_lines(tmp_path / "src.de", src_lines),
        write_lines(tmp_path / "hyp.en", hyp_lines),
    )
    ref, report = write_lines(tmp_path / "ref.en", ref_lines), tmp_path / "s.json"
    code, out, err = run_seq2seq(
        monkeypatch,
        capsys,
        "eval",
        "--hyp",
        hyp,
        "--ref",
        ref,
        "--src",
        src,
        "--by-length",
        "--buckets",
        "3,6",
        "--json",
        report,
    )
    assert code == 0, err
    rows = json.loads(report.read_text())["by_length"]["buckets"]
    assert [(r["bucket"], r["sentences"]) for r in rows] == [
        ("0", 1),
        ("1-3", 2),
        ("4-6", 1),
        ("7+", 1),
    ]

    def bleu(idx):
        return sacrebleu.corpus_bleu([hyp_lines[i] for i in idx], [[ref_lines[i] for i in idx]])

    for row, idx in zip(rows, [[4], [0, 1], [2], [3]], strict=True):
        assert row["bleu"] == pytest.approx(bleu(idx).score, abs=1e-9)
    table = out.split("BLEU by source length")[1].splitlines()
    assert table[1].split() == ["source", "words", "sentences", "BLEU"]
    assert table[3].split() == ["1-3", "2", f"{rows[1]['bleu']:.2f}"]


def test_by_length_default_buckets_and_errors(monkeypatch, capsys, tmp_path):
    assert parse_buckets(None) == (10, 20, 30, 40, 60)
    labels = [bucket_label(n, parse_buckets(None)) for n in (1, 10, 11, 40, 41, 60, 61, 500)]
    assert labels == ["1-10", "1-10", "11-20", "31-40", "41-60", "41-60", "61+", "61+"]
    ref, hyp = write_lines(tmp_path / "ref.en", REF), write_lines(tmp_path / "hyp.en", HYP)
    code, _, err = run_seq2seq(
        monkeypatch, capsys, "eval", "--hyp", hyp, "--ref", ref, "--by-length"
    )
    assert code == 2 and "--by-length needs --src" in err
    code, out, err = run_seq2seq(
        monkeypatch, capsys, "eval", "--hyp", hyp, "--ref", ref, "--buckets", "10,20"
    )  # without --by-length there is no table for the buckets: refused, not ignored
    assert code == 2 and out == ""
    assert "error: --buckets 10,20: it sets the --by-length table's buckets; add --by-length" in err
    src = write_lines(tmp_path / "src.de", ["a", "b", "c", "d"])
    code, _, err = run_seq2seq(
        monkeypatch,
        capsys,
        "eval",
        "--hyp",
        hyp,
        "--ref",
        ref,
        "--src",
        src,
        "--by-length",
        "--buckets",
        "10,5",
    )
    assert code == 2 and "--buckets '10,5'" in err
    short_src = write_lines(tmp_path / "short.de", ["a", "b"])
    code, _, err = run_seq2seq(
        monkeypatch, capsys, "eval", "--hyp", hyp, "--ref", ref, "--src", short_src, "--by-length"
    )
    assert code == 2 and f"{short_src} has 2 lines but {ref} has 4" in err


def test_a_tgt_lang_that_is_not_a_language_code_is_refused(tmp_path, monkeypatch, capsys):
    """``--tgt-lang klingon`` scored with 13a without a word (a new-user trial)."""
    from tests.toys import run_cli

    (tmp_path / "a.en").write_text("a dog .\n")
    hyp = ("eval", "--hyp", tmp_path / "a.en", "--ref", tmp_path / "a.en")
    code, out, err = run_cli(monkeypatch, capsys, *hyp, "--tgt-lang", "klingon")
    assert code == 2 and out == "" and "--tgt-lang 'klingon': give a language code" in err
    for lang in ("en", "pt-BR", "zh"):
        code, out, err = run_cli(monkeypatch, capsys, *hyp, "--tgt-lang", lang)
        assert code == 0 and "BLEU" in out, err


@pytest.mark.parametrize("command", ["eval", "paired"])
@pytest.mark.parametrize("stdin_option", ["--hyp", "--ref"])
def test_standard_input_as_an_input_file_is_refused_naming_the_option(
    command, stdin_option, tmp_path, monkeypatch, capsys
):
    """``-`` is standard output for the outputs; the scored files are read whole (and twice
    for several systems), so ``--hyp -`` says so rather than '-: file not found'."""
    ref, hyp = write_lines(tmp_path / "ref.en", REF), write_lines(tmp_path / "hyp.en", HYP)
    files = {"--hyp": hyp, "--ref": ref, stdin_option: "-"}
    hyps = ["--hyp", files["--hyp"]] * (2 if command == "paired" else 1)
    if command == "paired":
        hyps[3] = write_lines(tmp_path / "hyp2.en", HYP)
    code, out, err = run_seq2seq(monkeypatch, capsys, command, *hyps, "--ref", files["--ref"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"error: {stdin_option} -: standard input is not read here; give a file" in err

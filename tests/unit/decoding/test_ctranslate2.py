"""``seq2seq/decoding/ctranslate2.py``: translating with a CTranslate2 export. Greedy search gives
our greedy tokens; beam search at alpha 0 gives ours wherever both finish; n-best, sampling and
the output length limit follow our conventions. Skipped without ctranslate2
(``pip install -e ".[export]"``; ``make install`` adds it)."""

from __future__ import annotations

import pytest
import torch

from seq2seq.data.tokenizer import BOS, EOS
from seq2seq.decoding.ctranslate2 import (
    CTranslate2LineTranslator,
    CTranslate2Model,
    export_folder,
    read_export,
)
from seq2seq.decoding.files import translate_lines
from seq2seq.decoding.runs import load
from seq2seq.decoding.translate import translate_sentences
from seq2seq.export.ctranslate2 import export_ctranslate2

pytest.importorskip(
    "ctranslate2",
    reason='ctranslate2 is not installed (pip install -e ".[export]"; make install adds it)',
)


@pytest.fixture(scope="module")
def exported(synth_transformer_run, tmp_path_factory):
    """The tiny Transformer run, its CTranslate2 export read back and loaded on the CPU."""
    folder = tmp_path_factory.mktemp("ct2") / "export"
    export_ctranslate2(synth_transformer_run, folder)
    run = load(synth_transformer_run, "cpu")
    model, tok, cfg = run.model, run.tok, run.cfg
    meta, _, export_cfg = read_export(folder)
    return {
        "model": model,
        "tok": tok,
        "cfg": cfg,
        "folder": folder,
        "export": (meta, export_cfg),
        "ct2": CTranslate2Model(folder, "cpu", max_positions=meta["max_positions"]),
    }


@pytest.fixture(scope="module")
def sources(synth_corpus):
    return (synth_corpus / "val.de").read_text().splitlines()


def _both(exported, sources, **decode):
    cfg = exported["cfg"].decode.with_method(decode.pop("method", "greedy"), **decode)
    ours = translate_sentences(exported["model"], exported["tok"], sources, cfg)
    theirs = translate_sentences(exported["ct2"], exported["tok"], sources, cfg)
    return ours, theirs


def _near_tie(model, tok, source: str, prefix: list[int]) -> float:
    """Our margin between the two most probable next tokens after ``prefix``."""
    src = torch.tensor([tok.encode_src([source])[0]])
    with torch.no_grad():
        logits = model(src, src != 0, torch.tensor([[BOS, *prefix]]))[0, -1]
    top = torch.log_softmax(logits, -1).topk(2).values
    return float(top[0] - top[1])


def _renormalised(model, tok, source: str, tokens: list[int], min_len: int) -> float:
    """Our log P(tokens) with each step's softmax over the pieces the target vocabulary (and
    ``min_len``) allows only, as CTranslate2 computes it: it suppresses the others before its
    softmax, ours after."""
    src = torch.tensor([tok.encode_src([source])[0]])
    with torch.no_grad():
        logits = model(src, src != 0, torch.tensor([[BOS, *tokens[:-1]]]))[0]
    allowed = model.target_vocab.repeat(len(tokens), 1)
    allowed[:min_len, EOS] = False
    logp = torch.log_softmax(logits.masked_fill(~allowed, float("-inf")), -1)
    return float(logp.gather(1, torch.tensor(tokens)[:, None]).sum())


def test_greedy_search_gives_our_greedy_tokens(exported, sources):
    """The two engines compute the same log-probabilities to about 1e-6 (test_ctranslate2.py of
    export/); greedy search takes the arg max, so their tokens agree unless two candidates are
    within that rounding of each other. Any sentence that differs must differ at such a tie. Its
    log-probability is renormalised over the target vocabulary's pieces: ours or higher."""
    ours, theirs = _both(exported, sources)
    same = 0
    for o, t, src in zip(ours, theirs, sources, strict=True):
        a, b = o.hypotheses[0], t.hypotheses[0]
        if a.tokens == b.tokens:
            same += 1
            assert o.text == t.text and a.finished == b.finished
            if a.finished:  # (a cut one's CTranslate2 log-probability counts the cut tokens)
                min_len = exported["cfg"].decode.min_len
                renormalised = _renormalised(
                    exported["model"], exported["tok"], src, a.tokens, min_len
                )
                assert a.log_prob - 1e-4 <= b.log_prob == pytest.approx(renormalised, abs=1e-3)
            continue
        k = next(i for i, (x, y) in enumerate(zip(a.tokens, b.tokens, strict=False)) if x != y)
        assert _near_tie(exported["model"], exported["tok"], src, a.tokens[:k]) < 1e-4
    assert same >= len(sources) - 2
    assert sum(r.hypotheses[0].finished for r in ours) >= len(sources) // 2  # a model that stops


def test_beam_search_at_alpha_0_gives_ours_wherever_both_finish(exported, sources):
    """At alpha 0 both rank by the raw log-probability; they differ in which hypothesis a beam
    that never reaches EOS returns (CTranslate2 returns it whole at the length limit, ours only
    when nothing finished), so only sentences where both finish are compared. Those may still
    differ where an EOS ranks between K and 2K among a step's expansions: ours, like fairseq,
    finishes only EOS among the top K, CTranslate2 any (a degenerate, repeating output of the
    tiny model did, 1 of the finished ones), so 1 in 20 may differ. Without the target vocabulary
    mask, whose renormalising changes CTranslate2's ranking (test_an_export_keeps_to_...)."""
    ours, theirs = _both(
        exported, sources, method="beam", beam_size=4, length_penalty=0.0, target_vocab_mask=False
    )
    both = [
        (o, t)
        for o, t in zip(ours, theirs, strict=True)
        if o.hypotheses[0].finished and t.hypotheses[0].finished
    ]
    assert len(both) >= len(sources) // 2
    differ = sum(o.text != t.text for o, t in both)
    assert differ <= len(both) // 20, f"{differ} of {len(both)} differ"


def test_n_best_rows_are_best_first_and_sampling_repeats_with_a_seed(exported, sources):
    _, theirs = _both(exported, sources[:10], method="beam", beam_size=3)
    cfg = exported["cfg"].decode.with_method("beam", beam_size=3)
    nbest = translate_sentences(exported["ct2"], exported["tok"], sources[:10], cfg, n_best=3)
    for r in nbest:
        scores = [h.score for h in r.hypotheses]
        assert len(scores) == 3 and scores == sorted(scores, reverse=True)
    assert [r.text for r in nbest] == [r.text for r in theirs]
    draws = []
    for _ in range(2):  # a fresh model each time, as two runs of translate
        model = CTranslate2Model(exported["folder"], "cpu", max_positions=1024)
        sample = exported["cfg"].decode.with_method("sample", seed=7, top_k=5)
        out = translate_sentences(model, exported["tok"], sources[:10], sample, n_best=2)
        draws.append([r.texts for r in out])
    assert draws[0] == draws[1] and all(len(t) == 2 for t in draws[0])


def test_the_length_limit_is_each_sentences_own(exported, sources):
    """One batch, sources of different lengths, a limit of floor(0.5 * S + 2) tokens (EOS
    included): each hypothesis stops at its own, cut ones unfinished and without EOS, exactly
    as our greedy search does."""
    lines = sorted(sources[:30], key=len)[::3]
    ours, theirs = _both(exported, lines, max_len_a=0.5, max_len_b=2)
    for o, t in zip(ours, theirs, strict=True):
        h = t.hypotheses[0]
        limit = int(len(exported["tok"].encode_src([t.source])[0]) * 0.5 + 2)
        assert len(h.tokens) <= limit and h.finished == (h.tokens[-1] == EOS)
        assert (h.tokens, h.finished) == (o.hypotheses[0].tokens, o.hypotheses[0].finished)
    assert any(not r.hypotheses[0].finished for r in theirs)


def test_the_line_translator_reads_windows_as_ours_does(exported, sources):
    from seq2seq.decoding.files import LineTranslator

    cfg = exported["cfg"].decode
    lines = sources[:20] + ["", " \t "]
    theirs = translate_lines(
        CTranslate2LineTranslator(exported["ct2"], exported["tok"], cfg), lines
    )
    ours = translate_lines(LineTranslator(exported["model"], exported["tok"], cfg), lines)
    assert [r.text for r in theirs] == [r.text for r in ours]
    assert theirs[-1].hypotheses == [] and theirs[-1].text == ""


def test_an_export_is_found_by_its_folder_or_a_file_in_it(exported, synth_transformer_run):
    folder = exported["folder"]
    assert export_folder(folder) == folder
    assert export_folder(folder / "model.bin") == folder
    assert export_folder(synth_transformer_run) is None
    meta, export_cfg = exported["export"]
    assert export_cfg.model.name == "transformer"
    assert meta["max_positions"] == exported["cfg"].model.max_positions


def test_a_damaged_export_is_refused_in_one_line(exported, tmp_path):
    import shutil

    from seq2seq.checkpoint import CheckpointError

    bad = tmp_path / "bad"
    shutil.copytree(exported["folder"], bad)
    (bad / "model.bin").write_bytes((exported["folder"] / "model.bin").read_bytes()[:5000])
    with pytest.raises(CheckpointError) as e:
        CTranslate2Model(bad)
    assert "CTranslate2 cannot load this export" in str(e.value) and "\n" not in str(e.value)
    (bad / "seq2seq_export.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not a readable CTranslate2 export"):
        read_export(bad)


def test_beam_search_stops_each_sentence_at_its_own_limit(exported, sources):
    """One length limit per batch let CTranslate2 search a short sentence past its own limit and
    return it cut there, where ours (stopping at the limit) had finished it; now each sentence is
    searched to its own limit, so wherever ours finishes, CTranslate2 does too, but for the rare
    sentence where, at the limit, CTranslate2 ranks a cut beam over a finished one (ours returns
    the finished one): at most 1 in 20. Without the target vocabulary mask, as above."""
    for a, b in ((1.0, 2), (0.5, 3)):
        limits = {"max_len_a": a, "max_len_b": b, "target_vocab_mask": False}
        ours, theirs = _both(exported, sources, method="beam", beam_size=4, **limits)
        unfinished = 0
        for o, t in zip(ours, theirs, strict=True):
            limit = int(len(exported["tok"].encode_src([t.source])[0]) * a + b)
            assert len(t.hypotheses[0].tokens) <= limit
            unfinished += o.hypotheses[0].finished and not t.hypotheses[0].finished
        assert unfinished <= len(sources) // 20, (a, b, unfinished)
        same = sum(o.text == t.text for o, t in zip(ours, theirs, strict=True))
        assert same >= len(sources) - 3, (a, b, same)


def test_a_min_len_above_some_limits_warns_as_ours_does(exported, sources, caplog):
    """--min-len over some sentences' limit: CTranslate2 refused the batch (min_decoding_length
    over max_decoding_length, a ValueError); now those sentences stop cut at their limit, as
    ours do, after the same warning."""
    import logging

    for method in ("greedy", "beam"):
        with caplog.at_level(logging.WARNING, logger="seq2seq"):
            caplog.clear()
            ours, theirs = _both(exported, sources[:40], method=method, min_len=25)
        said = [r.getMessage() for r in caplog.records if "--min-len 25 is not below" in r.message]
        assert len(said) == 2 and said[0] == said[1]  # ours, then CTranslate2's
        for o, t in zip(ours, theirs, strict=True):
            limit = int(len(exported["tok"].encode_src([t.source])[0]) * 1.5 + 5)
            if limit <= 25:  # EOS blocked to the end: cut at the limit, by both
                assert not t.hypotheses[0].finished and len(t.hypotheses[0].tokens) == limit
                if method == "greedy":
                    assert t.hypotheses[0].tokens == o.hypotheses[0].tokens


def test_jsonl_names_the_fields_an_export_leaves_null_once(exported, sources, tmp_path, caplog):
    import json
    import logging

    cfg = exported["cfg"].decode
    tr = CTranslate2LineTranslator(exported["ct2"], exported["tok"], cfg, output_format="jsonl")
    with caplog.at_level(logging.WARNING, logger="seq2seq"):
        rows = tr.render(sources[:3]) + tr.render(sources[3:5], 4)
    said = [r.getMessage() for r in caplog.records if "CTranslate2 export" in r.message]
    assert len(said) == 1 and "alignment and token_log_probs" in said[0]
    objs = [json.loads(x) for x in rows]
    assert all(o["alignment"] is None and o["token_log_probs"] is None for o in objs)


@pytest.mark.parametrize("mask", [False, True])
@pytest.mark.parametrize("method", ["greedy", "beam", "sample"])
def test_constraints_no_output_can_meet_end_the_hypothesis_as_ours(exported, sources, method, mask):
    """--no-repeat-ngram 1 with a --min-len past what the vocabulary can fill: CTranslate2 went on
    with PAD pieces and a forbidden EOS, marked finished. Now each hypothesis stops before its
    first forbidden token, unfinished, with the model's log-probability of what it kept, as ours,
    with the target vocabulary mask or without it."""
    extra = {"beam_size": 3} if method == "beam" else {"seed": 1} if method == "sample" else {}
    cfg = exported["cfg"].decode.with_method(
        method, no_repeat_ngram=1, min_len=300, max_len_a=0.0, max_len_b=400, **extra
    )
    cfg = cfg.model_copy(update={"target_vocab_mask": mask})
    tok = exported["tok"]
    theirs = translate_sentences(exported["ct2"], tok, sources[:2], cfg)
    ours = translate_sentences(exported["model"], tok, sources[:2], cfg)
    why = "--no-repeat-ngram 1, --min-len 300"
    why += ", the target vocabulary mask (decode.target_vocab_mask)" if mask else ""
    for t, o in zip(theirs, ours, strict=True):
        h, mine = t.hypotheses[0], o.hypotheses[0]
        assert not h.finished and h.blocked == mine.blocked == why
        assert len(set(h.tokens)) == len(h.tokens) and not {0, BOS, EOS} & set(h.tokens)
        assert len(h.tokens) == len(mine.tokens)  # every allowed piece, once
        assert sum(h.token_log_probs) == pytest.approx(h.log_prob)
        if method == "greedy":  # the same tokens, the same model log-probabilities
            assert h.tokens == mine.tokens
            assert h.log_prob == pytest.approx(mine.log_prob, abs=1e-2)


def test_an_export_keeps_to_the_runs_target_vocabulary(exported, sources):
    """decode.target_vocab_mask (on by default): the export carries the run's mask and CTranslate2
    emits no piece outside it, as ours (the joint vocabulary's source-only pieces get some
    probability from the tiny model, so sampling met them when the export ignored the mask);
    greedy still gives our tokens. Beam search may rank otherwise: CTranslate2 suppresses the
    other pieces before its softmax, renormalising, ours after (10 of these 100 lines differ at
    beam 4; 0 without the mask). ``target_vocab_mask: false`` turns it off."""
    mask = exported["model"].target_vocab
    assert mask is not None and not mask.all() and torch.equal(exported["ct2"].target_vocab, mask)
    sample = {"method": "sample", "seed": 1}
    for decode in (sample, {"method": "beam", "beam_size": 4}, {}):
        ours, theirs = _both(exported, sources, **decode)
        for results in (ours, theirs):
            assert [t for r in results for t in r.hypotheses[0].tokens if not mask[t]] == []
        if decode != sample:  # (draws differ: each engine has its own generator)
            same = sum(o.text == t.text for o, t in zip(ours, theirs, strict=True))
            assert same >= len(sources) - (15 if decode else 2), decode
    _, theirs = _both(exported, sources, target_vocab_mask=False, **sample)
    assert any(not mask[t] for r in theirs for t in r.hypotheses[0].tokens)


def test_an_export_without_a_target_vocabulary_warns_once_to_export_again(
    exported, sources, tmp_path, caplog
):
    """An export made before the target vocabulary was recorded still loads and decodes, without
    the mask; with decode.target_vocab_mask on, one line, once, says so."""
    import json
    import logging
    import shutil

    old = tmp_path / "old"
    shutil.copytree(exported["folder"], old)
    meta = json.loads((old / "seq2seq_export.json").read_text())
    del meta["target_vocab"]
    (old / "seq2seq_export.json").write_text(json.dumps(meta))
    model, tok, cfg = CTranslate2Model(old), exported["tok"], exported["cfg"].decode
    assert model.target_vocab is None
    with caplog.at_level(logging.WARNING, logger="seq2seq"):
        off = cfg.model_copy(update={"target_vocab_mask": False})
        translate_sentences(model, tok, sources[:3], off)
        for lines in (sources[:3], sources[3:6]):
            translate_sentences(model, tok, lines, cfg)
    said = [r.getMessage() for r in caplog.records if "target vocabulary" in r.message]
    assert said == [
        f"{old}: this export applies no target vocabulary mask (decode.target_vocab_mask); "
        "export the run again to get it"
    ]

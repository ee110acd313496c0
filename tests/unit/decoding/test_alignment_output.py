"""``seq2seq/decoding/alignment_output.py`` and ``translate --format``: per-token log-probabilities
equal to a scripted oracle's and summing to ``log_prob`` in every search, ``score`` the ranking
score, sentencepiece pieces mapped to words on hand-made lists, Pharaoh alignments from a model
whose attention is scripted, ``--align-layer``, and the JSON Lines output (one object per input
line, blank lines included, kept in ``OUT.partial`` by Ctrl-C)."""

from __future__ import annotations

import json
import math

import pytest
import torch

from seq2seq.config import ConfigError, DecodeConfig
from seq2seq.data.tokenizer import EOS, PAD, UNK
from seq2seq.decoding.alignment_output import (
    attach_layer_attention,
    jsonl_record,
    output_format,
    pharaoh,
    piece_words,
)
from seq2seq.decoding.base import length_penalty
from seq2seq.decoding.files import LineTranslator
from seq2seq.decoding.search import beam_search, greedy_search, sample_search, search
from seq2seq.decoding.translate import translate_sentences
from seq2seq.models.base import Seq2SeqModel
from tests.toys import (
    SENT,
    T1,
    A,
    B,
    Oracle,
    one_sentence,
    random_batch,
    run_cli,
    tiny_model,
    translate_cli,
)
from tests.unit.decoding.limits import limits
from tests.unit.decoding.test_files import interrupt_search_at

# ---- per-token log-probabilities: the oracle's, summing to log_prob ------------------------------


def oracle_log_probs(table: dict, tokens: list[int]) -> list[float]:
    """log P of each token of ``tokens`` after its prefix, as the one-sentence ``table`` says."""
    return [math.log(table[tuple(tokens[:k])][t]) for k, t in enumerate(tokens)]


def oracle_src():
    src = torch.tensor([[SENT]])
    return Oracle(one_sentence(T1)), src, src != PAD


def assert_oracle_hypothesis(h, table: dict, alpha: float) -> None:
    expected = oracle_log_probs(table, h.tokens)
    assert h.token_log_probs == pytest.approx(expected, abs=1e-6)
    assert sum(h.token_log_probs) == pytest.approx(h.log_prob, abs=1e-5)
    assert h.score == pytest.approx(
        h.log_prob / length_penalty(len(h.tokens), alpha).item(), abs=1e-6
    )


def test_greedy_token_log_probs_are_the_oracles():
    model, src, mask = oracle_src()
    (h,) = greedy_search(model, src, mask, limits(max_len_a=0.0, max_len_b=10, length_penalty=1.0))
    assert h.tokens == [A, B, EOS]
    assert h.token_log_probs == pytest.approx([math.log(0.6), math.log(0.6), math.log(0.9)])
    assert_oracle_hypothesis(h, T1, alpha=1.0)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_beam_token_log_probs_are_the_oracles_and_score_is_the_ranking_score(alpha):
    model, src, mask = oracle_src()
    (hyps,) = beam_search(
        model,
        src,
        mask,
        limits("beam", beam_size=4, max_len_a=0.0, max_len_b=10, length_penalty=alpha),
        n_best=4,
    )
    assert len(hyps) == 4
    for h in hyps:
        assert_oracle_hypothesis(h, T1, alpha)
    scores = [h.score for h in hyps]
    assert scores == sorted(scores, reverse=True)  # ranked by exactly this score


def test_a_cut_beam_hypothesis_has_its_token_log_probs_without_eos():
    never_ends = {p: {A: 0.7, B: 0.3} for p in [(), (A,), (B,), (A, A), (A, B), (B, A), (B, B)]}
    src = torch.tensor([[SENT]])
    model = Oracle(one_sentence(never_ends))
    (hyps,) = beam_search(
        model, src, src != PAD, limits("beam", beam_size=2, max_len_a=0.0, max_len_b=3)
    )
    assert hyps[0].tokens == [A, A, A] and not hyps[0].finished
    assert hyps[0].token_log_probs == pytest.approx([math.log(0.7)] * 3)


def test_sampled_token_log_probs_are_the_models_not_the_reshaped_distributions():
    model, src, mask = oracle_src()
    (draws,) = sample_search(
        model,
        src,
        mask,
        limits(
            "sample",
            temperature=3.0,
            top_k=2,
            seed=5,
            max_len_a=0.0,
            max_len_b=10,
            length_penalty=0.7,
        ),
        n_best=30,
    )
    assert len({tuple(h.tokens) for h in draws}) > 1
    for h in draws:
        assert_oracle_hypothesis(h, T1, alpha=0.7)


@pytest.mark.parametrize("name", ["bahdanau", "luong_dot", "transformer", "rnn"])
@pytest.mark.parametrize("method", ["greedy", "beam", "sample"])
def test_token_log_probs_sum_to_log_prob_for_every_model_and_search(name, method):
    model = tiny_model(name)
    src = random_batch(5, seed=3)
    own = {"greedy": {}, "beam": {"beam_size": 3}, "sample": {"seed": 1}}[method]
    cfg = DecodeConfig(max_len_a=1.0, max_len_b=4, min_len=0).with_method(method, **own)
    n_best = 1 if method == "greedy" else 3
    for hyps in search(model, src, src != PAD, cfg, n_best, need_attention=True):
        for h in hyps:
            assert len(h.token_log_probs) == len(h.tokens)
            assert all(x <= 0 for x in h.token_log_probs)
            assert sum(h.token_log_probs) == pytest.approx(h.log_prob, abs=1e-4)
            assert h.score == pytest.approx(h.log_prob / length_penalty(len(h.tokens), 1.0).item())


# ---- pieces -> words -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pieces,words",
    [
        (["▁the", "▁ho", "use", "▁is", "▁red", "."], [0, 1, 1, 2, 3, 3]),
        (["ab", "c", "▁d"], [0, 0, 1]),  # no leading ▁: the first piece still starts word 0
        (["▁", ",", "▁a"], [0, 0, 1]),  # a lone ▁ belongs to the word the next piece starts
        (["▁a", "▁"], [0, None]),  # ... and to none at the end
        (["▁a", "▁", None, "▁b"], [0, 1, None, 1]),  # a left-out piece (EOS, <unk>) in between
        (["▁a", None, "b"], [0, None, 0]),  # a left-out piece inside a word
        (["▁a", "</s>"], [0, 0]),  # a special piece given as text is an ordinary piece
        ([None, "▁x"], [None, 0]),
        ([], []),
    ],
)
def test_piece_words_on_hand_made_pieces(pieces, words):
    assert piece_words(pieces) == words


def test_piece_words_are_the_words_of_the_text(synth_tokenizer, synth_corpus):
    tok = synth_tokenizer
    for line in (synth_corpus / "val.en").read_text(encoding="utf-8").splitlines()[:30]:
        ids = tok.encode_tgt([line])[0]
        pieces = tok.tgt_pieces(ids)
        words = piece_words(pieces)
        text = tok.decode_tgt([ids])[0]
        grouped: dict[int, str] = {}
        for p, w in zip(pieces, words, strict=True):
            grouped[w] = grouped.get(w, "") + p.replace("▁", "")
        assert [grouped[w] for w in sorted(grouped)] == text.split()


# ---- Pharaoh pairs from an attention matrix ------------------------------------------------------


def one_hot(positions: list[int], s: int) -> torch.Tensor:
    return torch.eye(s)[positions]


def test_pharaoh_pairs_are_the_argmax_words_deduplicated_in_target_order():
    src_words = [0, 1, 1, 2]  # "▁a ▁b c ▁d"
    tgt_words = [0, 0, 1, 2, None]  # "▁x y ▁z ▁w </s>"
    att = one_hot([3, 1, 2, 0, 3], 4)
    assert pharaoh(att, src_words, tgt_words) == "1-0 2-0 1-1 0-2"  # target order, then source
    assert pharaoh(one_hot([0, 0, 0, 0, 0], 4), src_words, tgt_words) == "0-0 0-1 0-2"
    assert pharaoh(torch.eye(4), [0, 1, 2, 3], [0, 1, 2, 3]) == "0-0 1-1 2-2 3-3"


def test_pharaoh_skips_pieces_of_no_word_and_checks_the_shape():
    att = one_hot([0, 1], 2)
    assert pharaoh(att, [None, 0], [0, 1]) == "0-1"  # source piece 0 has no word
    assert pharaoh(att, [0, 1], [None, None]) == ""
    with pytest.raises(ValueError, match="does not match"):
        pharaoh(att, [0, 1, 2], [0, 1])


# ---- a model whose attention is scripted ---------------------------------------------------------


class ScriptedCopy(Seq2SeqModel):
    """Copies its source (probability 0.8 for the source token, 0.2 for EOS before the end; EOS
    with probability 1 after it), attending one-hot to ``attend(t, n)`` of the n source tokens at
    step t: the diagonal by default."""

    has_attention = True
    static_state_keys = frozenset({"src_mask", "src"})

    def __init__(self, vocab: int, attend=None):
        super().__init__()
        self.src_vocab_size = self.tgt_vocab_size = vocab
        self.attend = attend or (lambda t, n: min(t, n - 1))

    def encode(self, src, src_mask, src_lengths=None):
        return {"src": src, "src_mask": src_mask}

    def init_state(self, enc):
        return {**enc, "t": torch.zeros(len(enc["src"]), dtype=torch.long)}

    def decode_step(self, prev_tokens, state, need_attention=False):
        b, S = state["src"].shape
        logits = torch.full((b, self.tgt_vocab_size), float("-inf"))
        att = torch.zeros(b, S)
        lengths = state["src_mask"].sum(1)
        for r in range(b):
            t, n = int(state["t"][r]), int(lengths[r])
            if t < n:
                logits[r, int(state["src"][r, t])] = math.log(0.8)
                logits[r, EOS] = math.log(0.2)
            else:
                logits[r, EOS] = 0.0
            att[r, self.attend(t, n)] = 1.0
        return logits, att if need_attention else None, {**state, "t": state["t"] + 1}


COPY_LINES = ["Ein hund läuft.", "", "Der mann sieht zwei katzen auf der straße."]


def copy_translator(tok, attend=None, **kw) -> LineTranslator:
    cfg = DecodeConfig(method="greedy", length_penalty=0.0)
    if "beam" in kw:
        cfg = cfg.with_method("beam", beam_size=kw.pop("beam"), length_penalty=0.0)
    model = ScriptedCopy(tok.src_vocab_size, attend)
    return LineTranslator(model, tok, cfg, output_format="jsonl", **kw)


def test_a_copy_with_diagonal_attention_aligns_each_word_to_itself(synth_tokenizer):
    tok = synth_tokenizer
    objs = [json.loads(x) for x in copy_translator(tok).render(COPY_LINES)]
    assert [o["line"] for o in objs] == [1, 2, 3]
    for o, line in zip(objs, COPY_LINES, strict=True):
        n = len(tok.src_sp.normalize(line).replace("▁", " ").split())  # the words the model sees
        assert len(o["translation"].split()) == n
        assert o["alignment"] == " ".join(f"{k}-{k}" for k in range(n))
    assert objs[1]["translation"] == "" and objs[1]["alignment"] == ""
    first = objs[0]
    assert first["tokens"][-1] == "</s>" and first["finished"] is True
    assert first["token_log_probs"] == pytest.approx(
        [math.log(0.8)] * (len(first["tokens"]) - 1) + [0.0]
    )
    assert sum(first["token_log_probs"]) == pytest.approx(first["log_prob"], abs=1e-5)


def test_attention_fixed_on_one_source_word_aligns_every_target_word_to_it(synth_tokenizer):
    tok = synth_tokenizer
    line = "Der mann sieht zwei katzen."
    ids = tok.encode_src([line])[0]
    words = piece_words([tok.src_sp.id_to_piece(i) for i in ids])
    k = words.index(3)  # the first piece of "zwei"
    (o,) = [json.loads(x) for x in copy_translator(tok, lambda t, n: k).render([line])]
    assert o["alignment"] == " ".join(f"3-{j}" for j in range(5))


def test_n_best_jsonl_gives_every_hypothesis_its_own_alignment(synth_tokenizer):
    tok = synth_tokenizer
    tr = copy_translator(tok, beam=3, n_best=2)
    line = "Ein hund."
    (raw,) = tr.render([line])
    o = json.loads(raw)
    assert list(o) == ["line", "hypotheses"] and len(o["hypotheses"]) == 2
    best, second = o["hypotheses"]
    assert best["alignment"] == "0-0 1-1" and best["translation"] == "Ein hund."
    # the runner-up: the first piece, then EOS (p .8 x .2; min_len 1 blocks EOS at once)
    assert second["score"] < best["score"] and len(second["tokens"]) == 2
    assert second["tokens"][-1] == "</s>" and second["alignment"] == "0-0"
    assert second["token_log_probs"] == pytest.approx([math.log(0.8), math.log(0.2)])
    for h in (best, second):
        assert sum(h["token_log_probs"]) == pytest.approx(h["log_prob"], abs=1e-5)
        assert h["score"] == pytest.approx(h["log_prob"])  # α = 0
    blank = json.loads(tr.render([""], 7)[0])
    assert blank == {"line": 7, "hypotheses": []}


def test_a_model_without_attention_has_null_alignments(synth_tokenizer):
    tok = synth_tokenizer
    model = tiny_model("rnn", tok.src_vocab_size, tok.tgt_vocab_size)
    res = translate_sentences(model, tok, ["Ein hund.", ""], DecodeConfig(), need_attention=True)
    assert jsonl_record(res[0], 1, tok, 1, with_attention=False)["alignment"] is None
    blank = jsonl_record(res[1], 2, tok, 1, with_attention=False)
    assert blank == {
        "line": 2, "translation": "", "score": None, "log_prob": None, "finished": None,
        "tokens": [], "token_log_probs": [], "alignment": None,
    }  # fmt: skip


# ---- --align-layer -------------------------------------------------------------------------------


def test_the_last_layer_teacher_forced_is_the_attention_the_search_returns(synth_tokenizer):
    tok = synth_tokenizer
    model = tiny_model("transformer", tok.src_vocab_size, tok.tgt_vocab_size)  # 2 decoder layers
    lines = ["Ein hund läuft.", "Der mann sieht zwei katzen auf der straße."]
    cfg = DecodeConfig(method="beam", beam_size=3, max_len_b=5)
    res = translate_sentences(model, tok, lines, cfg, n_best=2, need_attention=True)
    searched = [h.attention.clone() for r in res for h in r.hypotheses]
    attach_layer_attention(model, res, layer=1, batch_size=3)
    forced = [h.attention for r in res for h in r.hypotheses]
    for a, b in zip(searched, forced, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    attach_layer_attention(model, res, layer=0)
    first = [h.attention for r in res for h in r.hypotheses]
    assert [a.shape for a in first] == [a.shape for a in searched]
    assert any(not torch.allclose(a, b, atol=1e-3) for a, b in zip(first, searched, strict=True))


def test_output_format_defaults_and_refusals(synth_tokenizer):
    transformer = tiny_model("transformer")
    rnn = tiny_model("rnn")
    assert output_format(None, 1, None, rnn) == "text"
    assert output_format(None, 3, None, rnn) == "nbest"
    assert output_format("jsonl", 3, None, rnn) == "jsonl"
    assert output_format("nbest", 1, None, rnn) == "nbest"
    assert output_format("jsonl", 1, 1, transformer) == "jsonl"
    assert output_format("jsonl", 1, 0, tiny_model("bahdanau")) == "jsonl"
    for args, said in [
        (("xml", 1, None, rnn), "--format xml: one of text | nbest | jsonl"),
        (("text", 2, None, rnn), "--n-best 2 needs --format nbest"),
        (("nbest", 1, 0, transformer), "only --format jsonl writes alignments"),
        (("jsonl", 1, 0, rnn), "this model returns no cross-attention"),
        (("jsonl", 1, 2, transformer), "--align-layer 2: the model's cross-attention has 2 layers"),
        (("jsonl", 1, 1, tiny_model("bahdanau")), "has 1 layer: 0 to 0"),
    ]:
        with pytest.raises(ConfigError, match=said.replace("|", r"\|")):
            output_format(*args)


# ---- the command ---------------------------------------------------------------------------------


LINES = ["Ein hund läuft.", "", "Der mann sieht zwei katzen.", "   ", "Die frau isst brot."]


def read_jsonl(text: str) -> list[dict]:
    assert text.endswith("\n")
    return [json.loads(x) for x in text.splitlines()]


def test_translate_jsonl_is_one_object_per_input_line_in_order(synth_run, tmp_path):
    code, text_out, err = translate_cli(synth_run, lines=LINES, tmp_path=tmp_path)
    assert code == 0, err
    code, out, err = translate_cli(synth_run, "--format", "jsonl", lines=LINES, tmp_path=tmp_path)
    assert code == 0, err
    objs = read_jsonl(out)
    assert [o["line"] for o in objs] == [1, 2, 3, 4, 5]
    assert [o["translation"] for o in objs] == text_out.split("\n")[:5]
    for k in (1, 3):  # blank lines: an empty hypothesis
        assert objs[k]["translation"] == "" and objs[k]["tokens"] == [] and objs[k]["score"] is None
    for o in (objs[0], objs[2], objs[4]):
        assert o["alignment"] is None  # the rnn has no attention
        assert len(o["tokens"]) == len(o["token_log_probs"]) > 0
        assert (o["tokens"][-1] == "</s>") == o["finished"]
        assert sum(o["token_log_probs"]) == pytest.approx(o["log_prob"], abs=1e-4)


def test_translate_jsonl_n_best_scores_are_the_tsv_scores(toy, tmp_path):
    args = ["--beam", 3, "--n-best", 3, "--length-penalty", 0.6]
    code, tsv, err = translate_cli(toy["run"], *args, lines=LINES[:3], tmp_path=tmp_path)
    assert code == 0, err
    code, out, err = translate_cli(
        toy["run"], *args, "--format", "jsonl", lines=LINES[:3], tmp_path=tmp_path
    )
    assert code == 0, err
    objs = read_jsonl(out)
    assert [len(o["hypotheses"]) for o in objs] == [3, 0, 3]
    rows = [r.split("\t") for r in tsv.splitlines()]
    flat = [(o["line"], h) for o in objs for h in o["hypotheses"]]
    for (line, h), row in zip(flat, [r for r in rows if r[1]], strict=True):
        # jsonl decodes the Transformer with its attention weights computed explicitly (not by
        # SDPA): the same scores up to float rounding
        assert row[0] == str(line) and row[2] == h["translation"]
        assert float(row[1]) == pytest.approx(h["score"], abs=2e-4)
        lp = length_penalty(len(h["tokens"]), 0.6).item()
        assert h["score"] == pytest.approx(h["log_prob"] / lp, abs=1e-5)
        assert sum(h["token_log_probs"]) == pytest.approx(h["log_prob"], abs=1e-4)


def test_translate_jsonl_aligns_words_of_an_attention_model(toy, tmp_path):
    lines = ["a dog runs in the house", "", "the cat sits"]
    code, out, err = translate_cli(toy["run"], "--format", "jsonl", lines=lines, tmp_path=tmp_path)
    assert code == 0, err
    objs = read_jsonl(out)
    assert objs[1]["alignment"] == ""
    for o, line in ((objs[0], lines[0]), (objs[2], lines[2])):
        n_src = len(toy["tok"].src_sp.normalize(line).replace("▁", " ").split())
        n_tgt = len(o["translation"].split())
        pairs = [tuple(map(int, p.split("-"))) for p in o["alignment"].split()]
        assert pairs and len(set(pairs)) == len(pairs)
        assert all(0 <= i < n_src and 0 <= j < n_tgt for i, j in pairs)
        assert pairs == sorted(pairs, key=lambda p: (p[1], p[0]))
    code, same, err = translate_cli(
        toy["run"], "--format", "jsonl", "--align-layer", 0, lines=lines, tmp_path=tmp_path
    )  # the toy Transformer has one decoder layer: its last, as the default
    assert code == 0, err
    assert [o["alignment"] for o in read_jsonl(same)] == [o["alignment"] for o in objs]


@pytest.mark.parametrize(
    "args,said",
    [
        (["--format", "text", "--n-best", 2, "--beam", 2], "--n-best 2 needs --format nbest"),
        (["--format", "jsonl", "--align-layer", 0], "this model returns no cross-attention"),
        (["--align-layer", 0], "only --format jsonl writes alignments"),
    ],
)
def test_translate_refuses_formats_it_cannot_write(
    synth_run, tmp_path, monkeypatch, capsys, args, said
):
    src = tmp_path / "in.de"
    src.write_text("Ein hund.\n", encoding="utf-8")
    code, out, err = run_cli(monkeypatch, capsys, "translate", "-c", synth_run, "-i", src, *args)
    assert code != 0 and said in " ".join(err.split()) and out == ""


def test_translate_help_says_the_score_and_the_alignment_layer():
    from typer.testing import CliRunner

    from seq2seq.cli import app

    said = " ".join(CliRunner().invoke(app, ["translate", "--help"]).output.split())
    assert "the score is the length-penalised one the search ranks by" in said
    assert "text|nbest|jsonl" in said and "token_log_probs (one per piece, EOS included)" in said
    assert "the Transformer's last decoder layer averaged over heads" in said


def test_ctrl_c_keeps_the_finished_jsonl_objects_in_out_partial(
    synth_run, synth_corpus, tmp_path, monkeypatch, capsys
):
    lines = (synth_corpus / "val.de").read_text(encoding="utf-8").splitlines()[:20]
    sources = tmp_path / "src.de"
    sources.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    args = ["translate", "-c", synth_run, "-i", sources, "-o", out, "--batch-size", "1"]
    code, _, err = run_cli(monkeypatch, capsys, *args, "--format", "jsonl")
    assert code == 0, err
    full = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["line"] for x in full] == list(range(1, 21))

    out.write_text("an older output\n", encoding="utf-8")
    interrupt_search_at(monkeypatch, 4)  # the first batch of the third window (1, 2, 4 lines)
    code, _, err = run_cli(monkeypatch, capsys, *args, "--format", "jsonl")
    partial = tmp_path / "out.jsonl.partial"
    assert code == 130
    assert (
        f"interrupted after 3 of 20 lines: {partial} holds the JSON objects of the first 3 lines"
        in err
    )
    assert partial.read_text(encoding="utf-8").splitlines() == full[:3]
    assert out.read_text(encoding="utf-8") == "an older output\n"


# ---- indices count the words of the source as written ---------------------------------------


@pytest.fixture(scope="module")
def word_tokenizer():
    from seq2seq.config import TokenizerConfig
    from seq2seq.data.tokenizer import Tokenizer
    from tests.corpora import SENTENCES

    return Tokenizer.train(
        SENTENCES * 3, SENTENCES * 3, TokenizerConfig(type="word", vocab_size=64)
    )


def test_an_unknown_word_keeps_its_position_and_moves_no_later_index(word_tokenizer):
    """With the word tokenizer an unknown word is one <unk> piece with no ▁: it was read as part
    of the word before it, so every later source index came out one too small."""
    tok = word_tokenizer
    line = "the cat Xavier sleeps on the sofa"
    ids = tok.encode_src([line])[0]
    assert len(ids) == 7 and ids[2] == UNK
    for k in range(7):  # attention on piece k: every target word aligns to source word k
        (o,) = [json.loads(x) for x in copy_translator(tok, lambda t, n, k=k: k).render([line])]
        n_tgt = len(o["translation"].split())  # the <unk> target piece is not written
        assert n_tgt == 6
        assert o["alignment"] == " ".join(f"{k}-{j}" for j in range(n_tgt)), (k, o["alignment"])
    (o,) = [json.loads(x) for x in copy_translator(tok).render([line])]  # the diagonal
    assert o["alignment"] == "0-0 1-1 3-2 4-3 5-4 6-5"


@pytest.mark.parametrize(
    "line",
    [
        "Der mann\u200bsieht zwei katzen.",
        "Der mann \u200b sieht zwei katzen.",
        "Der \u200bmann sieht\u200b zwei katzen.",
        "Der mann\u2060sieht zwei\ufeff katzen.",
    ],
)
def test_zero_width_characters_give_no_index_past_the_lines_words(synth_tokenizer, line):
    tok = synth_tokenizer
    n_src = len(line.split())
    ids = tok.encode_src([line])[0]
    for k in range(len(ids)):
        (o,) = [json.loads(x) for x in copy_translator(tok, lambda t, n, k=k: k).render([line])]
        n_tgt = len(o["translation"].split())
        for pair in o["alignment"].split():
            i, j = map(int, pair.split("-"))
            assert 0 <= i < n_src and 0 <= j < n_tgt, (line, k, o["alignment"])
    # "zwei" keeps its position as written
    k = next(k for k, i in enumerate(ids) if tok.src_sp.id_to_piece(i) == "▁zwei")
    (o,) = [json.loads(x) for x in copy_translator(tok, lambda t, n: k).render([line])]
    want = next(w for w, word in enumerate(line.split()) if "zwei" in word)
    assert {int(p.split("-")[0]) for p in o["alignment"].split()} == {want}, o["alignment"]

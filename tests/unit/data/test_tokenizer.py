"""``seq2seq/data/tokenizer.py``: fixed ids and exact round trips, joint or separate vocabularies,
byte fallback, what the trainer logs and drops, and a reproducible sample of the corpus."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from seq2seq.config import ConfigError, DecodeConfig, TokenizerConfig
from seq2seq.data.tokenizer import BOS, EOS, PAD, UNK, Tokenizer
from seq2seq.decoding.translate import TranslationReport, translate_sentences
from tests.corpora import SENTENCES, UNSEEN, toy_pairs
from tests.toys import REPO, tiny_model

CHINESE = ["我们明天去公园，好吗？", "她说：请稍等…", "价格是１２３元。"]

_TRAIN_TOKENIZER = """
import sys
from seq2seq.config import TokenizerConfig
from seq2seq.data.tokenizer import Tokenizer
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
cfg = TokenizerConfig(vocab_size=120, max_sentences=int(sys.argv[2]))
print(Tokenizer.train(lines, lines, cfg).digest())
"""


def test_the_tokenizer_sees_a_line_over_sentencepieces_byte_limit(caplog):
    from seq2seq.config import TokenizerConfig
    from seq2seq.data.tokenizer import UNK, Tokenizer

    long_line = "the dog runs in the park " * 200 + "die straße"  # ~5,000 bytes, the only ß
    assert len(long_line.encode()) > 4192
    src = SENTENCES * 3 + ["a short source"]
    tgt = SENTENCES * 3 + [long_line]
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        tok = Tokenizer.train(src, tgt, TokenizerConfig(type="unigram", vocab_size=100))
    assert UNK not in tok.encode_tgt(["straße"])[0]
    assert "not covered" not in caplog.text


def test_a_very_long_line_reaches_sentencepiece_in_pieces_with_every_character(monkeypatch, caplog):
    """sentencepiece's time grows with the square of a line's length: one line of 200,000 words
    held `train` in tokenizer training for over 8 minutes, deaf to Ctrl-C (a new-user trial)."""
    from seq2seq.data import tokenizer as tk

    seen: list[str] = []
    run_trainer = tk._run_trainer

    def spy(sentences, *args):
        def reading():
            for x in sentences:
                seen.append(x)
                yield x

        return run_trainer(reading(), *args)

    monkeypatch.setattr(tk, "_run_trainer", spy)
    long_line = "Hund " * 20_000 + "Straße"  # 100,006 characters, the only ß
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        tok = Tokenizer.train(
            SENTENCES + [long_line], SENTENCES * 2, TokenizerConfig(type="unigram", vocab_size=60)
        )
    assert max(map(len, seen)) <= tk.LONG_LINE and len(seen) == 3 * len(SENTENCES) + 25
    assert " ".join(seen[len(SENTENCES) : len(SENTENCES) + 25]) == long_line.strip()
    assert UNK not in tok.encode_src(["Straße"])[0]
    assert "1 training lines over 4096 characters were read in pieces" in caplog.text


def test_line_pieces_cut_at_spaces_keep_every_character_and_leave_short_lines_alone():
    from seq2seq.data.tokenizer import line_pieces

    assert line_pieces("ein Hund", 8) == ["ein Hund"]
    assert line_pieces("ein Hund läuft", 8) == ["ein Hund", "läuft"]
    assert line_pieces("abcdefghij kl", 4) == ["abcd", "efgh", "ij", "kl"]
    assert line_pieces(" " * 10, 4) == []
    line = " ".join(f"w{i}" for i in range(3000))
    pieces = line_pieces(line, 100)
    assert all(len(x) <= 100 for x in pieces) and " ".join(pieces) == line


def test_the_log_reports_the_vocabulary_learned_and_the_characters_not_covered(caplog):
    from seq2seq.config import TokenizerConfig
    from seq2seq.data.tokenizer import Tokenizer

    with caplog.at_level(logging.INFO, logger="seq2seq"):
        tok = Tokenizer.train(SENTENCES, SENTENCES, TokenizerConfig(type="word", vocab_size=5000))
    assert tok.src_vocab_size < 5000
    assert f"learned {tok.src_vocab_size} pieces, vocab_size 5000 asked" in caplog.text
    caplog.clear()
    rare = SENTENCES * 20 + ["a ß b"]  # one ß in ~500 characters: out at coverage 0.98
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        Tokenizer.train(rare, rare, TokenizerConfig(vocab_size=60, character_coverage=0.98))
    assert "training characters" in caplog.text and "'ß' x2" in caplog.text


@pytest.mark.parametrize("joint", [True, False], ids=["joint", "separate"])
def test_the_target_round_trips_exactly_and_a_perfect_system_scores_100(tmp_path, joint):
    from seq2seq.config import TokenizerConfig
    from seq2seq.data.tokenizer import Tokenizer
    from seq2seq.evaluation.report import evaluation_report, read_eval_texts

    src = ["we go to the park tomorrow", "she said please wait", "the price is １２３ yuan"] * 30
    cfg = TokenizerConfig(type="unigram", vocab_size=60, joint=joint)
    tok = Tokenizer.train(src, CHINESE * 30, cfg)
    assert tok.joint == joint
    assert tok.decode_tgt(tok.encode_tgt(CHINESE)) == CHINESE
    assert tok.encode_src(["１２３"]) == tok.encode_src(["123"])  # the source is still NFKC-folded
    again = Tokenizer.from_state_dict(tok.state_dict())  # a checkpoint keeps both rules
    assert again.joint == joint and again.decode_tgt(again.encode_tgt(CHINESE)) == CHINESE
    tok.save(tmp_path)
    assert Tokenizer.load(tmp_path).decode_tgt(tok.encode_tgt(CHINESE)) == CHINESE
    (tmp_path / "ref.zh").write_text("".join(x + "\n" for x in CHINESE))
    (tmp_path / "hyp.zh").write_text(
        "".join(x + "\n" for x in again.decode_tgt(tok.encode_tgt(CHINESE)))
    )
    texts = read_eval_texts([tmp_path / "ref.zh"], None, tmp_path / "hyp.zh")
    assert evaluation_report(texts, ["bleu"], tgt_lang="zh")["bleu"]["score"] == pytest.approx(100)


def test_an_old_single_model_tokenizer_behaves_as_before():
    from seq2seq.config import TokenizerConfig
    from seq2seq.data.tokenizer import Tokenizer

    cfg = TokenizerConfig(type="unigram", vocab_size=60, tgt_normalization="nmt_nfkc")
    old = Tokenizer.train(["price １２３"] * 30, CHINESE * 30, cfg)  # one nmt_nfkc model
    state = old.state_dict()
    assert state["tgt"] is None
    tok = Tokenizer.from_state_dict(state)
    assert tok.joint and tok.decode_tgt(tok.encode_tgt(["价格是１２３元。"])) == ["价格是123元。"]


def test_tokenizer_round_trip_and_fixed_ids(synth_corpus, synth_tokenizer, tmp_path):
    tok = synth_tokenizer
    assert (tok.pad_id, tok.unk_id, tok.bos_id, tok.eos_id) == (PAD, UNK, BOS, EOS) == (0, 1, 2, 3)
    assert tok.tgt_sp.id_to_piece(PAD) == "<pad>" and tok.tgt_sp.id_to_piece(EOS) == "</s>"
    lines = (synth_corpus / "train.en").read_text().splitlines()[:50]
    assert tok.decode_tgt(tok.encode_tgt(lines)) == lines
    space = tok.tgt_sp.piece_to_id("▁")  # a model's output may end in it: "A man a " was written
    assert space != UNK and tok.decode_tgt([tok.encode_tgt(lines[:1])[0] + [space]]) == lines[:1]
    tok.save(tmp_path)
    again = Tokenizer.load(tmp_path)
    assert again.encode_src(lines) == tok.encode_src(lines)
    assert Tokenizer.from_state_dict(tok.state_dict()).encode_tgt(lines) == tok.encode_tgt(lines)


def test_separate_vocabularies(synth_corpus):
    src = (synth_corpus / "train.de").read_text().splitlines()
    tgt = (synth_corpus / "train.en").read_text().splitlines()
    tok = Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=300, joint=False, type="bpe"))
    assert not tok.joint
    assert tok.src_proto != tok.tgt_proto
    assert tok.decode_tgt(tok.encode_tgt(tgt[:20])) == tgt[:20]


def test_a_sampled_tokenizer_is_byte_identical_in_two_processes(tmp_path):
    """max_sentences below the corpus size: sentencepiece's own sampler drew another sample in
    every process; the sample is now seeded."""
    from tests.corpora import synth_pairs

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"{s}\n" for s, _ in synth_pairs(400, seed=5)), encoding="utf-8")
    env = {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    digests = [
        subprocess.run(
            [sys.executable, "-c", _TRAIN_TOKENIZER, str(corpus), "150"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=120,
        ).stdout.strip()
        for _ in range(2)
    ]
    assert len(digests[0]) == 64 and digests[0] == digests[1]


def test_the_sample_is_uniform_seeded_in_corpus_order_and_whole_when_small():
    from seq2seq.data.tokenizer import sample_sentences

    lines = [f"s{i}" for i in range(1000)]
    assert sample_sentences(iter(lines), 1000) == lines  # the corpus as it is
    assert sample_sentences(iter(lines), 5000) == lines
    sample = sample_sentences(iter(lines), 100)
    assert sample == sample_sentences(iter(lines), 100)
    assert len(set(sample)) == 100 and sample == sorted(sample, key=lambda s: int(s[1:]))
    # every line equally likely: over 200 seeds each line is drawn about 20 times
    counts = [0] * 1000
    for seed in range(200):
        for s in sample_sentences(iter(lines), 100, seed=seed):
            counts[int(s[1:])] += 1
    assert 5 <= min(counts) and max(counts) <= 40
    first, last = sum(counts[:500]), sum(counts[500:])
    assert abs(first - last) < 0.1 * (first + last)


def test_byte_fallback_round_trips_after_the_target_normalisation(tmp_path):
    src, tgt = toy_pairs(200, seed=5)
    tok = Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=300, byte_fallback=True))
    odd = [*UNSEEN, "ｆｕｌｌ\u3000width", "two  spaces "]
    back = tok.decode_tgt(tok.encode_tgt(odd))
    # the text the target model sees: its normalizer's, with "▁" read as a space
    assert back == [tok.tgt_sp.normalize(x).replace("▁", " ").strip() for x in odd]
    assert back[:6] == UNSEEN  # the documented normalisation leaves these as they are
    assert back[6:] == ["ｆｕｌｌ\u3000width", "two spaces"]  # the target is not NFKC-folded
    # the source is
    assert tok.src_sp.normalize("ｆｕｌｌ\u3000width").replace("▁", " ").strip() == "full width"
    model = tiny_model("transformer", tok.src_vocab_size, tok.tgt_vocab_size)
    report = TranslationReport()
    report.add(translate_sentences(model, tok, UNSEEN, DecodeConfig(max_len_b=3)))
    assert (report.lines, report.uncovered) == (6, 0)


def test_byte_fallback_with_too_small_a_vocabulary_is_one_clear_line():
    src, tgt = toy_pairs(50, seed=5)
    with pytest.raises(ConfigError, match="vocab_size 60 and byte_fallback") as e:
        Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=60, byte_fallback=True))
    assert "\n" not in str(e.value)

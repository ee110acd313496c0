"""Bad input, round 2 (issue 15): validation sets with nothing usable, text the tokenizer rewrites
or drops, side paths at validation, masked errors on the stream backend, inexact resumes, leakage.

Toy setup: a 36-line copy corpus (12 short English sentences x3, target = source), a ``word``
tokenizer, a Transformer with d_model 32 and ``max_positions`` 40, ``data.max_len`` 30,
``valid_every`` 2, 256-token batches; everything in tmp_path, a few steps.
"""

from __future__ import annotations

import logging

import pytest

from seq2seq.config import validate_config
from seq2seq.data.text import DataError
from seq2seq.evaluation.metrics import corpus_score
from seq2seq.training.loop import train

SENTENCES = [
    "a dog runs in the park",
    "two men play football",
    "the girl reads a book",
    "a cat sleeps on the sofa",
    "children swim in the lake",
    "a man rides a bike",
    "the woman sings a song",
    "a boy eats an apple",
    "people walk in the city",
    "the bird sits on a tree",
    "a chef cooks some food",
    "the old man drinks tea",
]


def write_split(d, prefix, src, tgt=None, src_lang="de", tgt_lang="en", raw=False):
    """``prefix.<src_lang>`` and ``prefix.<tgt_lang>`` in ``d`` (target = source by default)."""
    for lang, lines in ((src_lang, src), (tgt_lang, src if tgt is None else tgt)):
        path = d / f"{prefix}.{lang}"
        if raw:
            path.write_bytes(lines)
        else:
            path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return str(d / prefix)


def toy_config(tmp_path, train=None, valid=None, data=None, tokenizer=None, **train_cfg):
    """The issue's toy run; ``train`` / ``valid`` default to the copy corpus and its first 4."""
    d = tmp_path / "data"
    d.mkdir(exist_ok=True)
    raw = {
        "name": "toy",
        "data": {
            "train": train or write_split(d, "train", SENTENCES * 3),
            "valid": valid or write_split(d, "valid", SENTENCES[:4]),
            "max_len": 30,
            **(data or {}),
        },
        "tokenizer": {"type": "word", "vocab_size": 64, **(tokenizer or {})},
        "model": {
            "name": "transformer",
            "d_model": 32,
            "n_heads": 2,
            "d_ff": 64,
            "n_encoder_layers": 1,
            "n_decoder_layers": 1,
            "max_positions": 40,
            "dropout": 0.0,
        },
        "train": {
            "max_steps": 2,
            "batch_tokens": 256,
            "valid_every": 2,
            "lr": 0.003,
            "seed": 1,
            "log_every": 1,
            "num_threads": 1,
            "device": "cpu",
            **train_cfg,
        },
        "decode": {"batch_size": 16, "max_len_b": 5},
    }
    return validate_config(raw)


# ---- 1. validation sets with nothing usable in them ------------------------------------------


@pytest.mark.parametrize("lines", [[], ["", "  ", "\t"]], ids=["empty", "blank"])
def test_an_empty_validation_set_is_refused_before_the_first_update(tmp_path, lines):
    valid = write_split(tmp_path, "valid", lines)
    cfg = toy_config(tmp_path, valid=valid)
    with pytest.raises(DataError, match="no usable validation pair") as e:
        train(cfg, tmp_path / "run")
    assert "valid.de" in str(e.value) and "valid.en" in str(e.value)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "run" / "last.pt").exists()  # refused before any update


def test_a_validation_set_all_over_max_len_is_refused(tmp_path):
    valid = write_split(tmp_path, "valid", [" ".join(["dog"] * 40)])
    with pytest.raises(DataError, match="no usable validation pair is left within data.max_len"):
        train(toy_config(tmp_path, valid=valid), tmp_path / "run")


def test_no_metric_over_zero_segments():
    for name in ("bleu", "chrf", "ter"):
        with pytest.raises(ValueError, match="no segments to score"):
            corpus_score(name, [], [[]])


def test_eval_refuses_a_blank_reference_file(tmp_path):
    from seq2seq.evaluation.report import read_eval_texts

    (tmp_path / "ref").write_text("\n \n")
    (tmp_path / "hyp").write_text("a\nb\n")
    with pytest.raises(ValueError, match=r"ref: no lines to score \(all 2 blank\)"):
        read_eval_texts([tmp_path / "ref"], None, tmp_path / "hyp")


def test_a_study_eval_set_with_no_usable_pair_is_refused(tmp_path):
    from seq2seq.study.evalsets import build_eval_set

    cfg = toy_config(tmp_path, data={"test": write_split(tmp_path, "test", ["", " "])})
    with pytest.raises(DataError, match="no usable test pair"):
        build_eval_set(cfg, 2, None)


# ---- 5. the same data error on every backend -------------------------------------------------


def _bad_utf8_train(tmp_path, side):
    d = tmp_path / "bad"
    d.mkdir()
    good = "".join(x + "\n" for x in SENTENCES * 3).encode()
    lines = good.split(b"\n")
    lines[2] = b"a dog $\xff runs"  # line 3, byte 8
    bad = b"\n".join(lines)
    (d / "train.de").write_bytes(bad if side == "src" else good)
    (d / "train.en").write_bytes(bad if side == "tgt" else good)
    return str(d / "train"), str(d / f"train.{'de' if side == 'src' else 'en'}")


@pytest.mark.parametrize("given_tokenizer", [False, True], ids=["trained", "given"])
@pytest.mark.parametrize("side", ["src", "tgt"])
def test_every_backend_gives_the_same_one_line_error_for_invalid_utf8(
    tmp_path, side, given_tokenizer
):
    from seq2seq.data.tokenizer import Tokenizer

    train_prefix, bad_file = _bad_utf8_train(tmp_path, side)
    expected = f"{bad_file} line 3: not valid UTF-8 (byte 8 of the line)"
    tok = None
    if given_tokenizer:
        cfg = toy_config(tmp_path)
        tok = Tokenizer.train(SENTENCES, SENTENCES, cfg.tokenizer)
    for backend in ("memory", "arrow", "stream"):
        data = {"backend": backend, "cache_dir": str(tmp_path / "cache")}
        cfg = toy_config(tmp_path, train=train_prefix, data=data)
        with pytest.raises(DataError) as e:
            train(cfg, tmp_path / f"run-{backend}", tokenizer=tok)
        assert str(e.value).startswith(expected), (backend, str(e.value))
        assert "\n" not in str(e.value)


def test_every_backend_gives_the_same_error_for_misaligned_files(tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    prefix = write_split(d, "train", SENTENCES * 3, SENTENCES * 3 + ["one more"])
    for backend in ("memory", "arrow", "stream"):
        data = {"backend": backend, "cache_dir": str(tmp_path / "cache")}
        with pytest.raises(DataError, match="train.de has 36 lines but .*train.en has 37"):
            train(toy_config(tmp_path, train=prefix, data=data), tmp_path / f"run-{backend}")


# ---- 3. text the tokenizer trainer drops without a word --------------------------------------


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


# ---- 2. target text the tokenizer rewrites ---------------------------------------------------

CHINESE = ["我们明天去公园，好吗？", "她说：请稍等…", "价格是１２３元。"]


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


# ---- 7. leakage the user should hear about ---------------------------------------------------


def _leaky(tmp_path):
    d = tmp_path / "leak"
    d.mkdir()
    # 12 training pairs: SENTENCES[0] three times, SENTENCES[1:3] also in the test split
    train_lines = [SENTENCES[0]] * 3 + SENTENCES[1:10]
    test_lines = SENTENCES[1:3] + ["a horse eats", "the sun shines", "a fish swims"]
    data = {"test": write_split(d, "test", [x.replace(" ", "  ") for x in test_lines])}
    return write_split(d, "train", train_lines), data


@pytest.mark.parametrize("backend", ["memory", "stream"])
def test_overlap_with_training_and_duplicates_are_reported(tmp_path, caplog, backend):
    from seq2seq.data.prepare import prepare_data
    from seq2seq.training.distributed import DistInfo

    train_prefix, data = _leaky(tmp_path)
    data.update(backend=backend, cache_dir=str(tmp_path / "cache"))
    valid = write_split(tmp_path, "valid", ["a quiet night", SENTENCES[0]])
    cfg = toy_config(tmp_path, train=train_prefix, valid=valid, data=data)
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        prepare_data(cfg, tmp_path, None, DistInfo())
    assert "leakage: test: 2 of 5 pairs (2 sources) also in the training split" in caplog.text
    assert "leakage: valid: 1 of 2 pairs (1 sources) also in the training split" in caplog.text
    duplicates = "leakage: train: 2 duplicate pairs (1 distinct pairs occur more than once)"
    assert (duplicates in caplog.text) == (backend == "memory")


def test_dedup_drops_repeated_and_held_out_pairs(tmp_path, caplog):
    from seq2seq.data.prepare import prepare_data
    from seq2seq.training.distributed import DistInfo

    train_prefix, data = _leaky(tmp_path)
    valid = write_split(tmp_path, "valid", ["a quiet night", "the rain falls"])
    cfg = toy_config(tmp_path, train=train_prefix, valid=valid, data={**data, "dedup": True})
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        out = prepare_data(cfg, tmp_path, None, DistInfo())
    assert len(out.train) == 8  # 12 - 2 repeats - 2 in the test split
    assert "dropped 2 pairs (duplicate of an earlier training pair) at lines 2, 3" in caplog.text
    assert "dropped 2 pairs (also in a validation or test split) at lines 4, 5" in caplog.text


# ---- 4. side paths that crash or misconfigure a run ------------------------------------------


def _long_first_valid(tmp_path):
    words = " ".join(SENTENCES * 2).split()
    return write_split(tmp_path, "valid", [" ".join(words[:65])] + SENTENCES[:3])


def test_a_65_token_first_validation_sentence_is_cut_by_the_runs_settings(tmp_path, caplog):
    cfg = toy_config(tmp_path, valid=_long_first_valid(tmp_path))
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        out = train(cfg, tmp_path / "run")
    assert out["steps"] == 2 and (tmp_path / "run" / "attention.png").exists()
    # max_positions 40, max_len_b 5, max_len_a 1.5: a source is cut to (40 - 5) / 1.5 = 23 tokens
    # for BLEU and for the plot alike (the default decode settings would cut it to 20)
    assert "attention plot line 1: 65 source tokens, cut to the first 23" in caplog.text
    assert "cut to the first 20" not in caplog.text


def test_a_failing_side_output_is_a_warning(tmp_path, caplog, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("sequence of 65 tokens exceeds max_positions 40")

    monkeypatch.setattr("seq2seq.training.loop.attention_heatmap", broken)
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        out = train(toy_config(tmp_path, max_steps=4), tmp_path / "run")
    assert out["steps"] == 4 and out["stopped"] == "max_steps"
    assert "step 2: attention plot skipped: ValueError: sequence of 65 tokens" in caplog.text


def test_a_stop_by_any_error_after_an_update_leaves_a_resumable_last_pt(tmp_path, monkeypatch):
    from seq2seq.checkpoint import load_checkpoint
    from seq2seq.training.updates import Updates

    real, calls = Updates.update, []

    def fails_at_step_4(self, group):
        calls.append(1)
        if len(calls) == 4:
            raise RuntimeError("CUDA error: an illegal memory access")
        return real(self, group)

    monkeypatch.setattr(Updates, "update", fails_at_step_4)
    cfg = toy_config(tmp_path, max_steps=6, valid_every=100)
    with pytest.raises(RuntimeError, match="illegal memory access"):
        train(cfg, tmp_path / "run")
    assert load_checkpoint(tmp_path / "run" / "last.pt")["train_state"]["step"] == 3
    monkeypatch.setattr(Updates, "update", real)
    assert train(cfg, tmp_path / "run", resume=True)["steps"] == 6


# ---- 6. resumes that are not what they claim -------------------------------------------------


def test_a_batching_change_mid_epoch_is_refused_on_resume(tmp_path):
    from seq2seq.checkpoint import load_checkpoint
    from seq2seq.config import ConfigError

    cfg = toy_config(tmp_path, batch_tokens=48, max_steps=2, valid_every=100)
    train(cfg, tmp_path / "run")
    state = load_checkpoint(tmp_path / "run" / "last.pt")["train_state"]
    assert state["batch_in_epoch"] > 0  # stopped mid-epoch
    more = cfg.model_copy(update={"train": cfg.train.model_copy(update={"max_steps": 4})})
    wider = more.model_copy(update={"train": more.train.model_copy(update={"batch_tokens": 64})})
    with pytest.raises(ConfigError, match="train.batch_tokens 48 -> 64 while the run stopped mid"):
        train(wider, tmp_path / "run", resume=True)
    assert train(more, tmp_path / "run", resume=True)["steps"] == 4  # the same batching resumes


def test_a_schedule_change_on_resume_is_named_with_the_learning_rates(tmp_path, caplog):
    from seq2seq.training.schedules import lr_at

    cfg = toy_config(tmp_path, schedule="cosine", lr=1e-3, min_lr=1e-4, max_steps=10)
    cfg.train.valid_every = 100
    train(cfg, tmp_path / "run")
    longer = cfg.train.model_copy(update={"max_steps": 20})
    with caplog.at_level(logging.WARNING, logger="seq2seq"):
        train(cfg.model_copy(update={"train": longer}), tmp_path / "run", resume=True)
    warnings = [r.getMessage() for r in caplog.records if "resume is not exact" in r.getMessage()]
    assert len(warnings) == 1
    assert "train.max_steps 10 -> 20" in warnings[0]
    assert f"from 1.0e-04 at step 10 to {lr_at(11, longer):.1e} at step 11" in warnings[0]


def test_a_stop_condition_change_on_resume_is_exact_and_silent(tmp_path, caplog):
    cfg = toy_config(tmp_path, max_steps=2)
    train(cfg, tmp_path / "run")
    more = cfg.train.model_copy(update={"max_steps": 3, "log_every": 5, "keep_last": 2})
    with caplog.at_level(logging.WARNING, logger="seq2seq"):
        train(cfg.model_copy(update={"train": more}), tmp_path / "run", resume=True)
    assert "resume is not exact" not in caplog.text

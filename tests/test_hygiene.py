"""Bad input never breaks a run, shifts a line or inflates a score: issue 7, cases 1-6.

Every input is tiny and made up here: a lowercase-ASCII toy corpus (the target is the source with
its words reversed) with a few planted bad lines, and a Transformer trained on it for 20 steps.
Expected values are written down from the input, never read off a seeded run.
"""

from __future__ import annotations

import logging
import math
import os
import random
import subprocess
import sys

import pytest
import torch
from typer.testing import CliRunner

from seq2seq.checkpoint import load_for_inference
from seq2seq.cli import app
from seq2seq.config import ConfigError, DecodeConfig, TokenizerConfig, validate_config
from seq2seq.data.batch import Batch, pad_sequences, token_batches
from seq2seq.data.text import (
    DataError,
    load_split,
    read_parallel_files,
    tokenize_pairs,
)
from seq2seq.data.tokenizer import EOS, PAD, Tokenizer
from seq2seq.decoding.search import Hypothesis
from seq2seq.decoding.translate import TranslationReport, source_limit, translate_sentences
from seq2seq.models import Seq2SeqModel
from seq2seq.training.loss import token_loss_sum
from tests.toys import TINY_MODELS, tiny_model

WORDS = (
    "the cat dog sleeps runs a red blue door house we you walk home big small tree sun old "
    "man sees eats bread water and on in"
).split()
MONSTER_LINE, ZWSP_LINE, EMPTY_TGT_LINE, BLANK_SRC_LINE = 5, 9, 12, 14
SIX = ["the cat sleeps", "", "a red door", " ", "\t\u00a0", "we walk home"]  # case 1, verbatim
FIVE = [
    "the cat sleeps .",
    "a red door .",
    "we walk home .",
    "the old man eats bread .",
    "you see a big tree .",
]


def toy_pairs(n: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    src = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7))) + " ." for _ in range(n)]
    return src, [" ".join(s.split()[-2::-1]) + " ." for s in src]


def write(path, lines: list[str], final_newline: bool = True) -> None:
    path.write_bytes(("\n".join(lines) + ("\n" if final_newline else "")).encode())


class Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """A 20-step Transformer on the toy corpus, whose training source has a 3,000-word line, a
    line of zero-width spaces and a blank-looking line, and whose target has an empty line."""
    from seq2seq.training.loop import train

    d = tmp_path_factory.mktemp("toy")
    src, tgt = toy_pairs(400, seed=7)
    src[MONSTER_LINE - 1] = " ".join(["house"] * 3000)
    src[ZWSP_LINE - 1], tgt[ZWSP_LINE - 1] = "\u200b\u200b\u200b", "house"
    tgt[EMPTY_TGT_LINE - 1] = ""
    src[BLANK_SRC_LINE - 1] = " \t\u00a0 "
    write(d / "train.de", src)
    write(d / "train.en", tgt)
    vsrc, vtgt = toy_pairs(20, seed=8)
    write(d / "val.de", vsrc)
    write(d / "val.en", vtgt)
    cfg = validate_config(
        {
            "data": {"train": str(d / "train"), "valid": str(d / "val"), "max_len": 60},
            "tokenizer": {"vocab_size": 60},
            "model": {
                "name": "transformer",
                "d_model": 32,
                "n_heads": 2,
                "d_ff": 64,
                "n_encoder_layers": 1,
                "n_decoder_layers": 1,
                "dropout": 0.0,
                "max_positions": 128,
            },
            "train": {"max_steps": 20, "batch_tokens": 400, "valid_every": 20, "lr": 0.005},
            "decode": {"batch_size": 16},
        }
    )
    logger, collect = logging.getLogger("seq2seq"), Collect()
    logger.addHandler(collect)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        train(cfg, d / "run")
    finally:
        logger.removeHandler(collect)
        logger.setLevel(level)
    model, tok, run_cfg = load_for_inference(d / "run")
    return {
        "dir": d,
        "run": d / "run",
        "log": collect.lines,
        "model": model,
        "tok": tok,
        "cfg": run_cfg,
    }


def translate_cli(
    run_dir, *args, lines: list[str] | None = None, tmp_path=None, final_newline: bool = True
):
    """``seq2seq translate`` in this process on a file; returns (exit code, stdout, stderr)."""
    logger = logging.getLogger("seq2seq")
    saved = (list(logger.handlers), logger.propagate, logger.level)
    extra = []
    if lines is not None:
        write(tmp_path / "in.txt", lines, final_newline)
        extra = ["-i", str(tmp_path / "in.txt")]
    try:
        r = CliRunner().invoke(app, ["translate", "-c", str(run_dir), *extra, *map(str, args)])
    finally:  # the CLI installs its own log handler; give pytest's caplog its logger back
        logger.handlers[:], logger.propagate, logger.level = saved
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


def translate_stdin(run_dir, text: bytes, *args):
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "seq2seq", "translate", "-c", str(run_dir), *map(str, args)],
        input=text,
        capture_output=True,
        env=env,
        timeout=300,
    )


def spy_encode(model):
    """Record every source batch the model is asked to encode."""
    seen: list[torch.Tensor] = []
    encode = model.encode

    def spy(src, src_mask):
        seen.append(src.clone())
        return encode(src, src_mask)

    model.encode = spy
    return seen


# 1. Blank and blank-looking lines


@pytest.mark.parametrize("final_newline", [True, False])
@pytest.mark.parametrize("batch,beam", [(1, 1), (1, 4), (2, 1), (2, 4)])
def test_blank_lines_keep_their_place_in_translate(toy, tmp_path, final_newline, batch, beam):
    code, out, _ = translate_cli(
        toy["run"],
        "--batch-size",
        batch,
        "--beam",
        beam,
        lines=SIX,
        tmp_path=tmp_path,
        final_newline=final_newline,
    )
    assert code == 0
    lines = out.split("\n")
    assert len(lines) == 7 and lines[-1] == ""  # six lines, each newline-terminated
    assert lines[1] == lines[3] == lines[4] == ""
    for k in (0, 2, 5):
        _, alone, _ = translate_cli(toy["run"], "--beam", beam, lines=[SIX[k]], tmp_path=tmp_path)
        assert lines[k] == alone.rstrip("\n")


@pytest.mark.parametrize("batch,beam", [(1, 1), (1, 4), (2, 1), (2, 4)])
def test_the_model_never_sees_a_blank_line(toy, batch, beam):
    model, tok = toy["model"], toy["tok"]
    seen = spy_encode(model)
    try:
        cfg = DecodeConfig(batch_size=batch, beam_size=beam)
        res = translate_sentences(model, tok, SIX, cfg)
    finally:
        del model.encode
    rows = [row[row != PAD].tolist() for src in seen for row in src]
    assert sorted(rows) == sorted(tok.encode_src([SIX[0], SIX[2], SIX[5]]))
    assert [bool(r.hypotheses) for r in res] == [True, False, True, False, False, True]
    assert [res[k].text for k in (1, 3, 4)] == ["", "", ""]


@pytest.mark.e2e  # the CLI in a subprocess
def test_blank_lines_and_a_nul_through_stdin_without_a_final_newline(toy):
    """stdin is read by the file rules (one subprocess run: the interpreter start is slow)."""
    lines = [*SIX, "the\x00cat sleeps"]
    r = translate_stdin(toy["run"], "\n".join(lines).encode(), "--batch-size", 2)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode().split("\n")
    assert len(out) == 8 and out[-1] == ""  # seven lines, each newline-terminated
    res = translate_sentences(toy["model"], toy["tok"], [*SIX, "thecat sleeps"], toy["cfg"].decode)
    assert out[:7] == [x.text for x in res]
    assert [out[k] for k in (1, 3, 4)] == ["", "", ""]
    assert "<stdin> line 7: NUL byte removed" in r.stderr.decode()


def test_training_drops_pairs_with_an_empty_side_and_counts_them(toy):
    log = "\n".join(toy["log"])
    src = toy["dir"] / "train.de"
    lines = ", ".join(map(str, (ZWSP_LINE, EMPTY_TGT_LINE, BLANK_SRC_LINE)))
    assert f"train: dropped 3 pairs (empty) at lines {lines} of {src}" in log


def test_validation_data_drops_empty_pairs_too(tmp_path):
    write(tmp_path / "v.de", SIX)
    write(tmp_path / "v.en", ["a", "b", "c", "d", "e", "f"])
    text = load_split(validate_config({"data": {"valid": str(tmp_path / "v")}}).data, "valid")
    assert text.src == ["the cat sleeps", "a red door", "we walk home"]
    assert text.tgt == ["a", "c", "f"] and text.line_no == [1, 3, 6]
    assert text.dropped == {"empty": [2, 4, 5]}


# 2. Line counts that are not `wc -l`

ODD = {
    "nul": ("\x00", "bc"),
    "u2028": ("\u2028", "b c"),
    "u0085": ("\u0085", "b c"),
    "lone_cr": ("\r", "b c"),
}


@pytest.mark.parametrize("name", list(ODD))
def test_odd_characters_never_split_a_line(tmp_path, caplog, name):
    odd, expected = ODD[name]
    (tmp_path / "s.de").write_bytes(f"a\nb{odd}c\nd\n".encode())
    (tmp_path / "t.en").write_bytes(b"x\ny\nz\n")
    with caplog.at_level(logging.WARNING, logger="seq2seq"):
        text = read_parallel_files(tmp_path / "s.de", tmp_path / "t.en")
    assert list(zip(text.src, text.tgt, strict=True)) == [("a", "x"), (expected, "y"), ("d", "z")]
    nul_warnings = [r.getMessage() for r in caplog.records if "NUL" in r.getMessage()]
    assert nul_warnings == (
        [f"{tmp_path / 's.de'} line 2: NUL byte removed"] if odd == "\x00" else []
    )


@pytest.mark.parametrize("name", list(ODD))
def test_odd_characters_keep_translate_aligned(toy, tmp_path, name):
    odd, _ = ODD[name]
    (tmp_path / "in.txt").write_bytes(f"the cat\nthe{odd}dog\nwe walk\n".encode())
    code, out, _ = translate_cli(toy["run"], "-i", tmp_path / "in.txt")
    assert code == 0 and len(out.split("\n")) == 4
    same = "thedog" if odd == "\x00" else "the dog"  # NUL removed, the others a space
    res = translate_sentences(toy["model"], toy["tok"], [f"the{odd}dog", same], toy["cfg"].decode)
    assert res[0].text == res[1].text  # normalised the same way in the Python API


@pytest.mark.parametrize("split", ["train", "valid"])
def test_misaligned_files_stop_before_training_and_write_no_checkpoint(tmp_path, split):
    from seq2seq.training.loop import train

    src, tgt = toy_pairs(4, seed=1)
    for prefix in ("train", "val"):
        write(tmp_path / f"{prefix}.de", src)
        write(tmp_path / f"{prefix}.en", tgt)
    bad = "train" if split == "train" else "val"
    write(tmp_path / f"{bad}.de", src[:3])
    cfg = validate_config(
        {
            "data": {"train": str(tmp_path / "train"), "valid": str(tmp_path / "val")},
            "train": {"max_steps": 1},
        }
    )
    with pytest.raises(DataError) as e:
        train(cfg, tmp_path / "run")
    assert str(e.value).startswith(
        f"{tmp_path / f'{bad}.de'} has 3 lines but {tmp_path / f'{bad}.en'} has 4"
    )
    assert "\n" not in str(e.value)
    assert not list(tmp_path.rglob("*.pt"))


# 3. One monster sentence


def test_monster_training_line_is_filtered_before_batching_and_named(toy):
    log = "\n".join(toy["log"])
    assert (
        f"train: dropped 1 pairs (over max_len 60 tokens) at lines {MONSTER_LINE} of "
        f"{toy['dir'] / 'train.de'}"
    ) in log


def test_monster_line_with_max_len_100_and_token_batches(tmp_path, caplog):
    src, tgt = toy_pairs(30, seed=3)
    src[2] = " ".join(["house"] * 3000)
    write(tmp_path / "s.de", src)
    write(tmp_path / "t.en", tgt)
    text = read_parallel_files(tmp_path / "s.de", tmp_path / "t.en")
    tok = Tokenizer.train(text.src, text.tgt, TokenizerConfig(vocab_size=60))
    assert len(tok.encode_src([src[2]])[0]) >= 3000
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        pairs = tokenize_pairs(text, tok.encode_src, tok.encode_tgt, max_len=100, what="train")
    assert pairs.line_no == [i for i in range(1, 31) if i != 3]
    assert f"dropped 1 pairs (over max_len 100 tokens) at lines 3 of {tmp_path / 's.de'}" in (
        caplog.text
    )
    budget = 120
    src_lens, tgt_lens = [len(s) for s in pairs.src], [len(t) for t in pairs.tgt]
    batches = token_batches(src_lens, tgt_lens, budget, seed=0, epoch=0)
    assert sorted(i for b in batches for i in b) == list(range(29))
    for b in batches:
        assert len(b) * max(max(src_lens[i], tgt_lens[i] + 1) for i in b) <= budget


def long_lines(tok) -> tuple[str, str]:
    long = " ".join(WORDS[i % len(WORDS)] for i in range(2000))
    assert len(tok.encode_src([long])[0]) >= 2000
    return long, " ." * 300


def test_translate_cuts_long_sources_with_a_warning_per_line(toy, tmp_path):
    long, dots = long_lines(toy["tok"])
    # Toy max_positions 128, max_len 1.5 S + 10: a source fits if floor(1.5 S + 10) <= 128.
    assert source_limit(toy["model"], toy["cfg"].decode) == 78
    n_long, n_dots = (len(x) for x in toy["tok"].encode_src([long, dots]))
    lines = ["the cat sleeps", long, dots, "we walk home"]
    code, out, err = translate_cli(
        toy["run"], "--max-len-a", 0, "--max-len-b", 1, "--beam", 2, lines=lines, tmp_path=tmp_path
    )
    assert code == 0 and len(out.split("\n")) == 5
    # With max_len 0 S + 1 the output needs one position, so all 128 can hold the source.
    src = tmp_path / "in.txt"
    assert f"{src} line 2: {n_long} source tokens, cut to the first 128" in err
    assert f"{src} line 3: {n_dots} source tokens, cut to the first 128" in err
    # min_len 1 blocks EOS at step 0 and max length 1 stops every hypothesis there: all four cut.
    summary = [x for x in err.splitlines() if x.startswith("translate: ")]
    assert summary == [
        "translate: 2 source lines cut to the length limit; 4 translations stopped "
        "at the maximum length without EOS (see --max-len-a/--max-len-b)"
    ]


def test_max_src_len_bounds_any_model_and_positions_are_respected(toy):
    long, dots = long_lines(toy["tok"])
    cfg = toy["cfg"].decode.model_copy(update={"max_src_len": 50})
    seen = spy_encode(toy["model"])
    try:
        res = translate_sentences(toy["model"], toy["tok"], [long, dots, "a cat"], cfg)
    finally:
        del toy["model"].encode
    assert max(src.shape[1] for src in seen) == 50
    assert [r.truncated for r in res] == [True, True, False]
    for r in res:  # 50 source tokens -> at most floor(1.5 * 50 + 10) = 85 output tokens
        assert len(r.hypotheses[0].tokens) <= 85
    # With the default max_src_len the Transformer's 128 positions still bound the source.
    res = translate_sentences(toy["model"], toy["tok"], [long], toy["cfg"].decode)
    assert res[0].truncated and len(res[0].hypotheses[0].tokens) <= 128


def test_config_rejects_training_lengths_past_max_positions():
    with pytest.raises(ConfigError, match=r"max_positions \(64\) must be at least .* = 101"):
        validate_config(
            {"model": {"name": "transformer", "max_positions": 64}, "data": {"max_len": 100}}
        )


# 4. Unseen characters

UNSEEN = [
    "the ☃ sleeps .",
    "∑ a red door .",
    "ねこ と 猫 .",
    "The Cat Sleeps .",
    "a blorptak walks home .",
    "we walk home .",
]


def test_unseen_characters_translate_without_unk_and_are_reported(toy, tmp_path):
    assert set("blorptak") <= set("".join(WORDS))  # the invented word is made of known letters
    code, out, err = translate_cli(toy["run"], lines=UNSEEN, tmp_path=tmp_path)
    assert code == 0
    lines = out.split("\n")
    assert len(lines) == 7 and lines[-1] == ""
    assert "⁇" not in out and "<unk>" not in out
    assert (
        "translate: 4 of 6 source lines (66.7%) have characters the tokenizer does not cover" in err
    )
    res = translate_sentences(toy["model"], toy["tok"], UNSEEN, toy["cfg"].decode)
    assert [r.uncovered for r in res] == [True, True, True, True, False, False]


def test_byte_fallback_round_trips_after_the_target_normalisation(tmp_path):
    src, tgt = toy_pairs(200, seed=5)
    tok = Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=300, byte_fallback=True))
    odd = [*UNSEEN, "ｆｕｌｌ\u3000width", "two  spaces "]
    back = tok.decode_tgt(tok.encode_tgt(odd))
    assert back == [tok.normalize_tgt(x) for x in odd]
    assert back[:6] == UNSEEN  # the documented normalisation leaves these as they are
    assert back[6:] == ["ｆｕｌｌ\u3000width", "two spaces"]  # the target is not NFKC-folded
    assert tok.normalize("ｆｕｌｌ\u3000width") == "full width"  # the source is
    model = tiny_model("transformer", tok.src_vocab_size, tok.tgt_vocab_size)
    report = TranslationReport()
    report.add(translate_sentences(model, tok, UNSEEN, DecodeConfig(max_len_b=3)))
    assert (report.lines, report.uncovered) == (6, 0)


def test_byte_fallback_with_too_small_a_vocabulary_is_one_clear_line():
    src, tgt = toy_pairs(50, seed=5)
    with pytest.raises(ConfigError, match="vocab_size 60 and byte_fallback") as e:
        Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=60, byte_fallback=True))
    assert "\n" not in str(e.value)


# 5. Rows with nothing left


def test_zero_width_space_source_is_filtered_in_training(toy):
    text = load_split(toy["cfg"].data, "train")
    assert ZWSP_LINE in text.dropped["empty"] and ZWSP_LINE not in text.line_no
    assert len(text) == 400 - 3  # the monster goes later, at tokenisation (case 3)


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_empty_rows_in_a_transformer_batch(toy, mode):
    tok = toy["tok"]
    model = tiny_model("transformer", tok.src_vocab_size, tok.tgt_vocab_size)
    model.train(mode == "train")
    seen = spy_encode(model)
    res = translate_sentences(model, tok, ["", "a b c", ""], DecodeConfig(beam_size=2))
    del model.encode
    assert model.training == (mode == "train")  # translation restores the mode
    assert [src.shape[0] for src in seen] == [1]
    assert [r.text for r in res][::2] == ["", ""] and not res[0].hypotheses
    assert all(math.isfinite(h.score) for h in res[1].hypotheses)
    # The encoder, asked directly, keeps (B, S_max, D) and stays finite for an all-padding row.
    src = pad_sequences([[], tok.encode_src(["a b c"])[0], [], [5, 6]])
    for mask in (src != PAD, torch.zeros_like(src, dtype=torch.bool)):
        enc = model.encode(src, mask)["enc_out"]
        assert enc.shape == (4, src.shape[1], 32) and torch.isfinite(enc).all()
    batch = Batch.from_ids([[], [5, 6, 7], []], [[8], [9, 10], [11]])
    assert torch.isfinite(
        token_loss_sum(model(batch.src, batch.src_mask, batch.tgt_in), batch.tgt_out)
    )


@pytest.mark.parametrize("mode", ["eval", "train"])
@pytest.mark.parametrize("name", list(TINY_MODELS))
def test_every_encoder_keeps_shape_and_stays_finite_on_empty_rows(name, mode):
    model = tiny_model(name).train(mode == "train")
    src = pad_sequences([[], [5, 6, 7], [], [8]])
    for mask in (src != PAD, torch.zeros_like(src, dtype=torch.bool)):
        enc = model.encode(src, mask)["enc_out"]
        assert enc.shape[:2] == (4, 3) and torch.isfinite(enc).all()


# 6. Empty beam output


def ends_properly(h: Hypothesis, max_len: int) -> bool:
    """Exactly one EOS, at the end; or no EOS and cut at the maximum length."""
    if h.finished:
        return h.tokens.count(EOS) == 1 and h.tokens[-1] == EOS
    return EOS not in h.tokens and len(h.tokens) == max_len


def test_min_len_default_is_one():
    assert DecodeConfig().min_len == 1


def test_beam_of_an_undertrained_model_never_returns_an_empty_translation(toy, tmp_path):
    code, out, _ = translate_cli(
        toy["run"], "--beam", 5, "--min-len", 1, lines=FIVE, tmp_path=tmp_path
    )
    assert code == 0
    assert all(out.split("\n")[:5]) and out.count("\n") == 5
    cfg = toy["cfg"].decode.with_method("beam", beam_size=5, min_len=1)
    res = translate_sentences(toy["model"], toy["tok"], FIVE, cfg, n_best=5)
    for r, ids in zip(res, toy["tok"].encode_src(FIVE), strict=True):
        max_len = math.floor(1.5 * len(ids) + 10)
        assert len(r.hypotheses) == 5
        assert all(ends_properly(h, max_len) for h in r.hypotheses)
        assert all(len(h.tokens) >= 2 or not h.finished for h in r.hypotheses)


class EagerEOS(Seq2SeqModel):
    """A scripted model that always ranks EOS first and one word second, whatever it has read:
    an undertrained model's worst habit, made certain."""

    def __init__(self, vocab: int, word: int):
        super().__init__()
        self.src_vocab_size = self.tgt_vocab_size = vocab
        self.logits = torch.full((vocab,), -10.0)
        self.logits[EOS], self.logits[word] = 0.0, -1.0

    def encode(self, src, src_mask):
        return {"src_mask": src_mask}

    def init_state(self, enc):
        return dict(enc)

    def decode_step(self, prev_tokens, state, need_attention=False):
        return self.logits.repeat(prev_tokens.shape[0], 1), None, state  # search writes to it


@pytest.mark.parametrize("beam", [1, 5])
def test_min_len_blocks_the_empty_translation_an_eager_eos_prefers(toy, beam):
    tok = toy["tok"]
    word = tok.encode_tgt(["the"])[0][0]
    model = EagerEOS(tok.tgt_vocab_size, word)
    (word_text,) = tok.decode_tgt([[word]])  # the first piece of "the": "the", "th" or "t"
    assert word_text and "the".startswith(word_text)
    for min_len, expected in ((0, ""), (1, word_text)):
        cfg = DecodeConfig(beam_size=beam, min_len=min_len)
        assert [r.text for r in translate_sentences(model, tok, FIVE, cfg)] == [expected] * 5

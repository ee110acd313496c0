"""Search constraints no output can meet, and the n-best order: when ``no_repeat_ngram`` and
``min_len`` leave no token at a step, every search ends the hypothesis there (unfinished, no PAD,
no forbidden token, ``blocked`` naming the constraints) and ``translate`` warns once for the line;
a sampling temperature so small that logits / τ overflows draws greedy's choice; every beam
n-best list is sorted by the score it reports, at any beam width."""

from __future__ import annotations

import json
import math
import random

import pytest
import torch

from seq2seq.config import DecodeConfig
from seq2seq.data.tokenizer import BOS, EOS, PAD
from seq2seq.decoding.search import search
from seq2seq.models.base import Seq2SeqModel
from tests.toys import run_cli, tiny_model


class Scripted(Seq2SeqModel):
    """Next-token logits drawn from a generator seeded by (seed, source id, prefix), so a search
    sees the same distribution for the same prefix in any batch; ``scale`` 0 makes every token
    equally likely."""

    static_state_keys = frozenset({"src_mask", "sid"})

    def __init__(self, vocab: int, seed: int = 0, scale: float = 2.0):
        super().__init__()
        self.src_vocab_size = self.tgt_vocab_size = vocab
        self.seed, self.scale = seed, scale

    def encode(self, src, src_mask):
        return {"sid": src[:, 0], "src_mask": src_mask}

    def init_state(self, enc):
        return {**enc, "prefix": enc["sid"].new_zeros(len(enc["sid"]), 0)}

    def decode_step(self, prev_tokens, state, need_attention=False):
        prefix = torch.cat([state["prefix"], prev_tokens.unsqueeze(1)], 1)
        rows = []
        for r in range(len(prev_tokens)):
            key = random.Random(repr((self.seed, int(state["sid"][r]), prefix[r].tolist())))
            g = torch.Generator().manual_seed(key.getrandbits(62))
            rows.append(torch.randn(self.tgt_vocab_size, generator=g) * self.scale)
        return torch.stack(rows), None, {**state, "prefix": prefix}


SRC = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])


def _search(model, src, n_best: int = 1, method: str = "greedy", **cfg):
    """``search`` (the SEARCHES entry of ``method``) with these decode settings."""
    return search(model, src, src != 0, DecodeConfig(method=method, **cfg), n_best)


@pytest.mark.parametrize("beam", [2, 8, 64])
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_every_n_best_list_is_sorted_by_the_score_it_reports(beam, alpha):
    """64 beams over 53 pieces used to end an n-best list with cut hypotheses scoring above the
    finished ones before them."""
    for seed in range(3):
        model = Scripted(53, seed)
        kw = {"method": "beam", "beam_size": beam, "length_penalty": alpha}
        kw |= {"max_len_a": 1.0, "max_len_b": 3}
        lists, ones = _search(model, SRC, beam, **kw), _search(model, SRC, 1, **kw)
        for hyps, one in zip(lists, ones, strict=True):
            scores = [h.score for h in hyps]
            assert scores == sorted(scores, reverse=True), scores
            assert all(math.isfinite(s) for s in scores)
            assert len({tuple(h.tokens) for h in hyps}) == len(hyps)
            assert not any({PAD, BOS} & set(h.tokens) for h in hyps)
            assert hyps[0].tokens == one[0].tokens  # the n-best list starts with the 1-best


V, UNK_AND_WORDS = 8, 5  # pieces 0-7: PAD, UNK, BOS, EOS and 4 words; UNK and the words allowed


def _searches(model, **kw):
    yield "greedy", _search(model, SRC, **kw)
    yield "beam", _search(model, SRC, 3, method="beam", beam_size=3, **kw)
    yield "sample", _search(model, SRC, 2, method="sample", seed=1, **kw)


@pytest.mark.parametrize("scale", [0.0, 2.0])
def test_when_every_token_is_forbidden_the_hypothesis_ends_cleanly(scale):
    """--no-repeat-ngram 1 with --min-len 10 over 5 usable pieces: after 5 tokens nothing is
    allowed. Greedy used to emit PAD and a forbidden EOS marked finished (null score), beam an
    empty n-best list, sampling to die on a NaN distribution."""
    model = Scripted(V, scale=scale)
    kw = {"min_len": 10, "no_repeat_ngram": 1, "max_len_a": 0.0, "max_len_b": 20}
    for name, lists in _searches(model, **kw):
        for hyps in lists:
            assert hyps, name
            for h in hyps:
                assert len(h.tokens) == UNK_AND_WORDS and len(set(h.tokens)) == len(h.tokens)
                assert not {PAD, BOS, EOS} & set(h.tokens), (name, h.tokens)
                assert not h.finished and math.isfinite(h.score) and math.isfinite(h.log_prob)
                assert h.blocked == "--no-repeat-ngram 1, --min-len 10", (name, h.blocked)
                assert sum(h.token_log_probs) == pytest.approx(h.log_prob, abs=1e-4)


def test_constraints_that_leave_a_token_block_nothing_new():
    """min_len 3 leaves EOS for step 4 and after: every search finishes, nothing blocked."""
    model = Scripted(V)
    kw = {"min_len": 3, "no_repeat_ngram": 1, "max_len_a": 0.0, "max_len_b": 20}
    for name, lists in _searches(model, **kw):
        for h in (h for hyps in lists for h in hyps):
            assert h.blocked is None, name


def test_a_temperature_that_underflows_samples_greedys_choice():
    """softmax(logits / 1e-45) overflowed to NaN ("probability tensor contains inf/nan")."""
    model = tiny_model("transformer")
    src = torch.tensor([[5, 9, 12, 7], [8, 4, 0, 0]])
    greedy = _search(model, src, max_len_b=6)
    sampled = _search(model, src, method="sample", temperature=1e-45, seed=3, max_len_b=6)
    assert [s[0].tokens for s in sampled] == [g[0].tokens for g in greedy]


def test_translate_warns_once_per_line_that_its_constraints_blocked(
    synth_run, tmp_path, monkeypatch, capsys
):
    src = tmp_path / "in.de"
    src.write_text("Die Katze läuft über die Straße.\n\nDer Hund.\n", encoding="utf-8")
    args = ["--no-repeat-ngram", 1, "--min-len", 399, "--max-len-b", 400, "--format", "jsonl"]
    code, out, err = run_cli(monkeypatch, capsys, "translate", "-c", synth_run, "-i", src, *args)
    assert code == 0, err
    for line in (1, 3):
        said = f"{src} line {line}: every token is forbidden after "
        assert err.count(said) == 1, err
        assert "by --no-repeat-ngram 1, --min-len 399, the target vocabulary mask" in err
    assert err.count("every token is forbidden") == 2
    assert err.index(f"{src} line 1:") < err.index(f"{src} line 3:")  # in line order
    records = [json.loads(x) for x in out.splitlines()]
    for r in (records[0], records[2]):  # line 2 is blank: no translation, null score
        assert r["tokens"] and not {"<pad>", "<s>", "</s>"} & set(r["tokens"]), r["tokens"]
        assert r["finished"] is False and math.isfinite(r["score"])

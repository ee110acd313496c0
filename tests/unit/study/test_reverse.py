"""``seq2seq/study/reverse.py``: alignment accuracy against the known gold of a reversal on
scripted maps, and the plateau verdict."""

from __future__ import annotations

import pytest
import torch

from seq2seq.study.reverse import (
    alignment_result,
    check_task,
    gold_positions,
    plateau_verdict,
    sentence_hits,
)


class ScriptedAttention:
    """A stand-in model whose cross-attention is scripted: ``heads[(layer, head)]`` is
    ``"reverse"`` (row t peaks at source n-1-t), ``"lag"`` (at n-t, one to the right, as far as
    n-1), ``"identity"`` (at t) or ``"first"`` (at 0), for each sentence's real length n; the EOS
    row (t = n) and padding peak at 0."""

    def __init__(self, heads: dict[tuple[int, int], str], layers: int = 1, n_heads: int = 1):
        self.heads, self.layers, self.n_heads = heads, layers, n_heads

    def cross_attention_maps(self, src, src_mask, tgt_in):
        (b, s), t = src.shape, tgt_in.shape[1]
        maps = torch.full((b, self.layers, self.n_heads, t, s), 0.01)
        for i, n in enumerate(src_mask.sum(1).tolist()):
            for (layer, head), kind in self.heads.items():
                for j in range(t):
                    where = {
                        "reverse": n - 1 - j,
                        "lag": min(n - j, n - 1),
                        "identity": j,
                        "first": 0,
                    }
                    k = where[kind] if j < n else 0
                    maps[i, layer, head, j, k] = 0.9
        return maps


def reversed_ids(lengths: list[int]) -> tuple[list[list[int]], list[list[int]]]:
    src = [[4 + (7 * i + j) % 20 for j in range(n)] for i, n in enumerate(lengths)]
    return src, [s[::-1] for s in src]


def test_gold_positions_skip_eos_and_padding():
    gold = gold_positions(torch.tensor([4, 2]), 5)
    assert gold.tolist() == [[3, 2, 1, 0, -1], [1, 0, -1, -1, -1]]
    assert gold_positions(torch.tensor([3]), 4, "copy").tolist() == [[0, 1, 2, -1]]


def test_a_reversal_map_aligns_fully_and_an_identity_map_only_at_the_middle():
    src, tgt = reversed_ids([4, 5])
    hits, counted, offsets = sentence_hits(
        ScriptedAttention({(0, 0): "reverse"}), src, tgt, "reverse", "cpu"
    )
    assert counted.tolist() == [4, 5]  # the symbols; EOS is not counted
    assert hits[:, 0, 0].tolist() == [4, 5]
    assert offsets[:, 0, 0].tolist() == [[0, 0, 0, 4, 0, 0, 0], [0, 0, 0, 5, 0, 0, 0]]
    # identity: t = n-1-t only at the middle of an odd length: none of 4, one of 5
    hits, _, offsets = sentence_hits(
        ScriptedAttention({(0, 0): "identity"}), src, tgt, "reverse", "cpu"
    )
    assert hits[:, 0, 0].tolist() == [0, 1]
    # argmax - gold = 2t - (n-1): -3, -1, 1, 3 for n = 4; (-4,) -2, 0, 2 (, 4) for n = 5
    assert offsets[:, 0, 0].tolist() == [[1, 0, 1, 0, 1, 0, 1], [0, 1, 0, 1, 0, 1, 0]]
    res = alignment_result(
        ScriptedAttention({(0, 0): "identity"}),
        (src, tgt),
        (src, tgt),
        [4, 5],
        (4, 8),
        "reverse",
        "cpu",
    )
    assert res["accuracy"] == pytest.approx(100 / 9)
    assert res["best_head"] is None and res["per_head"] == [[pytest.approx(100 / 9, abs=0.01)]]
    assert [(r["bucket"], r["positions"], r["accuracy"]) for r in res["by_length"]] == [
        ("1-4", 4, 0.0),
        ("5-8", 5, pytest.approx(20.0)),
        ("9+", 0, None),
    ]


def test_an_alignment_shifted_by_one_is_named_by_its_offset():
    src, tgt = reversed_ids([4, 5, 6])
    res = alignment_result(
        ScriptedAttention({(0, 0): "lag"}),
        (src, tgt),
        (src, tgt),
        [4, 5, 6],
        (10,),
        "reverse",
        "cpu",
    )
    # every position but the first (which has no source to its right) attends one to the right
    assert res["accuracy"] == pytest.approx(100 * 3 / 15)
    assert res["commonest_offset"] == 1
    assert res["offsets"]["+1"] == pytest.approx(100 * 12 / 15, abs=0.01)
    assert res["offsets"]["+0"] == pytest.approx(100 * 3 / 15, abs=0.01)


def test_the_aligned_head_is_chosen_on_validation_and_rated_on_test():
    test_set, valid_set = reversed_ids([3, 6, 2]), reversed_ids([4, 5])
    model = ScriptedAttention(
        {(0, 0): "first", (0, 1): "identity", (1, 0): "reverse", (1, 1): "first"},
        layers=2,
        n_heads=2,
    )
    res = alignment_result(model, test_set, valid_set, [3, 6, 2], (10,), "reverse", "cpu")
    assert (res["layers"], res["heads"]) == (2, 2)
    assert res["best_head"] == {"layer": 1, "head": 0} and res["head_chosen_on"] == "validation"
    assert res["accuracy"] == pytest.approx(100.0)
    # "first" hits the last symbol of each sentence: 3 of 11; identity the middle of 3: 1 of 11
    assert res["per_head"] == [
        [pytest.approx(300 / 11, abs=0.01), pytest.approx(100 / 11, abs=0.01)],
        [100.0, pytest.approx(300 / 11, abs=0.01)],
    ]


def test_a_corpus_that_is_not_a_reversal_is_refused():
    src, tgt = reversed_ids([3, 4])
    check_task(src, tgt, "reverse", "test")
    with pytest.raises(ValueError, match="pair 2 of test is not the copy"):
        check_task([src[0][::-1], src[1]], tgt, "copy", "test")
    with pytest.raises(ValueError, match="pair 1 of valid is not the reverse"):
        check_task(src, src, "reverse", "valid")


def test_plateau_verdicts():
    assert plateau_verdict(96.0, [80.0]) == "trained"
    assert plateau_verdict(70.0, [60.0, 69.0, 70.0, 70.5]) == "flat"  # last three within 2
    assert plateau_verdict(70.0, [50.0, 60.0, 70.0]) == "rising"
    assert plateau_verdict(70.0, [70.0, 70.0]) == "too few"  # to tell: it said "rising"

"""The synthetic reversal study (``compare --alignment reverse``, ``make study-quick``): alignment
accuracy against the known gold on scripted maps, the plateau verdict, parameter-matched configs,
and an end-to-end compare that writes the alignment numbers for attention models only."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.config import load_config
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.models import build_model
from seq2seq.study.compare import Budget, StudyOptions, compare
from seq2seq.study.report.reverse import plateau_finding
from seq2seq.study.reverse import (
    alignment_result,
    check_task,
    gold_positions,
    plateau_verdict,
    sentence_hits,
)
from seq2seq.study.synth import make_pairs

from .toys import TINY_RUN_MODELS, reverse_data

ROOT = Path(__file__).resolve().parent.parent
REVERSE_CONFIGS = sorted((ROOT / "configs" / "study" / "reverse").glob("*.yaml"))


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
    assert plateau_verdict(70.0, [70.0, 70.0]) == "rising"  # too few checkpoints to tell


def test_the_finding_withholds_the_bottleneck_claim_from_a_rising_rnn():
    def model(name, attention, verdict, best):
        plateau = {"bucket": "1-10", "best_exact": best, "best_step": 600, "verdict": verdict}
        return {"name": name, "attention": attention, "plateau": plateau}

    res = {"models": [model("rnn", False, "rising", 60.0), model("att", True, "trained", 100.0)]}
    text = plateau_finding(res)
    assert "rnn 60.0% (best.pt, step 600), still rising" in text
    assert "att 100.0% (best.pt, step 600), at or above 95%" in text
    assert "not evidence of the fixed-vector bottleneck" in text
    res["models"][0]["plateau"]["verdict"] = "flat"
    assert "not evidence" not in plateau_finding(res)


def test_reverse_configs_have_matched_parameter_counts():
    """Every model of the study within 10% of every other, with the vocabulary compare gives them
    (one word tokenizer trained on the synthetic symbols)."""
    cfgs = [load_config(p) for p in REVERSE_CONFIGS]
    assert sorted(c.model.name for c in cfgs) == ["bahdanau", "luong", "rnn", "transformer"]
    pairs = make_pairs("reverse", 500, 1, 30, 20, seed=1)
    tok = Tokenizer.train([s for s, _ in pairs], [t for _, t in pairs], cfgs[0].tokenizer)
    assert tok.src_vocab_size == 24  # 20 symbols and pad, unk, bos, eos
    counts = {
        c.name: build_model(
            c.model, tok.src_vocab_size, tok.tgt_vocab_size, tok.joint
        ).num_parameters()
        for c in cfgs
    }
    assert max(counts.values()) <= 1.10 * min(counts.values()), counts


@pytest.mark.e2e  # three tiny models trained by compare
def test_compare_writes_alignment_for_attention_models_only(tmp_path):
    data = reverse_data(tmp_path, 200, 12, 20)
    models = {n: TINY_RUN_MODELS[n] for n in ("rnn", "bahdanau")}
    models["transformer"] = {
        **TINY_RUN_MODELS["transformer"],
        "n_decoder_layers": 2,
        "pre_norm": True,
    }
    paths = []
    for name, model in models.items():
        cfg = {
            "name": name,
            "data": data,
            "tokenizer": {"type": "word", "vocab_size": 16},
            "model": {**model, "dropout": 0.0},
            "train": {
                "max_steps": 6,
                "batch_tokens": 300,
                "valid_every": 2,
                "valid_bleu": False,
                "best_metric": "loss",
                "keep_last": 3,
                "seed": 1,
            },
            "decode": {"batch_size": 64, "max_len_a": 1.0, "max_len_b": 5},
        }
        paths.append(tmp_path / f"{name}.yaml")
        paths[-1].write_text(yaml.safe_dump(cfg))
    opts = StudyOptions(
        beams=(1,),
        concat_k=1,
        edges=(4, 8, 12),
        n_attention=0,
        exact_match=True,
        device="cpu",
        alignment="reverse",
    )
    torch.manual_seed(0)
    results = compare(paths, tmp_path / "out", Budget(), opts)
    assert results["alignment"] == "reverse"
    by_name = {m["name"]: m for m in results["models"]}
    assert by_name["rnn"]["alignment"] is None
    for name in ("bahdanau", "transformer"):
        a = by_name[name]["alignment"]
        assert 0 <= a["accuracy"] <= 100 and a["positions"] > 0
        assert sum(r["positions"] for r in a["by_length"]) == a["positions"]
    assert by_name["bahdanau"]["alignment"]["best_head"] is None
    t = by_name["transformer"]["alignment"]
    assert (t["layers"], t["heads"]) == (2, 2) and len(t["per_head"]) == 2
    assert set(t["best_head"]) == {"layer", "head"}
    for m in results["models"]:
        p = m["plateau"]
        assert [c["step"] for c in p["curve"]] == [2, 4, 6]  # keep_last 3
        assert p["bucket"] == "1-4" and p["verdict"] in {"trained", "flat", "rising"}
    assert (tmp_path / "out" / "exact_by_length.png").is_file()
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Reverse table" in report and results["findings"]["plateau"] in report
    assert "| transformer |" in report and "layer " in report

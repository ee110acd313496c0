"""The configs under ``configs/``: the zoo is there, every config loads and builds its model, the
best configs differ from the zoo only in training, the reverse study's models are matched in
size."""

from __future__ import annotations

import pytest
import torch

from seq2seq.config import load_config
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.models import build_model
from seq2seq.study.synth import make_pairs
from tests.toys import REPO

SHIPPED = sorted((REPO / "configs").rglob("*.yaml"))

REVERSE_CONFIGS = sorted((REPO / "configs" / "study" / "reverse").glob("*.yaml"))


def test_configs_are_shipped():
    names = {p.relative_to(REPO / "configs").as_posix() for p in SHIPPED}
    assert {f"multi30k/{m}.yaml" for m in ("rnn", "bahdanau", "luong_dot", "transformer")} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.relative_to(REPO / "configs").as_posix())
def test_shipped_config_loads_and_builds(path):
    cfg = load_config(path)
    v = cfg.tokenizer.vocab_size
    model = build_model(cfg.model, v, v, joint_vocab=cfg.tokenizer.joint)
    src = torch.randint(4, v, (2, 5))
    mask = torch.ones(2, 5, dtype=torch.bool)
    tgt_in = torch.randint(4, v, (2, 3))
    with torch.no_grad():
        logits = model.eval()(src, mask, tgt_in)
    assert logits.shape == (2, 3, v)
    assert torch.isfinite(logits).all()


def test_the_best_configs_differ_from_the_zoo_only_in_training():
    """configs/multi30k/best/ derive from the zoo: same data, tokenizer and architecture; only
    the training differs (dropout included: the best Transformer's is 0.3, the zoo's 0.1)."""
    for path in sorted((REPO / "configs" / "multi30k" / "best").glob("*.yaml")):
        best, zoo = load_config(path), load_config(REPO / "configs" / "multi30k" / path.name)
        same_dropout = best.model.model_copy(update={"dropout": zoo.model.dropout})
        assert (best.data, best.tokenizer, same_dropout) == (zoo.data, zoo.tokenizer, zoo.model)
        assert best.train.max_time == 100 and best.train.patience and best.train.keep_best >= 5


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

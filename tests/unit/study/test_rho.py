"""Rule v2's primary statistic (``study.rho``): the derangement, each caption's NLL alone, with a
wrong source and in its join by hand against a scripted oracle and whatever the batches, rho as a
ratio of sums, its paired intervals; the per-line files that keep it (``study.lines``)."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
import torch

from seq2seq.study.cells import cap_hypotheses, length_caps
from seq2seq.study.lines import line_record, read_lines, write_lines
from seq2seq.study.rho import (
    CaptionNLL,
    caption_nlls,
    derangement,
    position_rho,
    rho_difference_ci,
    rho_spread,
)
from seq2seq.study.stats import BleuStats, bootstrap_ci
from tests.corpora import joined_evalset
from tests.toys import tiny_model
from tests.unit.study.test_nll import LengthOracle

CPU = torch.device("cpu")


def test_the_wrong_source_is_a_derangement_the_same_for_every_model():
    for n in range(2, 40):
        d = derangement(n)
        assert sorted(d) == list(range(n)) and not (d == np.arange(n)).any()
    assert list(derangement(6)) == [3, 4, 5, 0, 1, 2]
    with pytest.raises(ValueError, match="at least 2 captions"):
        derangement(1)


def test_caption_nlls_of_a_scripted_oracle_by_hand(synth_tokenizer):
    tok = synth_tokenizer
    ev = joined_evalset(13, 4, seed=8)
    src, tgt = tok.encode_src(ev.src[:13]), tok.encode_tgt(ev.ref[:13])
    v = tok.tgt_vocab_size
    nll = caption_nlls(LengthOracle(v), tok, ev, CPU, batch_tokens=60)
    wrong = derangement(13)
    for i in range(13):  # EOS excluded: every caption token costs cost(source length)
        assert nll.tokens[i] == len(tgt[i])
        assert nll.alone[i] == pytest.approx(
            len(tgt[i]) * LengthOracle.cost(len(src[i]), v), rel=1e-5
        )
        want = len(tgt[i]) * LengthOracle.cost(len(src[wrong[i]]), v)
        assert nll.free[i] == pytest.approx(want, rel=1e-5)
    for k in (2, 3, 4):
        assert nll.units[k].shape == (13 // k, k)
        for j, row in enumerate(nll.units[k]):
            s_join = sum(len(src[p]) for p in row)
            for c, p in enumerate(row):
                want = len(tgt[p]) * LengthOracle.cost(s_join, v)
                assert nll.ctx[k][j, c] == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize("name", ["rnn", "bahdanau", "transformer"])
def test_caption_nlls_do_not_depend_on_the_batches(name, synth_tokenizer):
    tok = synth_tokenizer
    ev = joined_evalset(12, 3, seed=8)
    model = tiny_model(name, tok.src_vocab_size, tok.tgt_vocab_size).train()
    small = caption_nlls(model, tok, ev, CPU, batch_tokens=40)
    assert model.training  # put back as it was
    large = caption_nlls(model, tok, ev, CPU, batch_tokens=5000)
    for a, b in (
        (small.alone, large.alone),
        (small.free, large.free),
        (small.ctx[3], large.ctx[3]),
    ):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-4)


def scripted(n_lines: int, k: int, kept: float, seed: int = 0, noise: float = 0.0) -> CaptionNLL:
    """Captions whose source is worth 2 nats per token, ``kept`` of it left in the join."""
    rng = np.random.default_rng(seed)
    n = n_lines * k
    tokens = rng.integers(5, 15, n).astype(np.int64)
    alone = 1.0 * tokens
    free = alone + 2.0 * tokens
    units = np.arange(n, dtype=np.int64).reshape(n_lines, k)
    share = np.clip(kept + noise * rng.normal(size=n), 0, 1)
    ctx = (free - share * (free - alone))[units]
    return CaptionNLL(tokens, alone, free, {k: ctx}, {k: units})


def test_rho_is_a_ratio_of_sums_of_what_survives():
    assert scripted(50, 4, 1.0).rho(4) == pytest.approx(1.0)  # joining costs nothing
    assert scripted(50, 4, 0.0).rho(4) == pytest.approx(0.0)  # no better than a wrong source
    assert scripted(50, 4, 0.37).rho(4) == pytest.approx(0.37)
    d = scripted(3, 2, 0.5)
    d.ctx[2][0] = d.free[d.units[2][0]]  # line 0 keeps nothing, lines 1-2 keep half
    worth = (d.free - d.alone)[d.units[2]].sum(1)
    assert d.rho(2) == pytest.approx(0.5 * worth[1:].sum() / worth.sum())
    assert d.rho(2, np.array([0, 0])) == pytest.approx(0.0) and d.rho(2, np.array([2])) == 0.5
    flat = scripted(3, 2, 0.5)
    flat.free = flat.alone.copy()
    assert np.isnan(flat.rho(2))  # the source is worth nothing: undefined


def test_rho_intervals_are_paired_bootstraps_over_joined_lines():
    a, b = scripted(250, 4, 0.9, seed=1, noise=0.1), scripted(250, 4, 0.4, seed=1, noise=0.1)
    d = rho_difference_ci(a, b, 4, n_bootstrap=200)
    assert d["difference"] == pytest.approx(a.rho(4) - b.rho(4)) and d["low"] > 0.4
    narrow = rho_difference_ci(a, b, 4, n_bootstrap=200, level=0.90)
    assert d["low"] <= narrow["low"] <= narrow["high"] <= d["high"] and narrow["level"] == 0.9
    same = rho_difference_ci(a, a, 4, n_bootstrap=50)
    assert same["low"] == same["high"] == same["difference"] == 0.0
    with pytest.raises(ValueError, match="scored on different lines"):
        rho_difference_ci(a, scripted(200, 4, 0.4), 4)
    with pytest.raises(ValueError, match="has no k = 3 lines"):
        rho_difference_ci(a, b, 3)


def test_rho_by_position_and_the_seeds_spread():
    """Position p keeps ``kept[p]`` of what its source is worth; over two seeds the spread is
    their mean, smallest and largest."""
    one, two = scripted(40, 3, 0.9), scripted(40, 3, 0.6, seed=1)
    for c, kept in ((one, (0.9, 0.5, 0.2)), (two, (0.6, 0.6, 0.6))):
        for p, share in enumerate(kept):
            u = c.units[3][:, p]
            c.ctx[3][:, p] = c.free[u] - share * (c.free[u] - c.alone[u])
            assert position_rho(c, 3, p) == pytest.approx(share)
    s = rho_spread([one, two])
    assert s["by_k"][1] == {"mean": 1.0, "low": 1.0, "high": 1.0, "n": 2}
    assert s["by_k"][3]["low"] == pytest.approx(min(one.rho(3), two.rho(3)))
    assert s["by_k"][3]["mean"] == pytest.approx((one.rho(3) + two.rho(3)) / 2)
    assert s["by_position"][1]["high"] == pytest.approx(0.9)
    assert s["by_position"][3] == pytest.approx({"mean": 0.4, "low": 0.2, "high": 0.6, "n": 2})
    assert sorted(s["by_position"]) == [1, 2, 3]  # the widest join's places


def test_bootstrap_level_picks_the_percentiles():
    values = np.arange(1000.0)
    base = bootstrap_ci(lambda i: float(values[i].mean()), 1000, 400, seed=3)
    ninety = bootstrap_ci(lambda i: float(values[i].mean()), 1000, 400, seed=3, level=0.9)
    assert base["low"] < ninety["low"] < ninety["high"] < base["high"]
    with pytest.raises(ValueError, match="coverage"):
        bootstrap_ci(lambda i: 0.0, 10, 10, level=1.0)


def test_the_length_cap_is_reference_free_and_cuts_words():
    assert length_caps(["a b c", "a", ""], 1.0) == [4, 2, 0]  # ceil(1.1 x words x r)
    assert length_caps(["a b c d e f g h i j"], 1.07) == [12]  # ceil(11.77)
    assert length_caps(["a b c d e f g h i j"], 1.0) == [11]  # 11.000000000000002 is 11
    hyps, cut = cap_hypotheses(["x y z w v", "x  y", "x y"], [3, 2, 5])
    assert hyps == ["x y z", "x  y", "x y"] and cut == [True, False, False]
    with pytest.raises(ValueError, match="3 length caps for 2 hypotheses"):
        cap_hypotheses(["a", "b"], [1, 2, 3])
    with pytest.raises(ValueError, match="must be positive"):
        length_caps(["a"], 0.0)


def test_a_per_line_file_keeps_everything_and_reads_back(tmp_path, synth_tokenizer):
    tok = synth_tokenizer
    ev = joined_evalset(8, 2, seed=8)
    model = tiny_model("bahdanau", tok.src_vocab_size, tok.tgt_vocab_size)
    n = len(ev.src)
    runaway = [r + " " + r for r in ev.ref]  # twice too long: the cap shortens every line
    decodes = {"greedy": (runaway, [i == 3 for i in range(n)]), "beam": (list(ev.ref), [False] * n)}
    caps = length_caps(ev.src, 1.0)
    captions = caption_nlls(model, tok, ev, CPU)
    rec = line_record("m", ev, decodes, caps, 1.0, captions, {}, None)
    path = write_lines(tmp_path / "lines" / "toy" / "m.json.gz", rec)
    assert write_lines(tmp_path / "again.json.gz", rec).read_bytes() == path.read_bytes()
    d = read_lines(path)
    assert d.record["model"] == "m" and d.set_name == "toy" and d.k == ev.k
    np.testing.assert_array_equal(d.stats("greedy"), BleuStats(runaway, ev.ref).stats)
    capped, short = cap_hypotheses(runaway, caps)
    greedy = d.record["decodes"]["greedy"]
    np.testing.assert_array_equal(greedy["capped_stats"], BleuStats(capped, ev.ref).stats)
    assert greedy["capped"] == [i for i, c in enumerate(short) if c] and greedy["cut"] == [3]
    assert d.k1_ratio("beam") == 1.0 and d.k1_ratio() > 1.9  # k = 1 lines: twice too long
    assert d.captions.rho(2) == pytest.approx(captions.rho(2))
    assert d.stats("beam")[:, 2].sum() == d.stats("beam")[:, 6].sum()  # the references themselves
    (tmp_path / "bad.json.gz").write_bytes(gzip.compress(b"{}"))
    with pytest.raises(ValueError, match=r"bad.json.gz: not a study per-line file"):
        read_lines(tmp_path / "bad.json.gz")
    (tmp_path / "torn.json.gz").write_bytes(path.read_bytes()[:50])
    with pytest.raises(ValueError, match=r"torn.json.gz: cannot read this per-line file"):
        read_lines(tmp_path / "torn.json.gz")

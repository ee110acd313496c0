"""``Ensemble``: a model to the searches whose step distribution is the mean of its members'.
One model, or two copies of it, decode as the model alone (greedy and beam, tokens and scores);
two scripted oracles decode, by hand, to the argmax of their averaged distribution; two toy models
of different families follow the step-by-step argmax of their mean probability; the members must
share one tokenizer; the target vocabulary mask is the union of the members' (none if one has
none)."""

from __future__ import annotations

import math

import pytest
import torch

from seq2seq.config import TokenizerConfig
from seq2seq.data.tokenizer import BOS, EOS, PAD, Tokenizer
from seq2seq.decoding.ensemble import Ensemble, check_same_tokenizer, mean_log_probs
from seq2seq.decoding.search import beam_search, greedy_search
from tests.toys import Oracle, random_batch, tiny_model
from tests.unit.decoding.limits import limits

A, B, C = 4, 5, 6
SENT = 4
FAMILIES = ["rnn", "bahdanau", "transformer"]


def same_hyps(a, b):
    assert [h.tokens for h in a] == [h.tokens for h in b]
    for x, y in zip(a, b, strict=True):
        assert x.score == pytest.approx(y.score, abs=1e-4)
        assert x.log_prob == pytest.approx(y.log_prob, abs=1e-4)
        assert x.finished == y.finished


def decode_both(model, src):
    """Greedy hypotheses, and beam search's (K 3, 2-best, alpha 1) flattened."""
    greedy = greedy_search(model, src, src != PAD, limits(max_len_b=8))
    beam = beam_search(
        model,
        src,
        src != PAD,
        limits("beam", beam_size=3, length_penalty=1.0, max_len_b=8),
        n_best=2,
    )
    return greedy, [h for hyps in beam for h in hyps]


@pytest.mark.parametrize("name", FAMILIES)
def test_an_ensemble_of_one_model_decodes_as_the_model(name):
    model, src = tiny_model(name), random_batch(4, seed=3)
    alone, ens = decode_both(model, src), decode_both(Ensemble([model]), src)
    same_hyps(alone[0], ens[0])
    same_hyps(alone[1], ens[1])


@pytest.mark.parametrize("name", FAMILIES)
def test_an_ensemble_of_two_copies_decodes_as_one(name):
    model, src = tiny_model(name), random_batch(4, seed=4)
    copy = tiny_model(name)  # the same weights, another object
    alone, ens = decode_both(model, src), decode_both(Ensemble([model, copy]), src)
    same_hyps(alone[0], ens[0])
    same_hyps(alone[1], ens[1])


# Two oracles: the first says A then C, the second B. Their mean probability prefers A (.4505)
# then EOS (.65), an output neither says alone; their mean log-probability (a product of experts)
# would prefer B at the first step (sqrt(.1 * .5) > sqrt(.9 * .001)).
FIRST = {(SENT, ()): {A: 0.9, B: 0.1}, (SENT, (A,)): {C: 0.6, EOS: 0.4}}
SECOND = {(SENT, ()): {A: 0.001, B: 0.5, C: 0.499}, (SENT, (A,)): {EOS: 0.9, C: 0.1}}


def test_two_oracles_decode_to_the_argmax_of_their_mean_distribution():
    src = torch.tensor([[SENT]])
    kw = {"max_len_a": 0.0, "max_len_b": 5}
    (first,) = greedy_search(Oracle(FIRST), src, src != 0, limits(**kw))
    (second,) = greedy_search(Oracle(SECOND), src, src != 0, limits(**kw))
    assert first.tokens == [A, C, EOS] and second.tokens == [B, EOS]
    (ens,) = greedy_search(Ensemble([Oracle(FIRST), Oracle(SECOND)]), src, src != 0, limits(**kw))
    # step 1: A (.9 + .001) / 2 = .4505, B (.1 + .5) / 2 = .3, C .2495; step 2: EOS (.4 + .9) / 2
    assert ens.tokens == [A, EOS] and ens.finished
    assert ens.log_prob == pytest.approx(math.log(0.4505) + math.log(0.65), abs=1e-6)
    (beam,) = beam_search(
        Ensemble([Oracle(FIRST), Oracle(SECOND)]), src, src != 0, limits("beam", beam_size=1, **kw)
    )
    assert beam[0].tokens == [A, EOS]
    assert beam[0].log_prob == pytest.approx(ens.log_prob, abs=1e-6)


def test_mean_log_probs_is_the_log_of_the_mean_probability():
    x, y = torch.randn(3, 7), torch.randn(3, 7)
    want = torch.log((x.softmax(-1) + y.softmax(-1)) / 2)
    assert torch.allclose(mean_log_probs([x, y]), want, atol=1e-6)


def test_two_families_follow_the_stepwise_argmax_of_their_mean_probability():
    rnn, tf = tiny_model("bahdanau", seed=1), tiny_model("transformer", seed=2)
    src = random_batch(3, seed=5)
    hyps = greedy_search(Ensemble([rnn, tf]), src, src != PAD, limits(max_len_b=6))
    for i, h in enumerate(hyps):
        row, prefix, total = src[i : i + 1], [], 0.0
        row = row[:, : int((row != PAD).sum())]
        while len(prefix) < len(h.tokens):
            tgt_in = torch.tensor([[BOS, *prefix]])
            with torch.no_grad():
                probs = sum(m(row, row != PAD, tgt_in)[0, -1].softmax(-1) for m in (rnn, tf)) / 2
            probs[PAD] = probs[BOS] = 0
            nxt = int(probs.argmax())
            prefix.append(nxt)
            total += math.log(float(probs[nxt]))
            if nxt == EOS:
                break
        assert h.tokens == prefix
        assert h.log_prob == pytest.approx(total, abs=1e-4)


def test_mixed_families_run_through_beam_search_with_attention():
    ens = Ensemble([tiny_model("rnn"), tiny_model("transformer"), tiny_model("luong_dot")])
    assert ens.has_attention and ens.max_positions is not None
    src = random_batch(3, seed=6)
    out = beam_search(
        ens, src, src != PAD, limits("beam", beam_size=3, max_len_b=5), need_attention=True
    )
    for i, (h,) in enumerate(out):
        assert h.attention is not None and h.attention.shape == (len(h.tokens), (src[i] != 0).sum())
        assert torch.allclose(h.attention.sum(-1), torch.ones(len(h.tokens)), atol=1e-4)


def test_members_must_share_their_vocabularies():
    with pytest.raises(ValueError, match="model 2 of the ensemble has a tgt vocabulary of 50"):
        Ensemble([tiny_model("rnn"), tiny_model("rnn", tgt_vocab=50)])
    with pytest.raises(ValueError, match="at least one model"):
        Ensemble([])


@pytest.fixture(scope="module")
def tokenizers(synth_tokenizer, synth_corpus):
    src = (synth_corpus / "train.de").read_text().splitlines()
    tgt = (synth_corpus / "train.en").read_text().splitlines()
    return synth_tokenizer, Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=150))


def test_models_with_another_tokenizer_are_one_line_naming_the_difference(tokenizers):
    ours, other = tokenizers
    check_same_tokenizer(["-c a", "-c b"], [ours, Tokenizer.from_state_dict(ours.state_dict())])
    with pytest.raises(ValueError) as e:
        check_same_tokenizer(["-c a", "-c b"], [ours, other])
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("-c b: its tokenizer (sha256 ")
    assert "differs from -c a's" in msg and "target vocabulary of 150 pieces, not 200" in msg


def test_the_target_vocabulary_is_the_union_of_the_members_or_none():
    def member(*ids):
        model = Oracle({(SENT, ()): {C: 0.5, A: 0.3, B: 0.2}})
        if ids:
            model.target_vocab = torch.zeros(8, dtype=torch.bool)
            model.target_vocab[[*ids, EOS]] = True
        return model

    both = Ensemble([member(A), member(B)])
    assert both.target_vocab.nonzero().squeeze(1).tolist() == [EOS, A, B]
    assert Ensemble([member(A), member()]).target_vocab is None  # one member allows everything
    src = torch.tensor([[SENT]])
    (h,) = greedy_search(both, src, src != PAD, limits(max_len_b=3))
    assert h.tokens == [A, EOS]  # C, the members' favourite, is in neither vocabulary
    (h,) = greedy_search(Ensemble([member(A)]), src, src != PAD, limits(max_len_b=3))
    assert h.tokens == [A, EOS]
    (h,) = greedy_search(Ensemble([member(B), member()]), src, src != PAD, limits(max_len_b=3))
    assert h.tokens == [C, EOS]

"""``seq2seq/study/plan.py``: the budget, the two-stage recipe's configs, the roles a study's
configs play, the pairs the rule rates, and the seed copies -- all decided before anything
trains."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from seq2seq.config import ConfigError, validate_config
from seq2seq.study.multi30k import pair_names
from seq2seq.study.plan import (
    Budget,
    Multi30kPlan,
    Recipe,
    check_plan,
    load_study_configs,
    multi30k_plan,
    roles,
    seed_configs,
)
from seq2seq.training.state import lr_at
from tests.toys import TINY_MODELS, slice_data, synth_run_raw, write_study_config


def study_cfg(name: str, model: str, **train):
    raw = synth_run_raw(Path("/data"), "rnn", max_steps=7, **train)
    raw["name"] = name
    raw["model"] = TINY_MODELS[model].model_dump(mode="json")
    raw["data"].update(concat_k=4, valid_concat_k=4, max_valid_pairs=10)
    return validate_config(raw)


def test_budget_takes_one_rule_in_one_line():
    with pytest.raises(ValueError) as e:
        Budget(steps=2, tokens=100)
    assert str(e.value) == "give --budget-steps or --budget-tokens, not both"
    with pytest.raises(ValueError, match="give one of --budget-minutes, --budget-steps, --budget"):
        Budget(1.0, 2, 3)
    assert Budget(tokens=5000).describe() == "5000 target tokens per model"


def test_a_token_budget_replaces_every_other_stop_rule(tmp_path, synth_corpus):
    path = tmp_path / "a.yaml"
    raw = synth_run_raw(synth_corpus, max_steps=50, max_epochs=3, max_time=9.0)
    path.write_text(yaml.safe_dump(raw))
    [cfg] = load_study_configs([path], Budget(tokens=5000), "cpu")
    t = cfg.train
    assert (t.max_tokens, t.max_steps, t.max_epochs, t.max_time) == (5000, None, None, None)
    raw["train"] = {**raw["train"], "max_tokens": 700}
    path.write_text(yaml.safe_dump(raw))
    [cfg] = load_study_configs([path], Budget(steps=7), "cpu")
    assert (cfg.train.max_steps, cfg.train.max_tokens) == (7, None)


def test_compare_refuses_configs_that_cannot_be_compared(tmp_path, synth_corpus):
    data, tok = slice_data(synth_corpus), {"vocab_size": 300}
    a = write_study_config(tmp_path, "a", "rnn", data, tok)
    (tmp_path / "dup").mkdir()
    dup = write_study_config(tmp_path / "dup", "a", "bahdanau", data, tok)
    other_test = write_study_config(
        tmp_path, "b", "rnn", {**data, "test": str(synth_corpus / "train")}, tok
    )
    other_tok = write_study_config(tmp_path, "c", "rnn", data, {"vocab_size": 500})
    with pytest.raises(ConfigError, match="name 'a' is also the name of"):
        load_study_configs([a, dup], Budget(), "cpu")
    with pytest.raises(ConfigError, match=r"b.yaml: data.test differs from .*a.yaml"):
        load_study_configs([a, other_test], Budget(), "cpu")
    with pytest.raises(ConfigError, match="c.yaml: the tokenizer section differs"):
        load_study_configs([a, other_tok], Budget(), "cpu")
    # the axes of the study may differ
    axes = write_study_config(tmp_path, "d", "rnn", data, tok, concat_k=4, max_src_words=10)
    cfgs = load_study_configs([a, axes], Budget(minutes=2.5), "cpu")
    assert [(c.train.max_time, c.train.max_steps) for c in cfgs] == [(2.5, None), (2.5, None)]


def test_the_single_stage_decays_to_a_tenth_and_holds_it_for_the_gates_quarter():
    cfg = study_cfg("b", "bahdanau", lr=0.002)
    single = Recipe(120, 40).single(cfg)
    assert single.name == "b-single"
    d, t = single.data, single.train
    assert (d.concat_k, d.valid_concat_k, d.max_valid_pairs) == (1, 1, None)
    assert (t.max_steps, t.max_tokens, t.max_time, t.max_epochs) == (120, None, None, None)
    assert t.valid_every == 15  # 8 validations: the plateau check reads the last quarter
    assert (t.schedule, t.lr, t.min_lr, t.init_from) == ("cosine", 0.002, 0.0002, None)
    assert t.decay_steps == 90  # the decay ends where the gate's last quarter begins
    assert lr_at(1, t) == pytest.approx(0.002, rel=1e-3)
    assert lr_at(60, t) > lr_at(89, t) > 2e-4  # decaying over the first three quarters
    assert [lr_at(s, t) for s in range(90, 121)] == [pytest.approx(2e-4)] * 31  # then held


@pytest.mark.parametrize("schedule", ["constant", "noam"])
def test_the_joined_stage_fine_tunes_from_half_the_peak_to_zero(schedule):
    extra = {"warmup_steps": 30} if schedule == "noam" else {}
    cfg = study_cfg("t", "transformer", schedule=schedule, lr=0.002, **extra)
    recipe = Recipe(120, 40)
    single = recipe.single(cfg)
    assert single.train.warmup_steps == extra.get("warmup_steps", 0)  # the config's warmup
    peak_at = max(1, single.train.warmup_steps)
    assert lr_at(peak_at, single.train) == pytest.approx(0.002, rel=1e-3)  # its peak, then decay
    joined = recipe.joined(cfg, Path("out/runs/t-single/last.pt"))
    assert joined.name == "t"
    assert (joined.data.concat_k, joined.data.valid_concat_k) == (4, 4)
    t = joined.train
    assert t.init_from == "out/runs/t-single/last.pt"
    assert (t.schedule, t.max_steps, t.min_lr, t.warmup_steps) == ("cosine", 40, 0.0, 0)
    assert t.lr == pytest.approx(0.001)
    assert lr_at(1, t) == pytest.approx(0.001, rel=1e-2) and lr_at(40, t) == 0.0


def test_recipe_refuses_empty_stages_and_no_joined_lines():
    with pytest.raises(ValueError, match="at least 1"):
        Recipe(0, 5)
    with pytest.raises(ValueError, match="k >= 2"):
        Recipe(5, 5, concat_k=1)


def test_roles_find_the_ablation_headline_and_negative_control():
    cfgs = [
        study_cfg("abl", "rnnencdec"),
        study_cfg("rnnsearch", "bahdanau"),
        study_cfg("plain", "rnn"),
        study_cfg("cho", "rnn_context_lstm"),
        study_cfg("luong", "luong_dot"),
    ]
    got = roles(cfgs, Multi30kPlan())
    assert got == {
        "abl": "ablation",
        "rnnsearch": "headline",
        "plain": "negative",
        "cho": "family",  # a fixed vector fed at every step is a family, not the control
        "luong": "family",
    }
    assert roles(cfgs, Multi30kPlan(headline="luong"))["luong"] == "headline"
    with pytest.raises(ConfigError, match="--reference 'nope' is not a compared config"):
        roles(cfgs, Multi30kPlan(reference="nope"))
    with pytest.raises(ConfigError, match="no rnnencdec config"):
        roles(cfgs[1:], Multi30kPlan())


def test_seed_copies_and_the_pairs_the_report_compares():
    cfgs = [study_cfg("abl", "rnnencdec"), study_cfg("rs", "bahdanau")]
    copies = seed_configs(cfgs, ["rs", "abl"], (1, 2, 3))
    assert [(c.name, c.train.seed) for c in copies] == [
        ("rs-seed2", 2),
        ("rs-seed3", 3),
        ("abl-seed2", 2),
        ("abl-seed3", 3),
    ]
    with pytest.raises(ConfigError, match="would share its name"):
        seed_configs([*cfgs, study_cfg("rs-seed2", "rnn")], ["rs"], (2,))

    def m(name, role, seed):
        return {"name": name, "role": role, "seed": seed, "base": name.split("-seed")[0]}

    models = [
        m("abl", "ablation", 1),
        m("rs", "headline", 1),
        m("plain", "negative", 1),
        m("luong", "family", 1),
        m("rs-seed2", "headline", 2),
        m("abl-seed2", "ablation", 2),
        m("rs-seed3", "headline", 3),
        m("abl-seed3", "ablation", 3),
        m("plain-seed3", "negative", 3),
        m("pool-seed4", "negative", 4),  # no ablation at seed 4: no pair
    ]
    assert pair_names(models) == [
        ("headline", "rs", "abl"),
        ("negative", "plain", "abl"),
        ("family", "luong", "abl"),
        ("headline", "rs-seed2", "abl-seed2"),
        ("headline", "rs-seed3", "abl-seed3"),
        ("negative", "plain-seed3", "abl-seed3"),
        ("seed", "abl-seed2", "abl"),  # every two seeds of one config, the later first
        ("seed", "abl-seed3", "abl"),
        ("seed", "abl-seed3", "abl-seed2"),
        ("seed", "rs-seed2", "rs"),
        ("seed", "rs-seed3", "rs"),
        ("seed", "rs-seed3", "rs-seed2"),
        ("seed", "plain-seed3", "plain"),
    ]


def test_negative_seeds_copy_the_plain_rnn_and_need_one():
    cfgs = [study_cfg("abl", "rnnencdec"), study_cfg("rs", "bahdanau"), study_cfg("plain", "rnn")]
    copies = check_plan(cfgs, Multi30kPlan(seeds=(1, 4), negative_seeds=(4, 5)))
    assert [c.name for c in copies] == ["abl-seed4", "rs-seed4", "plain-seed4", "plain-seed5"]
    with pytest.raises(ConfigError, match="--negative-seeds: no negative control"):
        check_plan(cfgs[:2], Multi30kPlan(negative_seeds=(4,)))


def test_a_study_of_one_config_is_checked_before_training_and_still_reports():
    """compare with the ablation alone trains and reports (no pair to compare);
    one config that is not the ablation is refused before anything is trained."""
    assert check_plan([study_cfg("abl", "rnnencdec")], Multi30kPlan()) == []
    assert pair_names([{"name": "abl", "role": "ablation", "seed": 1, "base": "abl"}]) == []
    with pytest.raises(ConfigError, match="no rnnencdec config to rate the others against"):
        check_plan([study_cfg("rs", "bahdanau")], Multi30kPlan())


def test_the_reference_must_be_a_fixed_context_model_other_than_the_headline():
    cfgs = [study_cfg("abl", "rnnencdec"), study_cfg("rs", "bahdanau")]
    with pytest.raises(ConfigError, match="--reference 'rs' is a bahdanau model, with attention"):
        roles(cfgs, Multi30kPlan(reference="rs"))
    with pytest.raises(ConfigError, match="--headline 'abl' is also the --reference"):
        roles(cfgs, Multi30kPlan(headline="abl"))


def test_multi30k_plan_takes_one_kind_of_options():
    """compare's options: a synthetic task (exact) gets no plan and refuses real-text options;
    real text needs both stages and parses its lists."""
    real = dict(single_steps=10, joined_steps=2, concat_k=3, alphas="0.6,1", seeds="1,2")
    real |= dict(negative_seeds=None, tests=None, score_only=False)
    none = Budget(None, None, None)
    synthetic = real | dict(single_steps=None, joined_steps=None, seeds=None)
    assert multi30k_plan(none, True, **synthetic) is None
    with pytest.raises(ValueError, match="trains under --budget-"):
        multi30k_plan(none, True, **real)
    with pytest.raises(ValueError, match="^--seeds is for the real-text study"):
        multi30k_plan(none, True, **(synthetic | dict(seeds="1")))
    with pytest.raises(ValueError, match="is for a synthetic task"):
        multi30k_plan(Budget(None, 5, None), False, **synthetic)
    with pytest.raises(ValueError, match="--alphas"):
        multi30k_plan(none, False, **(real | dict(alphas="1,0.5")))
    plan = multi30k_plan(none, False, **real, n_bootstrap=50, headline="luong")
    assert (plan.recipe, plan.alphas, plan.seeds) == (Recipe(10, 2, 3), (0.6, 1.0), (1, 2))
    assert (plan.n_bootstrap, plan.headline, plan.tests) == (50, "luong", ())

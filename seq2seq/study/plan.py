"""What a study trains, before anything is trained: the configs and their shared data, the budget
(synthetic half), the two-stage recipe and the roles (Multi30k half), the seed copies.

The Multi30k recipe (``Recipe``; ``Recipe.describe`` words it): a single-pair stage whose cosine
decay ends a quarter early, so the plateau gain (``verdict.PLATEAU_FROM``) reads a held
learning rate, then a fine-tuning stage on single plus joined pairs from its last checkpoint.
Every model batches the same data alike (one tokenizer, the same ``batch_tokens`` and seed), so
equal updates are equal target tokens. Why the decay, and why it ends a quarter early:
docs/results/study/pilot.md.

Roles: ``ablation`` (the reference every other model is compared with: ``rnnencdec``, RNNsearch
with one fixed context), ``headline`` (``bahdanau``, the paper's pair with the ablation),
``negative`` (the other fixed-vector designs, the plain ``rnn`` and the mean-pool ``rnnencdec``:
controls), ``family`` (every other model, ``rnn_context`` included); a seed copy (another
``train.seed``, named ``<name>-seed<s>``) keeps its config's role.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from seq2seq.config import Config, ConfigError, load_config, validate_config
from seq2seq.config.lists import parse_list
from seq2seq.decoding.tune import parse_floats
from seq2seq.models import MODELS
from seq2seq.study.verdict import PLATEAU_FROM

# Data keys every compared config must share; concat_k and max_src_words are the study's axes.
SHARED_DATA_KEYS = (
    "src_lang",
    "tgt_lang",
    "train",
    "valid",
    "test",
    "hf",
    "max_len",
    "max_train_pairs",
    "max_valid_pairs",
)
STOPS = {"max_time": None, "max_steps": None, "max_epochs": None, "max_tokens": None}
SINGLE_MIN_LR = 0.1  # the single stage's cosine ends at this share of the config's peak lr
JOINED_LR = 0.5  # the joined stage starts at this share of the config's peak lr


@dataclass
class Budget:
    """The one stopping rule every run of the synthetic half gets: minutes of training, updates,
    or target tokens (``train.max_tokens``); all None keeps each config's own. ValueError: more
    than one budget (one line naming the options)."""

    minutes: float | None = None
    steps: int | None = None
    tokens: int | None = None

    def __post_init__(self):
        given = [f"--budget-{k}" for k, v in vars(self).items() if v is not None]
        if len(given) == 2:
            raise ValueError(f"give {given[0]} or {given[1]}, not both")
        if len(given) > 2:
            raise ValueError(f"give one of {', '.join(given)}, not all three")

    @property
    def given(self) -> bool:
        return any(v is not None for v in vars(self).values())

    def describe(self) -> str:
        if self.minutes is not None:
            return f"{self.minutes:g} minutes of training per model"
        if self.steps is not None:
            return f"{self.steps} updates per model"
        if self.tokens is not None:
            return f"{self.tokens} target tokens per model"
        return "each config's own train.max_time / max_steps / max_epochs / max_tokens"


@dataclass
class StudyOptions:
    """What ``compare`` decodes and how it buckets the scores."""

    beams: tuple[int, ...] = (1, 5)
    concat_k: int = 4
    concat_n: int | None = None
    edges: tuple[int, ...] = (10, 20, 30, 40, 50, 60)
    n_attention: int = 3
    exact_match: bool = False
    device: str = "cpu"
    alignment: str | None = None  # a synthetic task ("reverse", "copy"): study/reverse.py checks
    jobs: int = 1  # trainings at a time (worker processes, one torch thread each)
    overwrite: bool = False  # replace another run in OUT/runs/<name> (runs.train_or_reuse)


@dataclass(frozen=True)
class Recipe:
    """The Multi30k half's two stages, in updates (the same for every model). ValueError: a
    stage of fewer than 1 update, or ``concat_k`` < 2."""

    single_steps: int
    joined_steps: int
    concat_k: int = 4
    single_validations: int = 8  # the plateau check compares the last with the sixth

    def __post_init__(self):
        if self.single_steps < 1 or self.joined_steps < 1:
            raise ValueError("--single-steps and --joined-steps must be at least 1")
        if self.concat_k < 2:
            raise ValueError(f"--concat-k {self.concat_k}: the joined stage needs k >= 2")

    def single(self, cfg: Config) -> Config:
        """The single-pair stage of ``cfg`` (module docstring): run ``<name>-single``, validated
        on the whole validation set ``single_validations`` times."""
        raw = cfg.model_dump(mode="json")
        raw["name"] = f"{cfg.name}-single"
        raw["data"].update(concat_k=1, valid_concat_k=1, max_valid_pairs=None)
        every = max(1, math.ceil(self.single_steps / self.single_validations))
        t = cfg.train
        raw["train"].update(
            STOPS,
            max_steps=self.single_steps,
            valid_every=every,
            init_from=None,
            schedule="cosine",
            min_lr=SINGLE_MIN_LR * t.lr,
            decay_steps=self.decay_steps,
            warmup_steps=min(t.warmup_steps, self.decay_steps - 1),
        )
        return validate_config(raw, f"{cfg.name}'s single-pair stage")

    @property
    def decay_steps(self) -> int:
        """The single stage's update where the decay ends and the gate's quarter begins."""

        return max(1, math.ceil(PLATEAU_FROM * self.single_steps))

    def joined(self, cfg: Config, init_from: Path) -> Config:
        """The fine-tuning stage from ``init_from`` (the single stage's last.pt; module
        docstring), validated once at the end on lines joined the same way."""
        raw = cfg.model_dump(mode="json")
        raw["data"].update(concat_k=self.concat_k, valid_concat_k=self.concat_k)
        raw["train"].update(
            STOPS,
            max_steps=self.joined_steps,
            init_from=str(init_from),
            schedule="cosine",
            lr=JOINED_LR * cfg.train.lr,
            min_lr=0.0,
            warmup_steps=0,
            valid_every=self.joined_steps,  # validated once, at the scored step
        )
        return validate_config(raw, f"{cfg.name}'s joined stage")

    def describe(self) -> str:
        return (
            f"{self.single_steps} updates on single pairs (each config's peak learning rate "
            f"along a cosine to {SINGLE_MIN_LR:g} of it at update {self.decay_steps}, held "
            f"there to the end), then {self.joined_steps} updates on "
            f"single plus joined pairs (k = 2..{self.concat_k}) from that checkpoint "
            f"({JOINED_LR:g} of the peak along a cosine to 0)"
        )


@dataclass
class Multi30kPlan:
    """How the Multi30k half trains, decodes and rates: the recipe, beam size, the length
    penalties tried on validation (the chosen one decodes the test lines), bootstrap resamples,
    the roles' run names, the seed copies."""

    recipe: Recipe = field(default_factory=lambda: Recipe(1, 1))
    beam: int = 5
    alphas: tuple[float, ...] = (0.6, 0.8, 1.0, 1.2, 1.4)
    n_bootstrap: int = 1000
    reference: str | None = None  # the ablation's run name; None: the run of model rnnencdec
    headline: str | None = None  # the attention run paired with it; None: the bahdanau run
    seeds: tuple[int, ...] = ()
    negative_seeds: tuple[int, ...] = ()  # seed copies of the negative control (plain rnn)
    tests: tuple[str, ...] = ()  # test-set prefixes to score (); () = the configs' data.test
    score_only: bool = False  # never train: score finished runs only
    only: tuple[str, ...] = ()  # train and score only these run names (); () = every run


def load_study_configs(paths: Sequence[str | Path], budget: Budget, device: str) -> list[Config]:
    """Load each config with the budget applied and check that they can be compared.

    Raises:
        ConfigError: a bad config, two configs with one ``name``, or configs that differ in data
            (other than ``concat_k`` / ``max_src_words``) or in the tokenizer section.
    """
    if not paths:
        raise ConfigError("compare: give at least one config")
    cfgs = [_with_budget(load_config(p), budget, device, str(p)) for p in paths]
    first, names = cfgs[0], {}
    for p, cfg in zip(paths, cfgs, strict=True):
        if cfg.name in names:
            raise ConfigError(
                f"{p}: name {cfg.name!r} is also the name of {names[cfg.name]}; "
                "each compared config needs its own name (it names the run)"
            )
        names[cfg.name] = p
        for key in SHARED_DATA_KEYS:
            if getattr(cfg.data, key) != getattr(first.data, key):
                raise ConfigError(
                    f"{p}: data.{key} differs from {paths[0]}'s; compared models "
                    "must train and test on the same data"
                )
        if cfg.tokenizer != first.tokenizer:
            raise ConfigError(
                f"{p}: the tokenizer section differs from {paths[0]}'s; compared "
                "models share one tokenizer"
            )
    return cfgs


def _with_budget(cfg: Config, budget: Budget, device: str, source: str) -> Config:
    raw = cfg.model_dump(mode="json")
    stop = {"max_time": budget.minutes, "max_steps": budget.steps, "max_tokens": budget.tokens}
    if budget.given:  # one at most (``Budget``)
        raw["train"].update(STOPS, **{k: v for k, v in stop.items() if v is not None})
    raw["train"]["device"] = device
    kind = "--budget-minutes" if budget.minutes is not None else "--budget-tokens"
    if raw["train"].get("schedule") == "cosine" and (budget.minutes or budget.tokens) is not None:
        raise ConfigError(
            f"{source}: {kind} replaces its max_steps, which its cosine schedule decays over; "
            "use --budget-steps for it, or a schedule without a fixed length"
        )
    return validate_config(raw, source)


# The options of the real-text study alone: those with no default, refused with a synthetic task
# when set; those with one, when given on the command line. Then a synthetic task's alone.
REAL_ONLY = ("--seeds", "--negative-seeds", "--test", "--score-only", "--only")
REAL_DEFAULTED = ("--alphas", "--bootstrap", "--reference", "--headline")
SYNTHETIC_ONLY = ("--beams", "--attention-n")


def multi30k_plan(
    budget: Budget,
    exact: bool,
    *,
    single_steps: int | None,
    joined_steps: int | None,
    concat_k: int,
    alphas: str,
    seeds: str | None,
    negative_seeds: str | None,
    tests: Sequence[str] | None,
    score_only: bool,
    only: str | None = None,
    on_command_line: Collection[str] = (),
    **given,
) -> Multi30kPlan | None:
    """``compare``'s plan for real text from its options (``given``: n_bootstrap, reference,
    headline; ``on_command_line``: the options the user typed, such as ``--alphas``), or None for
    a synthetic task (``exact``). ValueError: options of both kinds, real text without its two
    stages' steps, or a bad list."""
    if exact and (single_steps is not None or joined_steps is not None):
        raise ValueError(
            "--single-steps and --joined-steps train real text; a synthetic task "
            "(--exact-match, --alignment) trains under --budget-*: give one kind of options"
        )
    real_only = zip(REAL_ONLY, (seeds, negative_seeds, tests, score_only, only), strict=True)
    if exact and (named := [name for name, value in real_only if value]):
        raise ValueError(
            f"{named[0]} is for the real-text study (--single-steps, --joined-steps); a "
            "synthetic task (--exact-match, --alignment) takes its test set from its config"
        )
    other = REAL_DEFAULTED if exact else SYNTHETIC_ONLY
    if named := [name for name in other if name in on_command_line]:
        study, this = "a synthetic task (--exact-match, --alignment)", "the real-text study"
        if exact:
            study, this = "the real-text study (--single-steps, --joined-steps)", "a synthetic task"
        raise ValueError(f"{named[0]} is for {study}; {this} does not use it: leave it out")
    if exact:
        return None
    if single_steps is None or joined_steps is None:
        raise ValueError(
            "--budget-* is for a synthetic task: add --alignment or --exact-match"
            if budget.given
            else "real text trains with the two-stage recipe: give --single-steps and "
            "--joined-steps (make study's: --single-steps 1400 --joined-steps 200)"
        )
    return Multi30kPlan(
        recipe=Recipe(single_steps, joined_steps, concat_k),
        alphas=parse_floats(alphas, "--alphas"),
        seeds=parse_seeds(seeds) if seeds else (),
        negative_seeds=parse_seeds(negative_seeds, "--negative-seeds") if negative_seeds else (),
        tests=tuple(tests or ()),
        score_only=score_only,
        only=tuple(dict.fromkeys(x.strip() for x in only.split(",") if x.strip())) if only else (),
        **given,
    )


def parse_seeds(spec: str, option: str = "--seeds") -> tuple[int, ...]:
    """``"1,2,3"`` -> (1, 2, 3), or ValueError: not distinct integers from 0 to 2^32 - 1."""
    fix = "give training seeds from 0 to 2^32 - 1, such as 1,2,3"
    seeds = parse_list(spec, option, fix, int, 0, 2**32 - 1)
    if twice := sorted({s for s in seeds if seeds.count(s) > 1}):
        raise ValueError(f"{option} {spec!r}: seed {twice[0]} is given twice; give each seed once")
    return seeds


def roles(cfgs: Sequence[Config], plan: Multi30kPlan) -> dict[str, str]:
    """Run name -> role (ablation, headline, negative, family) of every compared config.

    Raises:
        ConfigError: no ablation (``--reference`` names no config, or no ``rnnencdec`` config),
            or ``--headline`` names no config (one line naming the option and the choices).
    """
    names = [c.name for c in cfgs]
    by_model = {c.name: c.model.name for c in cfgs}
    ref = _pick(plan.reference, "--reference", "rnnencdec", names, by_model)
    head = _pick(plan.headline, "--headline", "bahdanau", names, by_model, required=False)
    if MODELS[by_model[ref]].has_attention:
        raise ConfigError(
            f"--reference {ref!r} is a {by_model[ref]} model, with attention; the reference is "
            "the fixed-context ablation every attention model is rated against (rnnencdec)"
        )
    if head == ref:
        raise ConfigError(f"--headline {head!r} is also the --reference; name another config")
    out = {}
    for c in cfgs:
        if c.name == ref:
            out[c.name] = "ablation"
        elif c.name == head:
            out[c.name] = "headline"
        elif not MODELS[c.model.name].has_attention and not getattr(c.model, "feed_context", 0):
            out[c.name] = "negative"  # a fixed-vector design: the plain rnn, the mean-pool
        else:
            out[c.name] = "family"
    return out


def _pick(wanted, option, model, names, by_model, required=True) -> str | None:
    if wanted is not None:
        if wanted not in names:
            raise ConfigError(f"{option} {wanted!r} is not a compared config ({', '.join(names)})")
        return wanted
    found = [n for n in names if by_model[n] == model]
    if not found and required:
        raise ConfigError(
            f"compare: no {model} config to rate the others against; add "
            f"configs/study/multi30k/{model}.yaml or name one with {option}"
        )
    return found[0] if found else None


def seed_configs(cfgs: Sequence[Config], names: Sequence[str], seeds: Sequence[int]) -> list:
    """Copies of the configs named ``names`` with ``train.seed`` = s for each s in ``seeds``
    (the config's own seed is its main run and is skipped), named ``<name>-seed<s>``.
    ConfigError: a copy named like a config."""
    by_name = {c.name: c for c in cfgs}
    out = []
    for name in names:
        cfg = by_name[name]
        for s in seeds:
            if s == cfg.train.seed:
                continue
            raw = cfg.model_dump(mode="json")
            raw["name"] = f"{name}-seed{s}"
            raw["train"]["seed"] = s
            if raw["name"] in by_name:
                raise ConfigError(
                    f"--seeds: the seed copy {raw['name']!r} would share its name and run folder "
                    "with the config of that name; rename that config"
                )
            out.append(validate_config(raw, f"{name} with train.seed {s}"))
    return out


def check_plan(cfgs: Sequence[Config], plan: Multi30kPlan) -> list[Config]:
    """What ``plan`` names, checked before any tokenizer or training: the roles
    (``--reference``, ``--headline``), the seed copies of the headline pair (``--seeds``) and
    of the negative control (``--negative-seeds``). Returns the seed copies to train besides
    ``cfgs``; ConfigError: one line naming the option and what to do."""
    role_of = roles(cfgs, plan)
    pair = [c.name for c in cfgs if role_of[c.name] in ("headline", "ablation")]
    out = seed_configs(cfgs, pair, plan.seeds) if plan.seeds else []
    negative = [c.name for c in cfgs if role_of[c.name] == "negative"]
    if plan.negative_seeds and not negative:
        raise ConfigError(
            "--negative-seeds: no negative control among the configs (a fixed-vector config "
            "such as configs/study/multi30k/rnn.yaml)"
        )
    out += seed_configs(cfgs, negative, plan.negative_seeds)
    names = [c.name for c in (*cfgs, *out)]
    if unknown := [n for n in plan.only if n not in names]:
        raise ConfigError(f"--only {unknown[0]!r} is not a run of this study: {', '.join(names)}")
    return out

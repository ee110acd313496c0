"""Typed configuration: one YAML file with sections data, tokenizer, model, train, decode.

Every section is a pydantic model with ``extra="forbid"``, so a misspelt key is an error that names
its path (``model.n_head: unknown key``). Cross-field constraints (``d_model % n_heads == 0``, a dot
score needs equal encoder and decoder sizes) are checked once, before anything is built.
``--set key=value`` overrides go through the same validation as the file. A file may start from
another: ``base: ../transformer.yaml`` (relative to the file) merges the base under it, section by
section and key by key, so a derived config says only what differs and cannot drift from its base.
Reading the YAML (a key given twice is an error naming both lines), ``base:`` and ``--set`` is
``seq2seq/config_yaml.py``'s. A number not finite or out of bounds is refused with its range.

The ``model`` section's classes live beside the models, in ``seq2seq/models/configs.py`` (which
imports only pydantic, so this module still needs no torch), and are re-exported here; the union
``ModelConfig`` is built from that module's ``MODEL_CONFIGS``, so adding a model touches only
``models/``.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Mapping
from functools import reduce
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from seq2seq.config_yaml import ConfigError as ConfigError
from seq2seq.config_yaml import (
    apply_overrides,
    has_key,
    key_path,
    parse_override,
    read_config_file,
)
from seq2seq.models.configs import MODEL_CONFIGS, MODEL_NAMES
from seq2seq.models.configs import BahdanauConfig as BahdanauConfig
from seq2seq.models.configs import LuongConfig as LuongConfig
from seq2seq.models.configs import ModelConfigBase as ModelConfigBase
from seq2seq.models.configs import RNNConfig as RNNConfig
from seq2seq.models.configs import TransformerConfig as TransformerConfig


class _Section(BaseModel):
    # a float setting is finite: nan/inf are refused by name here, not found when training fails
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class HFSource(_Section):
    """A corpus on the Hugging Face hub (or a local dataset directory) read with ``datasets``."""

    path: str = Field(description="hub name such as bentrevett/multi30k, or a local dataset dir")
    name: str | None = Field(
        None, description="dataset configuration name, if the hub entry has any"
    )
    src_field: str = "de"
    tgt_field: str = "en"
    train_split: str = "train"
    valid_split: str = "validation"
    test_split: str = "test"


class DataConfig(_Section):
    """Where the parallel text comes from and how it is cleaned.

    Local corpora are named by a prefix: ``multi30k/train`` with ``src_lang: de`` reads
    ``multi30k/train.de`` or ``multi30k/train.de.gz``. A relative prefix is looked up in the working
    directory first, then under the data root ``$SEQ2SEQ_DATA_DIR`` (default ``../shared/data``).

    ``backend`` says how the training split is held (validation sets are small and always read into
    memory): ``memory`` reads it into Python lists; ``arrow`` tokenises it once into memory-mapped
    Arrow files cached under ``cache_dir`` by content hash; ``stream`` reads and tokenises it on the
    fly, for corpora that do not fit on disk twice (see ``seq2seq/corpus.py``).
    """

    src_lang: str = "de"
    tgt_lang: str = "en"
    train: str | None = "multi30k/train"
    valid: str | None = "multi30k/val"
    test: str | None = "multi30k/test_2016_flickr"
    hf: HFSource | None = None
    max_len: int = Field(100, ge=1, description="pairs with more tokens on either side are dropped")
    max_train_pairs: int | None = Field(None, ge=1, description="use only the first N pairs")
    max_valid_pairs: int | None = Field(None, ge=1, description="use only the first N valid pairs")
    concat_k: int = Field(1, ge=1, description="also train on pairs concatenated up to k at a time")
    valid_concat_k: int = Field(
        1,
        ge=1,
        description="also validate on validation lines joined k = 2..K at a time (consecutive, "
        "non-overlapping groups of the first lines, as the study joins test lines), so "
        "best.pt is chosen on long inputs too",
    )
    max_src_words: int | None = Field(
        None, ge=1, description="train only on pairs of at most N source words (RNNsearch-30/50)"
    )
    backend: Literal["memory", "arrow", "stream"] = Field(
        "memory", description="how the training split is held: lists, Arrow files, or a stream"
    )
    num_proc: int = Field(1, ge=1, description="arrow: processes that tokenise the training split")
    cache_dir: str | None = Field(
        None, description="arrow caches (default $SEQ2SEQ_CACHE_DIR, else ~/.cache/seq2seq)"
    )
    shuffle_buffer: int = Field(
        100_000, ge=1, description="stream: pairs bucketed by length and shuffled together"
    )
    pad_multiple: Literal["auto"] | Annotated[int, Field(ge=1)] = Field(
        "auto",
        description="training batches' lengths rounded up to a multiple of N (memory backend), "
        "so a GPU sees few distinct shapes; auto = 8 on CUDA, 1 on the CPU (padding costs "
        "compute there)",
    )
    dedup: bool = Field(
        False,
        description="drop repeated training pairs, and training pairs also in the validation or "
        "test split (compared after whitespace normalisation); memory backend",
    )

    @model_validator(mode="after")
    def _concat_needs_memory(self) -> DataConfig:
        if self.concat_k > 1 and self.backend != "memory":
            raise ValueError(f"concat_k > 1 needs backend 'memory', not {self.backend!r}")
        if self.max_src_words is not None and self.backend != "memory":
            raise ValueError(f"max_src_words needs backend 'memory', not {self.backend!r}")
        if self.dedup and self.backend != "memory":
            raise ValueError(f"dedup needs backend 'memory', not {self.backend!r}")
        return self


class TokenizerConfig(_Section):
    """sentencepiece settings (Kudo & Richardson 2018); trained on the training split only.

    Normalisation is per side: the source may be NFKC-folded (``nmt_nfkc``, sentencepiece's
    default) since only the model reads it, while the target is kept as written (``identity``): an
    NFKC rewrite there turns full-width ``，？１２３`` into ``,?123`` in every output, and a perfect
    system scores below 100 against the unrewritten references. A joint vocabulary stays one set of
    pieces, trained on the source as its rule rewrites it and the target as written.
    """

    type: Literal["unigram", "bpe", "word", "char"] = Field(
        "unigram", description="sentencepiece model; word = whitespace tokens (synthetic tasks)"
    )
    vocab_size: int = Field(8000, ge=16)
    joint: bool = True
    character_coverage: float = Field(1.0, gt=0.0, le=1.0)
    byte_fallback: bool = False
    max_sentences: int = Field(2_000_000, ge=1, description="sentences sampled to train the model")
    src_normalization: Literal["nmt_nfkc", "identity"] = Field(
        "nmt_nfkc", description="source text rule: nmt_nfkc folds full-width forms, ligatures..."
    )
    tgt_normalization: Literal["nmt_nfkc", "identity"] = Field(
        "identity",
        description="target text rule: identity keeps the text as written, so decode(encode(x)) "
        "is x with whitespace runs collapsed and the references need no other rewrite",
    )


# The model sections live beside the models (seq2seq/models/configs.py, torch-free, re-exported
# here), so a new model touches only models/: the union A | B | ... is built from their tuple.
ModelConfig = Annotated[reduce(operator.or_, MODEL_CONFIGS), Field(discriminator="name")]


class TeacherForcingConfig(_Section):
    """Scheduled sampling for the RNN models (Bengio et al. 2015, §2.4).

    At update ``i`` (from 1) each decoder step is fed the gold previous token with probability
    ε_i and the model's own argmax otherwise; ε_i = 1 is plain teacher forcing. Schedules:

    - ``constant``: ε_i = start
    - ``linear``: ε_i = max(end, start - (start - end) · i / decay_steps)  (Bengio: max(ε, k - c·i))
    - ``exponential``: ε_i = max(end, start · k^i), with 0 < k < 1
    - ``inverse_sigmoid``: ε_i = end + (start - end) · k / (k + exp(i / k)), with k ≥ 1

    Example: ``teacher_forcing: {schedule: inverse_sigmoid, k: 2000}``.
    """

    schedule: Literal["constant", "linear", "exponential", "inverse_sigmoid"] = "constant"
    start: float = Field(1.0, ge=0, le=1, description="ε at the first update (constant: always)")
    end: float = Field(0.0, ge=0, le=1, description="the floor ε decays towards")
    k: float | None = Field(None, gt=0, description="exponential: 0<k<1; inverse_sigmoid: k>=1")
    decay_steps: int | None = Field(None, ge=1, description="linear: updates from start to end")

    @model_validator(mode="after")
    def _schedule_needs(self) -> TeacherForcingConfig:
        s = self.schedule
        if s == "linear" and self.decay_steps is None:
            raise ValueError("schedule 'linear' needs decay_steps")
        if s == "exponential" and not (self.k is not None and self.k < 1):
            raise ValueError("schedule 'exponential' needs k between 0 and 1 (ε_i = start·k^i)")
        if s == "inverse_sigmoid" and not (self.k is not None and self.k >= 1):
            raise ValueError("schedule 'inverse_sigmoid' needs k >= 1 (ε_i = k / (k + exp(i/k)))")
        if s != "constant" and self.end > self.start:
            raise ValueError(f"end ({self.end}) must not exceed start ({self.start})")
        return self

    @property
    def always(self) -> bool:
        """True when every update is fully teacher-forced."""
        return self.schedule == "constant" and self.start >= 1.0


_Beta = Annotated[float, Field(ge=0, lt=1)]  # Adam's decay rates (torch refuses 1 or more)


class TrainConfig(_Section):
    """The training loop. Steps count optimizer updates, a skipped non-finite one included (it
    changes no weight, and is counted towards ``max_nonfinite`` when the loop reads the device's
    results, every ``log_every`` steps and before every checkpoint).

    ``checkpoint_every`` writes ``last.pt`` (and, with ``keep_last`` > 1, keeps ``step<N>.pt``
    copies of the newest k); every validation writes ``last.pt``, and ``best.pt`` when
    ``best_metric`` improved; with
    ``keep_best`` > 1 keeps ``best-step<N>.pt`` for the k best validations by ``best_metric``.
    ``seq2seq average`` averages either set. ``patience`` stops training (early stopping) after that
    many validations without improvement in ``best_metric``, whatever the schedule.

    ``max_tokens`` stops at the first update at which the target tokens trained on (EOS included,
    padding not; a skipped non-finite update's too, as it takes a step) reach the budget, so
    models that batch alike see the same data whatever their speed; under torchrun, at the next
    log point. ``init_from`` starts a new run from another run's weights (a warm start): the run
    takes that checkpoint's tokenizer, its model section must have the same architecture (only
    the dropout rates may differ), and the optimizer, schedule and step start afresh.

    ``update_freq`` accumulates that many batches into one update, within an epoch only: an
    epoch's last update takes the batches left (an epoch of 4 batches under 3 gives updates of
    3, 1, then 3, 1 again; an epoch of one batch makes ``update_freq`` do nothing). So every
    update's batches come from one epoch, whose number and batch position ``last.pt`` saves for an
    exact ``--resume``; groups carried across epochs would change that position's meaning.
    Training logs one line when the epoch's batch count is not a multiple of ``update_freq``.
    """

    seed: int = Field(1, ge=0, le=2**32 - 1)
    batch_tokens: int = Field(4096, ge=1, description="padded tokens per batch (max of src, tgt)")
    max_steps: int | None = Field(None, ge=1)
    max_epochs: int | None = Field(None, ge=1)
    max_time: float | None = Field(None, gt=0, description="wall-clock budget in minutes")
    max_tokens: int | None = Field(
        None,
        ge=1,
        description="stop after this many target tokens (EOS included, padding not), counted "
        "on the host over resumed runs too",
    )
    init_from: str | None = Field(
        None,
        description="weights only from this checkpoint file or run directory; optimizer, "
        "schedule and step start afresh (the run takes its tokenizer; --resume ignores this)",
    )
    optimizer: Literal["adam", "adamw"] = "adam"
    lr: float = Field(1e-3, gt=0)
    betas: tuple[_Beta, _Beta] = (0.9, 0.98)
    weight_decay: float = Field(0.0, ge=0)
    schedule: Literal["constant", "noam", "plateau", "cosine"] = "constant"
    warmup_steps: int = Field(0, ge=0)
    decay_steps: int | None = Field(
        None,
        ge=1,
        description="cosine: the update the decay reaches min_lr at, after which the rate "
        "holds there (default: max_steps)",
    )
    plateau_factor: float = Field(0.5, gt=0, lt=1)
    plateau_patience: int = Field(
        2,
        ge=0,
        description="plateau: scale the LR once more than N validations in a row did not "
        "improve (as torch's ReduceLROnPlateau)",
    )
    min_lr: float = Field(0.0, ge=0)
    clip_norm: float | None = Field(1.0, gt=0)
    label_smoothing: float = Field(0.1, ge=0, lt=1)
    teacher_forcing: TeacherForcingConfig = TeacherForcingConfig()
    update_freq: int = Field(
        1,
        ge=1,
        description="batches accumulated into one update, within an epoch: an update never "
        "spans an epoch boundary, so an epoch of 4 batches under 3 gives updates of 3 and 1",
    )
    valid_every: int = Field(1000, ge=1, description="steps between validations")
    valid_bleu: bool = Field(True, description="greedy BLEU and chrF on the validation set")
    best_metric: Literal["bleu", "chrf", "loss"] = Field(
        "bleu", description="metric that picks best.pt, drives plateau and early stopping"
    )
    patience: int | None = Field(None, ge=1, description="stop after N validations without gain")
    keep_best: int = Field(1, ge=1, description="keep the k best checkpoints (best-step<N>.pt)")
    keep_last: int = Field(1, ge=1, description="keep the k newest checkpoints (step<N>.pt)")
    checkpoint_every: int | None = Field(
        None, ge=1, description="steps between last.pt saves (default: at each validation)"
    )
    max_nonfinite: int = Field(10, ge=1, description="stop after N non-finite losses in a row")
    log_every: int = Field(
        50, ge=1, description="steps between reads of the loss and gradient norm from the device"
    )
    device: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["auto", "fp32", "bf16", "fp16"] = Field(
        "auto", description="auto = bf16 autocast on CUDA, fp32 on the CPU (resolved per run)"
    )
    cudnn_sdp: bool = Field(
        False,
        description="CUDA: let attention use cuDNN's kernels, which rebuild a plan for every new "
        "(batch, length) shape; off, PyTorch picks flash or memory-efficient attention",
    )
    num_threads: int | None = Field(None, ge=1, description="torch CPU threads (default: torch's)")

    @model_validator(mode="after")
    def _needs_a_stop(self) -> TrainConfig:
        stops = (self.max_steps, self.max_epochs, self.max_time, self.max_tokens)
        if all(x is None for x in stops):
            raise ValueError("set at least one of max_steps, max_epochs, max_time, max_tokens")
        if self.schedule == "noam" and self.warmup_steps == 0:
            raise ValueError("schedule 'noam' needs warmup_steps > 0")
        if self.schedule == "cosine" and self.max_steps is None:
            raise ValueError("schedule 'cosine' needs max_steps (the length of the decay)")
        end = self.decay_steps or self.max_steps
        if self.schedule == "cosine" and self.warmup_steps >= end:
            what = "decay_steps" if self.decay_steps else "max_steps"
            raise ValueError(
                f"warmup_steps ({self.warmup_steps}) must be below {what} ({end}) under schedule "
                f"'cosine', which decays from the end of warmup to {what}"
            )
        if self.min_lr > self.lr:
            raise ValueError(
                f"min_lr ({self.min_lr}) must not exceed lr ({self.lr}): it is the floor the "
                "learning rate decays to"
            )
        if self.best_metric != "loss" and not self.valid_bleu:
            raise ValueError(f"best_metric {self.best_metric!r} needs valid_bleu: true")
        if self.precision == "fp16" and self.device == "cpu":
            raise ValueError("precision fp16 needs CUDA; use bf16 or fp32 on the CPU")
        return self


SearchMethod = Literal["greedy", "beam", "sample"]
"""The names of ``decoding.search.SEARCHES`` (a test checks that the two agree)."""

SEARCH_SETTINGS: dict[str, tuple[str, ...]] = {
    "greedy": (),
    "beam": ("beam_size",),
    "sample": ("temperature", "top_k", "top_p", "seed"),
}
"""The ``DecodeConfig`` fields each method reads besides the shared ones; under any other method
they must keep their defaults."""


class DecodeConfig(_Section):
    """Search settings used by validation BLEU, ``translate`` and ``eval``.

    ``method`` picks the search: ``greedy``, ``beam`` (``beam_size`` K; K = 1 gives greedy's
    output) or ``sample`` (ancestral sampling with ``temperature``, ``top_k``, ``top_p`` and
    ``seed``). A setting of another method than the chosen one is an error, so a config never says
    more than is used. A config without ``method`` (written before it existed) chooses by
    ``beam_size``, as it did then: greedy for 1, beam search for more.

    ``min_len`` defaults to 1 (as fairseq's and Joey NMT's do): an empty translation of a non-empty
    sentence is never right, and an undertrained model's beam otherwise often prefers EOS at once.
    A source longer than ``max_src_len`` tokens (or than a Transformer's ``max_positions`` leaves
    room for, its output included) is cut to fit, with a warning naming the line.
    """

    method: SearchMethod = Field("greedy", description=" | ".join(get_args(SearchMethod)))
    beam_size: int = Field(1, ge=1, description="beam: hypotheses kept per sentence (K)")
    temperature: float = Field(
        1.0, gt=0, description="sample: logits / temperature; below 1 sharper, above 1 flatter"
    )
    top_k: int | None = Field(None, ge=1, description="sample: draw from the k most probable")
    top_p: float = Field(
        1.0, gt=0, le=1, description="sample: draw from the smallest set holding p (nucleus)"
    )
    seed: int | None = Field(
        None, ge=0, le=2**32 - 1, description="sample: repeat the draws (default: fresh ones)"
    )
    length_penalty: float = Field(0.0, ge=0, description="GNMT alpha; 0 = raw log-probability")
    max_len_a: float = Field(1.5, ge=0)
    max_len_b: int = Field(10, ge=1)
    min_len: int = Field(1, ge=0, description="tokens required before EOS (0 allows empty output)")
    max_src_len: int = Field(1024, ge=1, description="longer sources are cut, with a warning")
    batch_size: int = Field(128, ge=1, description="sentences per decoding batch")

    @model_validator(mode="before")
    @classmethod
    def _method_from_beam_size(cls, data: Any) -> Any:
        """Configs and checkpoints from before ``method``: beam_size 1 is greedy, more is beam."""
        if isinstance(data, dict) and "method" not in data:
            data = {**data, "method": "greedy" if data.get("beam_size", 1) == 1 else "beam"}
        return data

    @field_validator(*(f for fields in SEARCH_SETTINGS.values() for f in fields))
    @classmethod
    def _used_by_the_method(cls, value: Any, info: ValidationInfo) -> Any:
        method = info.data.get("method")  # absent when the method itself was invalid
        owner = next(m for m, fields in SEARCH_SETTINGS.items() if info.field_name in fields)
        default = cls.model_fields[info.field_name].default
        if method is not None and method != owner and value != default:
            raise ValueError(f"{value} is a setting of method {owner}, but method is {method}")
        return value

    def model_copy(
        self, *, update: Mapping[str, Any] | None = None, deep: bool = False
    ) -> DecodeConfig:
        """A copy with ``update`` applied and validated; pydantic's own copy skips validation, so
        ``update={"beam_size": 5}`` would leave a greedy config greedy. ``with_method`` switches.

        Raises:
            pydantic.ValidationError: an update out of bounds or not used by the method.
        """
        copy = super().model_copy(deep=deep)
        return type(self).model_validate({**copy.model_dump(), **update}) if update else copy

    def with_method(self, method: str, **updates: Any) -> DecodeConfig:
        """A validated copy that decodes with ``method``: the settings of the other methods go
        back to their defaults, the shared ones are kept, then ``updates`` are applied.

        Raises:
            pydantic.ValidationError: an unknown method, or an update out of bounds or not used by
                ``method``.
        """
        data = self.model_dump()
        for other, fields in SEARCH_SETTINGS.items():
            if other != method:
                data.update({f: type(self).model_fields[f].default for f in fields})
        return type(self).model_validate({**data, "method": method, **updates})


class Config(_Section):
    """A whole experiment."""

    name: str = "experiment"
    run_dir: str | None = Field(None, description="default: runs/<name>")
    data: DataConfig = DataConfig()
    tokenizer: TokenizerConfig = TokenizerConfig()
    model: ModelConfig = BahdanauConfig()
    train: TrainConfig = TrainConfig(max_epochs=10)
    decode: DecodeConfig = DecodeConfig()

    @model_validator(mode="after")
    def _sampling_needs_a_model_that_allows_it(self) -> Config:
        if not self.model.scheduled_sampling and not self.train.teacher_forcing.always:
            allowed = ", ".join(
                n for n, c in zip(MODEL_NAMES, MODEL_CONFIGS, strict=True) if c.scheduled_sampling
            )
            raise ValueError(
                f"train.teacher_forcing: scheduled sampling is for the models {allowed}; "
                f"remove it for {self.model.name}"
            )
        return self

    @model_validator(mode="after")
    def _fits_max_positions(self) -> Config:
        """A model with a position limit (the Transformer's ``max_positions``) embeds at most that
        many tokens: the longest training or validation pair (BOS added, ``concat_k`` or
        ``valid_concat_k`` pairs joined) and the shortest-source output must fit."""
        n_pos, d = self.model.position_limit, self.data
        if n_pos is None:
            return self
        k = max(d.concat_k, d.valid_concat_k)
        longest = d.max_len * k + 1
        if longest > n_pos:
            which = "concat_k" if d.concat_k >= d.valid_concat_k else "valid_concat_k"
            raise ValueError(
                f"model.max_positions ({n_pos}) must be at least data.max_len x data.{which} + 1 "
                f"= {longest}: raise max_positions or lower data.max_len"
            )
        if self.decode.max_len_a + self.decode.max_len_b > n_pos:
            raise ValueError(
                f"decode.max_len_a + decode.max_len_b ({self.decode.max_len_a} + "
                f"{self.decode.max_len_b}) leave no room for output within model.max_positions "
                f"({n_pos}): lower them or raise max_positions"
            )
        return self


# the classes whose validation errors _one_line renders (pydantic names the class in err.title)
_SECTIONS = (Config, DataConfig, HFSource, TokenizerConfig, TrainConfig, TeacherForcingConfig)
_SECTIONS += (DecodeConfig, *MODEL_CONFIGS)


def _did_you_mean(loc: str, model: str | None = None) -> str:
    """What follows "unknown key" for ``loc``: ``"; did you mean train.valid_every?"`` for a key
    close to a real one, else "". Under ``model`` (the name of the model section's model) the keys
    are that model's: ``" of the transformer model; did you mean model.n_heads?"``, or, with no
    close key, that model's keys and the models that have the key."""
    import difflib

    *parents, last = loc.split(".")
    if parents == ["model"] and model in MODEL_NAMES:
        fields = MODEL_CONFIGS[MODEL_NAMES.index(model)].model_fields
        close = difflib.get_close_matches(last, list(fields), n=1, cutoff=0.75)
        if close:
            return f" of the {model} model; did you mean model.{close[0]}?"
        said = f" of the {model} model (its keys: {', '.join(fields)})"
        pairs = list(zip(MODEL_NAMES, MODEL_CONFIGS, strict=True))
        if has := [n for n, c in pairs if last in c.model_fields]:
            return f"{said}; {last} is a key of {', '.join(has)}"
        others = sorted({f for n, c in pairs if n != model for f in c.model_fields})
        if near := difflib.get_close_matches(last, others, n=1, cutoff=0.75):
            has = [n for n, c in pairs if near[0] in c.model_fields]
            return f"{said}; {near[0]} is a key of {', '.join(has)}"
        return said
    if len(parents) != 1 or parents[0] not in Config.model_fields:
        known = list(Config.model_fields) if not parents else []
    elif parents[0] == "model":
        known = sorted({f for c in MODEL_CONFIGS for f in c.model_fields})
    else:
        section = Config.model_fields[parents[0]].annotation
        known = list(getattr(section, "model_fields", {}))
    close = difflib.get_close_matches(last, known, n=1, cutoff=0.75)
    return f"; did you mean {'.'.join([*parents, close[0]])}?" if close else ""


# pydantic's error types for a number out of its field's bounds, or not finite
RANGE_ERRORS = {
    "finite_number",
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
}


def valid_range(title: str, loc: tuple[Any, ...]) -> str | None:
    """The values of the numeric setting at ``loc``, pydantic's location of an error in the class
    named ``title`` (``Config`` or one of its sections), in words: ``a finite number >= 0 and
    < 1``; None when ``loc`` names no bounded number."""
    cls: Any = next((c for c in _SECTIONS if c.__name__ == title), None)
    if cls is None:
        return None
    ann: Any = None
    bounds: list[Any] = []
    for part in loc:
        if isinstance(part, int):  # an element of a tuple
            args = [a for a in get_args(ann) if a is not Ellipsis]
            ann = args[min(part, len(args) - 1)] if args else None
        elif part in MODEL_NAMES and cls is None:  # the model union's tag
            cls = MODEL_CONFIGS[MODEL_NAMES.index(part)]
            continue
        elif isinstance(cls, type) and part in cls.model_fields:
            ann, bounds = cls.model_fields[part].annotation, list(cls.model_fields[part].metadata)
        else:
            return None
        if get_origin(ann) is Annotated:  # the bounds of a tuple's element
            bounds = [m for f in ann.__metadata__ for m in getattr(f, "metadata", [f])]
            ann = get_args(ann)[0]
        if type(None) in get_args(ann) and len(get_args(ann)) == 2:  # X | None -> X
            ann = next(a for a in get_args(ann) if a is not type(None))
        cls = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    words = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
    limits = [(words[k], getattr(b, k)) for b in bounds for k in words if hasattr(b, k)]
    said = [f"{w} {v:g}" if isinstance(v, float) else f"{w} {v}" for w, v in limits]
    if ann not in (int, float) or not said:
        return None
    return ("an integer " if ann is int else "a finite number ") + " and ".join(said)


def _one_line(err: ValidationError, source: str, origin=None) -> str:
    """Turn pydantic's multi-line report into one line per problem, joined by '; '. ``origin``
    (dotted key -> where it was said) names another file or --set for a problem when that is
    not ``source``. A number out of range is shown with the value given and the valid range."""
    parts = []
    for e in err.errors():
        keys = [
            x
            for x in e["loc"]
            if not str(x).startswith(("function-", "tagged")) and str(x) not in MODEL_NAMES
        ]
        loc = ".".join(str(x) for x in keys if not isinstance(x, int))  # train.betas for [1]
        notes = []
        if e["type"] == "extra_forbidden":
            model = next((str(x) for x in e["loc"][1:2] if str(x) in MODEL_NAMES), None)
            msg = "unknown key" + _did_you_mean(loc, model if keys[:1] == ["model"] else None)
        elif e["type"] == "union_tag_invalid":
            msg = f"unknown model name; choose {', '.join(MODEL_NAMES[:-1])} or {MODEL_NAMES[-1]}"
        else:
            msg = e["msg"].removeprefix("Value error, ")
        if e["type"] in RANGE_ERRORS and (valid := valid_range(err.title, e["loc"])):
            msg, notes = f"{msg}, not {e['input']}", [f"valid: {valid}"]
        said = origin(loc) if origin is not None and loc else source
        notes += [] if said == source else [f"given in {said}"]
        where = f" ({'; '.join(notes)})" if notes else ""
        parts.append(f"{key_path(keys)}: {msg}{where}" if keys else msg)
    return f"{source}: " + "; ".join(parts)


def load_config(path: str | os.PathLike | None, overrides: list[str] | None = None) -> Config:
    """Read a YAML config, apply ``key=value`` overrides, validate.

    Raises:
        ConfigError: missing/unreadable file, bad YAML, unknown key or invalid value (one line).
    """
    source = str(path) if path else "config"
    layers: list[tuple[str, dict]] = []  # each file of the base chain, the derived one first
    raw: dict = read_config_file(Path(path), layers=layers) if path is not None else {}
    raw = apply_overrides(raw, overrides or [])
    set_keys = {".".join(parse_override(item)[0]) for item in overrides or []}
    try:
        return Config.model_validate(raw)
    except ValidationError as e:

        def origin(loc: str) -> str:
            """Where a key was said: --set, else the most derived file that holds it."""
            if any(
                k == loc or k.startswith(loc + ".") or loc.startswith(k + ".") for k in set_keys
            ):
                return "--set"
            for name, layer in layers:
                node: Any = layer
                for part in loc.split("."):
                    node = node.get(part) if isinstance(node, dict) else None
                if node is not None or has_key(layer, loc):
                    return name
            return source

        raise ConfigError(_one_line(e, source, origin)) from None


def validate_config(raw: dict, source: str = "config") -> Config:
    try:
        return Config.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(_one_line(e, source)) from None


def data_root() -> Path:
    """The root that relative corpus prefixes are resolved against."""
    return Path(os.environ.get("SEQ2SEQ_DATA_DIR", "../shared/data"))


def to_yaml(cfg: Config) -> str:
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False, allow_unicode=True)

"""The run config's sections other than ``model`` (data, tokenizer, train, decode), each a
``_Section``, and ``data_root``, where relative corpus prefixes are looked up."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator


class _Section(BaseModel):
    # a float setting is finite: nan/inf are refused by name here, not found when training fails
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class HFSource(_Section):
    """A corpus on the Hugging Face hub (or a local dataset directory) read with ``datasets``."""

    path: str = Field(description="hub name such as bentrevett/multi30k, or a local dataset dir")
    name: str | None = Field(None, description="the hub entry's configuration name, if any")
    src_field: str = "de"
    tgt_field: str = "en"
    train_split: str = "train"
    valid_split: str = "validation"
    test_split: str = "test"


class DataConfig(_Section):
    """Where the parallel text comes from and how it is cleaned. A local corpus is a prefix:
    ``multi30k/train`` with ``src_lang: de`` reads ``multi30k/train.de`` or ``.de.gz``, in the
    working directory, else under ``$SEQ2SEQ_DATA_DIR`` (default ``../shared/data``)."""

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
    shuffle_buffer: int = Field(100_000, ge=1, description="stream: pairs shuffled as one buffer")
    pad_multiple: Literal["auto"] | Annotated[int, Field(ge=1)] = Field(
        "auto", description="memory: batch lengths rounded up to N; auto = 8 on CUDA, 1 on the CPU"
    )
    dedup: bool = Field(False, description="memory: drop repeated pairs and those in eval splits")

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
    """sentencepiece settings (Kudo & Richardson 2018), trained on the training split only;
    normalisation is per side (docs/data.md, "The tokenizer")."""

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
    """The training loop (docs/training.md). Steps count optimizer updates, a skipped non-finite
    one included; under torchrun ``max_tokens`` stops at the next log point."""

    seed: int = Field(1, ge=0, le=2**32 - 1)
    batch_tokens: int = Field(4096, ge=1, description="padded tokens per batch (max of src, tgt)")
    max_steps: int | None = Field(None, ge=1)
    max_epochs: int | None = Field(None, ge=1)
    max_time: float | None = Field(
        None,
        gt=0,
        description="training-time budget in minutes (monotonic clock, summed over resumes)",
    )
    max_tokens: int | None = Field(
        None, ge=1, description="stop after N target tokens (EOS in, padding not; over resumes)"
    )
    init_from: str | None = Field(None, description="warm start: weights of a checkpoint or run")
    optimizer: Literal["adam", "adamw"] = "adam"
    lr: float = Field(1e-3, gt=0)
    betas: tuple[_Beta, _Beta] = (0.9, 0.98)
    weight_decay: float = Field(0.0, ge=0)
    schedule: Literal["constant", "noam", "plateau", "cosine"] = "constant"
    warmup_steps: int = Field(0, ge=0)
    decay_steps: int | None = Field(
        None, ge=1, description="cosine: the update the rate reaches min_lr and stays (max_steps)"
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
    update_freq: int = Field(1, ge=1, description="batches per update, never across epochs")
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
    log_every: int = Field(50, ge=1, description="steps between loss reads from the device")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["auto", "fp32", "bf16", "fp16"] = Field(
        "auto",
        description="auto = bf16 on CUDA, and on a CPU with avx512_bf16/amx_bf16 where a probe "
        "finds it faster (settled per run; a resume keeps the run's)",
    )
    cudnn_sdp: bool = Field(False, description="CUDA: attention may use cuDNN (a plan per shape)")
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
        # (a warmup longer than the whole run is no contradiction, only a waste: training warns,
        # whatever the schedule, training.state.unreached_peak)
        if self.schedule == "cosine" and self.decay_steps and self.warmup_steps >= self.decay_steps:
            raise ValueError(
                f"warmup_steps ({self.warmup_steps}) must be below decay_steps "
                f"({self.decay_steps}) under schedule 'cosine', which decays from the end of "
                "warmup to decay_steps"
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


def data_root() -> Path:
    """The root that relative corpus prefixes are resolved against."""
    return Path(os.environ.get("SEQ2SEQ_DATA_DIR", "../shared/data"))


BEAM_LIMIT = 1000  # a beam wider than this only exhausts memory (decoding batches shrink to fit it)
BIG = 1_000_000  # the bound of every other count and length: past it, torch overflows
MAX_LENGTH_PENALTY = 10.0  # GNMT alpha: past it every score rounds to -0.0 and the ranking is noise
MAX_LEN_A = 10.0  # outputs 10x their source: beyond it a search only fills memory and time
MAX_LEN_B = 10_000

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
    """Search settings of validation BLEU, ``translate``, ``eval``, ``tune-decode`` and ``serve``.

    ``method``: ``greedy``, ``beam`` (``beam_size`` K; K = 1 gives greedy's output) or ``sample``
    (ancestral sampling); another method's setting is an error, and a config without ``method``
    (older) chooses greedy for ``beam_size`` 1, beam for more. ``length_penalty`` is GNMT's alpha
    (Wu et al. 2016 eq. 14, beam only), 1.0 as every family's best alpha on Multi30k validation
    was at least 1 (docs/results/best/README.md). ``min_len`` 1 (as fairseq and Joey NMT): an
    undertrained beam otherwise often prefers EOS at once. ``no_repeat_ngram`` is fairseq's
    ``--no-repeat-ngram-size``. ``target_vocab_mask`` keeps every method to the pieces seen in the
    training targets, and EOS, without renormalising: on Multi30k validation greedy and beam 5
    never left them, and sampling gained 2.0-2.6 BLEU with it (three seeds).
    """

    method: SearchMethod = Field("greedy", description=" | ".join(get_args(SearchMethod)))
    beam_size: int = Field(1, ge=1, le=BEAM_LIMIT, description="beam: hypotheses kept (K)")
    temperature: float = Field(1.0, gt=0, description="sample: logits / T; <1 sharper, >1 flatter")
    top_k: int | None = Field(None, ge=1, le=BIG, description="sample: only the k most probable")
    top_p: float = Field(1.0, gt=0, le=1, description="sample: nucleus, the smallest set holding p")
    seed: int | None = Field(None, ge=0, le=2**32 - 1, description="sample: repeatable draws")
    length_penalty: float = Field(
        1.0, ge=0, le=MAX_LENGTH_PENALTY, description="beam: GNMT alpha; 0 = raw log-probability"
    )
    # beam search's early stopping is exact: under a length penalty it runs to max_len_a * S +
    # max_len_b unless a finished hypothesis beats lp(that length), so the bounds hold it in
    max_len_a: float = Field(1.5, ge=0, le=MAX_LEN_A)
    max_len_b: int = Field(10, ge=1, le=MAX_LEN_B)
    min_len: int = Field(1, ge=0, le=BIG, description="tokens before EOS (0 allows empty output)")
    no_repeat_ngram: int = Field(0, ge=0, le=BIG, description="never repeat an N-gram (0: off)")
    target_vocab_mask: bool = Field(True, description="emit only training-target pieces and EOS")
    max_src_len: int = Field(1024, ge=1, le=BIG, description="longer sources are cut (warned)")
    batch_size: int = Field(128, ge=1, le=BIG, description="sentences per decoding batch")

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

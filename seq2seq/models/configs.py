"""The model sections of the config: one pydantic class per registered model, torch-free
(``config/loading.py`` builds its ``model:`` union from ``MODEL_CONFIGS``). Besides its fields a
class says what may be asked of the model without building it: ``scheduled_sampling``,
``position_limit`` and ``family`` (its name in words, for reports)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ModelConfigBase(BaseModel):
    """What every model section shares: unknown keys are errors, and the capability defaults.
    Each subclass declares ``name: Literal["<name>"] = "<name>"`` (the union's discriminator;
    there, not here, so dumped keys keep the order of old configs and checkpoints)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    # Scheduled sampling (Bengio et al. 2015) runs the decoder step by step on its own outputs.
    scheduled_sampling: ClassVar[bool] = True

    @property
    def position_limit(self) -> int | None:
        """The longest token sequence the model can embed (None: unbounded)."""
        return None

    @property
    def family(self) -> str:
        """The model family in words, e.g. ``luong (general)``."""
        return self.name


class _RNNBase(ModelConfigBase):
    cell: Literal["gru", "lstm"] = "gru"
    emb_size: int = Field(256, ge=1)
    hidden_size: int = Field(512, ge=1, description="decoder state size")
    encoder_hidden_size: int | None = Field(
        None, ge=1, description="encoder state size per direction (default: hidden_size)"
    )
    num_layers: int = Field(1, ge=1)
    bidirectional: bool = Field(True, description="bidirectional encoder")
    dropout: float = Field(0.2, ge=0.0, lt=1.0)
    tie_embeddings: bool = Field(False, description="tie decoder input and output embeddings")

    @property
    def enc_size(self) -> int:
        """Per-direction encoder state size."""
        return self.encoder_hidden_size or self.hidden_size


class RNNConfig(_RNNBase):
    """``rnn``: the fixed-vector encoder-decoder (Sutskever et al. 2014; Cho et al. 2014)."""

    name: Literal["rnn"] = "rnn"
    feed_context: bool = Field(False, description="Cho et al. 2014: feed c = h_S at every step")

    @property
    def family(self) -> str:
        return "rnn (fixed vector" + (", Cho context)" if self.feed_context else ")")


class BahdanauConfig(_RNNBase):
    """``bahdanau``: additive attention, queried with s_{t-1} (Bahdanau et al. 2015)."""

    name: Literal["bahdanau"] = "bahdanau"
    attention_size: int = Field(512, ge=1)
    maxout_size: int = Field(512, ge=1, description="l in appendix A.2.2: the deep output size")

    @property
    def family(self) -> str:
        return "bahdanau (additive)"


class RNNEncDecConfig(_RNNBase):
    """``rnnencdec``: RNNsearch's own ablation (Bahdanau et al. 2015, §4.2): the ``bahdanau``
    decoder with one fixed context c = [→h_S; ←h_1] in place of attention's c_t."""

    name: Literal["rnnencdec"] = "rnnencdec"
    maxout_size: int = Field(512, ge=1, description="l in appendix A.2.2: the deep output size")
    context: Literal["final", "mean"] = Field(
        "final",
        description="c: the final states [->h_S; <-h_1] (the paper's), or the masked mean of "
        "the annotations h_1..h_S (every position reachable, none selected)",
    )

    @property
    def family(self) -> str:
        if self.context == "mean":
            return "rnnencdec (bahdanau, mean-pooled context)"
        return "rnnencdec (bahdanau, fixed context)"


class LuongConfig(_RNNBase):
    """``luong``: multiplicative attention, queried with s_t (Luong et al. 2015)."""

    name: Literal["luong"] = "luong"
    score: Literal["dot", "general", "concat"] = "general"
    input_feeding: bool = True
    attention_size: int = Field(512, ge=1, description="size of W_a's output for the concat score")

    @property
    def family(self) -> str:
        return f"luong ({self.score})"

    @model_validator(mode="after")
    def _dot_needs_equal_sizes(self) -> LuongConfig:
        dirs = 2 if self.bidirectional else 1
        enc = self.enc_size * dirs
        if self.score == "dot" and enc != self.hidden_size:
            raise ValueError(
                "score 'dot' needs equal encoder and decoder sizes, but the encoder states are "
                f"{enc} wide ({dirs} x encoder_hidden_size {self.enc_size}) and the decoder state "
                f"is {self.hidden_size} (hidden_size): set encoder_hidden_size to "
                f"{self.hidden_size // dirs if self.hidden_size % dirs == 0 else 'hidden_size / 2'}"
                " or use score: general"
            )
        return self


class TransformerConfig(ModelConfigBase):
    """``transformer`` (Vaswani et al. 2017)."""

    name: Literal["transformer"] = "transformer"
    d_model: int = Field(256, ge=1)
    n_heads: int = Field(4, ge=1)
    d_ff: int | None = Field(None, ge=1, description="FFN inner size (default: 4 x d_model)")
    n_encoder_layers: int = Field(3, ge=1)
    n_decoder_layers: int = Field(3, ge=1)
    dropout: float = Field(0.1, ge=0.0, lt=1.0)
    attention_dropout: float = Field(0.0, ge=0.0, lt=1.0, description="on attention weights")
    activation_dropout: float = Field(0.0, ge=0.0, lt=1.0, description="on the FFN's ReLU output")
    pre_norm: bool = False
    learned_positions: bool = False
    max_positions: int = Field(1024, ge=1)
    share_embeddings: bool = Field(
        True,
        description="output projection = target embeddings; with a joint vocabulary the source "
        "embeddings are the same matrix",
    )
    # Scheduled sampling is defined for recurrent decoders (Bengio et al. 2015): teacher forcing.
    scheduled_sampling: ClassVar[bool] = False

    @property
    def ffn_size(self) -> int:
        return self.d_ff or 4 * self.d_model

    @property
    def position_limit(self) -> int:
        return self.max_positions

    @model_validator(mode="after")
    def _heads_divide_d_model(self) -> TransformerConfig:
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})"
            )
        return self


# Every model's config class, in the order error messages list them.
MODEL_CONFIGS: tuple[type[ModelConfigBase], ...] = (
    RNNConfig,
    BahdanauConfig,
    RNNEncDecConfig,
    LuongConfig,
    TransformerConfig,
)
# Their ``name`` values, the keys of ``registry.MODELS``.
MODEL_NAMES: tuple[str, ...] = tuple(c.model_fields["name"].default for c in MODEL_CONFIGS)

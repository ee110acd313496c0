"""``Config``, a whole experiment: the five sections, and the checks that span sections."""

from __future__ import annotations

import operator
from functools import reduce
from typing import Annotated

from pydantic import Field, model_validator

from seq2seq.config.decode import DecodeConfig
from seq2seq.config.sections import DataConfig, TokenizerConfig, TrainConfig, _Section
from seq2seq.models.configs import MODEL_CONFIGS, MODEL_NAMES, BahdanauConfig

# The model sections live beside the models (seq2seq/models/configs.py, torch-free), so a new model
# touches only models/.
ModelConfig = Annotated[reduce(operator.or_, MODEL_CONFIGS), Field(discriminator="name")]


class Config(_Section):
    """A whole experiment."""

    name: str = "experiment"
    run_dir: str | None = Field(
        None, description="default: runs/<name>; relative to the working folder; not from base:"
    )
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
                f"{self.decode.max_len_b}) allow outputs longer than model.max_positions "
                f"({n_pos}) even for a one-token source: lower them or raise max_positions"
            )
        return self

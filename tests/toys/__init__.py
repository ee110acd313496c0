"""Helpers shared by the test files, by concept:

- ``models``: toy-sized models of every family, batches for them, the scripted ``Oracle``;
- ``configs``: the config of tiny training runs (``tiny_model_config``, ``tiny_config``, ...);
- ``study``: the word-reversal loop configs and the study's (``compare``) tiny configs;
- ``runs``: what tiny runs leave, copies of a run configured otherwise, ``needs_no_cuda``;
- ``cli``: the command line in this process (``run_cli``, ``cli_result``, ``FakeStdin``).

Every name is also importable from ``tests.toys`` itself.
"""

from __future__ import annotations

from pathlib import Path

from tests.toys.cli import FakeStdin, cli_result, run_cli, run_main, run_seq2seq, translate_cli
from tests.toys.configs import (
    SMALL_RUN_MODEL,
    TINY_RUN_MODELS,
    TINY_SIZES,
    copy_run_config,
    small_run_config,
    synth_run_config,
    synth_run_raw,
    tiny_config,
    tiny_model_config,
)
from tests.toys.models import (
    ATTENTION_MODELS,
    SENT,
    T1,
    TINY_MODELS,
    A,
    B,
    C,
    Oracle,
    one_sentence,
    random_batch,
    teacher_forced,
    tiny_model,
    toy_batch,
)
from tests.toys.runs import NO_CUDA_FIX, cuda_run, needs_no_cuda, run_with_config, step_tokens
from tests.toys.study import (
    WORD_REVERSAL_MODELS,
    reverse_data,
    slice_data,
    word_reversal_config,
    write_staged_config,
    write_study_config,
)

REPO = Path(__file__).resolve().parents[2]

__all__ = [
    "A",
    "ATTENTION_MODELS",
    "B",
    "C",
    "FakeStdin",
    "NO_CUDA_FIX",
    "Oracle",
    "REPO",
    "SENT",
    "SMALL_RUN_MODEL",
    "T1",
    "TINY_MODELS",
    "TINY_RUN_MODELS",
    "TINY_SIZES",
    "WORD_REVERSAL_MODELS",
    "cli_result",
    "copy_run_config",
    "cuda_run",
    "needs_no_cuda",
    "one_sentence",
    "random_batch",
    "reverse_data",
    "run_cli",
    "run_main",
    "run_seq2seq",
    "run_with_config",
    "slice_data",
    "small_run_config",
    "step_tokens",
    "synth_run_config",
    "synth_run_raw",
    "teacher_forced",
    "tiny_config",
    "tiny_model",
    "tiny_model_config",
    "toy_batch",
    "translate_cli",
    "word_reversal_config",
    "write_staged_config",
    "write_study_config",
]

"""seq2seq: neural machine translation from the fixed-vector RNN encoder-decoder to attention to the
Transformer, with training, greedy and beam decoding, and sacrebleu evaluation."""

import os

__version__ = "0.1.0"

ONEDNN_CACHE = "16384"
"""oneDNN's primitive cache capacity (``ONEDNN_PRIMITIVE_CACHE_CAPACITY``, its default 1024),
set here unless the environment already sets it; oneDNN reads it once, at its first primitive. On
the CPU, bf16 autocast runs every matmul as a oneDNN primitive built per shape, and an epoch of
length-bucketed batches (about 150 distinct shapes on Multi30k) needs more than 1,024 of them: the
default cache thrashes and a bf16 run slows down as it goes (``make bench-steady`` on a Xeon
with AMX, updates 351-400: the Transformer 6,836 target tokens/s against 5,434 with the default,
bahdanau 7,090 against 5,251, in no more memory; docs/results/README.md). fp32 on the CPU uses
MKL's sgemm, no primitives."""
os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", ONEDNN_CACHE)

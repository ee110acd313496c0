"""seq2seq: neural machine translation from the fixed-vector RNN encoder-decoder to attention to the
Transformer, with training, greedy and beam decoding, and sacrebleu evaluation."""

__version__ = "0.1.0"

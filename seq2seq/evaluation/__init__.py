"""Evaluation: sacrebleu metrics (text against text), BLEU by length, and plots."""

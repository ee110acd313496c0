"""The command implementations that ``seq2seq.cli`` registers, grouped by pipeline stage."""

"""Decoding: search over the model protocol (greedy, beam) and text -> text translation."""

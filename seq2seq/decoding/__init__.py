"""Decoding: the searches (``search.SEARCHES``: greedy, beam, sample) over the model protocol,
and text -> text translation."""

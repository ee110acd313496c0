"""The bottleneck-versus-attention study: synthetic tasks, long-input evaluation sets, ``compare``
and its report."""

"""Data: parallel text (plain, .gz, Hugging Face), cleaning, tokenizer, batching, and the training
corpus backends (memory, arrow, stream). Knows text and token ids, never models or training."""


class DataError(ValueError):
    """Unusable input data; the message names the file, the line and what to do."""

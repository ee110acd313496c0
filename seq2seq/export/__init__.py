"""``seq2seq export``: a run's weights and tokenizer alone, for deployment: ``DIR/model.pt``
(``weights.py``) or a CTranslate2 model folder (``ctranslate2.py``), written whole or not at all
(``folder.py``)."""


class ExportError(ValueError):
    """An export that cannot be made as asked (one line)."""

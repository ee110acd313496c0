"""``seq2seq export``: a run's weights and tokenizer alone, for deployment.

``weights.py`` writes ``DIR/model.pt``, a checkpoint without optimizer, RNG or training state
(optionally in fp16 or bf16) that ``translate``, ``eval`` and ``serve`` load like any other;
``ctranslate2.py`` converts a Transformer into a CTranslate2 model folder (the optional
``ctranslate2`` package, ``pip install -e ".[export]"``), which ``translate`` reads
(``decoding/ctranslate2.py``). Both write a temporary folder beside ``DIR`` and rename it into
place (``folder.py``), so ``DIR`` is either complete or as it was.
"""


class ExportError(ValueError):
    """An export that cannot be made as asked (one line)."""

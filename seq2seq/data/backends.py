"""The entry point training calls for ``data.backend`` arrow or stream: tokenizer + training corpus.

Kept apart from ``corpus.py`` (what both backends share) so that the backends import ``corpus`` and
this module imports the backends: no import circle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from seq2seq.config import Config
from seq2seq.data.arrow import arrow_text, open_arrow, text_sentences
from seq2seq.data.corpus import Corpus, stream_sentences
from seq2seq.data.stream import StreamCorpus
from seq2seq.data.tokenizer import Tokenizer

log = logging.getLogger("seq2seq")


def prepare_corpus(
    cfg: Config, run_dir: Path, tok: Tokenizer | None, is_main: bool, barrier: Callable[[], None]
) -> tuple[Tokenizer, Corpus]:
    """Tokenizer and training corpus for ``data.backend`` arrow or stream. Rank 0 builds the caches
    and trains the tokenizer (unless ``tok`` is given) into ``run_dir``; other ranks wait, then
    open them."""
    d = cfg.data
    if is_main and tok is None:
        log.info(
            "training %s sentencepiece model(s), vocab %d",
            cfg.tokenizer.type,
            cfg.tokenizer.vocab_size,
        )
        if d.backend == "arrow":
            text = arrow_text(d)
            sents = text_sentences(text, "src"), text_sentences(text, "tgt")
        else:
            sents = stream_sentences(d, "src"), stream_sentences(d, "tgt")
        Tokenizer.train(*sents, cfg.tokenizer).save(run_dir)
    barrier()
    tok = tok or Tokenizer.load(run_dir)
    opener = open_arrow if d.backend == "arrow" else StreamCorpus
    corpus = opener(d, tok) if is_main else None  # rank 0 first: it builds the cache
    barrier()
    return tok, opener(d, tok) if corpus is None else corpus

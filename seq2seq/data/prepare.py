"""A run's data, prepared in one place: both splits read and cleaned, leakage reported, the
tokenizer trained (or reused), the training split opened as a ``Corpus`` of ``data.backend``
(``TokenizedPairs``, ``ArrowCorpus`` or ``StreamCorpus``: the one place that asks which), the
validation pairs encoded in memory; then each epoch's batches and this rank's share. Rank 0 does
the slow steps while the others wait at ``barrier`` (training's). Leakage: evaluation pairs also in
the training split (they inflate a score) and pairs repeated within it (they weigh more unchosen),
compared with whitespace runs collapsed; ``data.dedup`` removes both. Untranslated copies: the
pairs of each split whose target equals the source, warned about past ``COPY_SHARE``.
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from seq2seq.config import Config, TrainConfig
from seq2seq.data.arrow import arrow_text, clean_rows, open_arrow, text_sentences
from seq2seq.data.batch import Batch
from seq2seq.data.stream import StreamCorpus, stream_sentences
from seq2seq.data.text import (
    DataError,
    ParallelText,
    TokenizedPairs,
    concat_pairs,
    drop_long_sources,
    join_lines,
    load_split,
    split_files,
    split_names,
    tokenize_pairs,
)
from seq2seq.data.tokenizer import Tokenizer

log = logging.getLogger("seq2seq")

DROP_DUPLICATE = "duplicate of an earlier training pair"
DROP_IN_EVAL = "also in a validation or test split"
COPY_SHARE = 0.05  # a split with more of its pairs untranslated (target = source) is warned about


class Ranks(Protocol):
    """This process's place among a run's processes (``training.distributed.DistInfo``)."""

    rank: int
    world: int
    is_main: bool


class Corpus(Protocol):
    """What training asks of a training corpus, whatever its backend."""

    def __len__(self) -> int:
        """Kept pairs."""

    def epoch_batches(
        self, batch_tokens: int, seed: int, epoch: int, rank: int = 0, world: int = 1
    ) -> Sequence:
        """This rank's batches of ``epoch`` (``batch.shard``), a pure function of (seed, epoch)."""

    def batch(
        self, item, pad_multiple: int = 1, max_width: int | None = None, pin: bool = False
    ) -> Batch:
        """One element of ``epoch_batches`` as a ``Batch`` on the CPU; the memory backend rounds
        its lengths up to ``pad_multiple`` (at most ``max_width``), in pinned memory if ``pin``."""

    def target_vocab(self, vocab_size: int) -> torch.Tensor:
        """(V,) bool: every target id of the kept pairs, and EOS (``batch.target_vocab_mask``)."""


@dataclass
class TrainData:
    """What a run trains and validates on. ``target_vocab``: (V,) bool, the pieces seen in the
    training targets, and EOS (``Corpus.target_vocab``), or None; the run's checkpoints carry it
    and ``decode.target_vocab_mask`` keeps the searches to it."""

    tok: Tokenizer
    train: Corpus
    valid: TokenizedPairs
    valid_text: ParallelText
    target_vocab: torch.Tensor | None = None


def check_corpus_files(cfg: Config) -> None:
    """The local corpus files of the training and validation splits exist (checked before a run
    writes anything; ``data.hf`` is checked when read).

    Raises:
        DataError: a file is missing.
    """
    for split in ("train", "valid"):
        if cfg.data.hf is None and getattr(cfg.data, split):
            split_files(cfg.data, split)


def prepare_data(
    cfg: Config,
    run_dir: Path,
    tok: Tokenizer | None,
    ranks: Ranks,
    barrier: Callable[[], None] = lambda: None,
) -> TrainData:
    """Read and clean both splits, train (or reuse) the tokenizer, encode, filter by max_len.
    ``tok`` None trains one on the training split (rank 0 writes it to ``run_dir``, the others
    wait at ``barrier`` and load it).

    Raises:
        DataError: no usable training pair, no usable validation pair (checked before any slow
            step, and again after encoding), or unreadable or misaligned files.
        ConfigError: sentencepiece refused the tokenizer settings.
    """

    def tokenizer(sentences: Callable[[], tuple[Iterable[str], Iterable[str]]]) -> Tokenizer:
        """``tok``, else the one rank 0 trains on ``sentences()`` (source, target)."""
        if tok is not None:
            return tok
        if ranks.is_main:
            t = cfg.tokenizer
            log.info("training %s sentencepiece model(s), vocab %d", t.type, t.vocab_size)
            Tokenizer.train(*sentences(), t).save(run_dir)
        barrier()
        return Tokenizer.load(run_dir)

    if cfg.data.backend == "memory":
        tok, train, valid_text = _memory_train(cfg, ranks, tokenizer)
    else:
        tok, train, valid_text = _disk_train(cfg, ranks, barrier, tokenizer)
    if not len(train):
        raise DataError(
            f"{split_names(cfg.data, 'train')}: no usable training pair is left within "
            f"data.max_len {cfg.data.max_len} tokens (the log counts those dropped); raise "
            "data.max_len"
        )
    # joined validation lines may be valid_concat_k times as long as a single pair
    valid_len = cfg.data.max_len * cfg.data.valid_concat_k
    valid = tokenize_pairs(valid_text, tok.encode_src, tok.encode_tgt, valid_len, "valid")
    if not len(valid):
        raise DataError(
            f"{split_names(cfg.data, 'valid')}: no usable validation pair is left within "
            f"data.max_len {cfg.data.max_len} ({valid_text.n_read} read); validation would score "
            "zero tokens"
        )
    mask = train.target_vocab(tok.tgt_vocab_size)
    log.info(
        "target vocabulary: %d of %d pieces (EOS included) seen in the training targets%s",
        int(mask.sum()),
        tok.tgt_vocab_size,
        " (joint vocabulary)" if tok.joint else "",
    )
    return TrainData(tok, train, valid, valid_text, mask)


def epoch_batches(corpus: Corpus, t: TrainConfig, epoch: int, ranks: Ranks) -> Sequence:
    """This rank's share of the epoch's batches (``Corpus.epoch_batches``, ``t``'s budget and seed).

    Raises:
        DataError: the epoch gives no batch for each rank.
    """
    batches = corpus.epoch_batches(t.batch_tokens, t.seed, epoch, ranks.rank, ranks.world)
    if not batches:
        raise DataError(
            f"{t.batch_tokens}-token batches of {len(corpus)} pairs "
            f"give no batch for each of {ranks.world} ranks; lower batch_tokens"
        )
    return batches


def make_batch(
    corpus: Corpus,
    item,
    device: torch.device | str,
    pad_multiple: int = 1,
    max_width: int | None = None,
) -> Batch:
    """One element of ``epoch_batches`` as a ``Batch`` on ``device`` (``Corpus.batch``; pinned on
    CUDA)."""
    pin = torch.device(device).type == "cuda"
    return corpus.batch(item, pad_multiple, max_width, pin).to(device)


def _memory_train(
    cfg: Config, ranks: Ranks, tokenizer: Callable[..., Tokenizer]
) -> tuple[Tokenizer, TokenizedPairs, ParallelText]:
    """``data.backend: memory``: the training split read into lists, deduplicated on request,
    encoded, then joined ``concat_k`` pairs at a time."""
    text = _read(cfg, "train", cfg.data.max_train_pairs)
    if cfg.data.max_src_words:
        drop_long_sources(text, cfg.data.max_src_words)
    valid_text = _read_valid(cfg)  # before any slow step
    evals = _eval_splits(cfg, valid_text)
    if ranks.is_main:
        report_leakage(zip(text.src, text.tgt, strict=True), evals)
    if cfg.data.dedup:
        dedup(text, evals)
    if not len(text):
        raise DataError(
            f"{text.origin}: no usable training pairs: the files are empty, or every pair has a "
            "blank side or was removed (data.max_src_words, data.dedup; the log counts them); "
            "give parallel files with text on both sides"
        )
    tok = tokenizer(lambda: (text.src, text.tgt))
    train = tokenize_pairs(text, tok.encode_src, tok.encode_tgt, cfg.data.max_len, "train")
    return tok, concat_pairs(train, cfg.data.concat_k, cfg.train.seed), valid_text


def _disk_train(
    cfg: Config, ranks: Ranks, barrier: Callable[[], None], tokenizer: Callable[..., Tokenizer]
) -> tuple[Tokenizer, Corpus, ParallelText]:
    """``data.backend`` arrow or stream: the training split stays on disk. Rank 0 builds the
    caches (and trains the tokenizer) first; the other ranks wait, then open them."""
    d = cfg.data
    valid_text = _read_valid(cfg)
    if ranks.is_main:  # one more pass over the training text: pairs only, no duplicate count
        rows = clean_rows(d.model_dump_json(), "train")
        train_pairs = ((r["src"], r["tgt"]) for r in rows if r["src"])
        report_leakage(train_pairs, _eval_splits(cfg, valid_text), duplicates=False)

    def sentences() -> tuple[Iterable[str], Iterable[str]]:
        if d.backend == "arrow":
            text = arrow_text(d)
            return text_sentences(text, "src"), text_sentences(text, "tgt")
        return stream_sentences(d, "src"), stream_sentences(d, "tgt")

    tok = tokenizer(sentences)
    opener = open_arrow if d.backend == "arrow" else StreamCorpus
    corpus = opener(d, tok) if ranks.is_main else None  # rank 0 first: it builds the cache
    barrier()
    return tok, opener(d, tok) if corpus is None else corpus, valid_text


def _read(cfg: Config, split: str, n: int | None) -> ParallelText:
    """The split's first ``n`` pairs (default: all); lines past the last kept one count as not
    read."""
    text = load_split(cfg.data, split)
    if not n or len(text) <= n:
        return text
    last = text.line_no[n - 1]
    del text.src[n:], text.tgt[n:], text.line_no[n:]
    text.n_read = last
    text.dropped = {k: [i for i in v if i <= last] for k, v in text.dropped.items()}
    text.dropped = {k: v for k, v in text.dropped.items() if v}
    return text


def _read_valid(cfg: Config) -> ParallelText:
    """The validation split, refused when no pair is left: every validation metric (loss,
    perplexity, BLEU) and early stopping would otherwise be computed over zero tokens."""
    text = _read(cfg, "valid", cfg.data.max_valid_pairs)
    if not len(text):
        raise DataError(
            f"{split_names(cfg.data, 'valid')}: no usable validation pair ({text.n_read} lines "
            "read, every one empty on a side); give data.valid a non-empty parallel set"
        )
    if cfg.data.valid_concat_k > 1:
        text, _ = join_lines(text, cfg.data.valid_concat_k)
    return text


def _eval_splits(cfg: Config, valid_text: ParallelText) -> dict[str, ParallelText]:
    """The splits leakage is checked against: validation, and the test split when it can be read
    (a run does not need one, so a missing test split is not an error here)."""
    out = {"valid": valid_text}
    if cfg.data.test is not None or cfg.data.hf is not None:
        try:
            out["test"] = load_split(cfg.data, "test")
        except DataError as e:
            default = "test" not in cfg.data.model_fields_set and cfg.data.hf is None
            fix = (
                f"data.test is the default {cfg.data.test}: set it to your test prefix, or to null"
            )
            log.info("leakage: no test split to check (%s)%s", e, f"; {fix}" if default else "")
    return out


def pair_key(src: str, tgt: str) -> tuple[str, str]:
    """The pair as the checks compare it: whitespace runs collapsed, ends stripped."""
    return " ".join(src.split()), " ".join(tgt.split())


def report_leakage(
    train: Iterable[tuple[str, str]], evals: dict[str, ParallelText], duplicates: bool = True
) -> None:
    """Log one line per evaluation split (its pairs, and its sources, also in training), one per
    split for its untranslated pairs (``report_copies``) and, with ``duplicates``, one for the
    pairs repeated in the training split (counted by 64-bit hash, 8 bytes a pair); ``train`` is
    read once.
    """
    keys = {
        name: [pair_key(s, t) for s, t in zip(e.src, e.tgt, strict=True)]
        for name, e in evals.items()
    }
    wanted = {k for ks in keys.values() for k in ks}
    wanted_src = {k[0] for k in wanted}
    found, found_src = set(), set()
    hashes = array("q")  # 8 bytes a pair: a large corpus is counted without holding its text
    n_train = copies = 0
    for s, t in train:
        k = pair_key(s, t)
        n_train, copies = n_train + 1, copies + (k[0] == k[1])
        if k in wanted:
            found.add(k)
        if k[0] in wanted_src:
            found_src.add(k[0])
        if duplicates:
            hashes.append(hash(k))
    for name, ks in keys.items():
        pairs, sources = sum(k in found for k in ks), sum(k[0] in found_src for k in ks)
        (log.warning if pairs or sources else log.info)(
            "leakage: %s: %d of %d pairs, and %d of %d source sentences (with any translation), "
            "also in the training split (%s)",
            name,
            pairs,
            len(ks),
            sources,
            len(ks),
            evals[name].origin,
        )
        report_copies(name, sum(k[0] == k[1] for k in ks), len(ks))
    report_copies("train", copies, n_train)
    if not duplicates:
        return
    counts = np.unique(np.asarray(hashes, dtype=np.int64), return_counts=True)[1]
    extra, repeated = int((counts - 1).sum()), int((counts > 1).sum())
    (log.warning if extra else log.info)(
        "leakage: train: %d duplicate pairs (%d distinct pairs occur more than once)%s",
        extra,
        repeated,
        "; data.dedup: true removes them" if extra else "",
    )


def report_copies(split: str, copies: int, pairs: int) -> None:
    """Log how many of a split's ``pairs`` are untranslated (``copies``: the target equals the
    source), as a warning past ``COPY_SHARE``: a model learns to copy them, a score counts them."""
    said = f"untranslated: {split}: {copies} of {pairs} pairs"
    if copies <= COPY_SHARE * pairs:
        log.info("%s have the target equal to the source", said)
        return
    log.warning(
        "%s (%.0f%%, over %.0f%%) have the target equal to the source: check that the target "
        "file holds the translations, and remove such pairs (a model learns to copy them, a "
        "score counts them as translated)",
        said, 100 * copies / pairs, 100 * COPY_SHARE,
    )  # fmt: skip


def dedup(text: ParallelText, evals: dict[str, ParallelText]) -> None:
    """Drop, in place, every training pair already seen earlier in ``text`` or present in an
    evaluation split; the drops are counted with line numbers like every other drop."""
    held_out = {pair_key(s, t) for e in evals.values() for s, t in zip(e.src, e.tgt, strict=True)}
    seen: set[tuple[str, str]] = set()
    keep, dropped = [], {DROP_DUPLICATE: [], DROP_IN_EVAL: []}
    for i, (s, t) in enumerate(zip(text.src, text.tgt, strict=True)):
        k = pair_key(s, t)
        if k in held_out:
            dropped[DROP_IN_EVAL].append(text.line_no[i])
        elif k in seen:
            dropped[DROP_DUPLICATE].append(text.line_no[i])
        else:
            seen.add(k)
            keep.append(i)
    text.keep(keep)
    text.dropped.update({k: v for k, v in dropped.items() if v})

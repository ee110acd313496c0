"""Data preparation for a run: both splits read and cleaned, the tokenizer trained (or reused),
pairs encoded and filtered; then each epoch's batches, a pure function of (seed, epoch), and this
rank's share of them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import torch

from seq2seq.config import Config, TrainConfig
from seq2seq.data.batch import Batch, token_batches
from seq2seq.data.corpus import Corpus, clean_rows
from seq2seq.data.leakage import dedup, report_leakage
from seq2seq.data.text import (
    DataError,
    ParallelText,
    TokenizedPairs,
    concat_pairs,
    drop_long_sources,
    join_lines,
    load_split,
    resolve_corpus_file,
    split_origin,
    tokenize_pairs,
)
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.training.distributed import DistInfo, barrier

log = logging.getLogger("seq2seq")


@dataclass
class TrainData:
    """What a run trains and validates on."""

    tok: Tokenizer
    train: TokenizedPairs | Corpus
    valid: TokenizedPairs
    valid_text: ParallelText


def prepare_data(cfg: Config, run_dir: Path, tok: Tokenizer | None, info: DistInfo) -> TrainData:
    """Read and clean both splits, train (or reuse) the tokenizer, encode, filter by max_len.
    With ``data.backend`` arrow or stream the training split stays on disk (``data.backends``).

    Args:
        tok: the tokenizer to use; None trains one on the training split (rank 0 writes it to
            ``run_dir``; the other ranks wait for it and load it).

    Raises:
        DataError: no usable training pair, no usable validation pair (checked before any slow
            step, and again after encoding), or unreadable or misaligned files.
        ConfigError: sentencepiece refused the tokenizer settings.
    """
    if cfg.data.backend != "memory":
        from seq2seq.data.backends import prepare_corpus

        valid_text = _read_valid(cfg)
        if info.is_main:  # one more pass over the training text: pairs only, no duplicate count
            rows = clean_rows(cfg.data.model_dump_json(), "train")
            train_pairs = ((r["src"], r["tgt"]) for r in rows if r["src"])
            report_leakage(train_pairs, _eval_splits(cfg, valid_text), duplicates=False)
        tok, train = prepare_corpus(cfg, run_dir, tok, info.is_main, lambda: barrier(info))
    else:
        text = _read(cfg, "train", cfg.data.max_train_pairs)
        if cfg.data.max_src_words:
            drop_long_sources(text, cfg.data.max_src_words)
        valid_text = _read_valid(cfg)  # before any slow step
        evals = _eval_splits(cfg, valid_text)
        if info.is_main:
            report_leakage(zip(text.src, text.tgt, strict=True), evals)
        if cfg.data.dedup:
            dedup(text, evals)
        if not len(text):
            raise DataError(f"{text.origin}: no usable training pairs")
        if tok is None:
            tok = _train_tokenizer(text, cfg, run_dir, info)
        train = tokenize_pairs(text, tok.encode_src, tok.encode_tgt, cfg.data.max_len, "train")
    # joined validation lines may be valid_concat_k times as long as a single pair
    valid_len = cfg.data.max_len * cfg.data.valid_concat_k
    valid = tokenize_pairs(valid_text, tok.encode_src, tok.encode_tgt, valid_len, "valid")
    if not len(valid):
        raise DataError(
            f"{_valid_files(cfg)}: no usable validation pair is left within data.max_len "
            f"{cfg.data.max_len} ({valid_text.n_read} read); validation would score zero tokens"
        )
    if isinstance(train, TokenizedPairs):
        train = concat_pairs(train, cfg.data.concat_k, cfg.train.seed)
    return TrainData(tok, train, valid, valid_text)


def _read(cfg: Config, split: str, max_pairs: int | None) -> ParallelText:
    text = load_split(cfg.data, split)
    if max_pairs:
        _truncate(text, max_pairs)
    return text


def _read_valid(cfg: Config) -> ParallelText:
    """The validation split, refused when no pair is left: every validation metric (loss,
    perplexity, BLEU) and early stopping would otherwise be computed over zero tokens."""
    text = _read(cfg, "valid", cfg.data.max_valid_pairs)
    if not len(text):
        raise DataError(
            f"{_valid_files(cfg)}: no usable validation pair ({text.n_read} lines read, every "
            "one empty on a side); give data.valid a non-empty parallel set"
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
            log.info("leakage: no test split to check (%s)", e)
    return out


def _valid_files(cfg: Config) -> str:
    """The validation files as a message names them: both sides, or the dataset split."""
    d = cfg.data
    if d.hf is not None or d.valid is None:
        return split_origin(d, "valid")
    files = (resolve_corpus_file(d.valid, lang) for lang in (d.src_lang, d.tgt_lang))
    return " and ".join(str(f) for f in files)


def _train_tokenizer(text: ParallelText, cfg: Config, run_dir: Path, info: DistInfo) -> Tokenizer:
    """Rank 0 trains the tokenizer on the training split and writes it; every rank loads it."""
    if info.is_main:
        log.info(
            "training %s sentencepiece model(s), vocab %d",
            cfg.tokenizer.type,
            cfg.tokenizer.vocab_size,
        )
        Tokenizer.train(text.src, text.tgt, cfg.tokenizer).save(run_dir)
    barrier(info)
    return Tokenizer.load(run_dir)


def _truncate(text: ParallelText, n: int) -> None:
    """Keep the first ``n`` pairs; lines past the last kept one count as not read."""
    if len(text) <= n:
        return
    last = text.line_no[n - 1]
    del text.src[n:], text.tgt[n:], text.line_no[n:]
    text.n_read = last
    text.dropped = {k: [i for i in v if i <= last] for k, v in text.dropped.items()}
    text.dropped = {k: v for k, v in text.dropped.items() if v}


def epoch_batches(pairs: TokenizedPairs | Corpus, t: TrainConfig, epoch: int, info: DistInfo):
    """This rank's share of the epoch's batches: every ``world``-th batch from ``rank`` on, after
    dropping the remainder so every rank gets the same number. An Arrow or stream corpus
    (``data.backend``) cuts its own batches by the same rule."""
    if not isinstance(pairs, TokenizedPairs):
        return pairs.epoch_batches(t.batch_tokens, t.seed, epoch, info.rank, info.world)
    src_lens = [len(s) for s in pairs.src]
    tgt_lens = [len(s) for s in pairs.tgt]
    order = token_batches(src_lens, tgt_lens, t.batch_tokens, t.seed, epoch)
    usable = len(order) - len(order) % info.world
    return order[info.rank : usable : info.world]


def make_batch(
    pairs: TokenizedPairs | Corpus,
    idx,
    device: torch.device | str,
    pad_multiple: int = 1,
    max_width: int | None = None,
) -> Batch:
    """One element of ``epoch_batches`` as a ``Batch`` on ``device``; with the memory backend its
    lengths are rounded up to ``pad_multiple`` (at most ``max_width``), in pinned memory on CUDA."""
    if not isinstance(pairs, TokenizedPairs):
        return pairs.batch(idx).to(device)
    pin = torch.device(device).type == "cuda"
    src, tgt = [pairs.src[i] for i in idx], [pairs.tgt[i] for i in idx]
    return Batch.from_ids(src, tgt, pad_multiple, max_width, pin).to(device)

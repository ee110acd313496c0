"""What ``tune-decode`` checks around its sweep (``decoding/tune.py``): the lines it tunes on,
``--src``/``--ref`` or else the run's validation split, read as ``eval`` reads them (aligned, not
blank), with a warning when they are the run's own test split; and a sweep whose settings all
tied, which gives no reason to replace the run's search."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from seq2seq.config import Config
from seq2seq.data.text import DataError, resolve_corpus_file
from seq2seq.decoding.tune import SweepRow, check_tuning_set
from seq2seq.evaluation.report import read_eval_texts

log = logging.getLogger("seq2seq")


def tuning_set(
    cfg: Config, src: Path | None, ref: Path | None, ckpt: Path
) -> tuple[Path, Path, list[str], list[str]]:
    """``src`` and ``ref`` (both given or both None: the run's data.valid), with their source and
    reference lines.

    Raises:
        ValueError: the run (of checkpoint ``ckpt``) has no data.valid, or the set is too small
            (``tune.check_tuning_set``).
        DataError: a file that is missing, unreadable or not aligned with the other.
    """
    if src is None:
        if cfg.data.valid is None:
            raise ValueError(f"{ckpt}: the run has no data.valid; give --src and --ref")
        src = resolve_corpus_file(cfg.data.valid, cfg.data.src_lang)
        ref = resolve_corpus_file(cfg.data.valid, cfg.data.tgt_lang)
    warn_if_test_split(src, cfg)
    texts = read_eval_texts([ref], src, None)
    check_tuning_set(texts.sources, texts.refs[0], src)
    return src, ref, texts.sources, texts.refs[0]


def warn_if_test_split(src: Path, cfg: Config) -> None:
    """A warning when ``src`` is the run's own test split: the search would be chosen on the
    sentences its test scores are reported on."""
    if cfg.data.test is None:
        return
    try:
        test = resolve_corpus_file(cfg.data.test, cfg.data.src_lang)
    except DataError:
        return
    if Path(src).resolve() == test.resolve():
        log.warning(
            "--src %s is the run's test split (data.test): its test scores will no longer be "
            "unseen; tune on validation lines instead",
            src,
        )


def tie_reasons(rows: Sequence[SweepRow], src: Path) -> tuple[str, str]:
    """For a sweep whose settings all scored the same BLEU (``tune.all_tied``): what happened
    and what to do about it."""
    bleu = rows[0].bleu
    same = f"--src {src}: all {len(rows)} settings scored BLEU {bleu:.2f}, so"
    if bleu == 0:
        fix = "check that --ref translates --src, or train the model longer"
        return f"{same} no output matches its reference", fix
    return (
        f"{same} this tuning set cannot tell them apart",
        "tune on a bigger or more varied --src/--ref",
    )

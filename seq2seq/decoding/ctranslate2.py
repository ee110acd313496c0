"""Translating with a CTranslate2 export (``seq2seq export --format ctranslate2``):
``translate_sentences`` decodes with a ``CTranslate2Model``, whose ``search_ids`` runs
``ctranslate2.Translator.translate_batch`` where our search would run; cleaning, source cuts,
batching and detokenizing stay ours. The decode settings map onto ``translate_batch`` in
``search_options``; beam search with alpha > 0 re-ranks all K finished hypotheses by our GNMT
score (CTranslate2's own penalty divides by |Y|^alpha). A hypothesis that goes on past what the
constraints allow is cut before its first forbidden token and rescored (``_blocked``), as ours.
The run's target vocabulary, which the export records, is CTranslate2's ``suppress_sequences``.
What differs, and by how much: docs/overview.md (export).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from seq2seq.checkpoint import (
    CTRANSLATE2_FORMAT,
    CTRANSLATE2_META,
    CTRANSLATE2_VERSION,
    CheckpointError,
    config_of,
    unpack_target_vocab,
)
from seq2seq.config import Config, DecodeConfig
from seq2seq.data.tokenizer import BOS, EOS, PAD, UNK, Tokenizer, vocab_pieces
from seq2seq.decoding.base import Hypothesis, blocking_constraints, length_penalty, max_lengths
from seq2seq.decoding.files import LineTranslator

log = logging.getLogger("seq2seq")


def export_folder(path: str | Path) -> Path | None:
    """The CTranslate2 export ``path`` names (the folder, or a file inside it such as
    ``model.bin``), or None when it is not one."""
    p = Path(path)
    folders = (p, p.parent) if p.is_file() else (p,)
    return next((f for f in folders if (f / CTRANSLATE2_META).is_file()), None)


def read_export(folder: Path) -> tuple[dict[str, Any], Tokenizer, Config]:
    """``folder``'s ``seq2seq_export.json``, tokenizer, and the config the json holds; raises
    CheckpointError for a file that is missing or not what the export writes."""
    meta_path = folder / CTRANSLATE2_META
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("format") != CTRANSLATE2_FORMAT:
            raise ValueError(f"format is {meta.get('format')!r}, not {CTRANSLATE2_FORMAT}")
        if meta.get("version", 0) > CTRANSLATE2_VERSION:
            raise ValueError(f"version {meta['version']} is newer than this seq2seq's")
        tok = Tokenizer.load(folder)
    except (OSError, ValueError, KeyError, RuntimeError) as e:  # sentencepiece: RuntimeError
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise CheckpointError(
            f"{folder}: not a readable CTranslate2 export ({first}); export the run again"
        ) from None
    return meta, tok, config_of(meta, str(meta_path))


def ctranslate2_device(device: str) -> str:
    """``--device`` for CTranslate2: auto is cuda when it sees a GPU, else cpu; raises
    ValueError (one line) for cuda asked for and none seen, or an unknown device."""
    import ctranslate2

    gpus = ctranslate2.get_cuda_device_count()
    if device == "auto":
        return "cuda" if gpus else "cpu"
    if device == "cuda" and not gpus:
        raise ValueError("--device cuda: CTranslate2 sees no CUDA device; give --device cpu")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"--device {device}: CTranslate2 runs on cpu or cuda")
    return device


def load_translator(
    folder: Path, device: str, quantize: str | None = None, seed: int | None = None
):
    """``ctranslate2.Translator`` over ``folder`` on ``device``, int8 under ``quantize``, with
    torch's CPU thread count; ``seed`` is set before it is made (its threads take it then)."""
    import ctranslate2

    if seed is not None:
        ctranslate2.set_random_seed(seed)
    compute = {None: "default", "int8": "int8"}[quantize]
    try:
        return ctranslate2.Translator(
            str(folder), device=device, compute_type=compute, intra_threads=torch.get_num_threads()
        )
    except (RuntimeError, ValueError, OSError) as e:  # a damaged model.bin, an unknown type
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise CheckpointError(
            f"{folder}: CTranslate2 cannot load this export ({first}); export the run again"
        ) from None


@dataclass
class CTranslate2Model:
    """The model of a CTranslate2 export: its translator (loaded at once, so a damaged model.bin
    fails before any input), the positions its tables hold (``source_limit`` reads them), and
    the run's ``target_vocab`` as our models carry it ((V,) bool, or None: every piece allowed)."""

    folder: Path
    device: str = "cpu"
    quantize: str | None = None
    max_positions: int | None = None
    seed: int | None = None  # the seed the translator's generators started from

    def __post_init__(self) -> None:
        meta, tok, _ = read_export(self.folder)
        source = str(self.folder / CTRANSLATE2_META)
        self.target_vocab = unpack_target_vocab(meta, tok.tgt_vocab_size, source)
        self._unrecorded = "target_vocab" not in meta  # exported before the mask was recorded
        # target piece -> id, by the export's tokenizer (the one every caller decodes with)
        self._tgt_id = {piece: i for i, piece in enumerate(vocab_pieces(tok.tgt_sp))}
        self.translator = load_translator(self.folder, self.device, self.quantize)

    def search_ids(
        self, tok: Tokenizer, batch: list[list[int]], cfg: DecodeConfig, n_best: int
    ) -> list[list[Hypothesis]]:
        """CTranslate2's search of a batch of source ids: each sentence's hypotheses, best first,
        as ours return them. One ``translate_batch`` call per output length limit (it takes one
        per call); a new translator for a sampling seed it did not start from."""
        if cfg.target_vocab_mask and self._unrecorded:
            log.warning(
                "%s: this export applies no target vocabulary mask (decode.target_vocab_mask); "
                "export the run again to get it",
                self.folder,
            )
            self._unrecorded = False  # said once
        if cfg.method == "sample" and cfg.seed is not None and cfg.seed != self.seed:
            self.translator = load_translator(self.folder, self.device, self.quantize, cfg.seed)
            self.seed = cfg.seed
        lengths = torch.tensor([len(ids) for ids in batch], dtype=torch.float32)
        limits = max_lengths(lengths, cfg.max_len_a, cfg.max_len_b).tolist()
        allowed = self.target_vocab if cfg.target_vocab_mask else None
        out: list[list[Hypothesis]] = [[] for _ in batch]
        for own in sorted(set(limits)):
            rows = [k for k, limit in enumerate(limits) if limit == own]
            chunk = [batch[k] for k in rows]
            found = _translate_chunk(
                self.translator, tok, chunk, own, cfg, n_best, self._tgt_id, allowed
            )
            for k, hyps in zip(rows, found, strict=True):
                out[k] = hyps
        return out


def search_options(cfg: DecodeConfig, n_best: int, max_len: int) -> dict[str, Any]:
    """``translate_batch`` keyword arguments for ``cfg``: greedy is beam size 1; ``min_len``,
    ``no_repeat_ngram`` and the sentence's limit ``max_len`` map onto its options;
    ``target_vocab_mask`` is ``suppress_sequences`` (``_translate_chunk``). A new
    DecodeConfig field fails tests/unit/decoding/test_ctranslate2_options.py until it is mapped
    here (or handled around ``translate_batch``, or refused for an export) and listed there."""
    opts: dict[str, Any] = {
        "beam_size": 1,
        "num_hypotheses": n_best,
        "length_penalty": 0.0,
        "max_decoding_length": max_len,
        # a min_len at or over the limit blocks EOS to the end, as ours (which warns of it)
        "min_decoding_length": min(cfg.min_len, max_len),
        "no_repeat_ngram_size": cfg.no_repeat_ngram,
        "max_input_length": 0,  # sources are cut to source_limit before, with a warning
        "return_scores": True,
        "return_end_token": True,  # tells a finished hypothesis from a cut one
    }
    if cfg.method == "beam":
        # alpha > 0: every hypothesis CTranslate2 finished, re-ranked the GNMT way
        k = cfg.beam_size if cfg.length_penalty else n_best
        opts.update(beam_size=cfg.beam_size, length_penalty=cfg.length_penalty, num_hypotheses=k)
    elif cfg.method == "sample":
        opts.update(
            sampling_topk=cfg.top_k or 0,
            sampling_topp=cfg.top_p,
            sampling_temperature=cfg.temperature,
        )
    return opts


def _translate_chunk(translator, tok, chunk, own, cfg, n_best, tgt_id, allowed) -> list:
    """One ``translate_batch`` call for the source ids ``chunk`` of output length limit ``own``:
    each one's hypotheses, best first (``tgt_id``: piece -> id), cut where ours would end.
    PAD, BOS and every piece ``allowed`` ((V,) bool, or None) leaves out are suppressed."""
    sources = [[tok.src_sp.id_to_piece(i) for i in ids] for ids in chunk]
    barred = {PAD, BOS} if allowed is None else set((~allowed).nonzero().squeeze(1).tolist())
    out = translator.translate_batch(
        sources,
        suppress_sequences=[[tok.tgt_sp.id_to_piece(i)] for i in sorted(barred)],
        **search_options(cfg, n_best, own),
    )
    found = []
    for source, res in zip(sources, out, strict=True):
        hyps = [
            _hypothesis([tgt_id.get(p, UNK) for p in pieces], score, own, cfg)
            for pieces, score in zip(res.hypotheses, res.scores, strict=True)
        ]
        _rescore(
            translator, tok, source, [h for h in hyps if _blocked(h, cfg, barred, allowed)], cfg
        )
        # best first by our score; beam search puts finished ones first, as ours returns a cut
        # one only to fill the n-best
        hyps.sort(key=lambda h: (cfg.method == "beam" and not h.finished, -h.score))
        found.append(hyps[:n_best])
    return found


def _blocked(h: Hypothesis, cfg: DecodeConfig, barred: set[int], allowed) -> bool:
    """Cut ``h`` before its first token the constraints forbid (a ``barred`` id: PAD, BOS, a
    piece the mask ``allowed`` leaves out; EOS before ``min_len``, a repeated n-gram; CTranslate2
    emits them when it has nothing else), unfinished and ``blocked``, as ours end; True when it
    was cut."""
    n, toks = cfg.no_repeat_ngram, h.tokens
    for k, t in enumerate(toks):
        seen = (
            n > 0
            and k >= n
            and any(toks[i : i + n] == toks[k - n + 1 : k + 1] for i in range(k - n + 1))
        )
        if t in barred or (t == EOS and k < cfg.min_len) or seen:
            h.tokens, h.finished = toks[:k], False
            h.blocked = blocking_constraints(k, cfg.min_len, n, allowed)
            return True
    return False


def _rescore(translator, tok, source: list[str], hyps: list[Hypothesis], cfg) -> None:
    """Give each of ``hyps`` (cut by ``_blocked``) the log-probability of the tokens it kept
    (CTranslate2's ``score_batch``) and its GNMT score."""
    kept = [h for h in hyps if h.tokens]
    scored = translator.score_batch([source] * len(kept), [tok.tgt_pieces(h.tokens) for h in kept])
    for h, res in zip(kept, scored, strict=True):
        h.token_log_probs = [float(x) for x in res.log_probs[: len(h.tokens)]]
    for h in hyps:
        h.log_prob = sum(h.token_log_probs or [])
        h.score = h.log_prob / float(length_penalty(len(h.tokens), cfg.length_penalty))


def _hypothesis(tokens: list[int], score: float, limit: int, cfg: DecodeConfig) -> Hypothesis:
    """One CTranslate2 hypothesis (ids, EOS included) as ours: cut to ``limit``, its log P
    (CTranslate2's score times the |Y|^alpha it divided by) and GNMT score."""
    alpha = cfg.length_penalty if cfg.method == "beam" else 0.0
    log_prob = score * len(tokens) ** alpha if tokens else score
    if len(tokens) > limit:
        tokens = tokens[:limit]
    finished = bool(tokens) and tokens[-1] == EOS
    lp = float(length_penalty(len(tokens), cfg.length_penalty)) if tokens else 1.0
    return Hypothesis(tokens, log_prob / lp, log_prob, finished)


@dataclass
class CTranslate2LineTranslator(LineTranslator):
    """``LineTranslator`` whose ``model`` is a ``CTranslate2Model``; the windows, n-best rows and
    report are the same. No attention: ``attention_n`` must stay 0."""

    def __post_init__(self) -> None:
        if self.cfg.method == "beam" and self.cfg.length_penalty:
            log.info(
                "beam search by CTranslate2, its finished hypotheses re-ranked by the GNMT length "
                "penalty (alpha %s), as seq2seq ranks them; CTranslate2's own divides by |Y|^alpha",
                self.cfg.length_penalty,
            )

    def render(self, lines, first_line_no: int = 1) -> list[str]:
        """As ``LineTranslator.render``; ``--format jsonl`` warns once of the fields it leaves
        null."""
        if self.output_format == "jsonl" and not getattr(self, "_said_nulls", False):
            log.warning(
                "CTranslate2 export: --format jsonl writes alignment and token_log_probs as null "
                "(CTranslate2's search returns neither); translate with the run itself for them"
            )
            self._said_nulls = True
        return super().render(lines, first_line_no)

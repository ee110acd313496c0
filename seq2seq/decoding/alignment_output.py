"""``translate --format jsonl``: one JSON object per input line (``jsonl_record``): each
hypothesis's ``translation``, ``score`` (log P / ((5 + |Y|) / 6)^α, GNMT), ``log_prob``,
``finished``, target ``tokens``, ``token_log_probs`` and ``alignment``, Pharaoh ``i-j`` pairs read
off the cross-attention (word i of the source line as written, word j of ``translation``, 0-based;
null without cross-attention). docs/overview.md (translate, step 6) describes every field.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from seq2seq.config import ConfigError
from seq2seq.data.batch import pad_sequences
from seq2seq.data.text import clean_line
from seq2seq.data.tokenizer import BOS, EOS, PAD, UNK, Tokenizer
from seq2seq.decoding.base import Hypothesis
from seq2seq.decoding.translate import Translation, eval_mode
from seq2seq.models import Seq2SeqModel

OUTPUT_FORMATS = ("text", "nbest", "jsonl")
WORD_START = "▁"  # sentencepiece's whitespace mark, U+2581
# Target ids whose pieces the text leaves out (decode_tgt drops them): not words, never aligned.
UNWRITTEN = frozenset({PAD, BOS, EOS, UNK})


def output_format(
    fmt: str | None,
    n_best: int,
    align_layer: int | None,
    model: Seq2SeqModel | None,
    device: torch.device | str = "cpu",
) -> str:
    """The output format ``translate`` writes: ``fmt``, else ``nbest`` with ``--n-best`` above 1,
    else ``text``. ``model`` None: only the checks that need no model.

    Raises:
        ConfigError: an unknown format, ``text`` with ``n_best`` > 1, ``align_layer`` without
            ``jsonl``, or a layer the model does not have.
    """
    if fmt is None:
        fmt = "nbest" if n_best > 1 else "text"
    if fmt not in OUTPUT_FORMATS:
        raise ConfigError(f"--format {fmt}: one of {' | '.join(OUTPUT_FORMATS)}")
    if fmt == "text" and n_best > 1:
        raise ConfigError(
            f"--format text writes one line per input line; --n-best {n_best} needs "
            "--format nbest (TSV rows) or --format jsonl"
        )
    if align_layer is not None:
        if fmt != "jsonl":
            raise ConfigError("--align-layer: only --format jsonl writes alignments")
        if model is None:
            return fmt
        shape = attention_shape(model, device)
        if shape is None:
            raise ConfigError(
                "--align-layer: this model returns no cross-attention (the fixed-vector rnn has "
                "none; a CTranslate2 export returns none: use the run it came from)"
            )
        layers = shape[0]
        if not 0 <= align_layer < layers:
            raise ConfigError(
                f"--align-layer {align_layer}: the model's cross-attention has {layers} "
                f"layer{'s' if layers > 1 else ''}: 0 to {layers - 1}"
            )
    return fmt


def has_attention(model: Seq2SeqModel) -> bool:
    return bool(getattr(model, "has_attention", False))


def attention_shape(model: Seq2SeqModel, device: torch.device | str = "cpu") -> tuple | None:
    """(L, H) decoder layers and heads of ``model.cross_attention_maps`` (RNN decoders and
    ensembles: (1, 1)), from a one-token probe; None for a model without cross-attention."""
    if not has_attention(model):
        return None
    maps = teacher_forced_maps(model, [([UNK], [EOS])], device)
    return None if maps is None else (int(maps.shape[1]), int(maps.shape[2]))


@torch.inference_mode()
def teacher_forced_maps(
    model: Seq2SeqModel, rows: Sequence[tuple[list[int], list[int]]], device: torch.device | str
) -> Tensor | None:
    """(n, L, H, T, S) ``model.cross_attention_maps`` while each row's target tokens are emitted
    after its source ids, teacher-forced (rows padded; row t is the attention paid while
    emitting token t, as search saw it step by step)."""
    src = pad_sequences([ids for ids, _ in rows]).to(device)
    tgt_in = pad_sequences([[BOS, *tokens[:-1]] for _, tokens in rows]).to(device)
    return model.cross_attention_maps(src, src != PAD, tgt_in)


def piece_words(pieces: Sequence[str | None]) -> list[int | None]:
    """The word (0-based) each piece belongs to, as sentencepiece detokenises: ``▁`` starts a word
    (a lone ``▁`` belongs to the next piece's word); None for a trailing one and a None piece.

    >>> piece_words(["▁a", "b", "▁c", "▁", ",", None])
    [0, 0, 1, 2, 2, None]
    """
    out: list[int | None] = []
    word, starts, waiting = -1, True, []  # waiting: lone-▁ pieces before the next word
    for k, piece in enumerate(pieces):
        if piece is None:
            out.append(None)
            continue
        if piece.startswith(WORD_START):
            starts = True
            piece = piece.lstrip(WORD_START)
        if not piece:
            waiting.append(k)
            out.append(None)
            continue
        if starts:
            word, starts = word + 1, False
            for w in waiting:
                out[w] = word
            waiting = []
        out.append(word)
    return out


def pharaoh(
    attention: Tensor, src_words: Sequence[int | None], tgt_words: Sequence[int | None]
) -> str:
    """Pharaoh ``i-j`` pairs from a (T, S) cross-attention: (src_words[s], tgt_words[t]) for
    s = argmax attention[t], deduplicated, in target then source order; "" when none aligns.

    Raises:
        ValueError: the attention's shape is not (len(tgt_words), len(src_words)).
    """
    if tuple(attention.shape) != (len(tgt_words), len(src_words)):
        raise ValueError(
            f"attention {tuple(attention.shape)} does not match {len(tgt_words)} target and "
            f"{len(src_words)} source pieces"
        )
    pairs = set()
    for t, s in enumerate(attention.float().argmax(-1).tolist()):
        i, j = src_words[s], tgt_words[t]
        if i is not None and j is not None:
            pairs.add((i, j))
    return " ".join(f"{i}-{j}" for i, j in sorted(pairs, key=lambda p: (p[1], p[0])))


def source_words(tok: Tokenizer, source: str, ids: Sequence[int]) -> list[int | None] | None:
    """For each source piece of ``ids`` (``clean_line(source)`` encoded, perhaps cut), the word of
    ``source.split()`` holding its text by sentencepiece's offsets (a piece without text takes
    the next one's); None when the encoding is not ``ids``."""
    text = clean_line(source)
    proto = tok.src_sp.encode(text, return_type="proto")
    if [p.id for p in proto.pieces[: len(ids)]] != [int(i) for i in ids]:
        return None
    byte_word: list[int | None] = []  # the word of each byte of the UTF-8 text (None: blank)
    word, in_word = -1, False
    for ch in text:
        if not ch.isspace() and not in_word:
            word += 1
        in_word = not ch.isspace()
        byte_word += [word if in_word else None] * len(ch.encode("utf-8"))
    if len(text.split()) != len(source.split()):  # cleaning split a word (a line break in it)
        return None
    out: list[int | None] = []
    waiting: list[int] = []  # pieces without text of their own, before the next word
    for k, p in enumerate(proto.pieces[: len(ids)]):
        inside = [w for w in byte_word[p.begin : p.end] if w is not None]
        if not inside:
            waiting.append(k)
            out.append(None)
            continue
        for w in waiting:
            out[w] = inside[-1]
        waiting = []
        out.append(inside[-1])
    return out


def alignment(tok: Tokenizer, r: Translation, h: Hypothesis) -> str | None:
    """``h``'s Pharaoh alignment to the source of ``r``, or None without attention; source words
    as written (``source_words``), else the pieces' (``piece_words``)."""
    if h.attention is None:
        return None
    src_words = source_words(tok, r.source, r.source_ids)
    if src_words is None:
        src_words = piece_words([tok.src_sp.id_to_piece(int(i)) for i in r.source_ids])
    pieces = tok.tgt_pieces(h.tokens)
    tgt = [None if t in UNWRITTEN else p for t, p in zip(h.tokens, pieces, strict=True)]
    return pharaoh(h.attention, src_words, piece_words(tgt))


def _number(x: float | None) -> float | None:
    """A JSON number, or null for none and for -inf / NaN (JSON has neither)."""
    return None if x is None or not math.isfinite(x) else float(x)


def hypothesis_entry(tok: Tokenizer, r: Translation, h: Hypothesis, text: str) -> dict[str, Any]:
    """One hypothesis as the JSON values of the module docstring."""
    token_lps = h.token_log_probs
    return {
        "translation": text,
        "score": _number(h.score),
        "log_prob": _number(h.log_prob),
        "finished": h.finished,
        "tokens": tok.tgt_pieces(h.tokens),
        "token_log_probs": None if token_lps is None else [_number(x) for x in token_lps],
        "alignment": alignment(tok, r, h),
    }


def jsonl_record(
    r: Translation, line_no: int, tok: Tokenizer, n_best: int, with_attention: bool
) -> dict[str, Any]:
    """Input line ``line_no``'s object: its best hypothesis's entry (a blank line's empty), or
    with ``n_best`` > 1 the list ``hypotheses``, best first."""
    entries = [hypothesis_entry(tok, r, h, t) for h, t in zip(r.hypotheses, r.texts, strict=True)]
    if n_best > 1:
        return {"line": line_no, "hypotheses": entries}
    if entries:
        return {"line": line_no, **entries[0]}
    empty = {"translation": "", "score": None, "log_prob": None, "finished": None, "tokens": []}
    alignment = "" if with_attention else None
    return {"line": line_no, **empty, "token_log_probs": [], "alignment": alignment}


@torch.inference_mode()
def attach_layer_attention(
    model: Seq2SeqModel,
    results: Sequence[Translation],
    layer: int,
    device: torch.device | str = "cpu",
    batch_size: int = 32,
) -> None:
    """``--align-layer``: every hypothesis's ``attention`` becomes decoder layer ``layer`` of
    ``model.cross_attention_maps`` (heads averaged), teacher-forced, ``batch_size`` at a time."""
    rows = [(r.source_ids, h) for r in results for h in r.hypotheses]
    with eval_mode(model):
        for k in range(0, len(rows), batch_size):
            chunk = rows[k : k + batch_size]
            maps = teacher_forced_maps(model, [(ids, h.tokens) for ids, h in chunk], device)
            att = maps[:, layer].float().mean(1)  # (n, T, S)
            for (ids, h), a in zip(chunk, att, strict=True):
                h.attention = a[: len(h.tokens), : len(ids)].cpu()

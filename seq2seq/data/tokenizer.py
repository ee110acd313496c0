"""sentencepiece subword tokenisation (Kudo & Richardson 2018), the one home of ``sentencepiece``.

Ids are fixed: pad 0, unk 1, bos 2, eos 3. The models travel inside each checkpoint as serialized
protos. ``<unk>`` pieces are removed from outputs (``keep_unk=True`` keeps them), and invalid UTF-8
in an output decodes to U+FFFD. Normalisation is per side (docs/data.md, "The tokenizer").
"""

from __future__ import annotations

import hashlib
import io
import itertools
import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import sentencepiece as spm

from seq2seq.atomic import atomic_write_bytes
from seq2seq.config import ConfigError, TokenizerConfig

log = logging.getLogger("seq2seq")

PAD, UNK, BOS, EOS = 0, 1, 2, 3


# sentencepiece silently skips lines over ``max_sentence_length`` bytes (4192 by default), which may
# hold a character's only example: the limit is raised to its maximum (1 GiB), and a line over
# ``LONG_LINE`` characters is fed in pieces cut at spaces (``line_pieces``), as its time grows with
# the square of a line's length (200,000 words: over 8 min). data.max_len drops such pairs later.
LINE_LIMIT = 2**30
LONG_LINE = 4096


def line_pieces(line: str, size: int = LONG_LINE) -> list[str]:
    """``line`` in pieces of at most ``size`` characters, cut at the last space before each limit
    (a longer run without spaces is cut inside); every character of ``line`` but the spaces cut
    at is kept, in order. A line of at most ``size`` characters is one piece, itself."""
    if len(line) <= size:
        return [line]
    out, start = [], 0
    while start < len(line):
        end = min(len(line), start + size)
        if end < len(line):
            cut = line.rfind(" ", start + 1, end + 1)
            end = cut if cut > start else end
        if piece := line[start:end].strip(" "):
            out.append(piece)
        start = end
    return out


# ``tokenizer.max_sentences`` below the corpus size: sampled here with a fixed seed (not the
# training seed, so runs differing only in ``train.seed`` share a tokenizer), not by sentencepiece,
# whose sampler is seeded afresh in every process.
SAMPLE_SEED = 0
SAMPLE_CHUNK = 1 << 16


def sample_sentences(sentences: Iterable[str], k: int, seed: int = SAMPLE_SEED) -> list[str]:
    """A uniform sample of ``k`` of ``sentences`` (reservoir sampling, read once), in their
    order; all of them, as they are, when there are no more than ``k``."""
    it = iter(sentences)
    kept = list(itertools.islice(it, k))
    if len(kept) < k:
        return kept
    rng = np.random.default_rng(seed)
    position = np.arange(k)  # where in the input each kept sentence stands
    seen = k
    while chunk := list(itertools.islice(it, SAMPLE_CHUNK)):
        # the sentence at (0-based) position i replaces slot j ~ U[0, i] when j < k
        slots = rng.integers(0, np.arange(seen + 1, seen + len(chunk) + 1))
        for t in np.flatnonzero(slots < k).tolist():
            j = int(slots[t])
            kept[j], position[j] = chunk[t], seen + t
        seen += len(chunk)
    return [kept[j] for j in np.argsort(position, kind="stable").tolist()]


def _train_proto(
    sentences: Iterable[str], cfg: TokenizerConfig, side: str = "joint", rule: str = "nmt_nfkc"
) -> bytes:
    """Train one model in memory; log the vocabulary size actually learned, the lines sampled
    (``max_sentences``) and the training characters the model does not cover.

    Raises:
        ConfigError: sentencepiece refused the settings (e.g. a vocabulary smaller than the
            characters, or than the 256 byte pieces ``byte_fallback`` needs).
        DataError: reading the sentences failed (raised as itself, see ``_Guarded``).
    """
    buf = io.BytesIO()
    reader = _Guarded(sentences, count_chars=cfg.type != "word" and not cfg.byte_fallback)
    # at most max_sentences reach sentencepiece, so its own (unseeded) sampler never draws
    sample = sample_sentences(reader, cfg.max_sentences)
    reader.reraise()
    try:
        _run_trainer(iter(sample), cfg, buf, rule)
    except RuntimeError as e:
        reader.reraise()
        reason = str(e).strip().splitlines()[-1].split("] ")[-1] if str(e).strip() else repr(e)
        raise ConfigError(
            f"tokenizer: sentencepiece cannot train with vocab_size {cfg.vocab_size}"
            f"{' and byte_fallback' if cfg.byte_fallback else ''}: {reason}"
        ) from None
    reader.reraise()
    _log_trained(buf.getvalue(), reader, cfg, side)
    return buf.getvalue()


def _log_trained(proto: bytes, reader: _Guarded, cfg: TokenizerConfig, side: str) -> None:
    """What the trainer made of the input, which sentencepiece itself only prints to stderr."""
    sp = spm.SentencePieceProcessor(model_proto=proto)
    learned = sp.get_piece_size()
    note = " (the training text gives no more)" if learned < cfg.vocab_size else ""
    log.info(
        "tokenizer (%s): learned %d pieces, vocab_size %d asked%s; trained on %s of %d lines",
        side,
        learned,
        cfg.vocab_size,
        note,
        "all" if reader.lines <= cfg.max_sentences else f"a sample of {cfg.max_sentences:,}",
        reader.lines,
    )
    if reader.long:
        log.info(
            "tokenizer (%s): %d training lines over %d characters were read in pieces cut at "
            "spaces (sentencepiece slows with the square of a line's length)",
            side,
            reader.long,
            LONG_LINE,
        )
    # A character the model has no piece for encodes to <unk> (character_coverage < 1, or only
    # in lines left out of the sample); a word model covers words, not characters. Most common
    # first (``most_common`` keeps the order first seen among equal counts).
    missing = [c for c, _ in reader.chars.most_common() if not c.isspace() and UNK in sp.encode(c)]
    if missing:
        shown = ", ".join(f"{c!r} x{reader.chars[c]}" for c in missing[:10])
        log.warning(
            "tokenizer (%s): %d training characters (%d occurrences) are not covered and "
            "become <unk>: %s%s",
            side,
            len(missing),
            sum(reader.chars[c] for c in missing),
            shown,
            " ..." if len(missing) > 10 else "",
        )


class _Guarded:
    """The sentences as sentencepiece reads them, counted (lines, and characters when asked). An
    error while reading (a streamed file's ``DataError``), which sentencepiece would turn into a
    RuntimeError about training, stops the input and is raised again by ``reraise``."""

    def __init__(self, sentences: Iterable[str], count_chars: bool = False):
        self.it, self.error = iter(sentences), None
        self.lines, self.long, self.count_chars = 0, 0, count_chars
        self.chars: Counter[str] = Counter()
        self.pending: list[str] = []  # the later pieces of a long line (``line_pieces``)

    def __iter__(self):
        return self

    def __next__(self) -> str:
        if self.error is not None:
            raise StopIteration
        if self.pending:
            return self.pending.pop()
        try:
            sentence = next(self.it)
        except StopIteration:
            raise
        except Exception as e:
            self.error = e
            raise StopIteration from None
        self.lines += 1
        if self.count_chars:
            self.chars.update(sentence)
        if len(sentence) > LONG_LINE:
            self.long += 1
            pieces = line_pieces(sentence) or [""]  # only spaces: a blank line
            self.pending = pieces[:0:-1]  # popped from the end: in order
            return pieces[0]
        return sentence

    def reraise(self) -> None:
        if self.error is not None:
            raise self.error


def _run_trainer(sentences: Iterable[str], cfg: TokenizerConfig, buf, rule: str) -> None:
    spm.SentencePieceTrainer.train(
        sentence_iterator=sentences,
        model_writer=buf,
        model_type=cfg.type,
        vocab_size=cfg.vocab_size,
        character_coverage=cfg.character_coverage,
        normalization_rule_name=rule,
        byte_fallback=cfg.byte_fallback,
        pad_id=PAD,
        unk_id=UNK,
        bos_id=BOS,
        eos_id=EOS,
        unk_surface="⁇",
        # the input is already at most max_sentences (``sample_sentences``), so sentencepiece
        # keeps it whole, in order; both settings stay as before, as the model records them
        input_sentence_size=cfg.max_sentences,
        shuffle_input_sentence=True,
        max_sentence_length=LINE_LIMIT,
        hard_vocab_limit=False,
        num_threads=2,
        minloglevel=2,
    )


def _apply_rule(sentences: Iterable[str], rule: str) -> Iterator[str]:
    """``sentences`` as a model with normalizer ``rule`` sees them (a joint model's input)."""
    if rule == "identity":
        yield from sentences
        return
    norm = spm.SentencePieceNormalizer(rule_name=rule)
    for x in sentences:
        yield norm.normalize(x).replace("▁", " ").strip()


def _with_rule(proto: bytes, rule: str) -> bytes:
    """The same model (pieces, scores) with the normalizer of ``rule`` in place of its own."""
    from sentencepiece import sentencepiece_model_pb2 as pb  # protobuf: the model's own format

    model = pb.ModelProto()
    model.ParseFromString(proto)
    model.normalizer_spec.ParseFromString(
        spm.SentencePieceNormalizer(rule_name=rule).serialized_normalizer_spec()
    )
    return model.SerializeToString()


def vocab_pieces(sp) -> list[str]:
    """A sentencepiece model's pieces in id order (V,): its vocabulary, as an export registers
    it and as two tokenizers are compared."""
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())]


class Tokenizer:
    """Source and target sentencepiece models: one model, or two, which with a joint vocabulary hold
    the same pieces and differ only in how they normalise text."""

    pad_id, unk_id, bos_id, eos_id = PAD, UNK, BOS, EOS

    def __init__(self, src_proto: bytes, tgt_proto: bytes | None = None):
        self.src_proto = src_proto
        self.tgt_proto = tgt_proto if tgt_proto is not None else src_proto
        self.one_model = self.tgt_proto == self.src_proto
        self.src_sp = spm.SentencePieceProcessor(model_proto=self.src_proto)
        self.tgt_sp = self.src_sp
        if not self.one_model:
            self.tgt_sp = spm.SentencePieceProcessor(model_proto=self.tgt_proto)
        # joint: one vocabulary (shared embeddings), whether or not the two sides normalise alike
        self.joint = self.one_model or vocab_pieces(self.src_sp) == vocab_pieces(self.tgt_sp)
        self.src_vocab_size = self.src_sp.get_piece_size()
        self.tgt_vocab_size = self.tgt_sp.get_piece_size()

    @classmethod
    def train(cls, src: Sequence[str], tgt: Sequence[str], cfg: TokenizerConfig) -> Tokenizer:
        """Train on the training split only; ``joint`` shares one set of pieces between both sides
        (one model when both sides normalise alike, else the same model with each side's rule).
        ``src`` and ``tgt`` are read once; a seeded sample of at most ``max_sentences`` is kept."""
        src_rule, tgt_rule = cfg.src_normalization, cfg.tgt_normalization
        if cfg.joint and src_rule == tgt_rule:
            return cls(_train_proto(itertools.chain(src, tgt), cfg, rule=src_rule))
        if cfg.joint:  # one set of pieces, learnt from each side as its own rule rewrites it
            text = itertools.chain(_apply_rule(src, src_rule), _apply_rule(tgt, tgt_rule))
            proto = _train_proto(text, cfg, rule="identity")
            return cls(_with_rule(proto, src_rule), _with_rule(proto, tgt_rule))
        return cls(
            _train_proto(src, cfg, "source", src_rule),
            _train_proto(tgt, cfg, "target", tgt_rule),
        )

    def encode_src(self, sentences: Iterable[str]) -> list[list[int]]:
        return self.src_sp.encode(list(sentences))

    def encode_tgt(self, sentences: Iterable[str]) -> list[list[int]]:
        return self.tgt_sp.encode(list(sentences))

    def decode_tgt(self, ids: Iterable[Sequence[int]], keep_unk: bool = False) -> list[str]:
        """Detokenise target ids (BOS/EOS/pad already removed by the caller or skipped here), the
        text stripped (a lone trailing ``▁`` piece decodes to a space)."""
        specials = {PAD, BOS, EOS} if keep_unk else {PAD, BOS, EOS, UNK}
        seqs = [[int(i) for i in seq if int(i) not in specials] for seq in ids]
        return [text.strip() for text in self.tgt_sp.decode(seqs)]

    def src_pieces(self, sentence: str) -> list[str]:
        return self.src_sp.encode(sentence, out_type=str)

    def tgt_pieces(self, ids: Sequence[int]) -> list[str]:
        return [self.tgt_sp.id_to_piece(int(i)) for i in ids]

    def save(self, directory: str | Path) -> None:
        """Write ``spm.model`` (one model) or ``spm.src.model`` + ``spm.tgt.model`` atomically, and
        remove the other layout's files so ``load`` can never pick up a stale model."""
        d = Path(directory)
        files = {"spm.model": self.src_proto}
        if not self.one_model:
            files = {"spm.src.model": self.src_proto, "spm.tgt.model": self.tgt_proto}
        for name in ("spm.model", "spm.src.model", "spm.tgt.model"):
            if name in files:
                atomic_write_bytes(d / name, files[name])
            else:
                (d / name).unlink(missing_ok=True)

    @classmethod
    def load(cls, directory: str | Path) -> Tokenizer:
        d = Path(directory)
        if (d / "spm.model").is_file():
            return cls((d / "spm.model").read_bytes())
        return cls((d / "spm.src.model").read_bytes(), (d / "spm.tgt.model").read_bytes())

    def state_dict(self) -> dict:
        return {"src": self.src_proto, "tgt": None if self.one_model else self.tgt_proto}

    @classmethod
    def from_state_dict(cls, state: dict) -> Tokenizer:
        return cls(state["src"], state["tgt"])

    def digest(self) -> str:
        """sha256 over the serialised source and target models: equal digests, equal tokenizers
        (a run's own, one from ``state_dict`` or ``load`` alike)."""
        return hashlib.sha256(self.src_proto + b"\0" + self.tgt_proto).hexdigest()

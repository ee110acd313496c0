"""What the study measures, kept per line beside results.json: one gzipped JSON file per model
and test set, ``lines/<set>/<model>.json.gz``, from which every statistic of the report is
recomputed (``study.judge`` and ``compare``'s report read only these files).

A file holds, for the set's lines (the captions, k = 1, then the k-joined lines, ``evalsets``):

- ``k``, ``src_words``, ``ref_words`` per line, the set's name, origin and digest;
- ``caps``: each line's length cap in words (``cells.length_caps``) and ``ratio``, the r it came
  from;
- per decoding (``greedy``, ``beam``, ``zero_shot``: the single-pair checkpoint, greedy): the
  hypotheses, the lines cut at the maximum length without EOS (``cut``, line indices),
  sacreBLEU's sentence statistics (``stats``, (N, 10)), the lines the length cap shortened
  (``capped``, indices) and the statistics of the capped hypotheses (``capped_stats``);
- ``nll_lines``: per k, each line's teacher-forced loss in nats (EOS included) and token count
  (``rho.nll_lines_by_k``);
- ``captions``: per caption its NLL alone, with a wrong source, in each k-join, token counts and
  the joins' units (``rho.CaptionNLL``).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from seq2seq.atomic import atomic_write_bytes
from seq2seq.study.cells import cap_hypotheses
from seq2seq.study.evalsets import EvalSet, lines_of
from seq2seq.study.rho import CaptionNLL
from seq2seq.study.stats import BleuStats

FORMAT = "seq2seq-study-lines/1"


def lines_path(out: str | Path, set_name: str, model: str) -> Path:
    """Where a model's per-line file for one test set lives under a study folder."""
    return Path(out) / "lines" / set_name / f"{model}.json.gz"


def line_record(
    model: str,
    evalset: EvalSet,
    decodes: Mapping[str, tuple[Sequence[str], Sequence[bool]]],
    caps: Sequence[int],
    ratio: float,
    captions: CaptionNLL,
    nll_lines: Mapping[int, tuple[np.ndarray, np.ndarray]],
    tgt_lang: str | None,
) -> dict:
    """The per-line record of one model on one set (module docstring) from ``decodes`` (label ->
    (hypotheses, cut flags)) and ``caps`` (per line its length cap in words, from ``ratio``).
    ValueError: hypotheses, flags or caps not one per line."""
    n = len(evalset.src)
    if len(caps) != n:
        raise ValueError(f"{len(caps)} length caps for {n} lines of {evalset.name}")
    out_decodes = {}
    for label, (hyps, cut) in decodes.items():
        if len(hyps) != n or len(cut) != n:
            raise ValueError(f"{label}: {len(hyps)} hypotheses for {n} lines of {evalset.name}")
        capped, shortened = cap_hypotheses(hyps, caps)
        out_decodes[label] = {
            "hyp": list(hyps),
            "cut": [i for i, c in enumerate(cut) if c],
            "stats": BleuStats(hyps, evalset.ref, tgt_lang).stats.tolist(),
            "capped": [i for i, c in enumerate(shortened) if c],
            "capped_stats": BleuStats(capped, evalset.ref, tgt_lang).stats.tolist(),
        }
    return {
        "format": FORMAT,
        "model": model,
        "set": {"name": evalset.name, "origin": evalset.origin, "digest": evalset.digest()},
        "tgt_lang": tgt_lang,
        "k": list(evalset.k),
        "src_words": [len(s.split()) for s in evalset.src],
        "ref_words": [len(r.split()) for r in evalset.ref],
        "ratio": ratio,
        "caps": list(caps),
        "decodes": out_decodes,
        "nll_lines": {
            str(k): {"nats": nats.tolist(), "tokens": tokens.tolist()}
            for k, (nats, tokens) in sorted(nll_lines.items())
        },
        "captions": captions.to_json(),
    }


def write_lines(path: str | Path, record: dict) -> Path:
    """Write ``record`` gzipped (mtime 0, so equal records give equal bytes), atomically."""
    path = Path(path)
    raw = json.dumps(record, separators=(",", ":")).encode()
    atomic_write_bytes(path, gzip.compress(raw, compresslevel=9, mtime=0))
    return path


class LineData:
    """A per-line file read back: the views the study's statistics need. ValueError: not a
    per-line file of this format (one line naming the file)."""

    def __init__(self, record: dict, source: str = "per-line record"):
        if record.get("format") != FORMAT:
            raise ValueError(f"{source}: not a study per-line file ({FORMAT})")
        self.record, self.source = record, source
        self.set_name: str = record["set"]["name"]
        self.k: list[int] = record["k"]
        self.tgt_lang: str | None = record.get("tgt_lang")
        self.captions = CaptionNLL.from_json(record["captions"])
        n = len(self.k)
        for label, d in record["decodes"].items():
            if len(d["hyp"]) != n or len(d["stats"]) != n or len(d["capped_stats"]) != n:
                raise ValueError(f"{source}: decoding {label} is not one row per line ({n})")

    def stats(self, label: str) -> np.ndarray:
        """(N, 10) sentence BLEU statistics of a decoding."""
        if label not in self.record["decodes"]:
            raise ValueError(f"{self.source}: no {label} decoding")
        return np.asarray(self.record["decodes"][label]["stats"], dtype=np.int64)

    def k1_ratio(self, label: str = "greedy") -> float:
        """Hypothesis over reference length on the k = 1 lines, in sacreBLEU tokens."""
        single = self.stats(label)[lines_of(self.k, 1)]
        return BleuStats.from_stats(single, self.tgt_lang).length_ratio()


def read_lines(path: str | Path) -> LineData:
    """Read a per-line file, or ValueError (naming the file): unreadable, not gzipped JSON, or
    not a per-line file."""
    path = Path(path)
    try:
        record = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError, EOFError) as e:
        raise ValueError(
            f"{path}: cannot read this per-line file ({e}); score the run again"
        ) from None
    return LineData(record, str(path))

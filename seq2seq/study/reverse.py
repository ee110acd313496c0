"""What ``seq2seq compare --alignment reverse`` adds on a synthetic reversal (or copy) corpus: how
well each attention model's attention finds the source symbol it copies, and whether each model
was trained to a plateau before its fall with length is read as the bottleneck.

Alignment accuracy (``alignment_accuracy``): teacher-forced on the test set, the share of target
positions whose cross-attention argmax is the gold source position -- the hard-alignment reading
of attention that Bahdanau et al. (2015, Figure 3) show as pictures. Sources carry no BOS or EOS
(``Batch``: src = x_1..x_n; tgt_in = BOS y_1..y_n; tgt_out = y_1..y_n EOS), and row t of an
attention map is the attention used to predict tgt_out[t], so for the reversal of an n-symbol
source target position t (0-based) aligns to source position n-1-t (for a copy, to t); the EOS
row has no gold and is not counted. The Transformer is measured per layer and head, its head
chosen on the validation set. Beside it, the shares of positions whose argmax lies d = -3..3
places from the gold one: Bahdanau-style attention, queried with the previous state, may sit one
place off all along (on the previous output's source symbol), which the strict share hides.

Plateau check (``plateau_check``, ``plateau_verdict``): exact match on the shortest validation
lines at each kept ``step<N>.pt`` and at ``best.pt``, the checkpoint that is rated.

Shape notation: B batch, L decoder layers, H heads, T target length (EOS included), S source.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from seq2seq.data.batch import Batch
from seq2seq.data.text import DataError, load_split
from seq2seq.data.tokenizer import PAD, Tokenizer
from seq2seq.decoding.runs import load
from seq2seq.decoding.translate import translate_sentences
from seq2seq.evaluation.metrics import bucket_label
from seq2seq.models import Seq2SeqModel
from seq2seq.study.evalsets import exact_match

log = logging.getLogger("seq2seq")

TASKS = ("reverse", "copy")
PLATEAU_TARGET = 95.0  # % exact match on the shortest validation lines: trained
PLATEAU_SPAN = 2.0  # points: the last checkpoints within this span of one another are flat
PLATEAU_POINTS = 3  # how many of the last checkpoints must be flat
OFFSET_SPAN = 3  # argmax - gold offsets counted, -3..3: an alignment shifted by one shows here


def gold_positions(lengths: Tensor, t: int, task: str = "reverse") -> Tensor:
    """(B,) source lengths n -> (B, T) gold source position of each target position: n-1-j
    (reverse) or j (copy) for j < n, and -1 from the EOS on (not counted)."""
    j = torch.arange(t, device=lengths.device)[None]  # (1, T)
    n = lengths[:, None]  # (B, 1)
    gold = n - 1 - j if task == "reverse" else j.expand(len(lengths), t)
    return torch.where(j < n, gold, torch.full_like(gold, -1))


def alignment_accuracy(attention: Tensor, gold: Tensor, tgt_mask: Tensor) -> Tensor:
    """Share of counted target positions whose attention argmax over the source is the gold one.

    Args:
        attention: (B, ..., T, S) weights, e.g. (B, L, H, T, S) from ``cross_attention_maps``
            or (B, T, S) from an RNN's ``forward_attention``; ties go to the leftmost source
            position, as ``torch.argmax``.
        gold: (B, T) gold source position of each target position, in 0..S-1; -1 (not counted)
            where it has none (EOS).  tgt_mask: (B, T) bool, True at real target tokens.

    Returns:
        A float tensor of the dims between B and T, e.g. (L, H), or 0-dim for (B, T, S)
        attention: fractions in [0, 1].

    Raises:
        ValueError: the shapes disagree, a gold position is S or more, or no position is counted.
    """
    if attention.dim() < 3:
        raise ValueError(f"attention of shape {tuple(attention.shape)}: expected (B, ..., T, S)")
    b, t, s = attention.shape[0], attention.shape[-2], attention.shape[-1]
    for name, x in (("gold", gold), ("tgt_mask", tgt_mask)):
        if tuple(x.shape) != (b, t):
            raise ValueError(
                f"{name} of shape {tuple(x.shape)}: expected (B, T) = ({b}, {t}) as the attention"
            )
    counted = tgt_mask.bool() & (gold >= 0)
    if int(counted.sum()) == 0:
        raise ValueError("no target position has a gold source position: nothing to count")
    if int(gold[counted].max()) >= s:
        raise ValueError(
            f"gold position {int(gold[counted].max())} is past the source length S = {s}"
        )
    inner = attention.dim() - 3  # the dims between B and T
    shape = (b,) + (1,) * inner + (t,)
    hits = (attention.argmax(-1) == gold.view(shape)) & counted.view(shape)  # (B, ..., T)
    dims = (0, attention.dim() - 2)  # B and T
    return hits.sum(dims).float() / counted.sum().float()


def best_head(acc: Tensor) -> tuple[int, int, float]:
    """(layer, head, accuracy) of the highest of (L, H) accuracies ``acc``, counted from 0; a tie
    goes to the lowest layer, then the lowest head. ValueError: ``acc`` not (L, H), or empty."""
    if acc.dim() != 2 or acc.numel() == 0:
        raise ValueError(f"accuracies of shape {tuple(acc.shape)}: expected (L, H), not empty")
    flat = int(torch.argmax(acc.reshape(-1)))
    layer, head = divmod(flat, acc.shape[1])
    return layer, head, float(acc[layer, head])


def check_task(src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]], task: str, what: str):
    """Refuse a set (``what``: its name) whose target ids are not the source ids reversed
    (copied), one id a symbol: ValueError naming the first pair that is not (one line)."""
    if task not in TASKS:
        raise ValueError(f"--alignment {task!r}: choose {' or '.join(TASKS)}")
    for i, (s, t) in enumerate(zip(src, tgt, strict=True), start=1):
        if list(t) != (list(s)[::-1] if task == "reverse" else list(s)):
            raise ValueError(
                f"--alignment {task}: pair {i} of {what} is not the {task} of its source "
                "token for token (a synthetic corpus and the word tokenizer are needed)"
            )


@torch.no_grad()
def sentence_hits(
    model: Seq2SeqModel,
    src: Sequence[Sequence[int]],
    tgt: Sequence[Sequence[int]],
    task: str,
    device: str,
    batch_size: int = 100,
) -> tuple[Tensor, Tensor, Tensor]:
    """Teacher-forced alignment hits of every sentence: hits (N, L, H), the target positions
    whose argmax is gold; counted (N,), the positions with a gold source position (EOS excluded);
    offsets (N, L, H, 2·OFFSET_SPAN + 1), counted positions whose argmax is gold + d, d from
    -OFFSET_SPAN to OFFSET_SPAN."""

    n = len(src)
    hits = offsets = None
    counted = torch.zeros(n, dtype=torch.long)
    order = sorted(range(n), key=lambda i: len(src[i]))
    for k in range(0, n, batch_size):
        idx = order[k : k + batch_size]
        b = Batch.from_ids([src[i] for i in idx], [tgt[i] for i in idx]).to(device)
        maps = model.cross_attention_maps(b.src, b.src_mask, b.tgt_in).float()  # (B, L, H, T, S)
        gold = gold_positions(b.src_mask.sum(1), b.tgt_in.shape[1], task)
        mask = b.tgt_out != PAD
        if hits is None:
            hits = torch.zeros(n, *maps.shape[1:3], dtype=torch.long)
            offsets = torch.zeros(n, *maps.shape[1:3], 2 * OFFSET_SPAN + 1, dtype=torch.long)
        for row, i in enumerate(idx):
            m = int((mask[row] & (gold[row] >= 0)).sum())
            acc = alignment_accuracy(maps[row : row + 1], gold[row : row + 1], mask[row : row + 1])
            hits[i], counted[i] = (acc.cpu() * m).round().long(), m
        diff = maps.argmax(-1) - gold[:, None, None, :]  # (B, L, H, T)
        real = (mask & (gold >= 0))[:, None, None, :]
        at = torch.tensor(idx)
        for j, d in enumerate(range(-OFFSET_SPAN, OFFSET_SPAN + 1)):
            offsets[at, :, :, j] = ((diff == d) & real).sum(-1).cpu()
    return hits, counted, offsets


def _pct(hits: Tensor, counted: Tensor) -> float | None:
    total = int(counted.sum())
    return None if total == 0 else 100.0 * float(hits.sum(0).double() / total)


def alignment_result(
    model: Seq2SeqModel,
    test: tuple[list[list[int]], list[list[int]]],
    valid: tuple[list[list[int]], list[list[int]]],
    lengths: list[int],
    edges: Sequence[int],
    task: str,
    device: str,
) -> dict:
    """Alignment accuracy (%) of one attention model on the test set: per layer and head, the
    head chosen on ``valid`` (the only one when L = H = 1), and that head's accuracy overall and
    per source-length bucket (``lengths``: each test source's symbols)."""
    hits, counted, offsets = sentence_hits(model, *test, task, device)
    n_layers, n_heads = hits.shape[1:]
    per_head = 100.0 * hits.sum(0).double() / max(1, int(counted.sum()))
    layer = head = 0
    if n_layers * n_heads > 1:
        v_hits, v_counted, _ = sentence_hits(model, *valid, task, device)
        layer, head, _ = best_head(v_hits.sum(0).double() / max(1, int(v_counted.sum())))
    chosen = hits[:, layer, head]
    shares = 100.0 * offsets[:, layer, head].sum(0).double() / max(1, int(counted.sum()))
    common = int(torch.argmax(shares))
    labels = [bucket_label(n, edges) for n in lengths]
    order = [bucket_label(e, edges) for e in edges] + [bucket_label(edges[-1] + 1, edges)]
    by_length = []
    for label in order:
        idx = torch.tensor([i for i, x in enumerate(labels) if x == label], dtype=torch.long)
        positions, accuracy = int(counted[idx].sum()), _pct(chosen[idx], counted[idx])
        by_length.append({"bucket": label, "positions": positions, "accuracy": accuracy})
    return {
        "accuracy": _pct(chosen, counted),
        "positions": int(counted.sum()),
        "layers": n_layers,
        "heads": n_heads,
        "best_head": None if n_layers * n_heads == 1 else {"layer": layer, "head": head},
        "head_chosen_on": None if n_layers * n_heads == 1 else "validation",
        "per_head": [[round(float(x), 2) for x in row] for row in per_head],
        "offsets": {
            f"{d:+d}": round(float(x), 2)
            for d, x in zip(range(-OFFSET_SPAN, OFFSET_SPAN + 1), shares, strict=True)
        },
        "commonest_offset": common - OFFSET_SPAN,
        "by_length": by_length,
    }


def _step_of(path: Path) -> int:
    return int(path.stem.removeprefix("step"))


def plateau_verdict(best: float, curve: Sequence[float]) -> str:
    """``trained`` when the rated checkpoint's exact match ``best`` reaches PLATEAU_TARGET;
    ``flat`` when the last PLATEAU_POINTS values of ``curve`` (oldest first) lie within
    PLATEAU_SPAN points; ``too few`` with fewer than PLATEAU_POINTS values to tell; else
    ``rising`` (still learning)."""
    tail = list(curve[-PLATEAU_POINTS:])
    if best >= PLATEAU_TARGET:
        return "trained"
    if len(tail) < PLATEAU_POINTS:
        return "too few"
    return "flat" if max(tail) - min(tail) <= PLATEAU_SPAN else "rising"


def plateau_check(
    run_dir: Path, tok: Tokenizer, src: list[str], ref: list[str], best_step: int | None, device
) -> dict:
    """Exact match (%) on the short validation lines ``src`` / ``ref`` at each kept
    ``step<N>.pt`` and at ``best.pt``, and the verdict (see the module docstring)."""

    def exact(path: Path) -> float:
        tr = load(path, device)
        dcfg = tr.cfg.decode.with_method("greedy")
        return exact_match(
            [t.text for t in translate_sentences(tr.model, tok, src, dcfg, device)], ref
        )

    steps = sorted(run_dir.glob("step*.pt"), key=_step_of)
    curve = [{"step": _step_of(path), "exact": exact(path)} for path in steps]
    best = exact(run_dir / "best.pt")
    return {
        "sentences": len(src),
        "best_step": best_step,
        "best_exact": best,
        "curve": curve,
        "verdict": plateau_verdict(best, [p["exact"] for p in curve]),
    }


class SyntheticChecks:
    """The test and validation sets of a ``task`` corpus, read and checked before any training;
    ``run`` then measures every trained run."""

    def __init__(self, cfg, tok: Tokenizer, edges: Sequence[int], task: str, device: str):
        """Raises:
        DataError: a split is unusable, or not a ``task`` corpus token for token (one line)."""
        self.tok, self.edges, self.task, self.device = tok, tuple(edges), task, device
        test_text, valid_text = load_split(cfg.data, "test"), load_split(cfg.data, "valid")
        self.test = (tok.encode_src(test_text.src), tok.encode_tgt(test_text.tgt))
        self.valid = (tok.encode_src(valid_text.src), tok.encode_tgt(valid_text.tgt))
        try:
            check_task(*self.test, task, test_text.origin)
            check_task(*self.valid, task, valid_text.origin)
        except ValueError as e:
            raise DataError(str(e)) from None
        self.lengths = [len(s.split()) for s in test_text.src]
        short = [i for i, s in enumerate(valid_text.src) if len(s.split()) <= edges[0]]
        if not short:
            raise DataError(
                f"{valid_text.origin}: no line of at most {edges[0]} symbols for the plateau check"
            )
        self.short = ([valid_text.src[i] for i in short], [valid_text.tgt[i] for i in short])

    def run(self, runs: list) -> None:
        """Fill ``run.alignment`` (attention models; None for a fixed-vector one) and
        ``run.plateau`` (every model) of each ``compare`` run."""
        for run in runs:
            run.alignment = None
            if run.attention:
                log.info("compare: alignment accuracy of %s (teacher forcing)", run.cfg.name)
                model = load(run.run_dir, self.device).model
                run.alignment = alignment_result(
                    model, self.test, self.valid, self.lengths, self.edges, self.task, self.device
                )
            log.info(
                "compare: plateau check of %s (%d short lines)", run.cfg.name, len(self.short[0])
            )
            run.plateau = plateau_check(
                run.run_dir, self.tok, *self.short, run.summary.get("best_step"), self.device
            )
            run.plateau["bucket"] = bucket_label(1, self.edges)

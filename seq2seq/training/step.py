"""One training update and one validation, and the state they move.

Shape notation: B batch, S source length, T target length, V target vocabulary.

``train.py`` strings these together; everything here is a function of its arguments (plus torch's
RNG for dropout and scheduled sampling), so each piece is tested on its own.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

import torch
from torch import nn

from seq2seq.config import Config, TrainConfig
from seq2seq.data.batch import Batch
from seq2seq.data.corpus import Corpus
from seq2seq.data.text import TokenizedPairs, token_batches
from seq2seq.decoding.translate import translate_sentences
from seq2seq.evaluation.metrics import corpus_score
from seq2seq.models import Seq2SeqModel
from seq2seq.runtime import autocast
from seq2seq.training.distributed import DistInfo, all_reduce_sum
from seq2seq.training.loss import token_loss_sum


class TrainingError(RuntimeError):
    """Training cannot go on (one line; the last good checkpoint stays on disk)."""


@dataclass
class TrainState:
    """The loop's position and bookkeeping; saved in every checkpoint.

    ``best_k`` lists (score, file name) of the kept best checkpoints, best first; scores are
    "higher is better" (the negated loss when ``best_metric`` is loss).
    """

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_score: float | None = None
    best_step: int = 0
    bad_validations: int = 0
    plateau_scale: float = 1.0
    plateau_bad: int = 0
    nonfinite_in_row: int = 0
    nonfinite_total: int = 0
    tokens_seen: int = 0
    train_seconds: float = 0.0
    best_k: list[tuple[float, str]] = field(default_factory=list)
    last_k: list[str] = field(default_factory=list)


class TeacherForcing(nn.Module):
    """What DDP wraps: teacher-forced logits, or scheduled sampling (Bengio et al. 2015, §2.4) when
    ``ratio`` < 1: each step, per sentence, feeds the gold previous token with probability
    ``ratio`` and the model's own argmax otherwise (no gradient flows through that choice).

    Args:
        src: (B, S) ids.  src_mask: (B, S) bool.  tgt_in: (B, T) BOS y_1 ... y_{T-1}.

    Returns:
        (B, T, V) logits.
    """

    def __init__(self, model: Seq2SeqModel):
        super().__init__()
        self.model = model

    def forward(self, src, src_mask, tgt_in, ratio: float = 1.0):
        if ratio >= 1.0:
            return self.model(src, src_mask, tgt_in)
        state = self.model.init_state(self.model.encode(src, src_mask))
        prev, outs = tgt_in[:, 0], []
        for t in range(tgt_in.shape[1]):
            logits, _, state = self.model.decode_step(prev, state)
            outs.append(logits)
            if t + 1 < tgt_in.shape[1]:
                gold = torch.rand(prev.shape[0], device=prev.device) < ratio
                prev = torch.where(gold, tgt_in[:, t + 1], logits.argmax(-1))
        return torch.stack(outs, 1)


def epoch_batches(pairs: TokenizedPairs | Corpus, t: TrainConfig, epoch: int, info: DistInfo):
    """This rank's share of the epoch's batches: every ``world``-th batch from ``rank`` on, after
    dropping the remainder so every rank gets the same number. An Arrow or stream corpus
    (``data.backend``, corpus.py) cuts its own batches by the same rule."""
    if not isinstance(pairs, TokenizedPairs):
        return pairs.epoch_batches(t.batch_tokens, t.seed, epoch, info.rank, info.world)
    src_lens = [len(s) for s in pairs.src]
    tgt_lens = [len(s) for s in pairs.tgt]
    order = token_batches(src_lens, tgt_lens, t.batch_tokens, t.seed, epoch)
    usable = len(order) - len(order) % info.world
    return order[info.rank : usable : info.world]


def make_batch(pairs: TokenizedPairs | Corpus, idx, device: torch.device) -> Batch:
    if not isinstance(pairs, TokenizedPairs):
        return pairs.batch(idx).to(device)
    return Batch.from_ids([pairs.src[i] for i in idx], [pairs.tgt[i] for i in idx]).to(device)


@torch.no_grad()
def validate(model: Seq2SeqModel, data, cfg: Config, device: torch.device) -> dict:
    """Validation loss (un-smoothed, per token), perplexity, and greedy BLEU / chrF with the first
    three (source, hypothesis, reference) triples as samples.

    ``data`` is ``train.Data``: the tokenizer, the tokenized and the raw validation split."""
    model.eval()
    try:
        return _validate(model, data, cfg, device)
    finally:
        model.train()


def _validate(model: Seq2SeqModel, data, cfg: Config, device: torch.device) -> dict:
    total, n = 0.0, 0
    lens = [len(s) for s in data.valid.src], [len(s) for s in data.valid.tgt]
    budget = max([cfg.train.batch_tokens] + [max(s, t + 1) for s, t in zip(*lens, strict=True)])
    for idx in token_batches(*lens, budget, shuffle=False):
        b = make_batch(data.valid, idx, device)
        total += float(token_loss_sum(model(b.src, b.src_mask, b.tgt_in), b.tgt_out))
        n += b.n_tokens
    out = {"loss": total / max(n, 1), "ppl": math.exp(min(total / max(n, 1), 50))}
    if cfg.train.valid_bleu:
        # Every cleaned validation sentence is translated, the over-long ones too (translate cuts
        # them to decode.max_src_len with a warning): BLEU is over the whole set.
        srcs, refs = data.valid_text.src, data.valid_text.tgt
        greedy = cfg.decode.with_method("greedy")
        hyps = [t.text for t in translate_sentences(model, data.tok, srcs, greedy, device)]
        out["bleu"] = corpus_score("bleu", hyps, [refs], cfg.data.tgt_lang).score
        out["chrf"] = corpus_score("chrf", hyps, [refs]).score
        out["samples"] = list(zip(srcs[:3], hyps[:3], refs[:3], strict=True))
    return out


def metric_value(metrics: dict, name: str) -> float:
    """The score ``best_metric`` ranks by; higher is better (the loss is negated)."""
    return -metrics["loss"] if name == "loss" else metrics[name]


def train_step(
    wrapper: nn.Module,
    optimizer: torch.optim.Optimizer,
    scaler,
    batches: list[Batch],
    cfg: TrainConfig,
    lr: float,
    device: torch.device,
    info: DistInfo,
    tf_ratio: float = 1.0,
) -> dict | None:
    """One update from ``batches`` (``update_freq`` of them).

    The summed token loss of every batch is divided by the target tokens of all of them (over all
    ranks), so accumulating b + b equals one batch of 2b. Returns None, changing no weight, when
    the loss or the gradient norm is not finite on any rank.

    Returns:
        {"loss": per-token training loss, "grad_norm": before clipping, "tokens": target tokens}.
    """
    n_tokens = all_reduce_sum(sum(b.n_tokens for b in batches), info, device)
    optimizer.zero_grad(set_to_none=True)
    loss_sum = 0.0
    for i, b in enumerate(batches):
        sync = i == len(batches) - 1 or not info.enabled
        with contextlib.nullcontext() if sync else wrapper.no_sync():
            with autocast(device, cfg.precision):
                logits = wrapper(b.src, b.src_mask, b.tgt_in, tf_ratio)
            loss = token_loss_sum(logits, b.tgt_out, cfg.label_smoothing)
            # DDP averages gradients over ranks; scaling by world restores the global token sum.
            scaler.scale(loss * (info.world / n_tokens)).backward()
        loss_sum += float(loss.detach())
    loss_sum = all_reduce_sum(loss_sum, info, device)  # NaN anywhere -> NaN on every rank
    scaler.unscale_(optimizer)
    params = [p for g in optimizer.param_groups for p in g["params"]]
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.clip_norm or float("inf")))
    if not (math.isfinite(loss_sum) and math.isfinite(grad_norm)):
        optimizer.zero_grad(set_to_none=True)
        scaler.update()
        return None
    for g in optimizer.param_groups:
        g["lr"] = lr
    scaler.step(optimizer)
    scaler.update()
    return {"loss": loss_sum / n_tokens, "grad_norm": grad_norm, "tokens": n_tokens}


def book_score(st: TrainState, score: float, t: TrainConfig) -> tuple[bool, str | None, list[str]]:
    """Book one validation ``score`` (higher is better) into ``st``: best score and step,
    patience counter, plateau scale, and the best-k list (``best-step<N>.pt`` names).

    Returns:
        (improved, the best-k file this validation should write or None, best-k files to delete).
    """
    improved = st.best_score is None or score > st.best_score
    if improved:
        st.best_score, st.best_step, st.bad_validations, st.plateau_bad = score, st.step, 0, 0
    else:
        st.bad_validations += 1
        st.plateau_bad += 1
        if t.schedule == "plateau" and st.plateau_bad > t.plateau_patience:
            st.plateau_scale *= t.plateau_factor
            st.plateau_bad = 0
    if t.keep_best <= 1:
        return improved, None, []
    name = f"best-step{st.step}.pt"
    # a stable sort on the score alone: on a tie the earlier checkpoint stays ahead
    ranked = sorted([*st.best_k, (score, name)], key=lambda x: -x[0])
    st.best_k = ranked[: t.keep_best]
    kept = name if (score, name) in st.best_k else None
    return improved, kept, [n for _, n in ranked[t.keep_best :]]

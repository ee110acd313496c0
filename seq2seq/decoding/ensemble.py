"""An ensemble of models that is itself a model to the searches: ``Ensemble``. Shapes: B rows, S
source length, T target length, V target vocabulary, M models.

At every step it returns the log of the models' mean probability, log (1/M) sum_m p_m(y | x,
y_<t), as fairseq's ``EnsembleModel`` (not the mean log-probability), its state holding every
model's own under the key prefix ``"<m>/"``. Families may be mixed; the tokenizer is one
(``check_same_tokenizer``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from seq2seq.data.tokenizer import vocab_pieces
from seq2seq.models.base import Lengths, Seq2SeqModel, State


def _split(state: State, n: int) -> list[State]:
    """The ensemble's state -> each model's own, in model order."""
    out: list[State] = [{} for _ in range(n)]
    for key, value in state.items():
        m, name = key.split("/", 1)
        out[int(m)][name] = value
    return out


def _join(states: Sequence[State]) -> State:
    """Each model's state -> the ensemble's, every key prefixed with its model's index."""
    return {f"{m}/{k}": v for m, s in enumerate(states) for k, v in s.items()}


def mean_log_probs(logits: Sequence[Tensor]) -> Tensor:
    """M tensors of (B, V) logits -> (B, V) log of the models' mean probability, in float32."""
    logp = torch.stack([torch.log_softmax(x.float(), -1) for x in logits])  # (M, B, V)
    return torch.logsumexp(logp, 0) - math.log(len(logits))


class Ensemble(Seq2SeqModel):
    """M models decoding as one; M = 1 decodes like the model alone. ``has_attention`` when any
    member has it (the step attention is the mean over those that do); ``max_positions``: the
    members' smallest; ``target_vocab``: (V,) bool, the union of the members' (None when one has
    none).
    """

    def __init__(self, models: Sequence[Seq2SeqModel]):
        """Raises ValueError (one line naming both sizes): no model, or a member's source or
        target vocabulary size differs from the first model's."""
        super().__init__()
        if not models:
            raise ValueError("an ensemble needs at least one model")
        first = models[0]
        for i, m in enumerate(models[1:], start=2):
            for side in ("src", "tgt"):
                a, b = getattr(first, f"{side}_vocab_size"), getattr(m, f"{side}_vocab_size")
                if a != b:
                    raise ValueError(
                        f"model {i} of the ensemble has a {side} vocabulary of {b} pieces but "
                        f"model 1 has {a}: ensembled models must share their vocabularies"
                    )
        self.models = nn.ModuleList(models)
        self.src_vocab_size, self.tgt_vocab_size = first.src_vocab_size, first.tgt_vocab_size
        self.has_attention = any(getattr(m, "has_attention", False) for m in models)
        limits = [m.max_positions for m in models if m.max_positions is not None]
        self.max_positions = min(limits) if limits else None
        self.static_state_keys = frozenset(
            f"{i}/{k}" for i, m in enumerate(models) for k in m.static_state_keys
        )

    @property
    def target_vocab(self) -> Tensor | None:
        masks = [getattr(m, "target_vocab", None) for m in self.models]
        if any(mask is None for mask in masks):
            return None
        return torch.stack([mask.cpu().bool() for mask in masks]).any(0)

    def _each(self, state: State, step) -> State:
        """``step(member, its own part of state)`` for every member, joined."""
        parts = _split(state, len(self.models))
        return _join([step(m, s) for m, s in zip(self.models, parts, strict=True)])

    def encode(self, src: Tensor, src_mask: Tensor, src_lengths: Lengths | None = None) -> State:
        """(B, S) ids and mask -> every member's encoder state, keys prefixed ``"<m>/"``."""
        extra = {} if src_lengths is None else {"src_lengths": src_lengths}
        return _join([m.encode(src, src_mask, **extra) for m in self.models])

    def init_state(self, enc: State) -> State:
        return self._each(enc, lambda m, s: m.init_state(s))

    def decode_step(
        self, prev_tokens: Tensor, state: State, need_attention: bool = False
    ) -> tuple[Tensor, Tensor | None, State]:
        """One step of every member from (B,) ``prev_tokens``: (B, V) log of their mean probability
        (a search's log-softmax leaves it as it is), (B, S) mean attention or None, the state."""
        logits, attn, states = [], [], []
        for m, s in zip(self.models, _split(state, len(self.models)), strict=True):
            x, a, s = m.decode_step(prev_tokens, s, need_attention)
            logits.append(x)
            states.append(s)
            if a is not None:
                attn.append(a.float())
        att = torch.stack(attn).mean(0) if attn and need_attention else None
        return mean_log_probs(logits), att, _join(states)

    def reorder_state(self, state: State, index: Tensor) -> State:
        return self._each(state, lambda m, s: m.reorder_state(s, index))

    def select_state(self, state: State, index: Tensor) -> State:  # type: ignore[override]
        return self._each(state, lambda m, s: m.select_state(s, index))

    def forward_attention(
        self,
        src: Tensor,
        src_mask: Tensor,
        tgt_in: Tensor,
        need_attention: bool = True,
        src_lengths: Lengths | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Teacher-forced (B, T, V) log of the mean probability and (B, T, S) mean attention."""
        outs = [
            m.forward_attention(src, src_mask, tgt_in, need_attention, src_lengths)
            for m in self.models
        ]
        attn = [a.float() for _, a in outs if a is not None]
        att = torch.stack(attn).mean(0) if attn and need_attention else None
        return mean_log_probs([x for x, _ in outs]), att


def check_same_tokenizer(names: Sequence[str], tokenizers: Sequence) -> None:
    """Every tokenizer must equal the first (``Tokenizer.digest``); ``names``: how the user named
    each model (``-c PATH``). Raises ValueError, one line naming the first that differs and how."""
    first, name0 = tokenizers[0], names[0]
    for name, tok in zip(names[1:], tokenizers[1:], strict=True):
        if tok.digest() == first.digest():
            continue
        if tok.tgt_vocab_size != first.tgt_vocab_size:
            how = f"target vocabulary of {tok.tgt_vocab_size} pieces, not {first.tgt_vocab_size}"
        elif vocab_pieces(tok.tgt_sp) != vocab_pieces(first.tgt_sp):
            how = "other target pieces (same vocabulary size)"
        elif tok.src_vocab_size != first.src_vocab_size:
            how = f"source vocabulary of {tok.src_vocab_size} pieces, not {first.src_vocab_size}"
        elif vocab_pieces(tok.src_sp) != vocab_pieces(first.src_sp):
            how = "other source pieces (same vocabulary size)"
        else:
            how = "the same pieces but other normalisation rules"
        raise ValueError(
            f"{name}: its tokenizer (sha256 {tok.digest()[:12]}) differs from {name0}'s "
            f"({first.digest()[:12]}): {how}; an ensemble's models must share one tokenizer"
        )

"""The table of searches: ``decode.method`` names one, and every caller dispatches through it.
Each takes (model, (B, S) src ids, (B, S) bool mask, DecodeConfig with every limit, n_best,
need_attention) and returns each sentence's ``Hypothesis`` list, best first. A new search: its
module here, its entry below, its name in ``config.SearchMethod`` (a test checks them), its
settings in ``DecodeConfig`` and ``config.SEARCH_SETTINGS``, its limit in ``check_n_best``.
"""

from __future__ import annotations

from torch import Tensor

from seq2seq.config import ConfigError, DecodeConfig
from seq2seq.decoding.base import Hypothesis
from seq2seq.decoding.beam import beam_search
from seq2seq.decoding.greedy import greedy_search
from seq2seq.decoding.sample import sample_search
from seq2seq.models.base import Seq2SeqModel

SEARCHES = {
    "greedy": lambda model, src, mask, cfg, n_best, att: [
        [h] for h in greedy_search(model, src, mask, cfg, att)
    ],
    "beam": beam_search,
    "sample": sample_search,
}


def check_n_best(cfg: DecodeConfig, n_best: int) -> None:
    """Greedy search finds one hypothesis, beam search ``beam_size``; sampling draws any number.

    Raises:
        ConfigError: ``cfg.method`` cannot return ``n_best`` hypotheses per sentence.
    """
    limit = {"greedy": 1, "beam": cfg.beam_size}.get(cfg.method)
    if limit is not None and n_best > limit:
        hyps = "hypothesis" if limit == 1 else "hypotheses"
        raise ConfigError(
            f"--n-best {n_best}: method {cfg.method} returns at most {limit} {hyps} per "
            f"sentence; use --beam {n_best} (or more), or --method sample for {n_best} draws"
        )


def search(
    model: Seq2SeqModel,
    src: Tensor,
    src_mask: Tensor,
    cfg: DecodeConfig,
    n_best: int = 1,
    need_attention: bool = False,
) -> list[list[Hypothesis]]:
    """Run ``SEARCHES[cfg.method]``: (B, S) ids and (B, S) mask -> B lists of hypotheses.

    Raises:
        ConfigError: ``n_best`` is more than the method returns (``check_n_best``).
    """
    check_n_best(cfg, n_best)
    return SEARCHES[cfg.method](model, src, src_mask, cfg, n_best, need_attention)

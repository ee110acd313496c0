"""Choosing the search on validation: beam size K and the GNMT length penalty α (Wu et al. 2016,
eq. 14: lp(Y) = ((5 + |Y|) / 6)^α), swept against greedy search, scored with sacreBLEU.

α = 0 ranks by raw log-probability, which favours short outputs; too large an α makes outputs run
on; the right α depends on the model, so it is chosen per run on validation, never on a test set.
Greedy is a candidate too, so the choice never scores below it there; a choice at the grid's top
edge is swept further until it lies inside (``sweep_inside``). The choice goes to ``decode.yaml``
beside the run's checkpoints, which ``runs.load`` applies. Also what ``tune-decode`` checks around
the sweep: its lines (``tuning_set``) and a sweep whose settings all tied (``tie_reasons``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml
from rich.text import Text

from seq2seq.atomic import atomic_write_text
from seq2seq.checkpoint import DECODE_FILE
from seq2seq.config import Config, DecodeConfig
from seq2seq.config.lists import parse_list
from seq2seq.config.sections import BEAM_LIMIT, MAX_LENGTH_PENALTY
from seq2seq.console import console, counted
from seq2seq.data.text import DataError, resolve_corpus_file
from seq2seq.decoding.files import ProgressBar
from seq2seq.decoding.translate import translate_sentences
from seq2seq.evaluation.metrics import corpus_bleu
from seq2seq.evaluation.report import read_eval_texts

log = logging.getLogger("seq2seq")

# A choice at the top edge of the grid is swept further (``beyond_edge``): α by the grid's last
# step, the beam size doubled, up to these.
MAX_ALPHA = 5.0
MAX_BEAM = 40

# Fewer tuning lines than this are refused: BLEU on a handful of lines is mostly 0 or 100 and the
# same for every setting, and the tie rule would then write greedy over the run's own search.
MIN_TUNE_LINES = 50


@dataclass
class SweepRow:
    """One search setting scored: ``ratio`` hypothesis over reference length (sacreBLEU's
    tokens), ``bp`` BLEU's brevity penalty, ``seconds`` decoding wall time."""

    method: str
    beam_size: int
    length_penalty: float
    bleu: float
    bp: float
    ratio: float
    seconds: float

    @property
    def label(self) -> str:
        if self.method == "greedy":
            return "greedy"
        return f"beam {self.beam_size}, length penalty {self.length_penalty:g}"


def parse_floats(spec: str, option: str) -> tuple[float, ...]:
    """``"0,0.5,1"`` -> (0.0, 0.5, 1.0): length penalties, increasing, from 0 to
    ``MAX_LENGTH_PENALTY``; raises ValueError, one line naming ``option``."""
    top = f"{MAX_LENGTH_PENALTY:g}"
    fix = f"give distinct finite numbers from 0 to {top} in increasing order, e.g. 0,0.6,1"
    bad = "give comma-separated numbers, e.g. 0,0.6,1"
    return parse_list(spec, option, fix, float, 0, MAX_LENGTH_PENALTY, increasing=True, bad=bad)


def parse_beams(spec: str) -> tuple[int, ...]:
    """``"5,10"`` -> (5, 10): beam sizes, increasing, from 2 (greedy is always swept) to
    ``BEAM_LIMIT``; raises ValueError, one line naming --beams."""
    fix = (
        f"give distinct beam sizes from 2 to {BEAM_LIMIT} in increasing order (greedy search is "
        "always a candidate)"
    )
    bad = "give comma-separated beam sizes, e.g. 5,10"
    return parse_list(spec, "--beams", fix, int, 2, BEAM_LIMIT, increasing=True, bad=bad)


def candidates(
    base: DecodeConfig, beams: Sequence[int], alphas: Sequence[float]
) -> list[DecodeConfig]:
    """Greedy, then beam search for every (K, α), on top of ``base``'s other settings."""
    out = [base.with_method("greedy")]
    out += [base.with_method("beam", beam_size=k, length_penalty=a) for k in beams for a in alphas]
    return out


def sweep(
    translate: Callable[[DecodeConfig], list[str]],
    refs: Sequence[str],
    configs: Sequence[DecodeConfig],
    tgt_lang: str | None = None,
    progress: Callable[[SweepRow], None] | None = None,
) -> list[SweepRow]:
    """Score every search setting: ``translate(cfg)`` gives one hypothesis per line of ``refs``."""
    rows = []
    for cfg in configs:
        t0 = time.perf_counter()
        hyps = translate(cfg)
        seconds = time.perf_counter() - t0
        bleu = corpus_bleu(hyps, refs, tgt_lang)
        row = SweepRow(
            cfg.method,
            cfg.beam_size if cfg.method == "beam" else 1,
            cfg.length_penalty if cfg.method == "beam" else 0.0,
            round(bleu.score, 2),
            round(bleu.bp, 3),
            round(bleu.sys_len / max(bleu.ref_len, 1), 3),
            round(seconds, 1),
        )
        rows.append(row)
        if progress is not None:
            progress(row)
    return rows


def beyond_edge(rows: Sequence[SweepRow]) -> list[tuple[int, float]]:
    """The (K, α) to sweep next when the best of ``rows`` has the largest α (next: α plus the grid's
    last step, or 0.5; at most ``MAX_ALPHA``) or K (next: 2K; at most ``MAX_BEAM``) swept."""
    best = best_row(rows)
    beam = [r for r in rows if r.method == "beam"]
    if best.method != "beam":
        return []
    swept = {(r.beam_size, r.length_penalty) for r in beam}
    alphas = sorted({r.length_penalty for r in beam})
    step = alphas[-1] - alphas[-2] if len(alphas) > 1 else 0.5
    out = []
    if best.length_penalty == alphas[-1] and alphas[-1] + step <= MAX_ALPHA + 1e-9:
        out.append((best.beam_size, round(alphas[-1] + step, 6)))
    top_beam = max(r.beam_size for r in beam)
    if best.beam_size == top_beam and 2 * top_beam <= MAX_BEAM:
        out.append((2 * top_beam, best.length_penalty))
    return [x for x in out if x not in swept]


def sweep_inside(
    translate: Callable[[DecodeConfig], list[str]],
    refs: Sequence[str],
    base: DecodeConfig,
    beams: Sequence[int],
    alphas: Sequence[float],
    tgt_lang: str | None = None,
    progress: Callable[[SweepRow], None] | None = None,
    extend: Callable[[list[tuple[int, float]]], None] | None = None,
) -> list[SweepRow]:
    """``sweep`` over ``candidates(base, beams, alphas)``, then over ``beyond_edge``'s settings
    (told to ``extend`` first) until there are none."""
    rows = sweep(translate, refs, candidates(base, beams, alphas), tgt_lang, progress)
    while more := beyond_edge(rows):
        if extend is not None:
            extend(more)
        configs = [base.with_method("beam", beam_size=k, length_penalty=a) for k, a in more]
        rows += sweep(translate, refs, configs, tgt_lang, progress)
    return rows


def sweep_run(
    run,
    sources: Sequence[str],
    refs: Sequence[str],
    base: DecodeConfig,
    beams: Sequence[int],
    alphas: Sequence[float],
    extend: bool = True,
    source_name: str = "input",
) -> tuple[list[SweepRow], list[dict]]:
    """``tune-decode``'s sweep of a loaded run (``runs.Translator``), each row printed above a
    progress bar; returns the rows and the settings swept beyond the grid (with ``extend``)."""
    n_settings = len(candidates(base, beams, alphas))
    bar = ProgressBar(f"setting 1/{n_settings}", n_settings * len(sources))
    started = 0
    added: list[dict] = []

    def translate(dcfg):
        nonlocal started
        started += 1
        bar.describe(f"setting {started}/{n_settings}")
        out = translate_sentences(
            run.model, run.tok, sources, dcfg, run.device, progress=bar.advance,
            source_name=source_name,
        )  # fmt: skip
        return [t.text for t in out]

    def show(row):  # above the bar, which stays at the bottom; not markup=False: the bar's is
        line = (
            f"{row.label:<32} BLEU {row.bleu:6.2f}  BP {row.bp:.3f}  ratio {row.ratio:.3f}  "
            f"{row.seconds:6.1f} s"
        )
        console.print(Text(line), highlight=False, soft_wrap=True)

    def widen(more):  # the best setting is at the grid's edge: sweep beyond it
        nonlocal n_settings
        n_settings += len(more)
        added.extend({"beam_size": k, "length_penalty": a} for k, a in more)
        bar.add_total(len(more) * len(sources))
        said = "; ".join(f"beam {k}, length penalty {a:g}" for k, a in more)
        console.print(Text(f"best at the grid's edge: also sweeping {said}"), highlight=False)

    lang = run.cfg.data.tgt_lang
    with bar:
        if extend:
            return sweep_inside(translate, refs, base, beams, alphas, lang, show, widen), added
        return sweep(translate, refs, candidates(base, beams, alphas), lang, progress=show), added


def sweep_result(
    ckpt: Path, src, ref, lines: int, rows: Sequence[SweepRow], added: list[dict]
) -> dict:
    """tune_decode.json's content."""
    return {
        "checkpoint": str(ckpt),
        "tuned_on": {"src": str(src), "ref": str(ref), "lines": lines},
        "best": asdict(best_row(rows)),
        "greedy_bleu": rows[0].bleu,
        "sweep": [asdict(r) for r in rows],
        "beyond_grid": added,
    }


def all_tied(rows: Sequence[SweepRow]) -> bool:
    """Every setting scored the same BLEU (at two decimals): the tie rule's greedy means nothing."""
    return len(rows) > 1 and len({round(r.bleu, 2) for r in rows}) == 1


def best_row(rows: Sequence[SweepRow]) -> SweepRow:
    """The highest BLEU (at sacreBLEU's two decimals); on a tie the cheaper search wins: greedy,
    then the smaller beam, then the smaller α."""
    return max(rows, key=lambda r: (round(r.bleu, 2), -r.beam_size, -r.length_penalty))


def write_decode_file(
    run_dir: Path, row: SweepRow, rows: Sequence[SweepRow], tuned_on: str
) -> Path:
    """Write ``run_dir/decode.yaml`` atomically: the ``decode`` keys of ``row``'s search under a
    comment header."""
    keys = {"method": row.method}
    if row.method == "beam":
        keys |= {"beam_size": row.beam_size, "length_penalty": row.length_penalty}
    greedy = next(r for r in rows if r.method == "greedy")
    header = (
        f"# seq2seq tune-decode on {tuned_on}: {row.label} scores BLEU {row.bleu:.2f} "
        f"(greedy {greedy.bleu:.2f}) among {len(rows)} settings.\n"
        "# translate, eval and serve use these settings; their options override them.\n"
    )
    path = run_dir / DECODE_FILE
    atomic_write_text(path, header + yaml.safe_dump(keys, sort_keys=False))
    return path


def tuning_set(
    cfg: Config, src: Path | None, ref: Path | None, ckpt: Path
) -> tuple[Path, Path, list[str], list[str]]:
    """``src`` and ``ref`` (both None: the run's data.valid), with their lines, read as ``eval``
    reads them.

    Raises:
        ValueError: the run of ``ckpt`` has no data.valid, or fewer than ``MIN_TUNE_LINES`` lines
            have a non-blank source and reference.
        DataError: a file that is missing, unreadable or not aligned with the other.
    """
    if src is None:
        if cfg.data.valid is None:
            raise ValueError(f"{ckpt}: the run has no data.valid; give --src and --ref")
        src = resolve_corpus_file(cfg.data.valid, cfg.data.src_lang)
        ref = resolve_corpus_file(cfg.data.valid, cfg.data.tgt_lang)
    warn_if_test_split(src, cfg)
    texts = read_eval_texts([ref], src, None)
    sources, refs = texts.sources, texts.refs[0]
    n_lines = sum(1 for s, r in zip(sources, refs, strict=True) if s.strip() and r.strip())
    if n_lines < MIN_TUNE_LINES:
        raise ValueError(
            f"--src {src} has {counted(n_lines, 'non-blank line')}, too few to tune on (at least "
            f"{MIN_TUNE_LINES}): BLEU on so few cannot tell the search settings apart; give a "
            f"bigger --src/--ref (at least {MIN_TUNE_LINES} aligned lines, e.g. the whole "
            "validation set)"
        )
    return src, ref, sources, refs


def warn_if_test_split(src: Path, cfg: Config) -> None:
    """A warning when ``src`` is the run's own test split (its test scores would not be unseen)."""
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
    """For a sweep whose settings all tied (``all_tied``): what happened and what to do."""
    bleu = rows[0].bleu
    same = f"--src {src}: all {len(rows)} settings scored BLEU {bleu:.2f}, so"
    if bleu == 0:
        fix = "check that --ref translates --src, or train the model longer"
        return f"{same} no output matches its reference", fix
    return (
        f"{same} this tuning set cannot tell them apart",
        "tune on a bigger or more varied --src/--ref",
    )

"""Rule v3 (``study.verdict_v3``) on a study's per-line files alone: the margins chosen from the
data seen, the dry run on it, the judged cells, and the tables beside them (rho by k, rho by
caption position in the join).

Runs are named ``study-<design>[-seed<s>]`` (seed 1 is the config's own run, without a suffix);
a study folder holds ``lines/<set>/<run>.json.gz`` (``study.lines``). The capped retention is
recomputed at ``verdict_v3.CAP_SLACK`` from each file's greedy hypotheses and the set's
references, rebuilt from the corpus and checked against the file's set digest.

Shapes: U joined lines of one k, K captions per joined line.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
from pathlib import Path

import numpy as np

from seq2seq.config import Config
from seq2seq.data.text import load_split, resolve_corpus_file, sha256_file
from seq2seq.study import verdict_v3 as v3
from seq2seq.study.cells import cap_hypotheses, length_caps, retention_difference_ci
from seq2seq.study.evalsets import build_eval_set, lines_of, train_length_ratio
from seq2seq.study.folder import collect, run_table
from seq2seq.study.lines import LineData, read_lines
from seq2seq.study.rho import rho_difference_ci, rho_spread
from seq2seq.study.stats import BleuStats

RUN = re.compile(r"^study-(?P<design>[a-z_]+?)(?:-seed(?P<seed>\d+))?$")


def parse_run(name: str) -> tuple[str, int] | None:
    """``study-meanpool-seed2`` -> ("meanpool", 2); ``study-rnn`` -> ("rnn", 1); else None."""
    m = RUN.match(name)
    return (m["design"], int(m["seed"] or 1)) if m else None


class Study:
    """Every per-line file of a study folder, with the test sets' references to recap them.

    Args:
        folder: holds ``lines/<set>/*.json.gz``.  cfg: a study config (its data section finds
            the test sets: ``<data.test's folder>/<set>``).

    Raises:
        ValueError: a file unreadable, or scored on other lines than the corpus holds now (one
            line naming the file).
    """

    def __init__(self, folder: str | Path, cfg: Config):
        self.lines, self.sets = {}, {}
        for path in sorted(Path(folder).glob("lines/*/*.json.gz")):
            run = parse_run(path.name.removesuffix(".json.gz"))
            if run is None:
                continue
            d = read_lines(path)
            if d.set_name not in self.sets:  # each set rebuilt from the corpus once
                prefix = str(Path(cfg.data.test or "multi30k/x").parent / d.set_name)
                self.sets[d.set_name] = build_eval_set(cfg, v3.K_RULE, None, "test", prefix)
            evalset = self.sets[d.set_name]
            if d.record["set"]["digest"] != evalset.digest():
                raise ValueError(f"{path}: scored on other lines than {evalset.origin} holds")
            self.lines[(d.set_name, *run)] = d
        if not self.lines:
            raise ValueError(
                f"{folder}: no per-line files (lines/<set>/study-<design>[-seed<s>].json.gz); "
                "give a study folder such as docs/results/study/multi30k"
            )
        self._capped: dict = {}

    def get(self, set_name: str, design: str, seed: int) -> LineData | None:
        return self.lines.get((set_name, design, seed))

    def seeds(self, set_name: str, design: str, among) -> list[int]:
        return [s for s in among if (set_name, design, s) in self.lines]

    def capped(self, set_name: str, design: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """(N, 10) BLEU statistics of the greedy hypotheses cut at ``CAP_SLACK``, and (N,) bool:
        the lines the cap shortened."""
        key = (set_name, design, seed)
        if key not in self._capped:
            d, evalset = self.lines[key], self.sets[set_name]
            caps = length_caps(evalset.src, d.record["ratio"], v3.CAP_SLACK)
            hyps, cut = cap_hypotheses(d.record["decodes"]["greedy"]["hyp"], caps)
            stats = BleuStats(hyps, evalset.ref, d.tgt_lang).stats
            self._capped[key] = stats, np.asarray(cut, dtype=bool)
        return self._capped[key]


def rho_pair(a: LineData, b: LineData, level: float) -> dict:
    """rho_k(A) - rho_k(B) at k = ``K_RULE``, its paired bootstrap interval at ``level``
    (fractions)."""
    return rho_difference_ci(a.captions, b.captions, v3.K_RULE, v3.N_BOOTSTRAP, level)


def headline_row(study: Study, set_name: str, seed: int, delta: float | None) -> dict:
    """One headline cell's statistics and, with ``delta``, its rating."""
    attn, abl = v3.HEADLINE
    a, b = study.get(set_name, attn, seed), study.get(set_name, abl, seed)
    (ca, cut_a), (cb, cut_b) = study.capped(set_name, attn, seed), study.capped(set_name, abl, seed)
    units = a.captions.units[v3.K_RULE]
    capped = retention_difference_ci(ca, cb, a.k, units, v3.K_RULE, a.tgt_lang, v3.N_BOOTSTRAP)
    joined, single = lines_of(a.k, v3.K_RULE), lines_of(a.k, 1)
    row = {
        "set": set_name,
        "seed": seed,
        "rho": rho_pair(a, b, 0.95),
        "capped": capped,
        "ratios": {attn: a.k1_ratio(), abl: b.k1_ratio()},
        "shortened": {
            n: {"k1": 100 * float(c[single].mean()), f"k{v3.K_RULE}": 100 * float(c[joined].mean())}
            for n, c in ((attn, cut_a), (abl, cut_b))
        },
        "at_k": {
            k: a.captions.rho(k) - b.captions.rho(k) for k in sorted(a.captions.units) if k >= 2
        },
    }
    if delta is not None:
        row.update(v3.rate_headline(row["rho"], capped, row["ratios"], delta))
    return row


def fixed_pairs(study: Study, set_name: str, seeds):
    """(name, seed, A, B) of every pair of fixed-vector designs at one seed with both files."""
    for s in seeds:
        for x, y in itertools.combinations(v3.FIXED_VECTOR, 2):
            a, b = study.get(set_name, y, s), study.get(set_name, x, s)
            if a and b:
                yield f"{y} vs {x}, seed {s}", s, a, b


def seed_pairs(study: Study, set_name: str, seeds):
    """(name, (s1, s2), A, B) of every seed pair of every family design with both files."""
    for design in v3.FAMILIES:
        for s1, s2 in itertools.combinations(study.seeds(set_name, design, seeds), 2):
            a, b = study.get(set_name, design, s2), study.get(set_name, design, s1)
            yield f"{design} seed {s2} vs {s1}", (s1, s2), a, b


def control_rows(study: Study, set_name: str, seeds, delta: float, margin: float) -> list[dict]:
    """Every negative control (``fixed_pairs``) and null control (``seed_pairs``) of
    ``set_name`` at ``seeds``: its 90% interval and its rating against DELTA or MARGIN."""
    rows = []
    for role, pairs, bound in (
        ("negative", fixed_pairs, delta),
        ("null", seed_pairs, margin),
    ):
        for name, seed, a, b in pairs(study, set_name, seeds):
            interval = rho_pair(a, b, 0.90)
            rows.append(
                {"role": role, "name": name, "seed": seed, "interval": interval}
                | v3.rate_control(interval, bound)
            )
    return rows


def headline_seeds(study: Study, set_name: str, seeds) -> list[int]:
    """The seeds at which both headline designs were scored on ``set_name``."""
    return [s for s in seeds if all(study.get(set_name, d, s) for d in v3.HEADLINE)]


def choose_from_seen(study: Study) -> dict:
    """``verdict_v3.choose`` on ``SEEN``: every fixed-vector pair's 95% interval, every family
    seed pair's 90% interval and every headline cell's 95% lower bound; ValueError when the
    folder holds none of one kind."""
    fixed, nulls, lows = [], [], []
    for name, seeds in v3.SEEN.items():
        fixed += [rho_pair(a, b, 0.95) for _, _, a, b in fixed_pairs(study, name, seeds)]
        nulls += [rho_pair(a, b, 0.90) for _, _, a, b in seed_pairs(study, name, seeds)]
        for s in headline_seeds(study, name, seeds):
            a, b = (study.get(name, d, s) for d in v3.HEADLINE)
            lows.append(rho_pair(a, b, 0.95)["low"])
    if not (fixed and nulls and lows):
        raise ValueError(
            "no per-line files of the data seen (several seeds of "
            f"{', '.join(v3.FAMILIES)} on {' and '.join(v3.SEEN)}), which rule v3's margins are "
            "chosen from; judge a folder that holds them, as docs/results/study/multi30k does"
        )
    return v3.choose(fixed, nulls, lows)


def judge_set(study: Study, set_name: str, seeds, delta: float, margin: float) -> dict:
    """Rule v3 on one set at ``seeds``: ``{"heads", "controls", "overall", "growth"}``."""
    heads = [
        headline_row(study, set_name, s, delta) for s in headline_seeds(study, set_name, seeds)
    ]
    controls = control_rows(study, set_name, seeds, delta, margin)
    rated = [h for h in heads if h["kind"] != "not competent"]
    return {
        "set": set_name,
        "seeds": list(seeds),
        "heads": heads,
        "controls": controls,
        "overall": v3.overall(heads, controls, delta, len(seeds)),
        "growth": v3.growth(rated),
    }


def rho_tables(study: Study, set_name: str, seeds) -> dict:
    """Per design, over its seeds on ``set_name``: ``{"seeds"}`` and ``rho.rho_spread``."""
    out = {}
    for design in v3.FAMILIES:
        found = study.seeds(set_name, design, seeds)
        if found:
            caps = [study.get(set_name, design, s).captions for s in found]
            out[design] = {"seeds": found, **rho_spread(caps)}
    return out


def train_share_over_cap(cfg: Config, slack: float) -> float:
    """The percentage of training references longer than their length cap at ``slack``: how
    ``CAP_SLACK`` was chosen (on the training split, never a test set)."""
    text, ratio = load_split(cfg.data, "train"), train_length_ratio(cfg)
    caps = length_caps(text.src, ratio, slack)
    return 100 * sum(len(t.split()) > c for t, c in zip(text.tgt, caps, strict=True)) / len(caps)


def file_sha256(cfg: Config, set_name: str) -> dict[str, str]:
    """sha256 of the set's two corpus files, by file name."""
    prefix = str(Path(cfg.data.test or "multi30k/x").parent / set_name)
    paths = [resolve_corpus_file(prefix, lang) for lang in (cfg.data.src_lang, cfg.data.tgt_lang)]
    return {p.name: sha256_file(p) for p in paths}


def build(folder: str | Path, cfg: Config) -> dict:
    """Rule v3 on every per-line file in ``folder``: the margins chosen from ``SEEN``, the dry
    run there (each set judged apart, with the frozen DELTA and MARGIN, or before the freeze with
    the chosen ones), the judged set once the rule is frozen and feasible, and the tables.

    Raises:
        ValueError: per-line files of the judged set before the freeze, or the judged set's
            files are not those the freeze names (sha256), or as ``Study``.
    """
    study = Study(folder, cfg)
    frozen = v3.DELTA is not None
    if not frozen and any(k[0] == v3.JUDGED_SET for k in study.lines):
        raise ValueError(f"{folder}: {v3.JUDGED_SET} was scored before rule v3 was frozen")
    chosen = choose_from_seen(study)
    delta, margin = (v3.DELTA, v3.MARGIN) if frozen else (chosen["delta"], chosen["margin"])
    judged = None
    if frozen and chosen["feasible"]:
        if file_sha256(cfg, v3.JUDGED_SET) != v3.JUDGED_SHA256:
            raise ValueError(
                f"{v3.JUDGED_SET}: the corpus files are not those rule v3 was frozen with "
                f"(sha256 {v3.JUDGED_SHA256}); put the official files back"
            )
        judged = judge_set(study, v3.JUDGED_SET, v3.JUDGED_SEEDS, delta, margin)
    every = sorted({k[2] for k in study.lines})
    return {
        "runs": run_table(folder, sorted({k[1:] for k in study.lines})),
        "rule": v3.RULE,
        "frozen": {
            "commit": v3.FROZEN_COMMIT,
            "delta": v3.DELTA,
            "margin": v3.MARGIN,
            "sha256": v3.JUDGED_SHA256,
        },
        "delta": delta,
        "margin": margin,
        "chosen": chosen,
        "cap": {
            "slack": v3.CAP_SLACK,
            "train_share": {
                str(s): train_share_over_cap(cfg, s) for s in sorted({1.1, v3.CAP_SLACK})
            },
        },
        "dry_run": {n: judge_set(study, n, s, delta, margin) for n, s in v3.SEEN.items()},
        "judged": judged,
        "tables": {n: rho_tables(study, n, every) for n in study.sets},
        "sets": {
            n: {"origin": e.origin, "lines_by_k": {str(k): e.k.count(k) for k in sorted(set(e.k))}}
            for n, e in study.sets.items()
        },
    }


def write(folder: str | Path, config: str | Path) -> dict:
    """Rule v3 on ``folder`` (``build``), written there: verdict.json, verdict.md (with the
    folder's results.json of rules v1 and v2) and the figure (``report.v3``); returns it."""
    from seq2seq.atomic import atomic_write_text
    from seq2seq.config import load_config
    from seq2seq.study.report import v3 as report
    from seq2seq.study.report.common import finite

    folder = Path(folder)
    r = finite(build(folder, load_config(config)))
    r["words"] = report.verdict_line(r)
    old = folder / "results.json"
    old = json.loads(old.read_text(encoding="utf-8")) if old.is_file() else None
    atomic_write_text(folder / "verdict.json", json.dumps(r, indent=2))
    atomic_write_text(folder / "verdict.md", report.render(r, old))
    report.plot_by_k(r["tables"], folder / report.FIGURE, r["delta"], v3.HEADLINE[1])
    return r


def main(argv=None) -> int:
    """``python -m seq2seq.study.judge verdict FOLDER`` (make study-verdict) or ``collect OUT
    RESULTS RUN...`` (scripts/study_runs.sh): one line on a user error, exit 1."""
    p = argparse.ArgumentParser(
        prog="python -m seq2seq.study.judge",
        description="Rule v3 of the bottleneck-versus-attention study (seq2seq/study/"
        "verdict_v3.py), from per-line files alone; reads the test sets from $SEQ2SEQ_DATA_DIR.",
    )
    sub = p.add_subparsers(dest="what", required=True)
    v = sub.add_parser("verdict", help="write verdict.md, verdict.json, verdict_v3_by_k.png")
    v.add_argument("folder", help="holds lines/<set>/<run>.json.gz: docs/results/study/multi30k")
    v.add_argument(
        "--config",
        default="configs/study/multi30k/bahdanau.yaml",
        help="a study config; its data section names the corpus",
    )
    c = sub.add_parser("collect", help="copy finished runs' per-line files into a results folder")
    c.add_argument("out", help="a compare --out folder")
    c.add_argument("results", help="the results folder, e.g. docs/results/study/multi30k")
    c.add_argument("runs", nargs="+", help="run names, e.g. study-rnn-seed7")
    a = p.parse_args(argv)
    try:
        if a.what == "collect":
            for path in collect(a.out, a.results, a.runs):
                print(f"kept {path}")
            return 0
        print(write(a.folder, a.config)["words"])
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

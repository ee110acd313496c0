"""A study's runs: the one shared tokenizer, training a config into ``runs/<name>`` or reusing the
finished run there (or resuming an interrupted one), and decodings cached beside each run.

A run is reused when its ``compare.json`` records the same resolved config (budget included),
tokenizer and data next to the checkpoint it describes (``ModelRun.checkpoint``: ``best.pt``, or
``last.pt`` for a run scored at its budget step); its decodings are cached in
``runs/<name>/decode/`` while the eval set, that checkpoint and the decode settings stay the same.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from seq2seq.atomic import atomic_write_text
from seq2seq.config import Config, ConfigError, DecodeConfig
from seq2seq.data.text import load_split, resolve_corpus_file, sha256_file
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decoding.translate import translate_sentences
from seq2seq.models import MODELS, Seq2SeqModel
from seq2seq.study.evalsets import EvalSet
from seq2seq.study.plan import SHARED_DATA_KEYS

log = logging.getLogger("seq2seq")


@dataclass
class ModelRun:
    """One config's run: where it lives, its training summary, and (later) its scores."""

    path: str
    cfg: Config
    run_dir: Path
    summary: dict
    reused: bool
    parameters: int = 0
    decodes: dict[str, dict] = field(default_factory=dict)
    checkpoint: str = "best.pt"  # the file scored: best.pt, or last.pt (at the budget step)
    alignment: dict | None = None  # alignment accuracy (attention models, --alignment)
    plateau: dict | None = None  # exact match on short validation lines per checkpoint

    @property
    def attention(self) -> bool:
        """Whether the model returns attention weights (the fixed-vector ``rnn`` does not)."""
        return MODELS[self.cfg.model.name].has_attention


# the config keys compare's options set, for a refusal to name the option a user gave
SET_BY = {
    "train.max_steps": "--budget-steps, --single-steps, --joined-steps",
    "train.max_time": "--budget-minutes",
    "train.max_tokens": "--budget-tokens",
}


def data_digest(cfg: Config) -> str:
    """sha256 over the shared data settings and the training and validation files' bytes (a
    Hugging Face dataset is named, not hashed), so a changed corpus is never mistaken for the
    one a tokenizer or a run was trained on."""
    h = hashlib.sha256()
    shared = {k: cfg.data.model_dump(mode="json")[k] for k in SHARED_DATA_KEYS}
    h.update(json.dumps(shared, sort_keys=True).encode())
    if cfg.data.hf is None:
        for prefix in filter(None, (cfg.data.train, cfg.data.valid)):
            for lang in (cfg.data.src_lang, cfg.data.tgt_lang):
                h.update(sha256_file(resolve_corpus_file(prefix, lang)).encode())
    return h.hexdigest()


def shared_tokenizer(cfg: Config, out: Path, overwrite: bool = False) -> Tokenizer:
    """The tokenizer in ``out/tokenizer`` when it was trained with this tokenizer section and
    data, else one trained now on the training split (every pair, before any max_src_words).
    ConfigError: another tokenizer there while ``out/runs`` holds runs trained with it, without
    ``overwrite`` (its runs would be left beside a tokenizer they were not trained with)."""
    folder, spec_file = out / "tokenizer", out / "tokenizer" / "spec.json"
    spec = json.dumps(
        {"tokenizer": cfg.tokenizer.model_dump(mode="json"), "data_sha256": data_digest(cfg)},
        sort_keys=True,
    )
    if spec_file.is_file() and spec_file.read_text(encoding="utf-8") == spec:
        log.info("compare: reusing the tokenizer in %s", folder)
        return Tokenizer.load(folder)
    if spec_file.is_file() and any((out / "runs").glob("*/compare.json")) and not overwrite:
        raise ConfigError(
            f"compare: {folder} and the runs in {out / 'runs'} were trained with another "
            "tokenizer section or data; give --overwrite to train them afresh, or another --out"
        )
    text = load_split(cfg.data, "train")
    n, tk = cfg.data.max_train_pairs or len(text), cfg.tokenizer
    what = (tk.type, tk.vocab_size, min(n, len(text)))
    log.info("compare: training one %s tokenizer (vocab %d) on %d pairs", *what)
    tok = Tokenizer.train(text.src[:n], text.tgt[:n], cfg.tokenizer)
    tok.save(folder)
    atomic_write_text(spec_file, spec)
    return tok


def run_identity(config: dict) -> dict:
    """A run's config (``model_dump(mode="json")``) as its identity: the device it trains on and
    where its ``train.init_from`` checkpoint lies (``--out`` spelled relative or absolute, the
    folder moved) do not change what is trained, so a study rescored on another device or from
    another place reuses its runs; ``train_or_reuse`` compares that checkpoint's bytes instead."""
    train = {k: v for k, v in config["train"].items() if k not in ("device", "init_from")}
    return {**config, "train": train}


def checkpoint_stamp(run_dir: Path, checkpoint: str) -> list:
    """[file name, [size, mtime] or None when it is not there] of a checkpoint: a cache key."""
    path = run_dir / checkpoint
    if not path.is_file():
        return [checkpoint, None]
    st = path.stat()
    return [checkpoint, [st.st_size, st.st_mtime_ns]]


def train_or_reuse(
    path: str,
    cfg: Config,
    run_dir: Path,
    tok: Tokenizer,
    checkpoint: str = "best.pt",
    may_train: bool = True,
    overwrite: bool = False,
) -> ModelRun:
    """Train ``cfg`` into ``run_dir`` with ``tok``, or reuse the finished run already there, or
    resume it interrupted; ``checkpoint`` (``best.pt`` or ``last.pt``) is the file the run is
    scored from. With ``may_train`` False (``compare --score-only``) a run is only ever reused;
    another run in ``run_dir`` (other config, tokenizer, data or ``init_from`` bytes, or its
    checkpoint changed since) is replaced only with ``overwrite`` (``compare --overwrite``).

    Raises:
        KeyboardInterrupt: training was interrupted (its last.pt is kept, nothing is recorded).
        ConfigError: no finished run of ``cfg`` in ``run_dir`` and ``may_train`` False, or
            another run there and ``overwrite`` False (one line naming the first difference).
    """
    from seq2seq.training.loop import train
    from seq2seq.training.setup import first_difference

    marker, init = run_dir / "compare.json", cfg.train.init_from
    want = {
        "config": cfg.model_dump(mode="json"),
        "tokenizer_sha256": tok.digest(),
        "data_sha256": data_digest(cfg),
        "init_from_sha256": sha256_file(init) if init else None,
    }
    why = ""
    if marker.is_file():
        old = json.loads(marker.read_text(encoding="utf-8"))
        theirs = {k: old.get(k, v) for k, v in want.items()}  # what an older compare recorded
        theirs["config"] = run_identity(old.get("config") or {"train": {}})
        diff = first_difference(theirs, {**want, "config": run_identity(want["config"])})
        if diff:
            key = diff[0].removeprefix("config.")
            why = f"{key} is {repr(diff[1]):.40} there but {repr(diff[2]):.40} here"
            why += f", as {SET_BY[key]} or the config set it" if key in SET_BY else ""
        elif old.get("checkpoint") != checkpoint_stamp(run_dir, checkpoint):
            why = f"its {checkpoint} changed after it was scored"
        else:
            log.info("compare: reusing the finished run in %s", run_dir)
            return ModelRun(path, cfg, run_dir, old["summary"], reused=True, checkpoint=checkpoint)
    if not may_train:
        raise ConfigError(
            f"compare --score-only: {run_dir} holds no finished run of {cfg.name} with this "
            f"recipe, tokenizer and data{f' ({why})' if why else ''}; train it first (the same "
            "command without --score-only)"
        )
    resume = not why and _interrupted_same_run(run_dir, cfg, tok)
    if not (resume or overwrite) and (why or (run_dir / "last.pt").exists()):
        raise ConfigError(
            f"compare: {run_dir} holds another run of {cfg.name} "
            f"({why or 'an interrupted one of another config or tokenizer'}); give --overwrite "
            "to train it afresh, or another --out"
        )
    if resume:
        log.info("compare: resuming the interrupted run in %s from its last.pt", run_dir)
    else:
        log.info("compare: training %s (%s) into %s", cfg.name, cfg.model.name, run_dir)
    if why and overwrite:
        log.warning("compare: --overwrite replaces the run in %s (%s)", run_dir, why)
    marker.unlink(missing_ok=True)  # an interrupted run has none: it is resumed, never reused
    summary = train(cfg, run_dir, resume=resume, overwrite=not resume, tokenizer=tok)
    if summary["stopped"] == "interrupted":
        raise KeyboardInterrupt
    stamp = checkpoint_stamp(run_dir, checkpoint)
    atomic_write_text(
        marker, json.dumps({**want, "checkpoint": stamp, "summary": summary}, indent=2)
    )
    return ModelRun(path, cfg, run_dir, summary, reused=False, checkpoint=checkpoint)


def _interrupted_same_run(run_dir: Path, cfg: Config, tok: Tokenizer) -> bool:
    """Whether ``run_dir/last.pt`` is an unfinished run of exactly ``cfg`` (budget included) with
    the tokenizer ``tok``: one a Ctrl-C, ``kill`` or crash stopped, which ``--resume`` continues
    as if never stopped. Anything else (another config, another tokenizer, an unreadable file)
    is trained afresh."""
    from seq2seq.checkpoint import load_checkpoint

    last = run_dir / "last.pt"
    if not last.is_file():
        return False
    try:
        ckpt = load_checkpoint(last)
        want, got = cfg.model_dump(mode="json"), ckpt["config"]
        if want["train"]["precision"] == "auto":  # a run records the precision "auto" became
            got = {**got, "train": {**got["train"], "precision": "auto"}}
        same = run_identity(got) == run_identity(want)
        return same and Tokenizer.from_state_dict(ckpt["tokenizer"]).digest() == tok.digest()
    except Exception as e:  # any unreadable checkpoint: train afresh, and say why
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        log.warning("compare: %s cannot be resumed (%s)", last, why)
        return False


def decode_with(
    run: ModelRun,
    model: Seq2SeqModel,
    tok: Tokenizer,
    evalset: EvalSet,
    dcfg: DecodeConfig,
    label: str,
    device: str,
) -> tuple[list[str], list[bool], float]:
    """Translate ``evalset`` with ``dcfg``; returns the hypotheses, whether each stopped at the
    maximum length without EOS (``Translation.cut``), and the decoding seconds, all cached in
    ``runs/<name>/decode/<set>.<label>.{txt,json}`` (module docstring)."""
    key = {
        "set": evalset.digest(),
        "checkpoint": checkpoint_stamp(run.run_dir, run.checkpoint),
        "decode": dcfg.model_dump(mode="json"),
    }
    stem = f"{evalset.name}.{label}"
    meta, hyp_file = run.run_dir / "decode" / f"{stem}.json", run.run_dir / "decode" / f"{stem}.txt"
    if meta.is_file() and hyp_file.is_file():
        cached = json.loads(meta.read_text(encoding="utf-8"))
        hyps = hyp_file.read_text(encoding="utf-8").split("\n")[:-1]
        if cached["key"] == key and len(hyps) == len(evalset.src) and "cut" in cached:
            cut = set(cached["cut"])
            return hyps, [i in cut for i in range(len(hyps))], cached["seconds"]
    what = (len(evalset.src), evalset.name, run.cfg.name, label)
    log.info("compare: decoding %d %s lines with %s (%s)", *what)
    tick = time.perf_counter()
    out = translate_sentences(model, tok, evalset.src, dcfg, device)
    seconds = time.perf_counter() - tick
    hyps, cut = [t.text for t in out], [t.cut for t in out]
    atomic_write_text(hyp_file, "".join(h + "\n" for h in hyps))
    record = {"key": key, "seconds": seconds, "cut": [i for i, c in enumerate(cut) if c]}
    atomic_write_text(meta, json.dumps(record, indent=2))
    return hyps, cut, seconds


def run_result(run: ModelRun) -> dict:
    s, d = run.summary, run.cfg.data
    return {
        "name": run.cfg.name,
        "config": run.path,
        "model": run.cfg.model.name,
        "family": run.cfg.model.family,
        "attention": run.attention,
        "concat_k": d.concat_k,
        "max_src_words": d.max_src_words,
        "parameters": run.parameters,
        **{k: s.get(k) for k in ("train_seconds", "target_tokens", "target_tokens_per_s")},
        **{k: s.get(k) for k in ("steps", "stopped", "best_step")},
        "reused": run.reused,
        "run_dir": str(run.run_dir),
        "resolved_config": run.cfg.model_dump(mode="json"),
        "decodes": run.decodes,
        **({"alignment": run.alignment, "plateau": run.plateau} if run.plateau else {}),
    }

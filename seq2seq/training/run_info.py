"""What a run directory records about itself: resolved config, versions, git commit, data hashes."""

from __future__ import annotations

import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from seq2seq.atomic import atomic_write_text
from seq2seq.config import Config, to_yaml


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).parent,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("seq2seq", "torch", "sentencepiece", "sacrebleu", "datasets", "numpy"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _bleu_signature(tgt_lang: str) -> str:
    """The signature validation BLEU is reported under (one reference)."""
    from sacrebleu.metrics import BLEU

    bleu = BLEU(trg_lang=tgt_lang)
    bleu.corpus_score(["x"], [["x"]])
    return str(bleu.get_signature())


def write_run_info(run_dir: Path, cfg: Config, data, model, runtime: dict | None = None) -> None:
    """``config.yaml`` (resolved) and ``run_info.json`` (versions, commit, data files, sizes, and
    ``runtime``: what ``auto`` settings resolved to on this machine)."""
    from seq2seq.data.text import resolve_corpus_file, sha256_file

    files = {}
    if cfg.data.hf is None:
        for split in ("train", "valid", "test"):
            prefix = getattr(cfg.data, split)
            for lang in (cfg.data.src_lang, cfg.data.tgt_lang):
                try:
                    p = resolve_corpus_file(prefix, lang) if prefix else None
                except ValueError:
                    p = None
                if p is not None:
                    files[str(p)] = sha256_file(p)
    info = {
        "versions": versions(),
        "git_commit": _git_commit(),
        "data_files_sha256": files,
        "hf_dataset": cfg.data.hf.model_dump() if cfg.data.hf else None,
        "train_pairs": len(data.train),
        "valid_pairs": len(data.valid),
        "src_vocab": data.tok.src_vocab_size,
        "tgt_vocab": data.tok.tgt_vocab_size,
        "parameters": model.num_parameters(),
        "bleu_signature": _bleu_signature(cfg.data.tgt_lang),
        "runtime": runtime or {},
    }
    atomic_write_text(run_dir / "config.yaml", to_yaml(cfg))
    atomic_write_text(run_dir / "run_info.json", json.dumps(info, indent=2))

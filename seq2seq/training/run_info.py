"""What a run directory records about itself: resolved config, versions, git commit, data hashes."""

from __future__ import annotations

import json
import logging
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from seq2seq.atomic import atomic_write_text
from seq2seq.config import Config, to_yaml
from seq2seq.data.text import DataError, resolve_corpus_file, sha256_file

log = logging.getLogger("seq2seq")


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


def data_file_hashes(cfg: Config) -> dict[str, str]:
    """sha256 of every data file the run reads, by path: the splits' corpus files, or the Arrow
    files of a local (``save_to_disk``) Hugging Face dataset (a hub dataset is not hashed)."""
    paths: list[Path] = []
    hf = cfg.data.hf
    if hf is None:
        for split in ("train", "valid", "test"):
            prefix = getattr(cfg.data, split)
            for lang in (cfg.data.src_lang, cfg.data.tgt_lang):
                try:
                    paths += [resolve_corpus_file(prefix, lang)] if prefix else []
                except ValueError:
                    pass
    elif (Path(hf.path) / "dataset_dict.json").is_file():
        for split in ("train", "valid", "test"):
            paths += sorted((Path(hf.path) / getattr(hf, f"{split}_split")).glob("*.arrow"))
    return {str(p): sha256_file(p) for p in paths}


def check_data_unchanged(run_dir: Path, cfg: Config) -> None:
    """``--resume``: every data file ``run_info.json`` recorded at the run's start must hash the
    same now (a moved file is matched by its name), so a run never goes on with other data.

    Raises:
        DataError: a recorded file changed (names each, with the old and new sha256 prefix).
    """
    path = run_dir / "run_info.json"
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))["data_files_sha256"]
        recorded = {str(k): str(v) for k, v in recorded.items()}
    except FileNotFoundError:
        log.warning("%s not found: the data cannot be checked against the run's start", path)
        return
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        log.warning("%s unreadable (%s): the data cannot be checked", path, type(e).__name__)
        return
    now = data_file_hashes(cfg)
    by_name: dict[str, list[str]] = {}
    for p in now:
        by_name.setdefault(Path(p).name, []).append(p)
    changed = []
    for old_path, old in recorded.items():
        same_name = by_name.get(Path(old_path).name, [])
        new_path = old_path if old_path in now else same_name[0] if len(same_name) == 1 else None
        if new_path is not None and now[new_path] != old:
            changed.append(f"{new_path} (sha256 {old[:12]} -> {now[new_path][:12]})")
    if changed:
        raise DataError(
            f"--resume {run_dir}: data changed since the run started, as run_info.json recorded "
            f"it: {', '.join(changed)}; restore the file, or train afresh with --overwrite"
        )


def write_run_info(run_dir: Path, cfg: Config, data, model, runtime: dict | None = None) -> None:
    """``config.yaml`` (resolved) and ``run_info.json`` (versions, commit, data files, sizes, and
    ``runtime``: what ``auto`` settings resolved to on this machine)."""
    info = {
        "versions": versions(),
        "git_commit": _git_commit(),
        "data_files_sha256": data_file_hashes(cfg),
        "hf_dataset": cfg.data.hf.model_dump() if cfg.data.hf else None,
        "train_pairs": len(data.train),
        "valid_pairs": len(data.valid),
        "src_vocab": data.tok.src_vocab_size,
        "tgt_vocab": data.tok.tgt_vocab_size,
        "parameters": model.num_parameters(),
        "bleu_signature": _bleu_signature(cfg.data.tgt_lang) if cfg.train.valid_bleu else None,
        "runtime": runtime or {},
    }
    atomic_write_text(run_dir / "config.yaml", to_yaml(cfg))
    atomic_write_text(run_dir / "run_info.json", json.dumps(info, indent=2))

"""A run's setup, in the order ``RunSetup`` runs it: the run directory, the device and rank,
resume or warm start, the data (``data.prepare``), the model, the precision (``precision``), the
optimizer, DDP, ``run_info.json`` and the monitor; and ``close``, what must be torn down. A warm
start (``train.init_from``) takes another run's weights and tokenizer (the weights fit only their
vocabulary); optimizer, schedule, step and counters start afresh. ``--resume`` ignores it."""

from __future__ import annotations

import gc
import logging
from functools import partial
from pathlib import Path

import torch
from torch import nn

from seq2seq.checkpoint import CheckpointError, config_of, load_checkpoint, resolve_checkpoint
from seq2seq.config import Config, ConfigError
from seq2seq.data.prepare import check_corpus_files, epoch_batches, make_batch, prepare_data
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.evaluation.metrics import sacrebleu_metric
from seq2seq.models import build_model
from seq2seq.runtime import configure_device, pick_device, resolve_pad_multiple, seed_everything
from seq2seq.training import distributed as dist
from seq2seq.training.monitor import Monitor, RunLog
from seq2seq.training.precision import PROBE_BATCHES, probe_speeds, settle_precision
from seq2seq.training.run_dir import (
    RunCheckpoints,
    check_data_unchanged,
    check_run_dir,
    clear_run,
    data_digests,
    dead_run_files,
    load_resume,
    restore,
    write_run_info,
)
from seq2seq.training.state import TrainState, reshard
from seq2seq.training.step import TeacherForcing, build_optimizer

log = logging.getLogger("seq2seq")


class RunSetup:
    """Everything a run's loop touches, built once; ``loop.Run`` adds the loop's operations.

    Attributes:
        cfg (``train.precision`` resolved, not "auto"), run_dir, info (this rank), device,
        pad_multiple (resolved), data (``TrainData``), model, optimizer, scaler (fp16), state
        (fresh or resumed), wrapper (``TeacherForcing``, inside DDP under torchrun), checkpoints
        (``RunCheckpoints``), monitor (rank 0 only, else None).
    """

    def __init__(
        self,
        cfg: Config,
        run_dir: Path,
        resume: bool,
        overwrite: bool = False,
        tokenizer: Tokenizer | None = None,
        run_log: RunLog | None = None,
    ):
        """``run_log`` is opened on ``run_dir/train.log`` by rank 0 once the run directory is
        settled (after ``--overwrite`` cleared it). Raises as ``loop.train``."""
        check_run_dir(run_dir, resume, overwrite)
        check_before_writing(cfg)
        self.run_dir = run_dir
        self.cfg = cfg  # train.precision as given until _settle_precision
        self.info, self.device = _device_and_rank(cfg)
        self.pad_multiple = resolve_pad_multiple(cfg.data.pad_multiple, self.device)
        ckpt = load_resume(run_dir, cfg) if resume else None
        # what the run reads of each split: checked by a resume, recorded in run_info.json
        digests = data_digests(cfg) if resume or self.info.is_main else {}
        if ckpt:
            check_data_unchanged(run_dir, cfg, digests)
        # a warm start is read before --overwrite clears the run directory (it may be the source)
        warm = None
        if cfg.train.init_from and resume:
            log.info("resume: train.init_from ignored (the run continues from its own last.pt)")
        elif cfg.train.init_from:
            warm = load_warm_start(cfg.train.init_from, cfg, tokenizer)
        _settle_run_dir(run_dir, resume, overwrite, run_log, self.info)
        seed_everything(cfg.train.seed)
        if ckpt:
            tokenizer = Tokenizer.from_state_dict(ckpt["tokenizer"])
        elif warm:
            tokenizer = warm.tokenizer
        barrier = partial(dist.barrier, self.info)
        self.data = prepare_data(cfg, run_dir, tokenizer, self.info, barrier)
        vocab = (self.data.tok.src_vocab_size, self.data.tok.tgt_vocab_size, self.data.tok.joint)
        self.model = build_model(cfg.model, *vocab).to(self.device)
        # validation BLEU decodes as translate will: kept to the pieces of the training targets
        # (decode.target_vocab_mask); the checkpoints carry the same mask (loop.Run.payload)
        self.model.target_vocab = self.data.target_vocab
        if warm is not None:
            warm.load_weights(self.model)
        self.cfg, choice = self._settle_precision(ckpt)
        cfg, t = self.cfg, self.cfg.train
        self.optimizer = build_optimizer(self.model, t)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=t.precision == "fp16")
        self.state = TrainState()
        if ckpt:
            self.state = restore(ckpt, self.model, self.optimizer, self.scaler, run_dir / "last.pt")
            _keep_fused(self.optimizer)
            st = self.state
            if st.world != self.info.world:  # the position, carried to this number of processes
                mine = len(epoch_batches(self.data.train, t, st.epoch, self.info))
                exact, said = reshard(st, self.info.world, mine)
                if self.info.is_main:
                    (log.info if exact else log.warning)(said)
            log.info(
                f"resuming {run_dir / 'last.pt'} at step {st.step} (epoch {st.epoch + 1}, "
                f"{st.train_seconds / 60:.1f} min trained so far)"
            )
        self.state.world = self.info.world
        self.wrapper: nn.Module | None = dist.wrap(
            TeacherForcing(self.model), self.info, self.device
        )
        self.checkpoints = RunCheckpoints(run_dir, t.keep_last, self.info.is_main)
        self.monitor: Monitor | None = None
        if self.info.is_main:
            runtime = {
                "device": str(self.device),
                "precision": t.precision,
                "pad_multiple": self.pad_multiple,
                "cudnn_sdp": t.cudnn_sdp,
            }
            if choice is not None and choice.probe is not None:
                runtime["precision_probe_tokens_per_s"] = choice.probe
            write_run_info(run_dir, cfg, self.data, self.model, digests, runtime)
            self.monitor = Monitor(run_dir, self.state.step, t.log_every)

    def _settle_precision(self, ckpt: dict | None):
        """``precision.settle_precision`` with a probe of this model on the run's batches."""
        resumed = config_of(ckpt, str(self.run_dir / "last.pt")) if ckpt else None
        t, cap = self.cfg.train, self.model.max_positions

        def probe() -> dict[str, float]:  # this rank's first batches, padded as the run pads them
            items = epoch_batches(self.data.train, t, 0, self.info)[:PROBE_BATCHES]
            pad, train = self.pad_multiple, self.data.train
            batches = [make_batch(train, item, self.device, pad, cap) for item in items]
            return probe_speeds(self.model, t, batches, self.device)

        params = self.model.num_parameters()
        return settle_precision(self.cfg, self.device, self.info, resumed, probe, params)

    def close(self) -> None:
        """Close the monitor and, under torchrun, the process group; DDP, which holds the group
        alive, goes first (gloo torn down while the interpreter exits can abort the process)."""
        if self.monitor is not None:
            self.monitor.close()
        if self.info.enabled:
            self.wrapper = None
            gc.collect()
        dist.shutdown(self.info)


def _device_and_rank(cfg: Config) -> tuple[dist.DistInfo, torch.device]:
    """CPU threads, the process group under torchrun, and this rank's device, configured."""
    if cfg.train.num_threads:
        torch.set_num_threads(cfg.train.num_threads)
    device = pick_device(cfg.train.device, cfg.train.precision)
    info = dist.init_distributed(device.type)
    if device.type == "cuda":  # this rank's GPU, numbered LOCAL_RANK, made current
        device = torch.device("cuda", info.local_rank)
        torch.cuda.set_device(device)
    configure_device(device, cfg.train.cudnn_sdp)
    return info, device


def check_before_writing(cfg: Config) -> None:
    """What a run needs that can be checked before it writes anything: its local corpus files,
    and for validation BLEU the BLEU tokenizer of its target language (``ja`` and ``ko`` need a
    sacrebleu extra).

    Raises:
        DataError: a corpus file is missing.
        ConfigError: the BLEU tokenizer is not installed.
    """
    check_corpus_files(cfg)
    if cfg.train.valid_bleu:
        try:
            sacrebleu_metric("bleu", cfg.data.tgt_lang)
        except ValueError as e:
            raise ConfigError(
                f"{e} (data.tgt_lang {cfg.data.tgt_lang}, for validation BLEU); or train "
                "without it: --set train.valid_bleu=false --set train.best_metric=loss"
            ) from None


def _settle_run_dir(
    run_dir: Path, resume: bool, overwrite: bool, run_log: RunLog | None, info: dist.DistInfo
) -> None:
    """Rank 0 clears an earlier run (``--overwrite``, or one that saved no checkpoint, saying so),
    makes the folder and opens ``train.log``; the other ranks drop their held log lines and wait
    for it."""
    if info.is_main:
        if overwrite and not resume:
            clear_run(run_dir)
        elif not resume and (dead := dead_run_files(run_dir)):
            log.warning(
                "%s holds files of a run that saved no checkpoint (%s): starting clean, as "
                "--overwrite would",
                run_dir,
                ", ".join(dead),
            )
            clear_run(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        if run_log is not None:
            run_log.open(run_dir / "train.log")
    elif run_log is not None:
        run_log.discard()
    dist.barrier(info)


def _keep_fused(optimizer: torch.optim.Optimizer) -> None:
    """Fused again after a checkpoint of an unfused optimizer (``fused: False``), its step counts
    float32 on the parameters' device."""
    for group in optimizer.param_groups:
        group["fused"] = True
        for p in group["params"]:
            state = optimizer.state.get(p, {})
            if "step" in state:
                state["step"] = state["step"].to(p.device, torch.float32)


class WarmStart:
    """A checked ``init_from`` checkpoint: resolved ``path``, loaded ``ckpt``, its ``tokenizer``."""

    def __init__(self, path: Path, ckpt: dict, tokenizer: Tokenizer):
        self.path, self.ckpt, self.tokenizer = path, ckpt, tokenizer

    def load_weights(self, model: nn.Module) -> None:
        """Copy the checkpoint's weights into ``model`` (built from the run's config).

        Raises:
            CheckpointError: the weights do not fit the model (one line naming the checkpoint).
        """
        try:
            model.load_state_dict(self.ckpt["model"])
        except (RuntimeError, KeyError) as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
            raise CheckpointError(
                f"train.init_from {self.path}: its weights do not fit this run's model ({first})"
            ) from None
        log.info("weights from %s (init_from)", self.path)


def load_warm_start(path: str, cfg: Config, tokenizer: Tokenizer | None = None) -> WarmStart:
    """Load the checkpoint ``train.init_from`` names (a file, or a run directory's ``best.pt``,
    else ``last.pt``) and check it against ``cfg`` before any data is read. ``tokenizer`` (``seq2seq
    compare``'s shared one) must be the checkpoint's byte for byte; None takes the checkpoint's.

    Raises:
        CheckpointError: nothing at ``path``, an unreadable file, a checkpoint without weights or
            tokenizer, or an invalid config in it.
        ConfigError: the tokenizer section or the model architecture (dropout rates aside)
            differs from the checkpoint's, or ``tokenizer`` is not the checkpoint's.
    """
    p = resolve_checkpoint(path)
    ckpt = load_checkpoint(p)
    where = f"train.init_from {p}"
    for key in ("model", "tokenizer"):
        if key not in ckpt:
            raise CheckpointError(f"{where}: the checkpoint holds no {key}; give a run's best.pt")
    old = config_of(ckpt, str(p))
    config_yaml = p.parent / "config.yaml"
    if diff := first_difference(*(c.tokenizer.model_dump(mode="json") for c in (old, cfg))):
        key, theirs, ours = diff
        raise ConfigError(
            f"{where}: tokenizer.{key} is {theirs!r} there but {ours!r} here; a warm start trains "
            f"with the checkpoint's own tokenizer: copy the tokenizer section of {config_yaml}"
        )
    if diff := architecture_difference(old, cfg):
        key, theirs, ours = diff
        raise ConfigError(
            f"{where}: model.{key} is {theirs!r} there but {ours!r} here, so its weights do not "
            f"fit this model; copy the model section of {config_yaml} (only the dropout rates "
            "may differ)"
        )
    theirs = Tokenizer.from_state_dict(ckpt["tokenizer"])
    if tokenizer is not None and tokenizer.digest() != theirs.digest():
        raise ConfigError(
            f"{where}: the checkpoint's tokenizer (sha256 {theirs.digest()[:12]}) is not this "
            f"run's ({tokenizer.digest()[:12]}), and its weights fit only their own vocabulary; "
            "warm-start from a run trained with this tokenizer, or give train no tokenizer so "
            "the run takes the checkpoint's"
        )
    return WarmStart(p, ckpt, theirs)


def architecture_difference(old: Config, new: Config) -> tuple[str, object, object] | None:
    """The first model key, other than a dropout rate, whose value differs between two configs:
    (key, old value, new value), or None when the weights of one fit the other's model."""
    a, b = old.model.model_dump(mode="json"), new.model.model_dump(mode="json")
    if a["name"] != b["name"]:
        return "name", a["name"], b["name"]
    return first_difference(*({k: v for k, v in d.items() if "dropout" not in k} for d in (a, b)))


def first_difference(a: dict, b: dict, prefix: str = "") -> tuple[str, object, object] | None:
    """The first key whose value differs between two dicts, dotted through the dicts they nest
    (``data.concat_k``): (key, a's value, b's value), or None when they are equal."""
    for key in dict.fromkeys([*a, *b]):
        x, y = a.get(key), b.get(key)
        if isinstance(x, dict) and isinstance(y, dict):
            if found := first_difference(x, y, f"{prefix}{key}."):
                return found
        elif x != y:
            return f"{prefix}{key}", x, y
    return None

"""``train.precision: auto`` on the CPU: no native bf16 -> fp32 without a probe; with it, a probe of
the run's own model decides (stubbed here, so the choice never depends on this machine's load);
the choice, its reason and the probe's speeds are recorded in the run. The CPU's flags are
simulated: the tests pass on any processor."""

from __future__ import annotations

import json
import logging

import pytest
import torch
import yaml

from seq2seq.config import TrainConfig
from seq2seq.data.batch import Batch
from seq2seq.training import precision as P
from seq2seq.training import setup
from seq2seq.training.distributed import DistInfo
from seq2seq.training.loop import train
from tests.toys import synth_run_config, tiny_model

CPU = torch.device("cpu")
NO_BF16 = frozenset({"sse4_2", "avx2", "avx512f", "avx512_vnni"})
AVX512_BF16 = NO_BF16 | {"avx512_bf16"}
AMX_BF16 = NO_BF16 | {"amx_tile", "amx_bf16", "amx_int8"}
BIG, LONG = 10**8, 10**6  # parameters and max_steps that allow a probe


def never() -> dict[str, float]:
    raise AssertionError("the probe ran")


def test_a_cpu_without_native_bf16_gets_fp32_without_a_probe():
    choice = P.choose_cpu_precision(NO_BF16, BIG, LONG, never)
    assert choice.precision == "fp32" and choice.probe is None
    assert choice.line == (
        "precision auto: fp32 (this CPU has no native bf16: no avx512_bf16 or amx_bf16 flag; "
        "no probe)"
    )


@pytest.mark.parametrize("flags", [AVX512_BF16, AMX_BF16], ids=["avx512_bf16", "amx_bf16"])
@pytest.mark.parametrize(
    "bf16, fp32, want",
    [(2440.0, 3010.0, "fp32"), (3010.0, 2440.0, "bf16"), (1010.0, 1000.0, "fp32")],
    ids=["bf16-slower", "bf16-faster", "bf16-within-noise"],
)
def test_with_native_bf16_the_probe_decides(flags, bf16, fp32, want):
    calls = []

    def probe():
        calls.append(1)
        return {"bf16": bf16, "fp32": fp32}

    choice = P.choose_cpu_precision(flags, BIG, LONG, probe)
    assert calls == [1] and choice.precision == want
    assert choice.probe == {"bf16": bf16, "fp32": fp32}
    short = ", under the 1.05x bf16 needs" if want == "fp32" and bf16 > fp32 else ""
    assert choice.line == (
        f"precision auto: {want} (probe: {bf16:,.0f} tok/s bf16 against {fp32:,.0f} fp32{short})"
    )


def test_a_small_model_or_a_short_run_is_not_probed():
    small = P.choose_cpu_precision(AVX512_BF16, P.MIN_PROBE_PARAMETERS - 1, LONG, never)
    short = P.choose_cpu_precision(AVX512_BF16, BIG, P.MIN_PROBE_STEPS - 1, never)
    assert small.precision == short.precision == "fp32"
    assert "too few for bf16 to pay" in small.line and "too few to repay a probe" in short.line
    assert P.choose_cpu_precision(AVX512_BF16, BIG, None, lambda: {"bf16": 2, "fp32": 1}).probe


def _cfg(synth_corpus, precision, max_steps=2):
    return synth_run_config(synth_corpus, max_steps=max_steps, precision=precision)


def test_settle_keeps_a_named_precision_and_a_resumed_runs_choice(synth_corpus, monkeypatch):
    monkeypatch.setattr(P, "cpu_flags", lambda: AVX512_BF16)
    named = _cfg(synth_corpus, "fp32")
    assert P.settle_precision(named, CPU, DistInfo(), None, never, BIG) == (named, None)
    resumed = _cfg(synth_corpus, "bf16")  # what the interrupted run's last.pt recorded
    cfg, choice = P.settle_precision(_cfg(synth_corpus, "auto"), CPU, DistInfo(), resumed, never, 1)
    assert cfg.train.precision == choice.precision == "bf16" and choice.probe is None
    assert choice.line == "precision auto: bf16 (kept from the run's last.pt)"
    auto = _cfg(synth_corpus, "auto", max_steps=LONG)
    fresh, choice = P.settle_precision(
        auto, CPU, DistInfo(), None, lambda: {"bf16": 9, "fp32": 3}, BIG
    )
    assert fresh.train.precision == "bf16" and choice.probe == {"bf16": 9, "fp32": 3}


def test_the_probe_times_both_precisions_and_leaves_model_and_rng_alone():
    model = tiny_model("transformer")
    g = torch.Generator().manual_seed(0)
    ids = [torch.randint(4, 40, (n,), generator=g).tolist() for n in (5, 9, 7, 3)]
    batches = [Batch.from_ids(ids[:2], ids[2:]), Batch.from_ids(ids[1:3], ids[:2])]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(7)
    rng = torch.get_rng_state()
    speeds = P.probe_speeds(model, TrainConfig(max_steps=1), batches, CPU, seconds=0.0)
    assert set(speeds) == {"fp32", "bf16"} and min(speeds.values()) > 0
    assert torch.equal(torch.get_rng_state(), rng)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    assert not model.training  # the copy trained, not the model


def test_a_run_records_the_choice_and_the_probes_speeds(
    tmp_path, synth_corpus, monkeypatch, caplog
):
    seen = []

    def stub(model, t, batches, device):
        seen.append((model.num_parameters(), [b.src.shape for b in batches], device))
        return {"bf16": 3010.0, "fp32": 2440.0}

    monkeypatch.setattr(P, "cpu_flags", lambda: AVX512_BF16)
    monkeypatch.setattr(P, "MIN_PROBE_PARAMETERS", 0)
    monkeypatch.setattr(P, "MIN_PROBE_STEPS", 0)
    monkeypatch.setattr(setup, "probe_speeds", stub)
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        summary = train(_cfg(synth_corpus, "auto"), tmp_path / "run")
    assert summary["steps"] == 2
    [(params, shapes, device)] = seen
    assert params > 0 and 1 <= len(shapes) <= P.PROBE_BATCHES and device == CPU
    run = tmp_path / "run"
    assert yaml.safe_load((run / "config.yaml").read_text())["train"]["precision"] == "bf16"
    runtime = json.loads((run / "run_info.json").read_text())["runtime"]
    assert runtime["precision"] == "bf16"
    assert runtime["precision_probe_tokens_per_s"] == {"bf16": 3010.0, "fp32": 2440.0}
    line = "precision auto: bf16 (probe: 3,010 tok/s bf16 against 2,440 fp32)"
    assert line in caplog.text and line in (run / "train.log").read_text()


def test_a_run_without_native_bf16_trains_in_fp32_unprobed(
    tmp_path, synth_corpus, monkeypatch, caplog
):
    monkeypatch.setattr(P, "cpu_flags", lambda: NO_BF16)
    monkeypatch.setattr(setup, "probe_speeds", lambda *a: never())
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        train(_cfg(synth_corpus, "auto"), tmp_path / "run")
    runtime = json.loads((tmp_path / "run" / "run_info.json").read_text())["runtime"]
    assert runtime["precision"] == "fp32" and "precision_probe_tokens_per_s" not in runtime
    assert "this CPU has no native bf16" in caplog.text


def test_cpu_flags_come_from_proc_cpuinfo_and_torch(monkeypatch):
    from seq2seq import cpu_features as F

    monkeypatch.setattr(F, "_proc_cpuinfo", lambda: {"model name": "Toy 9000", "flags": "avx2"})
    monkeypatch.setattr(F, "_torch_capabilities", lambda: {"amx_bf16": True, "avx512_bf16": False})
    F.cpu_flags.cache_clear(), F.cpu_model.cache_clear()
    try:
        assert F.cpu_flags() == {"avx2", "amx_bf16"} and F.native_bf16()
        assert F.cpu_model() == "Toy 9000"
        assert "bf16: amx_bf16; VNNI: none; AMX: amx_bf16" in F.cpu_line()
        assert F.cpu_report()["flags"]["amx_bf16"] and not F.cpu_report()["flags"]["avx512_vnni"]
    finally:
        F.cpu_flags.cache_clear(), F.cpu_model.cache_clear()

"""``--quantize int8``: dynamic int8 quantization of every model family decodes well-formed output
under the length contract, scores close to fp32 under teacher forcing, and after a little training
greedy-decodes mostly as fp32 does; CUDA and unknown modes are refused in one line."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from seq2seq.config import DecodeConfig
from seq2seq.data.tokenizer import BOS, EOS, PAD
from seq2seq.decoding.base import max_lengths
from seq2seq.decoding.quantize import (
    FLOAT_LINEARS,
    quantizable,
    quantize_device,
    quantize_model,
)
from seq2seq.decoding.search import search
from tests.toys import TINY_MODELS, random_batch, run_cli, tiny_model


@pytest.mark.parametrize("name", list(TINY_MODELS))
@pytest.mark.parametrize("method", ["greedy", "beam"])
def test_int8_decoding_is_well_formed_within_the_length_limit(name, method):
    model = tiny_model(name)
    q = quantize_model(model, "int8")
    converted = dict(q.named_modules())
    assert all("quantized.dynamic" in type(converted[n]).__module__ for n in quantizable(model))
    src = random_batch(7, seed=3)
    kw = {"beam_size": 3} if method == "beam" else {}
    cfg = DecodeConfig(method=method, max_len_a=0.5, max_len_b=4, **kw)
    with torch.inference_mode():
        out = search(q, src, src != PAD, cfg)
    limits = max_lengths((src != PAD).sum(1), 0.5, 4).tolist()
    assert len(out) == len(limits)
    for hyps, limit in zip(out, limits, strict=True):
        h = hyps[0]
        assert 1 <= len(h.tokens) <= limit
        assert (h.tokens[-1] == EOS) == h.finished and EOS not in h.tokens[:-1]
        assert all(0 < t < 45 and t not in (PAD, BOS) for t in h.tokens if t != EOS)
        assert h.log_prob <= 0 and h.log_prob == h.log_prob  # finite, not NaN


@pytest.mark.parametrize("name", list(TINY_MODELS))
def test_int8_log_probs_stay_close_to_fp32(name):
    """Teacher-forced log-probabilities of random targets: int8 within a loose tolerance."""
    model = tiny_model(name)
    q = quantize_model(model, "int8")
    src = random_batch(6, seed=0)
    tgt = torch.randint(4, 45, (6, 9), generator=torch.Generator().manual_seed(1))
    tgt_in = torch.cat([torch.full((6, 1), BOS), tgt[:, :-1]], 1)
    with torch.inference_mode():
        a, b = (torch.log_softmax(m(src, src != PAD, tgt_in).float(), -1) for m in (model, q))
    gold_a, gold_b = a.gather(-1, tgt[..., None]), b.gather(-1, tgt[..., None])
    assert (a - b).abs().max() < 0.5
    assert (gold_a - gold_b).abs().mean() < 0.05
    assert all(
        torch.equal(v, model.state_dict()[k]) for k, v in tiny_model(name).state_dict().items()
    )


def _trained_transformer(steps: int = 120):
    """The toy Transformer taught to copy 3-8 random symbols (a few seconds on one thread)."""
    torch.manual_seed(0)
    model = tiny_model("transformer", 20, 20)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        src = torch.randint(4, 20, (32, int(torch.randint(3, 9, (1,), generator=g))), generator=g)
        tgt_in = torch.cat([torch.full((32, 1), BOS), src], 1)
        tgt_out = torch.cat([src, torch.full((32, 1), EOS)], 1)
        logits = model(src, src != PAD, tgt_in)
        loss = nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1)
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


def test_int8_greedy_output_of_a_trained_toy_mostly_equals_fp32():
    model = _trained_transformer()
    q = quantize_model(model, "int8")
    src = random_batch(40, seed=5, max_len=8, vocab=20)
    cfg = DecodeConfig(method="greedy", max_len_a=1.0, max_len_b=3)
    with torch.inference_mode():
        a, b = (search(m, src, src != PAD, cfg) for m in (model, q))
    same = sum(x[0].tokens == y[0].tokens for x, y in zip(a, b, strict=True))
    finished = sum(h[0].finished for h in a)
    assert finished >= 0.5 * len(a)  # trained: it stops by itself
    assert same >= 0.5 * len(a), f"{same} of {len(a)} identical"


def test_only_the_cpu_takes_int8_and_the_float_weights_stay_float():
    assert quantize_device("int8", "auto") == "cpu" and quantize_device(None, "cuda") == "cuda"
    assert quantize_device("int8", "cpu") == "cpu"
    for device in ("cuda", "cuda:1"):
        with pytest.raises(ValueError, match=r"^--quantize int8 decodes on the CPU.*--device cpu"):
            quantize_device("int8", device)
    with pytest.raises(ValueError, match="choose int8"):
        quantize_device("int4", "cpu")
    model = tiny_model("transformer")
    assert quantize_model(model, None) is model
    names = quantizable(model)
    assert names and not any(n.rsplit(".", 1)[-1] in FLOAT_LINEARS for n in names)
    assert {n for n, m in model.named_modules() if isinstance(m, nn.Linear)} - set(names)


def test_translate_quantize_int8_through_the_cli(synth_run, tmp_path, monkeypatch, capsys):
    src = tmp_path / "src.txt"
    src.write_text("Ein hund läuft.\n\nZwei katzen sitzen auf dem baum.\n")
    code, out, err = run_cli(
        monkeypatch,
        capsys,
        "translate",
        "-c",
        synth_run,
        "-i",
        src,
        "--quantize",
        "int8",
        "--beam",
        "2",
    )
    assert code == 0, err
    assert len(out.splitlines()) == 3 and out.splitlines()[1] == ""
    code, _, err = run_cli(
        monkeypatch,
        capsys,
        "translate",
        "-c",
        synth_run,
        "-i",
        src,
        "--quantize",
        "int8",
        "--device",
        "cuda",
    )
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--quantize int8 decodes on the CPU" in err and "--device cpu" in err
    code, _, err = run_cli(
        monkeypatch, capsys, "translate", "-c", synth_run, "-i", src, "--quantize", "int4"
    )
    assert code == 2 and "choose int8" in err


def test_serve_quantizes_its_models_on_the_cpu(synth_run, monkeypatch, capsys):
    from seq2seq.serve import app
    from seq2seq.serve.engine import Limits, TranslateRequest, check_request, translate_checked
    from seq2seq.serve.runs import load_runs

    seen = {}
    monkeypatch.setattr(app, "serve", lambda *a: seen.update(device=a[4], quantize=a[6]))
    code, _, err = run_cli(monkeypatch, capsys, "serve", synth_run, "--quantize", "int8")
    assert code == 0, err
    assert seen == {"device": "cpu", "quantize": "int8"}
    served = load_runs([synth_run], "cpu")
    for m in served:
        m.run.model = quantize_model(m.run.model, "int8")
    req = TranslateRequest(text="Ein hund läuft.\nDie katze.", beam=2)
    res = translate_checked(*check_request(served, req, Limits()), req)
    [model] = res["models"]
    assert len(model["lines"]) == 2
    assert all(line["greedy"]["text"] is not None for line in model["lines"])


def test_eval_quantize_int8_records_it_and_refuses_it_with_hyp(
    synth_run, tmp_path, monkeypatch, capsys
):
    src, ref, out = tmp_path / "src.txt", tmp_path / "ref.txt", tmp_path / "eval.json"
    src.write_text("Ein hund läuft.\nDie katze sitzt.\n")
    ref.write_text("A dog runs.\nThe cat sits.\n")
    args = ["eval", "-c", synth_run, "--src", src, "--ref", ref, "--quantize", "int8"]
    code, _, err = run_cli(monkeypatch, capsys, *args, "--json", out)
    assert code == 0, err
    assert json.loads(out.read_text())["quantize"] == "int8"
    code, _, err = run_cli(
        monkeypatch, capsys, "eval", "--hyp", ref, "--ref", ref, "--quantize", "int8"
    )
    assert code == 2 and "--quantize: with --hyp nothing is translated" in err

"""``seq2seq/export/ctranslate2.py``: the Transformer as a CTranslate2 model. Every wiring variant
(post-/pre-norm, sinusoidal/learned positions, shared/separate embeddings and vocabularies) gives
CTranslate2 the teacher-forced log-probabilities ours gives, to float32 rounding; an RNN run, or a
missing ctranslate2, is refused in one line. The tests that convert skip without ctranslate2
(``pip install -e ".[export]"``; ``make install`` installs it where a wheel exists)."""

from __future__ import annotations

import copy
import sys

import pytest
import torch

from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.config import TokenizerConfig, validate_config
from seq2seq.data.tokenizer import BOS, EOS, Tokenizer
from seq2seq.export import ExportError
from seq2seq.export.ctranslate2 import export_ctranslate2, import_ctranslate2, quantization
from seq2seq.models import build_model

try:
    import ctranslate2
except ImportError:
    ctranslate2 = None
needs_ct2 = pytest.mark.skipif(
    ctranslate2 is None,
    reason='ctranslate2 is not installed (pip install -e ".[export]"; make install adds it)',
)

VARIANTS = {
    "post-norm, sinusoidal, shared": {},
    "pre-norm, learned positions": {"pre_norm": True, "learned_positions": True},
    "separate output projection": {"share_embeddings": False},
    "pre-norm, 2+3 layers, 4 heads": {
        "pre_norm": True,
        "n_encoder_layers": 2,
        "n_decoder_layers": 3,
        "n_heads": 4,
    },
}


def _random_checkpoint(base: dict, tok: Tokenizer, path, **model) -> None:
    """``base``'s run with model settings ``model``, random weights (norms and the output bias
    moved off their initial values, so a swapped or dropped one shows), and ``tok``."""
    raw = copy.deepcopy(base["config"])
    raw["model"].update(model)
    cfg = validate_config(raw)
    torch.manual_seed(0)
    m = build_model(cfg.model, tok.src_vocab_size, tok.tgt_vocab_size, tok.joint)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "norm" in name or name == "out_bias":
                p.add_(torch.randn_like(p) * 0.3)
    save_checkpoint(path, {"config": raw, "model": m.state_dict(), "tokenizer": tok.state_dict()})
    return m.eval()


def _max_log_prob_gap(model, tok, folder, sources, targets) -> float:
    """Largest |ours - CTranslate2's| teacher-forced log-probability of a target token (EOS
    included) over the pairs."""
    translator = ctranslate2.Translator(str(folder), intra_threads=1)
    src_ids, tgt_ids = tok.encode_src(sources), tok.encode_tgt(targets)
    scored = translator.score_batch(
        [tok.src_pieces(s) for s in sources], [tok.tgt_pieces(t) for t in tgt_ids]
    )
    gap = 0.0
    for s, t, r in zip(src_ids, tgt_ids, scored, strict=True):
        src = torch.tensor([s])
        with torch.no_grad():
            logits = model(src, src != 0, torch.tensor([[BOS, *t]]))
        ours = torch.log_softmax(logits[0], -1)[torch.arange(len(t) + 1), torch.tensor([*t, EOS])]
        assert len(r.log_probs) == len(t) + 1
        gap = max(gap, float((ours - torch.tensor(r.log_probs)).abs().max()))
    return gap


@needs_ct2
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_ctranslate2_scores_every_token_as_our_transformer(
    synth_transformer_run, synth_corpus, tmp_path, variant
):
    base = load_checkpoint(synth_transformer_run)
    tok = Tokenizer.from_state_dict(base["tokenizer"])
    model = _random_checkpoint(base, tok, tmp_path / "c.pt", **VARIANTS[variant])
    export_ctranslate2(tmp_path / "c.pt", tmp_path / "ct2")
    src = (synth_corpus / "val.de").read_text().splitlines()[:12]
    tgt = (synth_corpus / "val.en").read_text().splitlines()[:12]
    assert _max_log_prob_gap(model, tok, tmp_path / "ct2", src, tgt) < 1e-4


@needs_ct2
def test_separate_vocabularies_are_written_and_scored_alike(
    synth_transformer_run, synth_corpus, tmp_path
):
    src = (synth_corpus / "train.de").read_text().splitlines()
    tgt = (synth_corpus / "train.en").read_text().splitlines()
    tok = Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=120, joint=False))
    assert not tok.joint
    base = load_checkpoint(synth_transformer_run)
    model = _random_checkpoint(base, tok, tmp_path / "c.pt")
    done = export_ctranslate2(tmp_path / "c.pt", tmp_path / "ct2")
    assert {"source_vocabulary.json", "target_vocabulary.json"} <= set(done.files)
    assert _max_log_prob_gap(model, tok, tmp_path / "ct2", src[:10], tgt[:10]) < 1e-4


@needs_ct2
def test_an_int8_export_is_smaller_and_its_vocabulary_is_ours(synth_transformer_run, tmp_path):
    full = export_ctranslate2(synth_transformer_run, tmp_path / "fp32")
    small = export_ctranslate2(synth_transformer_run, tmp_path / "int8", quantize="int8")
    assert small.files["model.bin"] < full.files["model.bin"]
    assert "int8" in small.what
    import json

    tok = Tokenizer.load(tmp_path / "int8")
    vocab = json.loads((tmp_path / "int8" / "shared_vocabulary.json").read_text())
    assert vocab == [tok.tgt_sp.id_to_piece(i) for i in range(tok.tgt_vocab_size)]
    assert vocab[:4] == ["<pad>", "<unk>", "<s>", "</s>"]
    meta = json.loads((tmp_path / "int8" / "seq2seq_export.json").read_text())
    assert meta["quantization"] == "int8" and meta["config"]["model"]["name"] == "transformer"


@needs_ct2
def test_an_rnn_run_is_refused_in_one_line(synth_run, tmp_path):
    with pytest.raises(ExportError) as e:
        export_ctranslate2(synth_run, tmp_path / "ct2")
    msg = str(e.value)
    assert "transformer family only" in msg and "no RNN decoders" in msg and "\n" not in msg
    assert not (tmp_path / "ct2").exists()


def test_without_ctranslate2_the_export_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # import ctranslate2 -> ImportError
    with pytest.raises(ExportError) as e:
        import_ctranslate2()
    assert 'pip install -e ".[export]"' in str(e.value) and "\n" not in str(e.value)


def test_dtype_and_quantize_map_to_ctranslate2_weight_types():
    assert quantization("fp32", None) == "float32"
    assert quantization("fp16", None) == "float16"
    assert quantization("bf16", "int8") == "int8_bfloat16"
    assert quantization("fp32", "int8") == "int8"
    with pytest.raises(ExportError, match="only int8"):
        quantization("fp32", "int4")

"""``seq2seq export RUN -o DIR --format ctranslate2 [--quantize int8]``: a Transformer as a
CTranslate2 model (the optional ``ctranslate2`` package: ``pip install -e ".[export]"``).

The converter fills CTranslate2's own ``TransformerSpec`` (``ctranslate2.specs``) from our weights,
then ``validate`` / ``optimize`` (quantization) / ``save`` as CTranslate2's converters do. How each
part of ``models/transformer.py`` maps:

- pre-norm or post-norm: ``pre_norm`` of both stacks. Post-norm (LN(x + f(x)), the paper) is
  CTranslate2's ``pre_norm=False``, which has no final layer norm, as ours has none; pre-norm
  (x + f(LN(x))) has ``enc_norm`` / ``dec_norm`` as the stacks' final ``layer_norm``.
- each sub-layer's LayerNorm is the ``layer_norm`` of its attention or FFN spec (CTranslate2
  applies it before or after the residual by ``pre_norm``); epsilon 1e-5 (torch's default, set in
  the config: CTranslate2's own default differs).
- self-attention: our fused ``in_proj`` [W^Q; W^K; W^V] (with bias) is ``linear[0]`` as it is;
  cross-attention: its first third is the query ``linear[0]``, the other two thirds the fused
  key/value ``linear[1]``; ``W_o`` is the last linear. Queries are scaled by 1/sqrt(d_k), as ours.
- FFN: ``W_1`` -> ``linear_0``, ReLU, ``W_2`` -> ``linear_1``, biases included.
- embeddings: scaled by sqrt(d_model) (``scale_embeddings``), then positions added. Our sinusoidal
  table interleaves sin and cos (PE(pos, 2i) = sin, PE(pos, 2i+1) = cos); CTranslate2's built-in
  one concatenates them, so the table is written explicitly (``position_encodings.encodings``,
  ``max_positions`` rows), as are learned positions. The decoder counts positions from 0 at BOS,
  as ours does.
- shared embeddings: the output projection is the target embedding matrix and, with a joint
  vocabulary, the source embedding too; CTranslate2 stores a repeated tensor once (an alias).
  ``out_bias`` is the projection's bias.
- vocabularies: the sentencepiece pieces in id order (pad 0, unk 1, ``<s>`` 2, ``</s>`` 3, the
  names CTranslate2 expects), one shared list when both sides have the same pieces. The
  sentencepiece models themselves are saved beside them (``spm*.model``, ``Tokenizer.save``), and
  ``seq2seq_export.json`` holds the run's config (decode settings, languages), provenance and
  target vocabulary (the checkpoint's ``target_vocab`` ids, null for a run without one), which
  translating suppresses outside of under ``decode.target_vocab_mask``.
- no source BOS/EOS (ours feeds the pieces alone); the decoder starts from ``<s>``.

Nothing of the Transformer family is left out. The RNN families cannot be converted: CTranslate2
has no recurrent decoders.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from seq2seq.checkpoint import CTRANSLATE2_FORMAT, CTRANSLATE2_META, CTRANSLATE2_VERSION
from seq2seq.data.tokenizer import Tokenizer, vocab_pieces
from seq2seq.export import ExportError
from seq2seq.export.folder import Exported, read_source, size, write_export
from seq2seq.export.weights import check_dtype
from seq2seq.models.transformer import Transformer, sinusoidal_positions

LAYER_NORM_EPSILON = 1e-5  # torch.nn.LayerNorm's default, which every LayerNorm of ours uses
# CTranslate2 0.x-3.x named the spec API differently; 4.x is what this converter is written for
SUPPORTED = ">=4.0,<5"
INSTALL = 'pip install -e ".[export]"  (or pip install "ctranslate2>=4,<5")'


def import_ctranslate2():
    """The ``ctranslate2`` module, or a one-line ExportError saying how to install it."""
    try:
        import ctranslate2
    except ImportError:
        raise ExportError(
            f"the ctranslate2 package is not installed; install it with {INSTALL}"
        ) from None
    major = int(ctranslate2.__version__.split(".")[0])
    if major != 4:
        raise ExportError(
            f"ctranslate2 {ctranslate2.__version__} is installed; this export needs "
            f"ctranslate2{SUPPORTED}: {INSTALL}"
        )
    return ctranslate2


def quantization(dtype: str, quantize: str | None) -> str:
    """CTranslate2's weight type for ``--dtype`` and ``--quantize``: float32, float16, bfloat16,
    int8 (int8 weights, the rest fp32), int8_float16, int8_bfloat16; raises ExportError for an
    unknown ``dtype`` or ``quantize``."""
    check_dtype(dtype)
    if quantize not in (None, "int8"):
        raise ExportError(f"--quantize {quantize}: only int8 is offered")
    floats = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
    if quantize is None:
        return floats[dtype]
    return "int8" if dtype == "fp32" else f"int8_{floats[dtype]}"


def _np(t: torch.Tensor):
    return t.detach().float().cpu().contiguous().numpy()


def _linear(spec, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
    spec.weight = _np(weight)
    if bias is not None:
        spec.bias = _np(bias)


def _norm(spec, norm: torch.nn.LayerNorm) -> None:
    spec.gamma, spec.beta = _np(norm.weight), _np(norm.bias)


def _self_attention(spec, attn, norm) -> None:
    _linear(spec.linear[0], attn.in_proj.weight, attn.in_proj.bias)  # [W^Q; W^K; W^V]
    _linear(spec.linear[1], attn.W_o.weight, attn.W_o.bias)
    _norm(spec.layer_norm, norm)


def _cross_attention(spec, attn, norm) -> None:
    d = attn.W_o.weight.shape[0]
    w, b = attn.in_proj.weight, attn.in_proj.bias
    _linear(spec.linear[0], w[:d], b[:d])  # queries, from the decoder
    _linear(spec.linear[1], w[d:], b[d:])  # [W^K; W^V], from the encoder output
    _linear(spec.linear[2], attn.W_o.weight, attn.W_o.bias)
    _norm(spec.layer_norm, norm)


def _ffn(spec, ffn, norm) -> None:
    _linear(spec.linear_0, ffn.W_1.weight, ffn.W_1.bias)
    _linear(spec.linear_1, ffn.W_2.weight, ffn.W_2.bias)
    _norm(spec.layer_norm, norm)


def transformer_spec(model: Transformer, tok: Tokenizer):
    """CTranslate2's ``TransformerSpec`` holding ``model``'s weights and ``tok``'s pieces
    (validated by the caller). See the module docstring for the mapping."""
    import_ctranslate2()
    from ctranslate2.specs import common_spec
    from ctranslate2.specs import transformer_spec as ts

    cfg = model.cfg
    stack = {"pre_norm": cfg.pre_norm, "activation": common_spec.Activation.RELU}
    encoder = ts.TransformerEncoderSpec(cfg.n_encoder_layers, cfg.n_heads, **stack)
    decoder = ts.TransformerDecoderSpec(cfg.n_decoder_layers, cfg.n_heads, **stack)
    spec = ts.TransformerSpec(encoder, decoder)
    spec.config.layer_norm_epsilon = LAYER_NORM_EPSILON
    spec.config.decoder_start_token = tok.tgt_sp.id_to_piece(tok.bos_id)
    spec.config.bos_token = tok.tgt_sp.id_to_piece(tok.bos_id)
    spec.config.eos_token = tok.tgt_sp.id_to_piece(tok.eos_id)
    spec.config.unk_token = tok.tgt_sp.id_to_piece(tok.unk_id)

    positions = _np(
        model.pos if cfg.learned_positions else sinusoidal_positions(cfg.max_positions, cfg.d_model)
    )
    for stack, final_norm in ((encoder, model.enc_norm), (decoder, model.dec_norm)):
        stack.scale_embeddings = True  # x sqrt(d_model), as Transformer._embed
        stack.position_encodings.encodings = positions
        if cfg.pre_norm:  # post-norm's final norm is an nn.Identity, as CTranslate2's is none
            _norm(stack.layer_norm, final_norm)

    encoder.embeddings[0].weight = _np(model.src_embed.weight)
    for layer_spec, layer in zip(encoder.layer, model.encoder, strict=True):
        _self_attention(layer_spec.self_attention, layer.self_attn, layer.sub1.norm)
        _ffn(layer_spec.ffn, layer.ffn, layer.sub2.norm)

    decoder.embeddings.weight = _np(model.tgt_embed.weight)
    for layer_spec, layer in zip(decoder.layer, model.decoder, strict=True):
        _self_attention(layer_spec.self_attention, layer.self_attn, layer.subs[0].norm)
        _cross_attention(layer_spec.attention, layer.cross_attn, layer.subs[1].norm)
        _ffn(layer_spec.ffn, layer.ffn, layer.subs[2].norm)
    out_w = model.tgt_embed.weight if model.out_proj is None else model.out_proj.weight
    _linear(decoder.projection, out_w, model.out_bias)

    spec.register_source_vocabulary(vocab_pieces(tok.src_sp))
    spec.register_target_vocabulary(vocab_pieces(tok.tgt_sp))
    return spec


def export_ctranslate2(
    run: str | Path,
    out: str | Path,
    dtype: str = "fp32",
    quantize: str | None = None,
    overwrite: bool = False,
) -> Exported:
    """Convert ``run``'s Transformer into the CTranslate2 folder ``out``, atomically: CTranslate2's
    ``model.bin``, ``config.json`` and vocabulary JSON files, our sentencepiece models,
    ``seq2seq_export.json`` and the run's decode.yaml. Raises as ``read_source``, and
    ExportError for ctranslate2 missing or a non-Transformer run."""
    qtype = quantization(dtype, quantize)
    source, ckpt, (model, tok, cfg) = read_source(run, Path(out), overwrite)
    if cfg.model.name != "transformer":  # every RNN family
        raise ExportError(
            f"{source}: --format ctranslate2 converts the transformer family only; this run is "
            f"{cfg.model.name}, and CTranslate2 has no RNN decoders (export it without --format)"
        )
    spec = transformer_spec(model, tok)
    spec.validate()
    spec.optimize(quantization=qtype)
    state = ckpt.get("train_state") or ckpt.get("exported_from") or {}
    meta = {
        "format": CTRANSLATE2_FORMAT,
        "version": CTRANSLATE2_VERSION,
        "config": ckpt["config"],
        "exported_from": {"checkpoint": str(source), "step": state.get("step")},
        "quantization": qtype,
        "max_positions": cfg.model.max_positions,
        "target_vocab": ckpt.get("target_vocab"),  # null: the run has none (absent: an old export)
    }
    del ckpt

    def fill(folder: Path) -> None:
        spec.save(str(folder))
        tok.save(folder)
        (folder / CTRANSLATE2_META).write_text(
            json.dumps(meta, indent=2, default=str) + "\n", encoding="utf-8"
        )

    def what(files: dict[str, int]) -> str:
        listed = ", ".join(f"{name} {size(n)}" for name, n in files.items())
        return f"CTranslate2 {qtype}: {listed}"

    return write_export(source, Path(out), fill, what)

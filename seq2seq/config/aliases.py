"""What an unknown config key may have meant, beyond spelling within its section: the names other
toolkits (fairseq, Joey NMT, OpenNMT-py, and a few of Hugging Face's) give the same setting, and
keys of this config that live in another section (``train.dropout`` is ``model.dropout``).

``foreign_hint`` is ``loading._did_you_mean``'s second guess, after a close spelling within the
section. Imports only ``difflib``.
"""

from __future__ import annotations

import difflib

# our key -> the names other toolkits give it (fairseq's --options with "_" for "-", OpenNMT-py's
# and Joey NMT's YAML keys); a name may point at several keys, the first that exists is taken
_OURS_TO_THEIRS: dict[str, tuple[str, ...]] = {
    "train.lr": ("learning_rate", "base_lr", "max_lr", "lr_rate"),
    "train.warmup_steps": ("warmup", "warmup_updates", "learning_rate_warmup", "warmup_step"),
    "train.max_steps": ("max_update", "max_updates", "train_steps", "num_steps", "total_steps"),
    "train.max_epochs": ("max_epoch", "epochs", "num_epochs", "train_epochs", "num_train_epochs"),
    "train.max_time": ("stop_time_hours", "max_minutes", "time_limit"),
    "train.batch_tokens": ("batch_size", "max_tokens_per_batch", "batch_type", "tokens_per_batch"),
    "train.clip_norm": (
        "clip_grad_norm",
        "max_grad_norm",
        "grad_clip",
        "clip_grad",
        "gradient_clip",
    ),
    "train.update_freq": (
        "accum_count",
        "batch_multiplier",
        "gradient_accumulation_steps",
        "accumulate_grad_batches",
    ),
    "train.valid_every": (
        "valid_steps",
        "validation_freq",
        "validate_interval_updates",
        "eval_steps",
        "eval_every",
        "validate_every",
    ),
    "train.patience": ("early_stopping", "early_stopping_patience"),
    "train.best_metric": ("early_stopping_metric", "eval_metric", "best_checkpoint_metric"),
    "train.optimizer": ("optim",),
    "train.betas": ("adam_betas", "adam_beta1", "adam_beta2"),
    "train.schedule": ("lr_scheduler", "scheduling", "decay_method", "scheduler", "lr_schedule"),
    "train.min_lr": ("learning_rate_min", "stop_min_lr", "min_learning_rate", "end_learning_rate"),
    "train.plateau_factor": ("decrease_factor", "lr_shrink", "learning_rate_decay"),
    "train.weight_decay": ("l2", "l2_penalty"),
    "train.seed": ("random_seed",),
    "train.keep_last": ("keep_last_epochs", "keep_last_checkpoints", "keep_checkpoint"),
    "train.keep_best": ("keep_best_checkpoints", "keep_best_ckpts"),
    "train.log_every": ("log_interval", "report_every", "logging_freq", "logging_steps"),
    "train.checkpoint_every": (
        "save_interval_updates",
        "save_checkpoint_steps",
        "save_steps",
        "checkpoint_freq",
    ),
    "train.precision": ("fp16", "bf16", "amp", "dtype", "mixed_precision"),
    "train.device": ("gpu", "gpus", "use_cuda", "cuda"),
    "model.name": ("arch", "architecture", "model_type", "encoder_type"),
    "model.dropout": ("hidden_dropout", "dropout_rate"),
    "model.activation_dropout": ("relu_dropout",),
    "model.n_encoder_layers": ("encoder_layers", "enc_layers", "num_encoder_layers"),
    "model.n_decoder_layers": ("decoder_layers", "dec_layers", "num_decoder_layers"),
    "model.d_model": ("encoder_embed_dim", "embed_dim", "word_vec_size", "hidden_size", "rnn_size"),
    "model.emb_size": ("embedding_dim", "embed_dim", "word_vec_size", "encoder_embed_dim"),
    "model.hidden_size": ("rnn_size", "encoder_hidden_size"),
    "model.d_ff": ("encoder_ffn_embed_dim", "ffn_embed_dim", "transformer_ff", "ff_size"),
    "model.n_heads": ("encoder_attention_heads", "attention_heads", "heads", "num_heads", "nhead"),
    "model.share_embeddings": (
        "share_all_embeddings",
        "share_decoder_input_output_embed",
        "tied_embeddings",
        "tied_softmax",
        "tie_embeddings",
    ),
    "model.tie_embeddings": ("share_decoder_embeddings", "tied_softmax", "share_embeddings"),
    "model.pre_norm": ("encoder_normalize_before", "normalize_before", "layer_norm_first"),
    "model.max_positions": ("max_source_positions", "max_target_positions"),
    "model.cell": ("rnn_type", "cell_type"),
    "model.bidirectional": ("brnn", "bidir", "bidirectional_encoder"),
    "model.input_feeding": ("input_feed",),
    "model.score": ("global_attention", "attention_type"),
    "decode.beam_size": ("beam", "beam_width", "num_beams"),
    "decode.length_penalty": ("lenpen", "alpha", "beam_alpha"),
    "decode.min_len": ("min_length", "min_output_length"),
    "decode.max_len_b": ("max_length", "max_output_length", "max_len", "max_new_tokens"),
    "decode.no_repeat_ngram": ("no_repeat_ngram_size", "block_ngram_repeat"),
    "decode.temperature": ("sampling_temp",),
    "decode.top_k": ("sampling_topk",),
    "decode.top_p": ("sampling_topp",),
    "decode.method": ("sampling", "do_sample", "search"),
    "data.src_lang": ("source_lang", "src_language", "source_language"),
    "data.tgt_lang": ("target_lang", "trg_lang", "tgt_language", "target_language"),
    "data.max_len": ("max_sent_length", "src_seq_length", "tgt_seq_length", "max_seq_length"),
    "data.train": ("trainpref", "train_path", "train_prefix"),
    "data.valid": ("validpref", "valid_path", "dev", "dev_path"),
    "data.test": ("testpref", "test_path"),
    "tokenizer.vocab_size": ("voc_limit", "src_vocab_size", "bpe_size", "num_merges", "vocab"),
    "tokenizer.type": ("level", "model_type", "bpe"),
}

ALIASES: dict[str, tuple[str, ...]] = {}
"""A name other toolkits use -> the keys of this config it may mean."""
for _ours, _theirs in _OURS_TO_THEIRS.items():
    for _name in _theirs:
        ALIASES[_name] = ALIASES.get(_name, ()) + (_ours,)


def foreign_hint(loc: str, keys_of: dict[str, set[str]]) -> str:
    """For the unknown key ``loc`` (``train.lerning_rate``, or a top-level ``dropout``): the key it
    may mean, from another toolkit's name or a key of another section, with the reason in words,
    e.g. ``train.lr? (learning_rate is another toolkit's name for it)``; '' when none fits.
    ``keys_of`` maps each section to its keys (the model section's: those of the model named).
    A key of ``loc``'s own section is preferred, and spelling counts: ``lerning_rate`` is taken as
    ``learning_rate``."""
    *parents, last = loc.split(".")
    if len(parents) > 1:
        return ""
    section = parents[0] if parents else ""

    def meant(name: str) -> list[str]:
        keys = ALIASES.get(name, ()) + tuple(f"{s}.{name}" for s in keys_of if name in keys_of[s])
        keys = [
            k for k in keys if k != loc and k.partition(".")[2] in keys_of.get(k.split(".")[0], ())
        ]
        return sorted(keys, key=lambda k: not k.startswith(section + "."))  # its own section first

    said = last.lower().replace("-", "_")
    if not meant(said):
        every = set(ALIASES) | {f for fields in keys_of.values() for f in fields}
        close = difflib.get_close_matches(said, sorted(every), n=3, cutoff=0.8)
        said = next((c for c in close if meant(c)), "")
        if not said:
            return ""
    key = meant(said)[0]
    if key.split(".")[1] == said:
        return f"{key}? ({said} is a key of the {key.split('.')[0]} section)"
    return f"{key}? ({said} is another toolkit's name for it)"

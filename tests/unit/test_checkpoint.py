"""``seq2seq/checkpoint.py``: non-finite weights are never saved, a run's tuned decode.yaml is
read or refused in one line, a run's target vocabulary travels in its checkpoints to the model,
and a checkpoint the safe loader refuses for an object in it is named as such, not as corrupt."""

from __future__ import annotations

import pytest
import torch

from seq2seq.checkpoint import CheckpointError, save_checkpoint, with_tuned_decode
from seq2seq.config import Config
from tests.corpora import SENTENCES, write_source_only_words
from tests.toys import copy_run_config, tiny_model


def test_a_tuned_decode_file_with_a_key_twice_is_refused(tmp_path):
    from seq2seq.checkpoint import CheckpointError, with_tuned_decode
    from seq2seq.config import Config

    (tmp_path / "decode.yaml").write_text("method: beam\nbeam_size: 4\nbeam_size: 5\n")
    with pytest.raises(CheckpointError) as e:
        with_tuned_decode(Config(), tmp_path)
    msg = str(e.value)
    assert "decode.yaml" in msg and "beam_size is given twice (lines 2 and 3)" in msg
    assert "\n" not in msg


def test_save_checkpoint_refuses_non_finite_weights(tmp_path):
    model = tiny_model("rnn")
    save_checkpoint(tmp_path / "c.pt", {"model": model.state_dict()})
    before = (tmp_path / "c.pt").read_bytes()
    bad = {k: v.clone() for k, v in model.state_dict().items()}
    next(iter(bad.values()))[0] = float("inf")
    with pytest.raises(CheckpointError, match="is not finite"):
        save_checkpoint(tmp_path / "c.pt", {"model": bad})
    assert (tmp_path / "c.pt").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("method: beam\nbeam_size: 0\n", "beam_size"),
        ("method: beam\nbeam: 5\n", "unknown key"),
        ("- 5\n", "expected decode keys"),
        ("method: [\n", "not valid decode settings"),
    ],
)
def test_a_bad_decode_file_is_refused_in_one_line(tmp_path, text, needle):
    (tmp_path / "decode.yaml").write_text(text)
    with pytest.raises(CheckpointError, match=needle) as e:
        with_tuned_decode(Config(), tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and "decode.yaml" in msg and "tune-decode" in msg


def test_a_folder_means_best_pt_then_last_pt_then_an_exports_model_pt(tmp_path):
    from seq2seq.checkpoint import CTRANSLATE2_META, resolve_checkpoint

    for name in ("model.pt", "last.pt", "best.pt"):
        (tmp_path / name).write_bytes(b"")
        assert resolve_checkpoint(tmp_path) == tmp_path / name
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="holds no best.pt or last.pt"):
        resolve_checkpoint(tmp_path / "empty")
    ct2 = tmp_path / "ct2"
    ct2.mkdir()
    (ct2 / CTRANSLATE2_META).write_text("{}")
    with pytest.raises(CheckpointError) as e:
        resolve_checkpoint(ct2)
    msg = str(e.value)
    assert "CTranslate2 export" in msg and f"seq2seq translate -c {ct2}" in msg
    assert "eval --hyp" in msg and "\n" not in msg
    # a config given as -c was called corrupt, "train again" (a new-user trial)
    (tmp_path / "tiny.yaml").write_text("name: x\n")
    with pytest.raises(CheckpointError) as e:
        resolve_checkpoint(tmp_path / "tiny.yaml")
    assert str(e.value) == (
        f"{tmp_path / 'tiny.yaml'}: a YAML file, not a checkpoint; give the run folder it belongs "
        "to, or its best.pt"
    )


def test_a_run_stores_its_target_vocabulary_and_the_model_carries_it(tmp_path):
    """A tiny run on pairs whose source has pieces no target has: last.pt and best.pt hold the
    sorted ids of the training targets' pieces and EOS, the rebuilt model carries them as a (V,)
    bool mask its searches keep to; without the key (an older checkpoint) it carries None and
    decodes as the mask switched off."""
    from seq2seq.checkpoint import load_checkpoint, model_from_checkpoint
    from seq2seq.data.tokenizer import EOS
    from seq2seq.decoding.translate import translate_sentences
    from seq2seq.training.loop import train

    prefix, kept = write_source_only_words(tmp_path / "src-only")
    cfg = copy_run_config(tmp_path, train=prefix)
    train(cfg, tmp_path / "run")
    ckpt = load_checkpoint(tmp_path / "run" / "last.pt")
    model, tok, _ = model_from_checkpoint(ckpt)
    expected = sorted({i for ids in tok.encode_tgt(kept) for i in ids} | {EOS})
    assert ckpt["target_vocab"] == expected
    assert load_checkpoint(tmp_path / "run" / "best.pt")["target_vocab"] == expected
    mask = model.target_vocab
    assert mask.dtype == torch.bool and mask.shape == (tok.tgt_vocab_size,)
    assert mask.nonzero().squeeze(1).tolist() == expected
    assert not mask[[i for ids in tok.encode_src(["die ein zebra"]) for i in ids]].any()

    sources = SENTENCES[:6]
    for method, extra in (("greedy", {}), ("beam", {"beam_size": 3}), ("sample", {"seed": 1})):
        dcfg = cfg.decode.with_method(method, **extra)
        out = translate_sentences(model, tok, sources, dcfg, n_best=2 if method != "greedy" else 1)
        assert all(mask[h.tokens].all() for r in out for h in r.hypotheses), method
    old = {k: v for k, v in ckpt.items() if k != "target_vocab"}
    old_model, _, _ = model_from_checkpoint(old)
    assert old_model.target_vocab is None
    on = cfg.decode.with_method("beam", beam_size=3)  # the mask on, but none to apply
    off = on.model_copy(update={"target_vocab_mask": False})
    unmasked = [r.hypotheses for r in translate_sentences(model, tok, sources, off)]
    before = [r.hypotheses for r in translate_sentences(old_model, tok, sources, on)]
    assert [[(h.tokens, h.score) for h in hs] for hs in before] == [
        [(h.tokens, h.score) for h in hs] for hs in unmasked
    ]
    with pytest.raises(CheckpointError, match="its target_vocab does not fit its tokenizer"):
        model_from_checkpoint({**ckpt, "target_vocab": [3, tok.tgt_vocab_size]})


def test_an_unreadable_checkpoint_names_the_runs_other_one_and_resume_says_what_to_do(tmp_path):
    """A corrupt best.pt beside a good last.pt told the user to pass what they had passed; a
    corrupt last.pt gave the same advice to a resume (a new-user trial)."""
    from seq2seq.checkpoint import load_checkpoint
    from seq2seq.training.run_dir import load_resume

    run = tmp_path / "run"
    run.mkdir()
    (run / "best.pt").write_bytes(b"not a checkpoint")
    save_checkpoint(run / "last.pt", {"model": tiny_model("rnn").state_dict()})
    with pytest.raises(CheckpointError, match=r"best\.pt: cannot read .*; pass .*last\.pt instead"):
        load_checkpoint(run)
    (run / "best.pt").unlink()
    (run / "last.pt").write_bytes(b"\x80\x02 truncated")
    with pytest.raises(CheckpointError, match=r"pass a checkpoint that was written whole"):
        load_checkpoint(run / "last.pt")
    with pytest.raises(CheckpointError, match=r"the run cannot resume; train it again with --over"):
        load_resume(run, Config())


def test_a_checkpoint_holding_a_numpy_value_is_not_called_corrupt_and_the_docs_line_resaves_it(
    tmp_path, synth_run, run_in_process
):
    """A whole last.pt that someone stored a numpy scalar in: the safe loader refuses it, and the
    message names the type and the fix (never "corrupt", never retraining); the docs' one-liner
    re-saves it with tensors only, after which it resumes."""
    import re
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import numpy as np

    from seq2seq.checkpoint import load_checkpoint

    run = tmp_path / "run"
    shutil.copytree(synth_run, run)
    last = run / "last.pt"
    ckpt = load_checkpoint(last)
    torch.save({**ckpt, "lr_seen": np.float64(0.5)}, last)
    said = (
        re.escape(f"{last}: holds a Python object that safe loading (torch.load weights_only=True)")
        + r" refuses, numpy\.(_core|core)\.multiarray\.scalar; "
        + re.escape(
            "the file is not corrupt: re-save it with tensors only (the one-liner in "
            "docs/training.md, Checkpoints with other objects), then run the command again"
        )
    )
    with pytest.raises(CheckpointError, match=rf"^{said}$"):
        load_checkpoint(last)
    r = run_in_process("train", run / "config.yaml", "--resume", run, "--max-steps", 3)
    assert r.returncode == 2 and re.search(said, r.stderr), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not re.search("corrupt or|retrain|train it again|train again", r.stderr)

    docs = (Path(__file__).parents[2] / "docs" / "training.md").read_text(encoding="utf-8")
    (line,) = [x for x in docs.splitlines() if x.startswith('python -c "import os, sys, numpy')]
    code = line.removeprefix("python -c ").removesuffix(" CHECKPOINT")[1:-1]
    subprocess.run([sys.executable, "-c", code, str(last)], check=True, timeout=120)
    fixed = load_checkpoint(last)
    assert fixed["lr_seen"] == 0.5 and fixed["train_state"] == ckpt["train_state"]
    assert all(torch.equal(fixed["model"][k], w) for k, w in ckpt["model"].items())
    r = run_in_process("train", run / "config.yaml", "--resume", run, "--max-steps", 3)
    assert r.returncode == 0, r.stderr

"""Warm start (``train.init_from``): a new run begins from another run's weights with a fresh
optimizer and step, refuses another tokenizer or architecture in one line, and a resume ignores
it."""

from __future__ import annotations

import logging

import pytest
import torch
import yaml

from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import ConfigError, TokenizerConfig
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.training.loop import Run, train
from tests.toys import run_main, synth_run_config, synth_run_raw


@pytest.fixture(scope="module")
def source_run(tmp_path_factory, synth_corpus, synth_tokenizer):
    """A run of 3 updates whose weights the tests start from; returns its folder."""
    run = tmp_path_factory.mktemp("source") / "run"
    train(synth_run_config(synth_corpus, max_steps=3), run, tokenizer=synth_tokenizer)
    return run


def same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k].cpu(), b[k].cpu()) for k in a)


def test_a_warm_start_loads_the_weights_and_starts_afresh(
    tmp_path, synth_corpus, synth_tokenizer, source_run, caplog
):
    source = load_checkpoint(source_run / "best.pt")["model"]
    # the dropout rate may differ from the source's; the run takes the source's tokenizer
    cfg = synth_run_config(synth_corpus, dropout=0.1, max_steps=2, init_from=str(source_run))
    with caplog.at_level(logging.INFO, logger="seq2seq"):
        run = Run(cfg, tmp_path / "warm", resume=False)
    try:
        assert same_weights(run.model.state_dict(), source)  # before the first update
        assert run.state.step == 0 and run.state.target_tokens == 0 and not run.optimizer.state
        assert run.data.tok.digest() == synth_tokenizer.digest()
    finally:
        run.close()
    assert f"weights from {source_run / 'best.pt'} (init_from)" in caplog.text
    fresh = Run(synth_run_config(synth_corpus, max_steps=2), tmp_path / "fresh", resume=False)
    try:
        assert not same_weights(fresh.model.state_dict(), source)  # the seed alone gives others
    finally:
        fresh.close()
    # the same tokenizer handed to train is accepted; the run counts its steps from 0
    summary = train(cfg, tmp_path / "warm", overwrite=True, tokenizer=synth_tokenizer)
    assert summary["steps"] == 2


def test_a_warm_start_refuses_another_tokenizer_in_one_line(
    tmp_path, synth_corpus, synth_tokenizer, source_run
):
    lines = [
        (synth_corpus / f"train.{lang}").read_text().splitlines()[:200] for lang in ("de", "en")
    ]
    other = Tokenizer.train(*lines, TokenizerConfig(vocab_size=200))  # same section, other text
    assert other.digest() != synth_tokenizer.digest()
    cfg = synth_run_config(synth_corpus, max_steps=2, init_from=str(source_run / "best.pt"))
    with pytest.raises(ConfigError) as e:
        train(cfg, tmp_path / "warm", tokenizer=other)
    msg = str(e.value)
    assert str(source_run / "best.pt") in msg and "tokenizer" in msg and "\n" not in msg
    assert not (tmp_path / "warm" / "last.pt").exists()


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ("tokenizer.vocab_size=300", "tokenizer.vocab_size is 200 there but 300 here"),
        ("model.hidden_size=32", "model.hidden_size is 24 there but 32 here"),
    ],
)
def test_the_command_line_refuses_another_tokenizer_or_architecture(
    tmp_path, synth_corpus, source_run, monkeypatch, capsys, override, needle
):
    path = tmp_path / "warm.yaml"
    path.write_text(yaml.safe_dump(synth_run_raw(synth_corpus, max_steps=2)))
    run_dir = tmp_path / "warm"
    args = ("--set", f"train.init_from={source_run}", "--set", override, "--run-dir", run_dir)
    code, err = run_main(monkeypatch, capsys, "train", path, *args)
    assert code == 2 and needle in err and str(source_run / "best.pt") in err
    assert len(err.strip().splitlines()) == 1
    assert not (run_dir / "last.pt").exists()


def test_resume_ignores_init_from(tmp_path, synth_corpus, synth_tokenizer, source_run):
    run_dir = tmp_path / "warm"
    cfg = synth_run_config(synth_corpus, max_steps=2, init_from=str(source_run))
    train(cfg, run_dir, tokenizer=synth_tokenizer)
    last = load_checkpoint(run_dir / "last.pt")["model"]
    assert not same_weights(last, load_checkpoint(source_run / "best.pt")["model"])
    # a resume reads no init_from, not even a missing one: it goes on from its own last.pt
    cfg = synth_run_config(synth_corpus, max_steps=3, init_from=str(tmp_path / "nowhere"))
    run = Run(cfg, run_dir, resume=True)
    try:
        assert run.state.step == 2 and same_weights(run.model.state_dict(), last)
    finally:
        run.close()
    assert train(cfg, run_dir, resume=True)["steps"] == 3

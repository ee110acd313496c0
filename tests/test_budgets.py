"""Token budgets: ``train.max_tokens`` stops every model family at the same data, counts on over a
resume, and ``seq2seq compare --budget-tokens`` gives every run that one stop rule."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.study.plan import Budget, load_study_configs
from seq2seq.training.loop import train

from .toys import run_main, synth_run_config, synth_run_raw

BUDGET = 1500  # target tokens: about 8 updates of 300-token batches


def step_tokens(run_dir) -> list[int]:
    """The target tokens of each update, as the device counted them (train_log.jsonl)."""
    rows = [json.loads(x) for x in (run_dir / "train_log.jsonl").read_text().splitlines()]
    return [r["tokens"] for r in rows if "tokens" in r]


def test_a_token_budget_stops_every_family_at_the_same_data(
    tmp_path, synth_corpus, synth_tokenizer
):
    seen = {}
    for family in ("rnn", "transformer"):
        run = tmp_path / family
        cfg = synth_run_config(synth_corpus, family, max_tokens=BUDGET)
        summary = train(cfg, run, tokenizer=synth_tokenizer)
        tokens = step_tokens(run)
        assert summary["stopped"] == "max_tokens" and summary["steps"] == len(tokens) > 2
        assert summary["target_tokens"] == sum(tokens)  # the host count is the device's count
        # the first update that reaches the budget stops: it overshoots by less than its batch
        assert summary["target_tokens"] - tokens[-1] < BUDGET <= summary["target_tokens"]
        seen[family] = summary["target_tokens"]
    assert abs(seen["rnn"] - seen["transformer"]) <= 0.03 * BUDGET


def test_a_resumed_run_keeps_counting_target_tokens(tmp_path, synth_corpus, synth_tokenizer):
    whole = train(
        synth_run_config(synth_corpus, max_tokens=BUDGET),
        tmp_path / "whole",
        tokenizer=synth_tokenizer,
    )
    first = train(
        synth_run_config(synth_corpus, max_steps=3), tmp_path / "parts", tokenizer=synth_tokenizer
    )
    assert first["stopped"] == "max_steps" and 0 < first["target_tokens"] < BUDGET
    again = train(
        synth_run_config(synth_corpus, max_tokens=BUDGET), tmp_path / "parts", resume=True
    )
    assert again["stopped"] == "max_tokens"
    assert (again["steps"], again["target_tokens"]) == (whole["steps"], whole["target_tokens"])


def test_a_checkpoint_from_before_the_count_resumes_it_from_tokens_seen(
    tmp_path, synth_corpus, synth_tokenizer
):
    run = tmp_path / "old"
    first = train(synth_run_config(synth_corpus, max_steps=3), run, tokenizer=synth_tokenizer)
    ckpt = load_checkpoint(run / "last.pt")
    del ckpt["train_state"]["target_tokens"]  # as written before target_tokens existed
    save_checkpoint(
        run / "last.pt", {k: v for k, v in ckpt.items() if k not in ("format", "version")}
    )
    again = train(synth_run_config(synth_corpus, max_steps=4), run, resume=True)
    assert again["target_tokens"] == first["target_tokens"] + step_tokens(run)[-1]


def test_budget_takes_one_rule_in_one_line():
    with pytest.raises(ValueError) as e:
        Budget(steps=2, tokens=100)
    assert str(e.value) == "give --budget-steps or --budget-tokens, not both"
    with pytest.raises(ValueError, match="give one of --budget-minutes, --budget-steps, --budget"):
        Budget(1.0, 2, 3)
    assert Budget(tokens=5000).describe() == "5000 target tokens per model"


def test_a_token_budget_replaces_every_other_stop_rule(tmp_path, synth_corpus):
    path = tmp_path / "a.yaml"
    raw = synth_run_raw(synth_corpus, max_steps=50, max_epochs=3, max_time=9.0)
    path.write_text(yaml.safe_dump(raw))
    [cfg] = load_study_configs([path], Budget(tokens=5000), "cpu")
    t = cfg.train
    assert (t.max_tokens, t.max_steps, t.max_epochs, t.max_time) == (5000, None, None, None)
    raw["train"] = {**raw["train"], "max_tokens": 700}
    path.write_text(yaml.safe_dump(raw))
    [cfg] = load_study_configs([path], Budget(steps=7), "cpu")
    assert (cfg.train.max_steps, cfg.train.max_tokens) == (7, None)


def test_compare_refuses_two_budgets_in_one_line(tmp_path, synth_corpus, monkeypatch, capsys):
    path, out = tmp_path / "a.yaml", tmp_path / "out"
    path.write_text(yaml.safe_dump(synth_run_raw(synth_corpus, max_steps=2)))
    args = ("compare", path, "--out", out, "--budget-minutes", 1, "--budget-tokens", 100)
    code, err = run_main(monkeypatch, capsys, *args)
    assert code == 2 and "give --budget-minutes or --budget-tokens, not both" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


@pytest.mark.e2e  # torchrun with two processes
def test_two_ranks_sum_their_target_tokens_and_stop_together(tmp_path, synth_corpus):
    """Under torchrun the ranks' host counts are summed at log points (every 2 updates here):
    the count is every rank's batches, and the run stops at the first log point past the
    budget, with identical replicas (no rank left waiting)."""
    path, run = tmp_path / "ddp.yaml", tmp_path / "run"
    raw = synth_run_raw(synth_corpus, max_tokens=2 * BUDGET, log_every=2, device="cpu")
    path.write_text(yaml.safe_dump(raw))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    cmd += ["-m", "seq2seq", "train", str(path), "--run-dir", str(run)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout)
    tokens = step_tokens(run)  # each update's tokens over both ranks, as the device summed them
    assert summary["stopped"] == "max_tokens" and summary["steps"] == len(tokens)
    assert summary["steps"] % 2 == 0 and summary["target_tokens"] == sum(tokens)
    assert sum(tokens[:-2]) < 2 * BUDGET <= summary["target_tokens"]
    digests = summary["rank_weights_sha256"]
    assert len(digests) == 2 and digests[0] == digests[1]
    assert load_checkpoint(run / "last.pt")["train_state"]["target_tokens"] == sum(tokens)


def test_compare_resumes_an_interrupted_run_of_the_same_config(
    tmp_path, synth_corpus, synth_tokenizer, monkeypatch, caplog
):
    """A study stopped by Ctrl-C or kill continues its unfinished run on the next compare (from
    last.pt, as ``train --resume`` does), ending where an uninterrupted run ends; a run of another
    config in that folder is trained afresh."""
    import contextlib

    import seq2seq.training.loop as loop
    from seq2seq.study.runs import train_or_reuse

    cfg = synth_run_config(synth_corpus, max_steps=6)
    whole = train(cfg, tmp_path / "whole", tokenizer=synth_tokenizer)
    real = loop.interruptible

    @contextlib.contextmanager
    def stop_at_step_3():  # a Ctrl-C that arrives during step 3
        calls = {"n": 0}

        def hit():
            calls["n"] += 1
            return calls["n"] >= 3

        yield hit

    monkeypatch.setattr(loop, "interruptible", stop_at_step_3)
    with pytest.raises(KeyboardInterrupt):
        train_or_reuse("cfg.yaml", cfg, tmp_path / "cut", synth_tokenizer)
    assert load_checkpoint(tmp_path / "cut" / "last.pt")["train_state"]["step"] < 6
    monkeypatch.setattr(loop, "interruptible", real)
    caplog.set_level("INFO", logger="seq2seq")
    run = train_or_reuse("cfg.yaml", cfg, tmp_path / "cut", synth_tokenizer)
    assert "resuming the interrupted run" in caplog.text
    for key in ("steps", "target_tokens", "stopped"):
        assert run.summary[key] == whole[key], key
    caplog.clear()
    other = synth_run_config(synth_corpus, max_steps=4)  # another budget: not the same run
    run = train_or_reuse("cfg.yaml", other, tmp_path / "cut", synth_tokenizer)
    assert "resuming" not in caplog.text and run.summary["steps"] == 4

"""``seq2seq/study/report/synthetic.py``: the plateau finding of the reverse table."""

from __future__ import annotations

from seq2seq.study.report.synthetic import plateau_finding


def test_the_finding_withholds_the_bottleneck_claim_from_a_rising_rnn():
    def model(name, attention, verdict, best):
        plateau = {"bucket": "1-10", "best_exact": best, "best_step": 600, "verdict": verdict}
        return {"name": name, "attention": attention, "plateau": plateau}

    res = {"models": [model("rnn", False, "rising", 60.0), model("att", True, "trained", 100.0)]}
    text = plateau_finding(res)
    assert "rnn 60.0% (best.pt, step 600), still rising" in text
    assert "att 100.0% (best.pt, step 600), at or above 95%" in text
    assert "not evidence of the fixed-vector bottleneck" in text
    # with too few step checkpoints kept, it says so rather than "still rising"
    res["models"][0]["plateau"] |= {"verdict": "too few", "curve": [{"step": 600, "exact": 60.0}]}
    text = plateau_finding(res)
    assert "too few step checkpoints to tell (1 kept; keep train.keep_last 3 or more)" in text
    assert "still rising" not in text and "not evidence of the fixed-vector bottleneck" in text
    res["models"][0]["plateau"]["verdict"] = "flat"
    assert "not evidence" not in plateau_finding(res)

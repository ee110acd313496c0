"""``seq2seq/serve/static/app.js``: every model gets its own colour."""

from __future__ import annotations

import json
import subprocess

from tests.serve_runs import MODELS
from tests.toys import REPO


def test_the_page_gives_every_model_its_own_colour():
    """app.js's palette has 20 distinct colours, enough for the served and study models of the
    Multi30k study page; with node at hand, its ``styleOf`` gives 60 names 60 different styles
    and one name always the same."""
    import re
    import shutil

    js = (REPO / "seq2seq/serve/static/app.js").read_text(encoding="utf-8")
    palette = re.findall(r"#[0-9a-f]{6}", js[js.index("const PALETTE") : js.index("const DASHES")])
    assert len(palette) == len(set(palette)) == 20
    study = json.loads((REPO / "docs/results/study/multi30k/results.json").read_text())
    assert len(MODELS) + len(study["models"]) <= len(palette)
    node = shutil.which("node")
    if node is None:
        return
    block = js[js.index("const PALETTE") : js.index("function swatch")]
    probe = "const a = [...Array(60).keys()].map((k) => styleOf(`m${k}`)); styleOf('m70');"
    probe += "console.log(JSON.stringify([a, styleOf('m3') === a[3], STYLES.size]));"
    out = subprocess.run([node, "-e", block + probe], capture_output=True, text=True, timeout=60)
    styles, same, size = json.loads(out.stdout)
    assert len({(st["color"], st["dash"]) for st in styles}) == 60
    assert same and size == 61


def _run_page_functions(probe: str):
    """``probe`` run by node after app.js's declarations (not its ``init()``); its JSON output."""
    import shutil

    import pytest

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: app.js's functions are not run")
    js = (REPO / "seq2seq/serve/static/app.js").read_text(encoding="utf-8")
    out = subprocess.run(
        [node, "-e", js[: js.index("init().catch")] + probe],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_info_card_shows_what_is_known_and_the_beam_it_searches_with():
    """An averaged checkpoint or an export showed "? steps, ? epochs, ? min" and "at step ?"; a
    best.pt from step 150 of a 600-update run said "trained 150 steps"; a tuned beam size was
    left out of the decode line."""
    decode = {"length_penalty": 0.7, "max_len_a": 1.5, "max_len_b": 10}
    base = {"family": "rnn", "parameters": 1000, "attention": False, "checkpoint": "x.pt"}
    base |= {"device": "cpu", "decode": decode, "beam": 3, "decode_tuned": True}
    blank = dict.fromkeys(["steps", "epoch", "train_minutes", "best_score", "best_step"])
    cards = {
        "averaged": {**blank, "best_metric": "loss"},
        "export": {**blank, "best_metric": "loss", "steps": 600},
        "best": {"steps": 150, "run_steps": 600, "epoch": 1, "train_minutes": 2.5,
                 "best_metric": "bleu", "best_score": 12.345, "best_step": 150},
    }  # fmt: skip
    models = {k: {**base, "training": t} for k, t in cards.items()}
    rows = _run_page_functions(
        f"const ms = {json.dumps(models)};"
        "console.log(JSON.stringify(Object.fromEntries(Object.entries(ms).map("
        "([k, m]) => [k, Object.fromEntries(infoRows(m))]))));"
    )
    for card in rows.values():
        assert not any("?" in v for v in card.values()), card
        assert card["decode"] == "beam 3, α 0.7, max 1.5·S+10 (tuned: decode.yaml)"
    assert "trained" not in rows["averaged"] and "best loss" not in rows["averaged"]
    assert rows["export"]["trained"] == "checkpoint at step 600"
    assert rows["best"]["trained"] == "checkpoint at step 150 of 600, epoch 1, 2.5 min"
    assert rows["best"]["best bleu"] == "12.35 at step 150"


def test_a_too_long_line_is_said_once_not_once_per_model():
    long = [
        {"name": n, "status": 413, "message": f"line 1 is {k} source pieces long for model {n!r}"}
        for n, k in (("a", 60), ("b", 58), ("c", 61))
    ]
    same = [{"name": n, "status": 422, "message": "beam: too big"} for n in "ab"]
    mixed = [
        {"name": "a", "status": 422, "message": "x"},
        {"name": "b", "status": 504, "message": "y"},
    ]
    said = _run_page_functions(
        f"console.log(JSON.stringify([{json.dumps(long)}, {json.dumps(long[:1])}, "
        f"{json.dumps(same)}, {json.dumps(mixed)}].map(errorLine)));"
    )
    assert said == [
        "line 1 is 60 source pieces long for model 'a' (and 2 more models likewise)",
        "line 1 is 60 source pieces long for model 'a'",
        "beam: too big",
        "a: x; b: y",
    ]

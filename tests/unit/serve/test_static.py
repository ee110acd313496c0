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

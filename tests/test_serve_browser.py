"""The page in a real headless Chromium (``make test-browser``; needs Debian's ``chromium`` and
the ``browser`` extra): type a sentence, see every model's translation, hover a target piece and
check the source pieces that light up, open the study plot, save a screenshot."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from seq2seq.serve.app import create_app, start_in_thread
from seq2seq.serve.runs import load_runs
from seq2seq.serve.study import load_study

from .serve_runs import MODELS, train_tiny_runs

pytestmark = [pytest.mark.browser, pytest.mark.e2e]
ROOT = Path(__file__).resolve().parents[1]
SENTENCE = "s1 s2 s3 s4 s5"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    runs = train_tiny_runs(tmp_path_factory.mktemp("serve-browser"))
    served = load_runs([runs[name] for name in MODELS])
    study = load_study(ROOT / "docs/results/study/multi30k")
    srv, url = start_in_thread(create_app(served, study))
    yield url
    srv.should_exit = True


def _lit(row: list[float]) -> list[int]:
    """The source pieces the page lights up for a row: at least half the row's largest weight."""
    return [j for j, w in enumerate(row) if w >= 0.5 * max(row)]


def _hover_and_read(card, row: int) -> list[int]:
    card.locator(f'.tgt-piece[data-row="{row}"]').hover()
    assert "active" in card.locator(f'.tgt-piece[data-row="{row}"]').get_attribute("class")
    return [
        int(c)
        for c in card.locator(".src-piece.hl").evaluate_all("ns => ns.map(n => n.dataset.col)")
    ]


def test_the_page_translates_and_lights_up_attention(server, tmp_path):
    from seq2seq.serve.browser import chromium_page, translate_in_page

    api = httpx.post(f"{server}translate", json={"text": SENTENCE, "beam": 5}, timeout=60).json()
    api = {m["name"]: m["lines"][0] for m in api["models"]}
    with chromium_page() as page:
        times = translate_in_page(page, server, SENTENCE)
        assert page.locator('.card[data-state="done"]').count() == len(MODELS)
        for name, line in api.items():
            card = page.locator(f'.card[data-model="{name}"]')
            assert card.locator("tr.greedy .hyp").text_content() == line["greedy"]["text"]
            assert card.locator("tr.beam .hyp").text_content() == line["beam"]["text"]
        assert page.locator('.card[data-model="rnn"] .no-attention').count() == 1

        bahdanau = page.locator('.card[data-model="bahdanau"]')
        beam = api["bahdanau"]["beam"]  # the heatmap shows the beam translation first
        for row in (0, len(beam["pieces"]) - 1):
            assert _hover_and_read(bahdanau, row) == _lit(beam["attention"][0][0][row])

        transformer = page.locator('.card[data-model="transformer"]')
        transformer.locator("select.att-layer").select_option("0")
        transformer.locator("select.att-head").select_option("1")
        maps = api["transformer"]["beam"]["attention"]
        assert _hover_and_read(transformer, 1) == _lit(maps[0][1][1])

        page.click("#open-study")
        page.wait_for_selector("#study-plot circle")
        page.locator('#study-plot circle[data-model="study-bahdanau"][data-bucket="1-10"]').hover()
        assert "study-bahdanau, 1-10 words: BLEU 19.6" in page.text_content("#study-hover")

        bahdanau.locator(".tgt-piece[data-row='1']").hover()
        shot = tmp_path / "serve.png"
        page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    print(f"\nscreenshot {shot}; Enter to all {len(MODELS)} translations shown: {times}")

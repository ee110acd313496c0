"""The page in a real headless Chromium (``make test-browser``; needs Debian's ``chromium`` and
the ``browser`` extra): type a sentence, see every model's translation, hover a target piece and
check the source pieces that light up, hover a cell for its weight, check the colour bars and the
models' colours, open the study plot, save a screenshot."""

from __future__ import annotations

import httpx
import pytest

from seq2seq.serve.app import create_app, start_in_thread
from seq2seq.serve.runs import load_runs, load_study
from tests.serve_runs import MODELS, train_tiny_runs
from tests.toys import REPO

pytestmark = pytest.mark.browser
SENTENCE = "s1 s2 s3 s4 s5"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    runs = train_tiny_runs(tmp_path_factory.mktemp("serve-browser"))
    served = load_runs([runs[name] for name in MODELS])
    study = load_study(REPO / "docs/results/study/multi30k")
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

        _check_cell_weight(bahdanau, api["bahdanau"], row=1, col=2)
        for name in ("bahdanau", "transformer"):
            scale = page.locator(f'.card[data-model="{name}"] .colorbar')
            assert scale.count() == 1
            assert scale.locator(".label").text_content() == "attention weight"
            assert scale.locator(".ticks").inner_text().split() == ["1", "0.5", "0"]
        _check_model_colours(page)

        page.click("#open-study")
        page.wait_for_selector("#study-plot circle")
        page.locator('#study-plot circle[data-model="study-bahdanau"][data-bucket="1-10"]').hover()
        assert "study-bahdanau, 1-10 words: BLEU 19.6" in page.text_content("#study-hover")
        beam_styles = _study_styles(page)
        assert len(beam_styles) == 13 and len(set(beam_styles.values())) == 13
        page.select_option("#study-mode", "greedy")  # another decode: every model keeps its colour
        assert _study_styles(page) == beam_styles

        bahdanau.locator(".tgt-piece[data-row='1']").hover()
        shot = tmp_path / "serve.png"
        page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    print(f"\nscreenshot {shot}; Enter to all {len(MODELS)} translations shown: {times}")


def _check_cell_weight(card, result: dict, row: int, col: int) -> None:
    """Hovering a heatmap cell names its target piece, source piece and weight (3 decimals)."""
    card.locator(f'.cell[data-row="{row}"][data-col="{col}"]').hover()
    said = card.locator(".att-readout").text_content()
    beam = result["beam"]
    target, source = beam["pieces"][row], result["source_pieces"][col]
    assert said.startswith(f"target {target} · source {source} · weight ")
    weight = said.rsplit(" ", 1)[1]
    assert len(weight.split(".")[1]) == 3
    assert float(weight) == pytest.approx(beam["attention"][0][0][row][col], abs=5e-4)
    title = card.locator(f'.cell[data-row="{row}"][data-col="{col}"]').get_attribute("title")
    assert title == said


def _check_model_colours(page) -> None:
    """Each served model has its own colour, the same on its info card and its result card."""
    colours = {}
    for name in MODELS:
        info = page.locator(f'.info[data-model="{name}"] .swatch').get_attribute("data-color")
        card = page.locator(f'.card[data-model="{name}"] .swatch').get_attribute("data-color")
        assert info == card
        colours[name] = info
    assert len(set(colours.values())) == len(MODELS)


def _study_styles(page) -> dict[str, tuple[str, str]]:
    """model -> (colour, dashes) of each study line, checked against its legend entry."""
    lines = page.locator("#study-plot polyline").evaluate_all(
        "ns => ns.map(n => [n.dataset.model, n.getAttribute('stroke'), "
        "n.getAttribute('stroke-dasharray')])"
    )
    legend = page.locator("#study-plot .legend line").evaluate_all(
        "ns => ns.map(n => [n.getAttribute('stroke'), n.getAttribute('stroke-dasharray')])"
    )
    assert [tuple(x) for x in legend] == [(c, d) for _, c, d in lines]
    return {name: (c, d) for name, c, d in lines}


def test_the_n_best_box_lists_the_beam_the_card_shows(server):
    """Every tiny run decodes greedily (as every zoo config does): with the beam box empty, the
    server searches with beam 5, and the ticked box lists those 5 hypotheses."""
    from seq2seq.serve.browser import chromium_page, translate_in_page

    models = httpx.get(f"{server}models", timeout=60).json()["models"]
    assert {m["decode"]["method"] for m in models} == {"greedy"}
    with chromium_page() as page:
        page.goto(server)
        page.wait_for_selector("body[data-state=ready]")
        page.check("#nbest")
        translate_in_page(page, server, SENTENCE)
        for m in models:
            card = page.locator(f'.card[data-model="{m["name"]}"]')
            shown = int(card.locator("tr.beam th").text_content().removeprefix("beam "))
            assert shown == m["beam"] == 5
            assert card.locator(".nbest li").count() == shown

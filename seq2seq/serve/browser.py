"""The page in a real headless Chromium, driven by Playwright: the one home of ``playwright``
(optional extra ``browser``), used by the browser test and ``scripts/serve_screenshot.py``.

Playwright drives the system's Chromium (Debian's ``chromium`` package, ``/usr/bin/chromium``,
or the binary ``SEQ2SEQ_CHROMIUM`` names); it never downloads a browser of its own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from seq2seq.serve import ServeError

CHROMIUM_ARGS = (
    "--headless --no-sandbox --disable-gpu --disable-background-networking "
    "--disable-component-update --disable-sync --no-first-run"
).split()


def chromium_path() -> str:
    """``$SEQ2SEQ_CHROMIUM``, else ``/usr/bin/chromium``; raises ServeError, saying how to install
    Debian's package, where there is no such file."""
    path = os.environ.get("SEQ2SEQ_CHROMIUM", "/usr/bin/chromium")
    if not os.path.isfile(path):
        raise ServeError(
            f"{path}: no Chromium there; install it (Debian/Ubuntu: apt-get install chromium) "
            "or set SEQ2SEQ_CHROMIUM to a Chromium or Chrome binary"
        )
    return path


@contextmanager
def chromium_page(width: int = 1500, height: int = 1000) -> Iterator:
    """A Playwright ``Page`` in headless Chromium with a ``width`` x ``height`` viewport (CSS
    pixels); the browser closes on exit. Raises ServeError as ``chromium_path``, ImportError
    without playwright (``pip install -e '.[browser]'``)."""
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": width, "height": height})
        finally:
            browser.close()


def translate_in_page(page, url: str, text: str, timeout_ms: int = 60_000) -> dict[str, float]:
    """Open the page at ``url`` (if not there yet), type ``text`` into it, press Enter and wait
    until every model's translation is shown; returns ``{"page_ms", "wall_ms"}``, milliseconds
    from the Enter key to the last model's card filled, as the page measures it
    (``performance.now()``) and as seen from here (including the browser round trips)."""
    if page.url != url:
        page.goto(url)
    page.wait_for_selector("body[data-state=ready], body[data-state=done]", timeout=timeout_ms)
    page.fill("#text", "")
    page.type("#text", text)
    t0 = time.perf_counter()
    page.press("#text", "Enter")
    page.wait_for_selector("body[data-state=done], body[data-state=error]", timeout=timeout_ms)
    wall_ms = (time.perf_counter() - t0) * 1000
    if page.get_attribute("body", "data-state") == "error":
        raise ServeError(f"the page shows an error: {page.text_content('#status')}")
    return {"page_ms": float(page.get_attribute("body", "data-shown-ms")), "wall_ms": wall_ms}

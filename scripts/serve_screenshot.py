"""Time the `seq2seq serve` page in headless Chromium and save a screenshot of it.

    python scripts/serve_screenshot.py RUN [RUN ...] --out docs/serve.png \
        [--text "a source sentence"] [--study DIR] [--repeat 5]

Loads the runs as `seq2seq serve` does, serves them on a free 127.0.0.1 port, types the sentence
into the page and presses Enter, --repeat times; prints the milliseconds from Enter to every
model's translation shown (the first, cold, and the median of the rest), then hovers a target
piece of the first attention model and saves a full-page screenshot. Needs the `browser` extra
and Chromium (docs/serve.md).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from seq2seq.serve.app import create_app, start_in_thread
from seq2seq.serve.browser import chromium_page, translate_in_page
from seq2seq.serve.runs import load_runs, load_study

# 20 words, a line of Multi30k test_2016_flickr (de)
TEXT = (
    "Ein Mann im Anzug hält ein Getränk in einem Becher während er auf dem Gehweg an einem "
    "städtischen Bus vorbeigeht."
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True, help="screenshot PNG")
    ap.add_argument("--text", default=TEXT)
    ap.add_argument("--study", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--hover-row", type=int, default=2, help="target piece to hover")
    args = ap.parse_args()

    served = load_runs(args.runs)
    study = None if args.study is None else load_study(args.study)
    server, url = start_in_thread(create_app(served, study))
    try:
        with chromium_page(width=1500, height=1000) as page:
            times = [translate_in_page(page, url, args.text) for _ in range(max(1, args.repeat))]
            attending = [m.name for m in served if m.attention is not None]
            if attending:
                card = page.locator(f'.card[data-model="{attending[0]}"]')
                card.locator(f'.tgt-piece[data-row="{args.hover_row}"]').hover()
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out), full_page=True)
    finally:
        server.should_exit = True
    words = len(args.text.split())
    print(f"{len(served)} models, {words} words; Enter -> all translations shown (ms):")
    for key in ("page_ms", "wall_ms"):
        row = [t[key] for t in times]
        rest = statistics.median(row[1:]) if len(row) > 1 else float("nan")
        print(f"  {key}: first {row[0]:.0f}, median of the other {len(row) - 1}: {rest:.0f}")
    print(f"screenshot: {args.out}")


if __name__ == "__main__":
    main()

"""Screenshots of a report's verdict cards at 1400 x 900 and 390 x 844 (headless Chromium).

Writes ``verdict-card-1400.png`` and ``verdict-card-390.png`` (the first screen) into
``--out``, and prints what the browser measured: the page's width against the window's (no
sideways scroll) and where each card ends (above the fold at 1400 x 900)::

    bayesbias report -o bayesbias-report
    python scripts/verdict_card_screenshots.py bayesbias-report --out docs/img

Needs Chromium (``apt-get install chromium``) and the ``playwright`` package (the ``test``
extra), which drives that Chromium and downloads no browser. Exit code 1 when a check fails.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]

PROBE = """() => ({scroll: document.documentElement.scrollWidth,
  client: document.documentElement.clientWidth,
  bottoms: [...document.querySelector('.vcards').querySelectorAll('.vcard')]
    .map(e => Math.round(e.getBoundingClientRect().bottom))})"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path, help="a report folder (bayesbias report -o ...)")
    ap.add_argument("--out", type=Path, default=Path("."), help="folder for the PNGs")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    page = (args.report / "index.html").resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    ok = True
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=FLAGS)
        for width, height in ((1400, 900), (390, 844)):
            tab = browser.new_page(viewport={"width": width, "height": height})
            tab.goto(page.as_uri())
            m = tab.evaluate(PROBE)
            shot = args.out / f"verdict-card-{width}.png"
            tab.screenshot(path=shot)
            fold = all(b <= height for b in m["bottoms"]) if width == 1400 else True
            ok &= m["scroll"] <= m["client"] and fold
            print(f"{width} x {height}: page {m['scroll']} px wide in a {m['client']} px "
                  f"window; cards end at {m['bottoms']} px; {shot}")
            tab.close()
        browser.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

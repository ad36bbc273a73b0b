"""Look at a report in headless Chromium at a desktop and a phone width.

Writes ``screenshot-1400.png`` and ``screenshot-390.png`` of the first screen next to the
report (outside it, as ``<report>-screens/``), and checks the page: the table of contents
links resolve, no table pushes the page wider than the window (wide tables scroll inside the
page), and prints the page height at each width. Headless Chromium lays a page out at least
500 px wide when it measures (``--dump-dom``), so the phone-width check runs at 500 px while
the phone screenshot is 390 px wide::

    python scripts/check_report_pages.py bayesbias-report [--chromium /usr/bin/chromium]

Exit code 1 when a check fails. Needs Chromium (``apt-get install chromium``); nothing else.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PROBE = """<script>
window.addEventListener('load', () => {
  const d = document.documentElement;
  const ids = new Set([...document.querySelectorAll('[id]')].map(e => e.id));
  const bad = [...document.querySelectorAll('a[href^="#"]')]
    .filter(a => !ids.has(a.getAttribute('href').slice(1))).length;
  document.title = `IW=${window.innerWidth} W=${d.scrollWidth} H=${d.scrollHeight} BAD=${bad}`;
});
</script>"""

WIDTHS = (1400, 390)


def chromium(binary: str, *args: str) -> str:
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--virtual-time-budget=5000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout


def measure(binary: str, page: Path, width: int) -> dict:
    """Width, height and broken anchors of `page` rendered `width` px wide."""
    probe = page.with_name(f".probe-{width}.html")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
                     encoding="utf-8")
    try:
        dom = chromium(binary, f"--window-size={width},900", "--dump-dom", probe.as_uri())
    finally:
        probe.unlink()
    m = re.search(r"<title>IW=(\d+) W=(\d+) H=(\d+) BAD=(\d+)</title>", dom)
    if not m:
        raise RuntimeError(f"Chromium did not run the probe at {width} px")
    return dict(zip(("window", "width", "height", "broken_links"), map(int, m.groups()),
                    strict=True))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="report folder (with index.html)")
    parser.add_argument("--chromium", default=shutil.which("chromium")
                        or shutil.which("chromium-browser") or "chromium")
    args = parser.parse_args(argv)
    page = args.report / "index.html"
    screens = args.report.parent / f"{args.report.name}-screens"
    screens.mkdir(exist_ok=True)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "report"
        shutil.copytree(args.report, copy)  # the probe never touches the report itself
        for width in WIDTHS:
            m = measure(args.chromium, copy / "index.html", width)
            shot = screens / f"screenshot-{width}.png"
            chromium(args.chromium, f"--window-size={width},1000", f"--screenshot={shot}",
                     (copy / "index.html").as_uri())
            fits = m["width"] <= m["window"]
            ok &= fits and m["broken_links"] == 0
            print(f"{width} px (layout {m['window']} px): page {m['width']} x {m['height']} px "
                  f"({'fits the window' if fits else 'WIDER than the window'}), "
                  f"{m['broken_links']} broken contents links; first screen: {shot}")
    print(f"checked {page}: {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

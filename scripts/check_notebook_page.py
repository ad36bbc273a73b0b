"""Run a shipped notebook, convert it to HTML with nbconvert and look at it in Chromium.

Executes the jupytext notebook with small settings (``BAYESBIAS_NOTEBOOK_SMALL=1``) in a
kernel whose matplotlib backend is Jupyter's own (inline), writes ``<name>.html`` and
screenshots of the page at 1400 px (``<name>-1400.png``, the first screen, and
``<name>-full.png``, the whole page) into the output folder, and checks:

- no cell raised;
- every figure that bayesbias returned was shown (one PNG output per figure cell);
- at least ``--min-cards`` bayesbias results (default 1; notebook 01 shows a verdict) rendered
  as HTML cards (``class="bayesbias-result"``), not as reprs;
- the page fits 1400 px (wide tables scroll inside their cell).

::

    python scripts/check_notebook_page.py [notebooks/01_published_analysis.py] [-o DIR]
    python scripts/check_notebook_page.py notebooks/05_calibration.py --min-cards 0

Exit code 1 when a check fails. Needs jupytext, nbclient, nbconvert and ipykernel
(``pip install ".[notebook]"``) and Chromium (``apt-get install chromium``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_report_pages import chromium, measure  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def execute(path: Path, workdir: Path):
    """Return the executed notebook of the jupytext file `path`."""
    import jupytext
    import nbclient

    os.environ["BAYESBIAS_NOTEBOOK_SMALL"] = "1"
    os.environ.pop("MPLBACKEND", None)  # the kernel's own (inline) backend, as in Jupyter
    nb = jupytext.read(path)
    nbclient.NotebookClient(nb, timeout=1800, kernel_name="python3",
                            resources={"metadata": {"path": str(workdir)}}).execute()
    return nb


def checks(nb, html: str, min_cards: int = 1) -> list[str]:
    """Failures of the executed notebook `nb` and its HTML page (empty when all pass)."""
    failed = []
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    if errors:
        failed.append(f"{len(errors)} cell(s) raised: " + "; ".join(
            f"{e.get('ename')}: {e.get('evalue')}" for e in errors))
    for c in code:
        src = c.source.rstrip().splitlines()
        last = src[-1] if src else ""
        # a cell whose value is a plot call (not indented, not an assignment) shows one PNG
        if (not last[:1].isspace() and "plot" in last.split("#")[0] and "(" in last
                and "=" not in last.split("(")[0]):
            pngs = [o for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
            if len(pngs) != 1:
                failed.append(f"cell ending {last.strip()!r}: {len(pngs)} PNG outputs, not 1")
    cards = html.count('class="bayesbias-result"')
    if cards < min_cards:
        failed.append(f"{cards} bayesbias result(s) rendered as HTML cards, expected "
                      f">= {min_cards}")
    return failed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", type=Path, nargs="?",
                        default=ROOT / "notebooks" / "01_published_analysis.py")
    parser.add_argument("-o", "--output", type=Path, default=Path("notebook-pages"))
    parser.add_argument("--min-cards", type=int, default=1,
                        help="bayesbias HTML cards expected at least (0 for notebook 05)")
    parser.add_argument("--chromium", default=shutil.which("chromium")
                        or shutil.which("chromium-browser") or "chromium")
    args = parser.parse_args(argv)
    from nbconvert import HTMLExporter

    out = args.output
    out.mkdir(parents=True, exist_ok=True)
    (out / "work").mkdir(exist_ok=True)
    nb = execute(args.notebook, out / "work")
    html, _ = HTMLExporter().from_notebook_node(nb)
    page = out / f"{args.notebook.stem}.html"
    page.write_text(html, encoding="utf-8")
    failed = checks(nb, html, args.min_cards)
    m = measure(args.chromium, page, 1400)
    if m["width"] > m["window"]:
        failed.append(f"the page is {m['width']} px wide at {m['window']} px")
    first = out / f"{args.notebook.stem}-1400.png"
    full = out / f"{args.notebook.stem}-full.png"
    chromium(args.chromium, "--window-size=1400,1000", f"--screenshot={first}", page.as_uri())
    chromium(args.chromium, f"--window-size=1400,{min(m['height'], 16000)}",
             f"--screenshot={full}", page.as_uri())
    print(f"{page}: {m['width']} x {m['height']} px at 1400; screenshots {first}, {full}")
    for f in failed:
        print(f"FAILED: {f}")
    print(f"checked {args.notebook.name}: {'ok' if not failed else 'FAILED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

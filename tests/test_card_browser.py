"""The verdict cards in a real browser: headless Chromium (driven by Playwright) at 1400 and 390 px.

At both widths the page must not scroll sideways (also with every card's details open), and
at 1400 x 900 the cards of all word lists must lie above the fold. The fast test renders a
report page written by :class:`~bayesbias.report.document.Report` with three real verdicts
(from draws) and a hostile, unbreakable word-list name; the slow one checks the page of a
real ``bayesbias report`` on the shipped embedding and word lists.

Skipped only when no Chromium is installed (``apt-get install chromium``; ``.ci/run``
installs it). Playwright drives the system's Chromium (``executable_path``); it never
downloads a browser of its own.
"""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest


def _chromium() -> str | None:
    for cand in (os.environ.get("BAYESBIAS_CHROMIUM"), "chromium", "chromium-browser",
                 "google-chrome"):
        if cand and (path := shutil.which(cand)):
            return path
    return None


CHROMIUM = _chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed here")

#: Chromium's flags on a closed network (no background connections, no sandbox as root).
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]

#: What the page reports about its layout (measured in the browser).
PROBE = """() => {
  const d = document.documentElement;
  const cards = [...document.querySelectorAll('.vcards')][0];
  return {scroll: d.scrollWidth, client: d.clientWidth,
          cards: [...cards.querySelectorAll('.vcard')].map(e => {
            const r = e.getBoundingClientRect();
            return {top: r.top, bottom: r.bottom, left: r.left, right: r.right,
                    svg: e.querySelector('svg').getBoundingClientRect().width,
                    bars: e.querySelectorAll('svg circle').length};}),
          open: [...document.querySelectorAll('.vcard details')].filter(x => x.open).length};
}"""


def look(page: Path, shots: Path | None = None) -> dict:
    """Measure `page` at 1400 x 900 and 390 x 844, details closed and then all open."""
    from playwright.sync_api import sync_playwright

    out = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            for width, height in ((1400, 900), (390, 844)):
                tab = browser.new_page(viewport={"width": width, "height": height})
                tab.goto(page.resolve().as_uri())
                out[width] = tab.evaluate(PROBE)
                if shots is not None:
                    tab.screenshot(path=shots / f"verdict-card-{width}.png")
                tab.evaluate("() => document.querySelectorAll('details')"
                             ".forEach(d => { d.open = true; })")
                out[f"{width}-open"] = tab.evaluate(PROBE)
                tab.close()
        finally:
            browser.close()
    return out


def check(seen: dict, n_cards: int) -> None:
    """Check that the page reads at a glance at both widths (see the module docstring)."""
    for key, m in seen.items():
        assert m["scroll"] <= m["client"], f"{key}: the page scrolls sideways"
        assert len(m["cards"]) == n_cards, key
        for c in m["cards"]:
            assert c["bars"] == 4 and c["svg"] >= 250, key  # the figure is drawn, legible
            assert c["right"] <= m["client"] and c["left"] >= 0, key
    wide = seen[1400]
    assert seen[1400]["open"] == 0  # the details start folded
    assert all(c["bottom"] <= 900 for c in wide["cards"]), "a card is below the fold"
    assert len({round(c["top"]) for c in wide["cards"]}) == 1  # side by side at 1400 px
    narrow = seen[390]["cards"]
    assert all(b["top"] >= a["bottom"] for a, b in zip(narrow, narrow[1:], strict=False))


def _page(tmp_path: Path) -> Path:
    """Write a report page: three real verdicts, one with an unbreakable 90-character name."""
    from bayesbias.report.card import VerdictCard
    from bayesbias.report.document import Report
    from bayesbias.verdicts import verdict_from_draws

    labels = ("associated - none", "associated - human", "associated - different",
              "human - none")
    rng = np.random.default_rng(1)
    means = {"religion": (-0.15, -0.01, -0.07, -0.14), "race": (-0.13, 0.09, -0.01, -0.22),
             "x" * 90: (-0.33, -0.07, -0.06, -0.27)}
    rep = Report("bayesbias report: GloVe 6B 50d subset: religion, race, gender",
                 "Are stereotypes closer to their protected words than the control groups "
                 "are? Measured on cosine distances with the uncertainty shown. " * 3)
    rep.summary = [f"**{n[:20]}**: 15 protected words in 3 classes, 11 stereotype "
                   "attributes, 310 control words (human and neutral)" for n in means]
    cards = []
    for name, m in means.items():
        draws = {lab: rng.normal(mu, 0.04, 4000) for lab, mu in zip(labels, m, strict=True)}
        v = verdict_from_draws(name, draws, 0.89, "hdi", 0.02)
        cards.append(VerdictCard.from_verdict(
            v, ["Robustness over 200 word lists resampled within each class: "
                + "`associated - none` below 0 in 100% of the lists; " * 6,
                "an_unbreakable_token_" * 6]))
    from bayesbias.report.card import cards_html

    rep.lead.append(("\n".join(c.markdown() for c in cards), cards_html(cards)))
    for c in cards:
        sec = rep.section(c.name)
        sec.heading("Verdict")
        sec.block(c.markdown(), cards_html([c]))
        for h in ("Which protected words drive the verdict", "Bayesian model", "Data"):
            sec.heading(h)
            sec.text("text " * 40)
    return rep.write(tmp_path / "rep") / "index.html"


@pytest.mark.slow  # a browser end to end; the cards' HTML is checked fast in test_card.py
def test_cards_read_at_a_glance_in_chromium(tmp_path):
    seen = look(_page(tmp_path))
    check(seen, 3)


@pytest.mark.slow
@pytest.mark.usefixtures("quick_verdicts")
def test_the_real_report_page_in_chromium(tmp_path):
    """``bayesbias report`` on the shipped embedding's three lists (short chains)."""
    from bayesbias.cli import main

    out = tmp_path / "rep"
    assert main(["report", "-o", str(out), "--draws", "200", "--tune", "200", "--chains", "2",
                 "--permutations", "500", "--bootstrap", "0", "--null-reps", "100",
                 "--no-robustness", "--quiet", "--json"]) == 0
    seen = look(out / "index.html", tmp_path)
    check(seen, 3)
    assert (tmp_path / "verdict-card-390.png").stat().st_size > 10_000

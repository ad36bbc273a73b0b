"""The verdict card: a short headline, a badge, a figure of the four contrasts, details folded.

Verdicts are built from NumPy draws with known answers (as in ``test_report.py``), so every
verdict code is reached; the card must also read a verdict of the coming interface
(``decisive`` per contrast, ``borderline``, a short ``headline``) given as a dict.
"""

import json
import math
import re

import numpy as np
import pytest

from bayesbias.report.card import (
    HEADLINE_MAX,
    VerdictCard,
    cards_html,
    short_headline,
    terminal_summary,
)
from bayesbias.verdicts import verdict_from_draws

LABELS = ("associated - none", "associated - human", "associated - different", "human - none")


def _draws(*means, sd=0.01):
    rng = np.random.default_rng(0)
    return {lab: rng.normal(m, sd, 20_000) for lab, m in zip(LABELS, means, strict=True)}


#: (contrast means, rope, has_data, mcse) -> the code verdicts.py gives today
CASES = {
    "stereotype-specific": ((-0.08, -0.05, -0.04, -0.03), None, None, None),
    "human closer than stereotypes": ((-0.05, 0.04, 0.0, -0.09), None, None, None),
    "no closer than human": ((-0.05, 0.0, 0.0, -0.05), None, None, None),
    "not closer than neutral": ((0.0, 0.0, 0.0, 0.0), None, None, None),
    "further than neutral": ((0.06, 0.06, 0.0, 0.0), None, None, None),
    "practically none": ((0.0, 0.0, 0.0, 0.0), 0.2, None, None),
    "no data": ((-0.08, -0.05, -0.04, -0.03), None, {"associated - human": False}, None),
}


def _verdict(code):
    means, rope, has, mcse = CASES[code]
    return verdict_from_draws("religion", _draws(*means), 0.89, "hdi", rope, has, mcse)


@pytest.mark.parametrize("code", list(CASES))
def test_every_code_gets_a_short_headline_and_a_badge(code):
    v = _verdict(code)
    assert v.code == code
    card = VerdictCard.from_verdict(v)
    assert 20 <= len(card.headline) <= HEADLINE_MAX and card.headline[0].isupper()
    assert card.code == code and f"tone-{card.tone}" in card.html()
    assert card.tone == ("finding" if code == "stereotype-specific" else
                         "missing" if code == "no data" else "none")
    # nothing lost: a verdict headline too long for the card is kept in full in the details
    if len(v.headline) > HEADLINE_MAX:
        assert card.details[0] == f"In full: {v.headline.rstrip('.')}."
    assert all(d in card.details for d in v.details)


def test_the_deciding_contrasts_follow_the_rule():
    decisive = {code: {c.contrast for c in VerdictCard.from_verdict(_verdict(code)).contrasts
                       if c.decisive} for code in CASES}
    both = {"associated - none", "associated - human"}
    assert decisive["stereotype-specific"] == both
    assert decisive["no closer than human"] == both
    assert decisive["human closer than stereotypes"] == both
    assert decisive["not closer than neutral"] == {"associated - none"}
    assert decisive["further than neutral"] == {"associated - none"}
    assert decisive["no data"] == {"associated - human"}  # the missing control decides


def test_an_interval_end_on_its_threshold_reads_as_a_direction_with_its_probability():
    # associated - human centred so its upper HDI end is near 0, with a large MCSE: borderline
    draws = _draws(-0.08, -0.0165, -0.04, -0.03)
    mcse = {lab: (0.005, 0.005) for lab in LABELS}
    v = verdict_from_draws("race", draws, 0.89, "hdi", None, None, mcse)
    assert v["associated - human"].status == "borderline"
    card = VerdictCard.from_verdict(v)
    ah = next(c for c in card.contrasts if c.contrast == "associated - human")
    assert ah.status == "borderline" and ah.decisive and ah.word == "borderline"
    assert len(card.headline) <= HEADLINE_MAX
    if "precision" in v.code:  # today's rule: the card states the direction instead
        p = v["associated - human"].prob_below_zero
        assert card.tone == "edge"
        assert card.headline == ("Stereotypes are closer than neutral words; closer than "
                                 f"human attributes with probability {p:.2f}, at the edge of "
                                 "the 89% HDI.")
        # the Monte Carlo errors are in the fold, not in the headline
        assert "Monte Carlo" not in card.headline and "± 0.0050" in card.html()


def test_a_verdict_of_the_new_interface_is_read_as_given():
    """``decisive``, ``borderline``, a short ``headline`` and ``prob_below`` (the contract)."""
    v = _verdict("stereotype-specific").to_dict()
    v.update(code="borderline: closer than human", headline="Stereotypes are closer than "
             "human attributes with probability 0.95, at the edge of the 89% interval")
    for c in v["contrasts"]:
        c["decisive"] = c["contrast"] == "associated - human"
        c["prob_below"] = c.pop("prob_below_zero")
    v["contrasts"][1]["status"] = "borderline"
    card = VerdictCard.from_verdict(v)
    assert card.headline == v["headline"] and card.tone == "edge"
    assert [c.decisive for c in card.contrasts] == [False, True, False, False]
    assert not card.details[0].startswith("In full")
    assert card.contrasts[1].prob_below == v["contrasts"][1]["prob_below"]


def test_an_overlong_headline_of_an_unknown_code_is_cut_at_a_word():
    v = _verdict("stereotype-specific").to_dict()
    v.update(code="something new", headline="word " * 60)
    head = short_headline(v)
    assert len(head) <= HEADLINE_MAX and head.endswith("…") and "wor…" not in head


def test_the_figure_draws_four_intervals_against_zero_and_the_rope():
    v = verdict_from_draws("gender", _draws(-0.08, -0.05, -0.04, -0.03), 0.89, "hdi", 0.02)
    card = VerdictCard.from_verdict(v)
    svg = card.svg()
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("<title>") == 4 and svg.count("<circle") == 4
    assert svg.count('fill="#e6efe6"') == 4  # the ROPE band on each row
    for lab in LABELS:
        assert f">{lab}</text>" in svg
    # the bars sit where the numbers say: x is linear in the value, 0 inside the axis
    xs = {float(m.group(1)): float(m.group(2)) for m in re.finditer(
        r'<circle cx="([\d.]+)" cy="([\d.]+)"', svg)}
    assert len(xs) == 4 and all(8 <= x <= 332 for x in xs)
    # deciding rows bold, the others not
    assert svg.count('font-weight="700"') == 4  # two rows x (label, status word)
    no_rope = VerdictCard.from_verdict(_verdict("stereotype-specific")).svg()
    assert 'fill="#e6efe6"' not in no_rope


def test_card_html_is_escaped_and_folds_the_details():
    v = _verdict("no closer than human")
    card = VerdictCard.from_verdict(v, ["advice: `--draws`"], name='<script>x" onload="y')
    page = cards_html([card, VerdictCard.from_verdict(_verdict("stereotype-specific"))])
    assert "<script>" not in page and 'x" onload' not in page
    assert "&lt;script&gt;" in page
    assert page.count("<article") == 2 and page.count("<details") == 2
    head, fold = page.split("<details", 1)
    assert "advice" not in head.split("<article")[1] and "<code>--draws</code>" in fold
    assert v.details[0].split("`")[0] in fold


def test_card_data_are_plain_json():
    v = _verdict("no data")
    d = VerdictCard.from_verdict(v).to_dict()
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text)["headline"] == d["headline"]
    assert set(d) >= {"name", "code", "headline", "details", "contrasts", "tone"}
    missing = next(c for c in d["contrasts"] if c["contrast"] == "associated - human")
    assert missing["status"] == "no data" and missing["lower"] is None
    # the card reads its own dict back (the terminal summary does)
    again = VerdictCard.from_verdict(d)
    assert again.to_dict() == d


def test_terminal_summary_leads_with_one_line_per_list():
    cards = [VerdictCard.from_verdict(_verdict(code)) for code in
             ("stereotype-specific", "not closer than neutral")]
    cards[1] = VerdictCard.from_verdict(_verdict("not closer than neutral"), name="gender")
    lines = terminal_summary(cards, ["corpus level: one sentence", None])
    assert lines[0].startswith("religion  [stereotype-specific]  Stereotypes are closer")
    assert lines[1].strip() == "corpus level: one sentence"
    assert lines[2].startswith("gender    [not closer than neutral]  ")
    assert all(len(line) <= 20 + HEADLINE_MAX + 30 for line in lines[:3])
    bars = [line for line in lines if line.lstrip(" *").startswith(LABELS)]
    assert len(bars) == 8 and sum(line.startswith(" *") for line in bars) == 3
    an = bars[0]
    assert "|" in an and re.search(r"\[=*o=*\]", an) and an.rstrip().endswith("closer")
    # the bar is on the side of 0 the interval is on
    assert an.index("]") < an.index("|")
    assert math.isfinite(cards[0].contrasts[0].upper)


def test_report_puts_the_cards_under_the_title(tmp_path):
    from bayesbias.report.document import Report

    rep = Report("t", "the intro")
    rep.summary = ["measured"]
    cards = [VerdictCard.from_verdict(_verdict(c)) for c in ("stereotype-specific", "no data")]
    rep.lead.append(("\n".join(c.markdown() for c in cards), cards_html(cards)))
    rep.section("Verdicts").text("x")
    rep.section("religion").block(cards[0].markdown(), cards[0].html())
    out = rep.write(tmp_path / "r")
    page = (out / "index.html").read_text()
    assert page.index('class="vcards"') < page.index("the intro") < page.index("contents")
    assert page.count("<article") == 3 and ".vcards{" in page
    md = (out / "report.md").read_text()
    assert md.index("`stereotype-specific`") < md.index("the intro")
    assert md.count("<details><summary>Details") == 3

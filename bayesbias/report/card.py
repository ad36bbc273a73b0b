"""The verdict card: one word list's answer, taken in at a glance.

A card is a headline sentence of at most :data:`HEADLINE_MAX` characters, a badge with the
verdict code, and a small figure of the four verdict contrasts (their intervals as bars
against 0 and the ROPE, the contrasts that decide the verdict drawn bold); the details,
Monte Carlo errors and advice fold under it. :class:`VerdictCard` renders it as HTML (an
inline SVG figure: the page stays one self-contained file), Markdown and terminal text, and
as plain JSON (``results.json``: ``headline`` short, ``details`` separate).

The card reads a :class:`~bayesbias.verdicts.Verdict` or its ``to_dict()``. Fields a
verdict may lack are filled in from the ones it has: a ``headline`` over the limit is
replaced by a short one built from the code and the contrasts (the full sentence goes to the
details), a contrast without ``decisive`` is marked deciding by the rule of
:mod:`bayesbias.verdicts` (``associated - none`` always; ``associated - human`` when
stereotypes are closer than neutral words or it has no data), and the status ``imprecise``
shows as ``borderline``.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

__all__ = ["VerdictCard", "CardContrast", "short_headline", "cards_html", "CARD_CSS",
           "HEADLINE_MAX", "STATUS_WORDS"]

#: Longest headline, in characters.
HEADLINE_MAX = 140

#: A contrast's status in the card's words (the figure's right column, the terminal).
STATUS_WORDS = {"below": "closer", "above": "further", "equivalent": "practically equal",
                "undecided": "undecided", "borderline": "borderline",
                "imprecise": "borderline", "no data": "no data"}

#: Bar colours per status (colour-blind safe pairs; the word beside the bar says it too).
_STATUS_COLOUR = {"below": "#2166ac", "above": "#b35806", "equivalent": "#1b7837",
                  "undecided": "#7a7a7a", "borderline": "#b8860b", "no data": "#aaaaaa"}

#: Badge tone per verdict code; a code not listed is read by its words (borderline, no data).
_TONES = {"stereotype-specific": "finding", "human closer than stereotypes": "none",
          "no closer than human": "none", "not closer than neutral": "none",
          "further than neutral": "none", "practically none": "none", "no data": "missing",
          "borderline vs human": "edge", "borderline vs neutral": "edge"}

_WHAT = {"associated": "stereotypes", "human": "human attributes", "none": "neutral words",
         "different": "other classes' stereotypes"}

CARD_CSS = """
.vcards{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,300px),1fr));
gap:.8em;margin:.8em 0 1.2em}
.vcards.one{grid-template-columns:minmax(0,34em)}
.vcard{border:1px solid #d5dbe3;border-radius:6px;padding:.55em .8em .5em;background:#fff;
min-width:0;display:flex;flex-direction:column}
.vc-top{display:flex;flex-wrap:wrap;align-items:baseline;gap:.2em .6em}
.vc-name{font-weight:700;font-size:1.08em;color:#123;overflow-wrap:anywhere}
.badge{display:inline-block;border-radius:1em;padding:.05em .65em;font-size:.8em;
font-weight:600;letter-spacing:.01em;white-space:nowrap;max-width:100%;overflow:hidden;
text-overflow:ellipsis}
.tone-finding{background:#8b1a1a;color:#fff}.tone-none{background:#e3e8ee;color:#234}
.tone-edge{background:#fbe7b0;color:#5c4200}.tone-missing{background:#eee;color:#555}
.vc-head{margin:.35em 0 .25em;font-size:.98em;line-height:1.35;flex:1}
.vc-fig{margin:.3em 0 0}.vc-fig svg{display:block;width:100%;max-width:380px;height:auto}
.vc-fig figcaption{font-size:.76em;color:#555;margin-top:.1em}
.vc-more{font-size:.85em;margin-top:.3em}.vc-more>summary{color:#345}
.vc-more ul{padding-left:1.2em;margin:.3em 0}.vc-more li{margin:.15em 0}
.vc-more table{font-size:.95em;margin:.3em 0}
"""


def _get(obj, name, default=None):
    """`obj.name` or `obj[name]` (a Verdict or its ``to_dict()``), else `default`."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _num(x) -> float:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return math.nan
    return x


def _status(raw) -> str:
    s = str(raw or "no data")
    return "borderline" if s in ("imprecise", "borderline") else s


@dataclass(frozen=True)
class CardContrast:
    """One contrast as the card shows it."""

    contrast: str
    mean: float
    lower: float
    upper: float
    prob_below: float
    status: str
    decisive: bool
    mcse_lower: float = math.nan
    mcse_upper: float = math.nan

    @property
    def word(self) -> str:
        """The status in the card's words (``closer``, ``borderline`` ...)."""
        return STATUS_WORDS.get(self.status, self.status)

    @property
    def has_data(self) -> bool:
        """Whether the contrast has an interval."""
        return self.status != "no data" and math.isfinite(self.lower) and \
            math.isfinite(self.upper)

    def to_dict(self) -> dict:
        """Plain JSON data (NaN as None)."""
        def n(x):
            return x if math.isfinite(x) else None

        return {"contrast": self.contrast, "status": self.status, "decisive": self.decisive,
                "mean": n(self.mean), "lower": n(self.lower), "upper": n(self.upper),
                "prob_below": n(self.prob_below), "mcse_lower": n(self.mcse_lower),
                "mcse_upper": n(self.mcse_upper)}


def _inferred_decisive(contrasts: dict[str, str]) -> set[str]:
    """Return the contrasts that decide a verdict under :mod:`bayesbias.verdicts`' rule."""
    an = contrasts.get("associated - none", "no data")
    ah = contrasts.get("associated - human", "no data")
    out = {"associated - none"}
    if an in ("below", "borderline") or ah == "no data":
        out.add("associated - human")
    return out


def _read_contrasts(verdict) -> list[CardContrast]:
    raw = list(_get(verdict, "contrasts", []) or [])
    statuses = {str(_get(c, "contrast")): _status(_get(c, "status")) for c in raw}
    known = any(_get(c, "decisive") is not None for c in raw)
    inferred = _inferred_decisive(statuses)
    out = []
    for c in raw:
        name = str(_get(c, "contrast"))
        prob = _get(c, "prob_below")
        out.append(CardContrast(
            contrast=name, mean=_num(_get(c, "mean")), lower=_num(_get(c, "lower")),
            upper=_num(_get(c, "upper")),
            prob_below=_num(prob if prob is not None else _get(c, "prob_below_zero")),
            status=statuses[name],
            decisive=bool(_get(c, "decisive")) if known else name in inferred,
            mcse_lower=_num(_get(c, "mcse_lower")), mcse_upper=_num(_get(c, "mcse_upper"))))
    return out


def _sides(contrast: str) -> tuple[str, str]:
    a, _, b = contrast.partition(" - ")
    return _WHAT.get(a, a), _WHAT.get(b, b)


def _capital(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text


def _edge_phrase(c: CardContrast, interval: str) -> str:
    """Say in words, with its probability, where a contrast on its threshold points."""
    a, b = _sides(c.contrast)
    if not math.isfinite(c.prob_below):
        return f"{a} vs {b} at the edge of the {interval}"
    way, p = ("closer", c.prob_below) if c.prob_below >= 0.5 else ("further", 1 - c.prob_below)
    return f"{a} {way} than {b} with probability {p:.2f}, at the edge of the {interval}"


def _clip(text: str, limit: int = HEADLINE_MAX) -> str:
    """`text` cut at a word boundary to at most `limit` characters (an ellipsis marks a cut)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1].rsplit(" ", 1)[0].rstrip(",;:(")
    return cut + "…"


def short_headline(verdict) -> str:
    """Return the verdict in one sentence of at most :data:`HEADLINE_MAX` characters.

    The verdict's own ``headline`` when it is short enough; otherwise one built from its
    code and contrasts.
    """
    own = " ".join(str(_get(verdict, "headline", "") or "").split())
    if own and len(own) <= HEADLINE_MAX:
        return _capital(own)
    code = str(_get(verdict, "code", "") or "")
    cs = {c.contrast: c for c in _read_contrasts(verdict)}
    interval = _interval_label(verdict)
    an, ah, ad = (cs.get(k) for k in ("associated - none", "associated - human",
                                      "associated - different"))
    text = None
    if code == "stereotype-specific":
        text = ("Stereotypes sit closer to the protected words than neutral words and than "
                "human attributes")
        if ad is not None and ad.status == "below":
            text += ", and closer than other classes' stereotypes"
        text += "."
    elif code == "human closer than stereotypes":
        text = ("Stereotypes are closer than neutral words, but human attributes are closer "
                "still: no stereotype-specific bias.")
    elif code == "no closer than human":
        if ah is not None and ah.status == "equivalent":
            text = ("Stereotypes are closer than neutral words but practically as close as "
                    "human attributes: no stereotype-specific bias.")
        else:
            text = ("Stereotypes are closer than neutral words, but not shown closer than "
                    "human attributes: no stereotype-specific finding.")
    elif code == "not closer than neutral":
        text = ("Stereotypes are not credibly closer or further than neutral words: no "
                "evidence of association.")
    elif code == "further than neutral":
        text = "Stereotypes are further from the protected words than neutral words."
    elif code == "practically none":
        text = ("Stereotypes are practically as close as neutral words: no association of "
                "practical size.")
    elif code == "no data":
        text = "No verdict: a control group has no rows in the table."
    elif "precision" in code or "borderline" in code:
        edge = [c for c in (an, ah) if c is not None and c.status == "borderline"]
        if edge:
            head = _edge_phrase(edge[0], interval)
            if edge[0] is ah and an is not None and an.status == "below":
                head = ("Stereotypes are closer than neutral words; "
                        + head.removeprefix("stereotypes "))
            text = _capital(head) + "."
    if text is None or len(text) > HEADLINE_MAX:
        text = _clip(_capital(own or code or "no verdict"))
    return text


def _interval_label(verdict) -> str:
    label = _get(verdict, "interval_label") or _get(verdict, "interval")
    if label:
        return str(label)
    p, kind = _get(verdict, "ci_prob"), _get(verdict, "ci_kind")
    if p is None or kind is None:
        return "interval"
    return f"{float(p):.0%} {str(kind).upper()}"


def _tone(code: str) -> str:
    if code in _TONES:
        return _TONES[code]
    if "borderline" in code or "edge" in code or "precision" in code:
        return "edge"
    if "no data" in code:
        return "missing"
    return "finding" if code.startswith("stereotype-specific") else "none"


@dataclass(frozen=True)
class VerdictCard:
    """One word list's verdict card (see the module docstring)."""

    name: str
    code: str
    headline: str
    contrasts: list[CardContrast]
    interval: str
    rope: float | None
    details: list[str] = field(default_factory=list)

    @classmethod
    def from_verdict(cls, verdict, extra=(), name: str | None = None) -> VerdictCard:
        """Build the card of a Verdict (or its ``to_dict()``).

        `extra`: more lines for the folded details (robustness, WEAT, warnings, advice).
        """
        headline = short_headline(verdict)
        own = " ".join(str(_get(verdict, "headline", "") or "").split())
        details = []
        if own and _capital(own) != headline:
            details.append(f"In full: {own.rstrip('.')}.")
        details += [str(d) for d in (_get(verdict, "details", []) or [])]
        details += [f"Note: {n}" for n in (_get(verdict, "notes", []) or [])]
        details += [str(x) for x in extra if x]
        rope = _get(verdict, "rope")
        return cls(name=str(name if name is not None else _get(verdict, "name", "")),
                   code=str(_get(verdict, "code", "") or "no verdict"), headline=headline,
                   contrasts=_read_contrasts(verdict), interval=_interval_label(verdict),
                   rope=None if rope is None else float(rope), details=details)

    @property
    def tone(self) -> str:
        """``finding``, ``none``, ``edge`` (borderline) or ``missing`` (the badge's colour)."""
        return _tone(self.code)

    def to_dict(self) -> dict:
        """Plain JSON data: ``headline`` (short), ``code``, ``details`` and the contrasts."""
        return {"name": self.name, "code": self.code, "headline": self.headline,
                "tone": self.tone, "interval": self.interval, "rope": self.rope,
                "details": list(self.details),
                "contrasts": [c.to_dict() for c in self.contrasts]}

    # -- the figure -------------------------------------------------------------------
    def svg(self) -> str:
        """Draw the four contrasts as interval bars against 0 and the ROPE (inline SVG)."""
        return _svg(self)

    # -- renderings ---------------------------------------------------------------------
    def html(self) -> str:
        """Return the card as an HTML ``<article>`` (input escaped; CSS: :data:`CARD_CSS`)."""
        e = _esc
        rope = f"; shaded: ROPE ±{self.rope:g}" if self.rope else ""
        out = ['<article class="vcard">',
               f'<div class="vc-top"><span class="vc-name">{e(self.name)}</span>'
               f'<span class="badge tone-{self.tone}" title="verdict code">{e(self.code)}'
               "</span></div>",
               f'<p class="vc-head">{e(self.headline)}</p>',
               f'<figure class="vc-fig">{self.svg()}<figcaption>Bars: {e(self.interval)} of '
               f"each contrast (dot: mean; left of 0: the first is closer){e(rope)}; "
               "<b>bold</b>: decides the verdict.</figcaption></figure>"]
        out.append(self._details_html())
        out.append("</article>")
        return "".join(out)

    def _details_html(self) -> str:
        rows = self._mcse_rows()
        body = "".join(f"<li>{_inline(d)}</li>" for d in self.details)
        table = ""
        if rows:
            table = ("<table><tr><th>contrast</th><th>lower end</th><th>upper end</th></tr>"
                     + "".join(f"<tr><td>{_esc(c)}</td><td>{lo}</td><td>{hi}</td></tr>"
                               for c, lo, hi in rows)
                     + f"</table><div>Interval ends of the {_esc(self.interval)} ± their "
                       "Monte Carlo standard errors (how far another sampler seed could "
                       "move them).</div>")
        return ('<details class="vc-more"><summary>Details, Monte Carlo errors, advice'
                f"</summary><ul>{body}</ul>{table}</details>")

    def _mcse_rows(self) -> list[tuple[str, str, str]]:
        rows = []
        for c in self.contrasts:
            if not c.has_data:
                continue
            if not (math.isfinite(c.mcse_lower) or math.isfinite(c.mcse_upper)):
                continue
            rows.append((c.contrast, _pm(c.lower, c.mcse_lower), _pm(c.upper, c.mcse_upper)))
        return rows

    def markdown(self) -> str:
        """Return the card as Markdown: name, code, headline, contrasts, details folded."""
        lines = [f"**{_md(self.name)}** · `{self.code}` — {_md(self.headline)}", "",
                 f"| contrast | mean | {self.interval} | P(< 0) | reads |",
                 "|---|---|---|---|---|"]
        for c in self.contrasts:
            name = f"**{c.contrast}**" if c.decisive else c.contrast
            if c.has_data:
                lines.append(f"| {name} | {c.mean:+.3f} | {c.lower:+.3f} to {c.upper:+.3f} | "
                             f"{_fmt_p(c.prob_below)} | {c.word} |")
            else:
                lines.append(f"| {name} | | | | no data |")
        lines += ["", "*Bold: decides the verdict.*", "", "<details><summary>Details, Monte "
                  "Carlo errors, advice</summary>", ""]
        lines += [f"- {_md(d)}" for d in self.details]
        rows = self._mcse_rows()
        if rows:
            lines.append("- Interval ends ± Monte Carlo standard error: " + "; ".join(
                f"`{c}` {lo} to {hi}" for c, lo, hi in rows))
        lines += ["", "</details>", ""]
        return "\n".join(lines)

    def head_line(self, width: int = 0) -> str:
        """One terminal line: name, ``[code]``, headline (names padded to `width`)."""
        return f"{self.name:<{width}}  [{self.code}]  {self.headline}"

    def text_lines(self) -> list[str]:
        """Return the contrasts as terminal lines, each with a small text bar."""
        lo, hi = _domain(self)
        out = []
        for c in self.contrasts:
            mark = "*" if c.decisive else " "
            if c.has_data:
                nums = f"{c.mean:+.3f} [{c.lower:+.3f}, {c.upper:+.3f}]"
                out.append(f" {mark}{c.contrast:<23} {_text_bar(c, lo, hi, self.rope)} "
                           f"{nums:<26} {c.word}")
            else:
                out.append(f" {mark}{c.contrast:<23} {'':24} {'':<26} no data")
        return out


def _pm(x: float, m: float) -> str:
    return f"{x:+.4f} ± {m:.4f}" if math.isfinite(m) else f"{x:+.4f}"


def _fmt_p(p: float) -> str:
    return f"{p:.2f}" if math.isfinite(p) else ""


def _esc(text) -> str:
    return html.escape(str(text), quote=True)


def _inline(text: str) -> str:
    """Escape, with `code` spans as <code> (the report's convention)."""
    parts = _esc(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _md(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _domain(card: VerdictCard) -> tuple[float, float]:
    """Return the figure's x range: every interval, 0 and the ROPE, with a margin."""
    vals = [0.0]
    if card.rope:
        vals += [-card.rope, card.rope]
    for c in card.contrasts:
        if c.has_data:
            vals += [c.lower, c.upper]
    lo, hi = min(vals), max(vals)
    span = hi - lo if hi > lo else 1e-3
    return lo - 0.08 * span, hi + 0.08 * span


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    """Round tick values inside [lo, hi] (1, 2, 2.5 or 5 times a power of ten apart)."""
    raw = (hi - lo) / n
    if not raw > 0:
        return [0.0]
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step)
    return [round(k * step, 12) for k in range(first, math.floor(hi / step) + 1)]


def _tick_label(t: float) -> str:
    if t == 0:
        return "0"
    s = f"{t:+.3f}".rstrip("0").rstrip(".")
    return s.replace("-", "−")


def _text_bar(c: CardContrast, lo: float, hi: float, rope, width: int = 24) -> str:
    """Draw an interval as ``[==o==]`` on a line with ``|`` at 0 and ``:`` at ±ROPE."""
    def pos(x):
        return min(width - 1, max(0, round((x - lo) / (hi - lo) * (width - 1))))

    cells = ["·"] * width
    if rope:
        cells[pos(-rope)] = cells[pos(rope)] = ":"
    cells[pos(0.0)] = "|"
    a, b = pos(c.lower), pos(c.upper)
    for k in range(a, b + 1):
        cells[k] = "="
    cells[a], cells[b] = "[", "]"
    if math.isfinite(c.mean):
        cells[pos(c.mean)] = "o"
    return "".join(cells)


# SVG geometry, in the figure's own units: about one unit per CSS pixel in a card 300-420 px
# wide. Each contrast is a row of two lines: its name (left) and status (right), then its bar.
_W, _ROW, _TOP, _PAD = 340.0, 31.0, 2.0, 8.0


def _svg(card: VerdictCard) -> str:
    lo, hi = _domain(card)
    left, right = _PAD, _W - _PAD

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * (right - left)

    n = len(card.contrasts)
    axis_y = _TOP + n * _ROW + 3
    height = axis_y + 28
    label = (f"{card.name}: the four verdict contrasts, {card.interval}: " + "; ".join(
        f"{c.contrast} {c.word}" + (" (deciding)" if c.decisive else "")
        for c in card.contrasts))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W:g} {height:g}" '
           f'role="img" aria-label="{_esc(label)}" font-family="system-ui,sans-serif" '
           'font-size="12.5">']
    for t in _ticks(lo, hi):
        out.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{axis_y:g}" '
                   f'y2="{axis_y + 4:g}" stroke="#888"/>'
                   f'<text x="{x(t):.1f}" y="{axis_y + 15:g}" text-anchor="middle" '
                   f'font-size="10.5" fill="#555">{_tick_label(t)}</text>')
    out.append(f'<line x1="{left:g}" x2="{right:g}" y1="{axis_y:g}" y2="{axis_y:g}" '
               'stroke="#888"/>')
    out.append(f'<text x="{left:g}" y="{axis_y + 26:g}" font-size="10.5" fill="#555">'
               "← closer</text>"
               f'<text x="{right:g}" y="{axis_y + 26:g}" font-size="10.5" fill="#555" '
               'text-anchor="end">further →</text>')
    for i, c in enumerate(card.contrasts):
        top = _TOP + i * _ROW
        y = top + 22  # the bar's line; the name sits above it
        weight = "700" if c.decisive else "400"
        ink = "#111" if c.decisive else "#555"
        colour = _STATUS_COLOUR.get(c.status, "#7a7a7a")
        out.append(f"<g><title>{_esc(_tooltip(c, card.interval))}</title>")
        out.append(f'<rect x="0" y="{top:g}" width="{_W:g}" height="{_ROW:g}" '
                   'fill="transparent"/>')  # the tooltip's area
        out.append(f'<text x="{left:g}" y="{top + 11:g}" font-weight="{weight}" '
                   f'fill="{ink}">{_esc(c.contrast)}</text>')
        out.append(f'<text x="{right:g}" y="{top + 11:g}" text-anchor="end" font-size="11.5" '
                   f'font-weight="{weight}" fill="{colour if c.has_data else "#777"}">'
                   f"{_esc(c.word)}</text>")
        if card.rope:
            out.append(f'<rect x="{x(-card.rope):.1f}" y="{y - 7:g}" '
                       f'width="{x(card.rope) - x(-card.rope):.1f}" height="14" '
                       'fill="#e6efe6"/>')
        out.append(f'<line x1="{left:g}" x2="{right:g}" y1="{y:g}" y2="{y:g}" '
                   'stroke="#e4e4e4"/>'
                   f'<line x1="{x(0):.1f}" x2="{x(0):.1f}" y1="{y - 7:g}" y2="{y + 7:g}" '
                   'stroke="#333" stroke-width="1.3"/>')
        if c.has_data:
            width = 6 if c.decisive else 4
            opacity = "1" if c.decisive else "0.65"
            out.append(f'<line x1="{x(c.lower):.1f}" x2="{x(c.upper):.1f}" y1="{y:g}" '
                       f'y2="{y:g}" stroke="{colour}" stroke-width="{width}" '
                       f'stroke-linecap="round" opacity="{opacity}"/>')
            if math.isfinite(c.mean):
                out.append(f'<circle cx="{x(c.mean):.1f}" cy="{y:g}" r="{width / 2 + 1:g}" '
                           f'fill="#fff" stroke="{colour}" stroke-width="1.6"/>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def _tooltip(c: CardContrast, interval: str) -> str:
    if not c.has_data:
        return f"{c.contrast}: no data"
    p = f", P(< 0) = {c.prob_below:.2f}" if math.isfinite(c.prob_below) else ""
    return (f"{c.contrast}: mean {c.mean:+.4f}, {interval} {c.lower:+.4f} to {c.upper:+.4f}"
            f"{p}; {c.word}" + (" (decides the verdict)" if c.decisive else ""))


def cards_html(cards) -> str:
    """Cards side by side (as many columns as fit; one on a phone)."""
    cards = list(cards)
    css = "vcards" if len(cards) > 1 else "vcards one"
    return f'<div class="{css}">' + "".join(c.html() for c in cards) + "</div>"


def terminal_summary(cards, subtitles=None) -> list[str]:
    """Terminal lines: one headline line per card first, then each card's contrasts.

    `subtitles`: per card, an optional line shown under its headline line (the corpus-level
    sentence of an ensemble).
    """
    if not cards:
        return []
    width = max(len(c.name) for c in cards)
    lines = []
    for c, sub in zip(cards, subtitles or [None] * len(cards), strict=True):
        lines.append(c.head_line(width))
        if sub:
            lines.append(f"{'':<{width}}  {sub}")
    for c in cards:
        lines += ["", f"{c.name} ({c.interval}; * decides the verdict; | 0"
                  + (f", : ±ROPE {c.rope:g}" if c.rope else "") + "):"]
        lines += c.text_lines()
        lines += [f"  - {d}" for d in c.details]
    return lines

"""The card kit: how results show themselves in a notebook, defined once.

Each result renders itself (its ``_repr_html_`` and ``__repr__``, beside the class) with this
kit: :func:`card` is one result as an HTML block (a title line, a headline, bulleted lines,
tables, long ones collapsed in a ``<details>`` block, and notes), :func:`frame_html` one
table, :func:`escape` the escaping of everything user-supplied; :data:`STYLE` and
:data:`MUTED` are the shared styles. Numbers are formatted by
:func:`bayesbias.plain.format_number`.

The per-result functions that lived here (``fit_html``, ``verdict_html``, ...) are kept for
one release as names resolved on first use (each is now the result's own module's).
"""

from __future__ import annotations

import html

__all__ = ["card", "frame_html", "escape", "STYLE", "MUTED", "COLLAPSE_ROWS"]

#: Tables longer than this are shown collapsed (the first rows stay visible in text reprs).
COLLAPSE_ROWS = 12

#: Style of a card's block.
STYLE = ("font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; font-size: 13px; "
          "line-height: 1.4; max-width: 60em")
#: Style of muted text (subtitles, captions, notes).
MUTED = "color: #666"

#: Old name -> (module, function) of the per-result renderers that lived here: kept for one
#: release, resolved on first use (the modules import this kit).
_MOVED = {
    **{n: ("bayesbias.verdicts", f"_{n}") for n in ("verdict_html", "verdict_repr")},
    **{n: ("bayesbias.comparators.weat", f"_{n}") for n in ("weat_html", "weat_repr")},
    **{n: ("bayesbias.comparators.mac", f"_{n}") for n in ("mac_html", "mac_repr")},
    **{n: ("bayesbias.comparators.metrics", f"_{n}") for n in (
        "metric_result_html", "metric_result_repr", "metric_table_html", "metric_table_repr")},
    **{n: ("bayesbias.inputs.wordlists", f"_{n}") for n in ("wordlist_html", "wordlist_repr")},
    **{n: ("bayesbias.classifier.summary", f"_{n}")
       for n in ("classifier_html", "classifier_repr")},
    **{n: ("bayesbias.classifier.bernstein", f"_{n}") for n in ("bbu_html", "bbu_repr")},
    "fairness_html": ("bayesbias.classifier.generalized", "_fairness_html"),
    **{n: ("bayesbias.models.compare", f"_{n}") for n in ("comparison_html", "comparison_repr")},
    **{n: ("bayesbias.models.result", f"_{n}") for n in ("fit_html", "fit_text")},
}


def __getattr__(name: str):
    if name in _MOVED:
        from importlib import import_module

        module, function = _MOVED[name]
        return getattr(import_module(module), function)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def escape(text) -> str:
    """`text` as a string, escaped for HTML (quotes too)."""
    return html.escape(str(text), quote=True)


def frame_html(frame, caption: str = "", digits: int = 4,
               collapse: int = COLLAPSE_ROWS) -> str:
    """Return `frame` as an escaped HTML table, collapsed when longer than `collapse` rows."""
    rounded = frame.copy()
    for c in rounded.columns:
        if getattr(getattr(rounded[c], "dtype", None), "kind", "") == "f":  # no pandas import
            rounded[c] = rounded[c].round(digits)
    table = rounded.to_html(index=False, border=0, escape=True, na_rep="",
                            classes="bayesbias-table")
    table = table.replace('<table border="0" class="dataframe bayesbias-table">',
                          '<table class="bayesbias-table" style="border-collapse: collapse; '
                          'font-size: 12px">', 1)
    if len(frame) > collapse:
        label = f"{escape(caption) or 'table'} ({len(frame)} rows)"
        return f"<details><summary>{label}</summary>{table}</details>"
    head = f'<div style="{MUTED}">{escape(caption)}</div>' if caption else ""
    return head + table


def card(title: str, subtitle: str = "", headline: str = "", lines=(), tables=(),
         notes=()) -> str:
    """One result as an HTML block.

    Parameters
    ----------
    title, subtitle : str
        The first line (bold title, muted subtitle).
    headline : str
        One sentence under it.
    lines : sequence of str
        Bulleted lines.
    tables : sequence of (caption, DataFrame)
        Shown in order; long ones collapsed.
    notes : sequence of str
        Muted lines at the end.
    """
    out = [f'<div class="bayesbias-result" style="{STYLE}">',
           f"<div><b>{escape(title)}</b>"
           + (f' <span style="{MUTED}">{escape(subtitle)}</span>' if subtitle else "")
           + "</div>"]
    if headline:
        out.append(f'<div style="margin: 0.3em 0">{escape(headline)}</div>')
    if lines:
        out.append('<ul style="margin: 0.2em 0; padding-left: 1.4em">'
                   + "".join(f"<li>{escape(x)}</li>" for x in lines) + "</ul>")
    for caption, frame in tables:
        out.append(frame_html(frame, caption))
    for n in notes:
        out.append(f'<div style="{MUTED}; font-size: 12px">{escape(n)}</div>')
    out.append("</div>")
    return "\n".join(out)



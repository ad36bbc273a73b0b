"""What the report's first screen says, and how a reader moves around the page.

The title names the source and the word lists; a few lines under it say what was measured
(with the caveat of a sentence encoder); the generic explanations use words of the report's
own lists. In the HTML, a table of contents links every section and sub-heading, each section
and sub-section collapses (``<details>``), tables longer than :data:`LONG_TABLE` rows start
collapsed, and wide tables scroll inside the page.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd

__all__ = ["front_matter", "source_label", "report_title", "measured_lines", "different_example",
           "Slugs",
           "LONG_TABLE", "NAV_CSS"]

#: Tables with more rows than this start collapsed in the HTML page.
LONG_TABLE = 15

#: What each way of turning a word into an encoder vector measures (docs/guide/encoders.md).
ENCODER_CAVEATS = {
    "templates": "Measured on template sentences (\"This is a nurse.\", \"The nurse is "
                 "here.\", ...): a sentence embedding of \"This is a nurse.\" is not the word "
                 "*nurse* but the encoder's representation of a sentence about a nurse, and the "
                 "bias shown is the bias of such sentences.",
    "word": "Measured on each word encoded alone as a sentence: encoders are trained on "
            "sentences, so a lone word is an out-of-distribution input whose vector mixes the "
            "word with the pooling over the special tokens.",
    "contexts": "Measured on each word's contextual token vectors in sentences of the corpus: "
                "they carry whatever those sentences say about the word.",
}

_EMBEDDINGS = {"reddit": "Reddit", "google": "Google News word2vec", "glove": "GloVe",
               "debiased_reddit": "Reddit, debiased"}

NAV_CSS = """
nav.toc{background:#f7f9fb;border:1px solid #dde3ea;padding:.4em 1em;margin:1em 0;
font-size:.92em}nav.toc ol{margin:.2em 0;padding-left:1.4em}
nav.toc ul{margin:0;padding-left:.2em;display:inline}nav.toc ul li{display:inline}
nav.toc ul li:not(:last-child)::after{content:" · "}
ul.measured{background:#f3f7f3;border-left:4px solid #4a7;padding:.4em 1em .4em 2em}
summary{cursor:pointer}summary>h2,summary>h3{display:inline}
details.long>summary{color:#345;font-size:.9em;margin:.2em 0 .6em}
.scroll{overflow-x:auto;max-width:100%}.scroll table{margin-top:0}
a.top{font-size:.8em;float:right}
img{height:auto}
p,li,figcaption,.caption{overflow-wrap:anywhere}
@media (max-width:700px){body{margin:.5em auto}h1{font-size:1.45em}th,td{padding:.2em .35em}}
"""


def source_label(settings) -> str:
    """Return what the distances were computed from, in a few words."""
    s = settings
    if s.distances:
        names = []
        for spec in s.distances:
            parts = str(spec).split(":")
            names.append(f"published {parts[1]} table ({_EMBEDDINGS.get(parts[2], parts[2])})"
                         if spec.startswith("published:") and len(parts) == 3
                         else Path(spec).name)
        return ", ".join(names)
    emb = s.embedding
    if hasattr(emb, "to_dict"):
        d = emb.to_dict()
        return f"sentence encoder {d.get('encoder')} ({d.get('how')})"
    if emb in (None, "default"):
        return "GloVe 6B 50d subset"
    if emb == "glove-6b-50d":
        return "GloVe 6B 50d"
    return f"embedding {Path(str(emb)).name}"


def report_title(settings, names) -> str:
    """E.g. ``"bayesbias report: GloVe 6B 50d subset: religion, race, gender"``."""
    label = source_label(settings)
    if settings.distances:
        return f"bayesbias report: {label}"
    return f"bayesbias report: {label}: {', '.join(names)}"


def measured_lines(settings, contexts) -> list[str]:
    """Bullet lines for the first screen: source, each list's classes and sizes, caveats."""
    what = "distance tables" if settings.distances else "the"
    lines = [f"**Measured**: cosine distances from {what} {source_label(settings)}"
             + ("" if settings.distances else " between protected words and attribute words")]
    emb = settings.embedding
    if hasattr(emb, "to_dict"):
        caveat = ENCODER_CAVEATS.get(emb.to_dict().get("how"))
        if caveat:
            lines.append(f"**Caveat**: {caveat}")
    for c in contexts:
        t = c.table
        classes = list(dict.fromkeys(t["protected_class"].astype(str)))
        stereo = t.loc[~t["attribute_class"].isin(["human", "none"]), "attribute"].nunique()
        ctrl = t.loc[t["attribute_class"].isin(["human", "none"]), "attribute"].nunique()
        lines.append(f"**{c.name}**: {t['protected_word'].nunique()} protected words in "
                     f"{len(classes)} classes ({', '.join(classes)}), {stereo} stereotype "
                     f"attributes, {ctrl} control words (human and neutral)")
    return lines


def different_example(contexts) -> str | None:
    """Return the glossary's example of a `different` attribute, in the first list's own words."""
    for c in contexts:
        t = c.table
        classes = list(dict.fromkeys(t["protected_class"].astype(str)))
        if len(classes) < 2:
            continue
        word = str(t.loc[t["protected_class"].astype(str) == classes[0],
                         "protected_word"].iloc[0])
        others = classes[1:]
        other = (" or ".join(others) if len(others) <= 2
                 else ", ".join(others[:-1]) + f" or {others[-1]}")
        return (f"for the {c.name} word '{word}' (class {classes[0]}), a stereotype listed for "
                f"{other}")
    return None


class Slugs:
    """GitHub-style heading anchors (lower case, punctuation dropped, ``-1`` for repeats).

    The same anchors serve the HTML ids and the Markdown table of contents.
    """

    def __init__(self):
        self.seen: dict[str, int] = {}

    def __call__(self, text: str) -> str:
        """Return a new anchor for heading `text` (numbered when it was seen before)."""
        base = re.sub(r"[^\w\- ]", "", str(text).lower(), flags=re.UNICODE).replace(" ", "-")
        base = base or "section"
        n = self.seen.get(base, 0)
        self.seen[base] = n + 1
        return base if n == 0 else f"{base}-{n}"


def toc_html(entries) -> str:
    """`entries`: (anchor, title, [(anchor, sub-title), ...]) per section."""
    out = ['<nav class="toc" id="contents"><b>Contents</b><ol>']
    for anchor, title, subs in entries:
        sub = ("<ul>" + "".join(f'<li><a href="#{html.escape(a, quote=True)}">'
                                f"{html.escape(t)}</a></li>" for a, t in subs) + "</ul>"
               if subs else "")
        out.append(f'<li><a href="#{html.escape(anchor, quote=True)}">{html.escape(title)}'
                   f"</a>{': ' if sub else ''}{sub}</li>")
    out.append("</ol></nav>")
    return "".join(out)


def toc_markdown(entries) -> list[str]:
    """Return the table of contents as Markdown links (sub-headings on the same line)."""
    lines = ["**Contents**", ""]
    for anchor, title, subs in entries:
        sub = " · ".join(f"[{t}](#{a})" for a, t in subs)
        lines.append(f"- [{title}](#{anchor})" + (f": {sub}" if sub else ""))
    return lines + [""]


def table_html(df: pd.DataFrame, caption_html: str) -> str:
    """Return a table that scrolls sideways inside the page; collapsed when long."""
    body = ('<div class="scroll">' + df.to_html(index=False, float_format=lambda v: f"{v:.3f}",
                                                 na_rep="", border=0, escape=True) + "</div>")
    if len(df) > LONG_TABLE:
        return (f'<p class="caption">{caption_html}</p><details class="long"><summary>'
                f"show the {len(df)} rows</summary>{body}</details>")
    return f'<p class="caption">{caption_html}</p>{body}'


def front_matter(report, settings, contexts, glossary) -> None:
    """Title naming the source, what was measured, the glossary's example in the lists' words."""
    report.title = report_title(settings, [c.name for c in contexts])
    report.summary = measured_lines(settings, contexts)
    example = different_example(contexts)
    if example:
        glossary.example = example

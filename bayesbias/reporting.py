"""A self-contained report folder: Markdown and HTML pages, CSV tables, PNG figures.

The report is built in memory from sections and written atomically: everything goes into
a temporary folder that is renamed onto the target only when complete.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .errors import InputDataError

__all__ = ["Report", "Section", "markdown_table", "check_replaceable", "MARKER"]

#: Marker file of a report folder: only such folders (or empty ones) are replaced.
MARKER = ".bayesbias-report"


def check_replaceable(folder) -> None:
    """Raise InputDataError unless `folder` is absent, empty, or an earlier report."""
    folder = Path(folder)
    if not folder.exists():
        return
    if not folder.is_dir():
        raise InputDataError(f"{folder}: exists and is not a folder; choose another -o")
    if any(folder.iterdir()) and not (folder / MARKER).exists():
        raise InputDataError(
            f"{folder}: exists and is not a bayesbias report folder; refusing to replace it "
            "(choose another -o, or remove the folder yourself)")


def markdown_table(df: pd.DataFrame, floatfmt: str = ".3f") -> str:
    """`df` as a GitHub-flavoured Markdown table."""
    def fmt(v):
        if isinstance(v, float):
            return "" if pd.isna(v) else format(v, floatfmt)
        return str(v)

    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(lines)


@dataclass
class Section:
    """One section: a heading, paragraphs, tables (with a CSV name) and figures."""

    title: str
    items: list = field(default_factory=list)

    def text(self, paragraph: str) -> Section:
        """Add a paragraph (plain text; `code` spans allowed)."""
        self.items.append(("text", paragraph))
        return self

    def table(self, df: pd.DataFrame, name: str, caption: str = "") -> Section:
        """Add a table; it is also written as ``tables/<name>.csv``."""
        self.items.append(("table", (df.reset_index(drop=True), name, caption)))
        return self

    def figure(self, fig, name: str, caption: str = "") -> Section:
        """Add a matplotlib figure, saved as ``figures/<name>.png``."""
        self.items.append(("figure", (fig, name, caption)))
        return self

    def figure_from(self, draw, name: str, caption: str = "") -> Section:
        """Add a figure drawn by ``draw(path)`` into ``figures/<name>.png`` at write time."""
        self.items.append(("figure", (draw, name, caption)))
        return self


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;
margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #345;padding-bottom:.2em}h2{margin-top:2em;color:#234}
table{border-collapse:collapse;margin:.6em 0 1.4em;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#eef2f6}td:first-child,th:first-child{text-align:left}
tr:nth-child(even) td{background:#fafbfc}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #ddd}
figcaption,.caption{font-size:.85em;color:#555}
code{background:#f3f3f3;padding:0 .2em}
.choices{background:#f7f9fb;border-left:4px solid #4a7;padding:.5em 1em}
"""


class Report:
    """A report under construction; :meth:`write` produces the folder."""

    def __init__(self, title: str, intro: str = ""):
        self.title = title
        self.intro = intro
        self.choices: dict[str, str] = {}
        self.sections: list[Section] = []
        self.data: dict = {}

    def section(self, title: str, first: bool = False) -> Section:
        """Start a new section (at the end, or before all others with `first`)."""
        sec = Section(title)
        self.sections.insert(0 if first else len(self.sections), sec)
        return sec

    def choice(self, name: str, value) -> None:
        """Record a choice that affects a number (shown at the top of the report)."""
        self.choices[name] = str(value)

    def write(self, folder, extra_files: dict | None = None) -> Path:
        """Write the report folder atomically; `extra_files` maps names to writer callables.

        An existing folder is replaced only if it is empty or an earlier bayesbias report
        (it holds the marker file :data:`MARKER`); anything else is refused.
        """
        folder = Path(folder)
        check_replaceable(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes owner-only folders
        try:
            (tmp / MARKER).write_text("written by bayesbias report\n", encoding="utf-8")
            (tmp / "tables").mkdir()
            (tmp / "figures").mkdir()
            md, body = self._render(tmp)
            for name, writer in (extra_files or {}).items():
                writer(tmp / name)
            (tmp / "report.md").write_text(md, encoding="utf-8")
            (tmp / "index.html").write_text(self._html(body), encoding="utf-8")
            (tmp / "results.json").write_text(
                json.dumps(self.data, indent=2, default=str), encoding="utf-8")
            if folder.exists():
                old = folder.with_name(f".{folder.name}.old")
                if old.exists():
                    shutil.rmtree(old)
                folder.rename(old)
                tmp.rename(folder)
                shutil.rmtree(old)
            else:
                tmp.rename(folder)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp)
        return folder

    def _render(self, root: Path) -> tuple[str, str]:
        import matplotlib.pyplot as plt

        md = [f"# {self.title}", "", self.intro, ""]
        body = [f"<h1>{html.escape(self.title)}</h1>", f"<p>{_inline(self.intro)}</p>"]
        if self.choices:
            md += ["## Choices that affect the numbers", ""]
            md += [f"- **{k}**: {v}" for k, v in self.choices.items()] + [""]
            body.append('<div class="choices"><h2>Choices that affect the numbers</h2><ul>')
            body += [f"<li><b>{html.escape(k)}</b>: {_inline(v)}</li>"
                     for k, v in self.choices.items()]
            body.append("</ul></div>")
        for sec in self.sections:
            md += [f"## {sec.title}", ""]
            body.append(f"<h2>{html.escape(sec.title)}</h2>")
            for kind, item in sec.items:
                if kind == "text":
                    md += [item, ""]
                    body.append(f"<p>{_inline(item)}</p>")
                elif kind == "table":
                    df, name, caption = item
                    df.to_csv(root / "tables" / f"{name}.csv", index=False)
                    md += [f"*{caption}* (`tables/{name}.csv`)" if caption else
                           f"`tables/{name}.csv`", "", markdown_table(df), ""]
                    if caption:
                        body.append(f'<p class="caption">{_inline(caption)} '
                                    f'(<a href="tables/{name}.csv">CSV</a>)</p>')
                    body.append(df.to_html(index=False, float_format=lambda v: f"{v:.3f}",
                                           na_rep="", border=0))
                elif kind == "figure":
                    fig, name, caption = item
                    if callable(fig):
                        fig(root / "figures" / f"{name}.png")
                    else:
                        fig.savefig(root / "figures" / f"{name}.png", dpi=110,
                                    bbox_inches="tight")
                        plt.close(fig)
                    md += [f"![{caption or name}](figures/{name}.png)", "", caption, ""]
                    body.append(f'<figure><img src="figures/{name}.png" alt="{html.escape(name)}">'
                                f"<figcaption>{_inline(caption)}</figcaption></figure>")
        return "\n".join(md), "\n".join(body)

    def _html(self, body: str) -> str:
        return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
                f"<title>{html.escape(self.title)}</title><style>{_CSS}</style></head>"
                f"<body>{body}</body></html>")


def _inline(text: str) -> str:
    """Escape text, turning `code` spans into <code>."""
    parts = html.escape(str(text)).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))

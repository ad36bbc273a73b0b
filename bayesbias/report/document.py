"""A self-contained report folder: Markdown and HTML pages, CSV tables, PNG figures.

The report is built in memory from sections and written atomically: everything goes into a
temporary folder next to the target, which then takes the target's place in one step
(Linux ``renameat2(RENAME_EXCHANGE)``; elsewhere two renames with roll-back). Concurrent
writers to one folder: the last one wins and every replaced copy is removed.

Every string that comes from input (word-list names, file names, words) is escaped in the HTML
text and attributes; file names derived from input go through :func:`safe_name` and stay
inside the report folder.
"""

from __future__ import annotations

import ctypes
import errno
import html
import json
import os
import re
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .._atomic import check_output as _check_path
from .._atomic import spreadsheet_safe, temp_prefix, temporary_dir
from ..errors import OutputPathError
from ..models.plots import save_figure
from ..plain import to_plain
from .card import CARD_CSS
from .navigation import NAV_CSS, Slugs, table_html, toc_html, toc_markdown

__all__ = ["Report", "Section", "markdown_table", "check_output", "check_replaceable",
           "safe_name", "unique_names", "MARKER", "REPORT_FILES"]

#: Marker file of a report folder.
MARKER = ".bayesbias-report"
#: What a report folder may hold: top-level files, and sub-folders with their file suffix.
REPORT_FILES = {"files": {MARKER, "index.html", "report.md", "results.json"},
                "folders": {"tables": ".csv", "figures": ".png", "fits": ".nc"}}

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DEVICE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG}


def safe_name(name: str, fallback: str = "wordlist") -> str:
    """Return a file-name stem from user data: ``[A-Za-z0-9._-]`` only, no leading dot, <= 80 chars.

    ``"/tmp/x"`` -> ``"tmp_x"``, ``"../../../x"`` -> ``"x"``; the result never names a folder
    or leaves the report folder.
    """
    stem = _SAFE.sub("_", str(name)).strip("._-")
    stem = re.sub(r"\.{2,}", ".", stem)[:80].strip("._-")
    return stem or fallback


def unique_names(names) -> list[str]:
    """:func:`safe_name` of each name, with ``_2``, ``_3`` ... appended to repeats."""
    out: list[str] = []
    seen: set[str] = set()
    for n in names:
        base = safe_name(n)
        cand, k = base, 2
        while cand.lower() in seen:  # case-insensitive file systems
            cand, k = f"{base}_{k}", k + 1
        seen.add(cand.lower())
        out.append(cand)
    return out


_MARKER_HEADER = "written by bayesbias report"
_MARKER_MAX = 4 << 20


def _marker_text(files) -> str:
    """Return the marker: a header, then every file the report wrote (relative paths)."""
    return "\n".join([_MARKER_HEADER, "files:", *sorted(files)]) + "\n"


def _listed_files(folder: Path) -> set[str] | None:
    """Files an earlier report recorded in its marker; None for an older marker."""
    try:
        with open(folder / MARKER, encoding="utf-8") as fh:
            lines = fh.read(_MARKER_MAX).splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    if len(lines) < 2 or lines[1] != "files:":
        return None
    return set(lines[2:])


def _foreign_entries(folder: Path) -> list[str]:
    """Entries of `folder` that the earlier report did not write (relative paths).

    A report lists in its marker every file it wrote; anything else (a user's
    ``tables/notes.csv``) is foreign. A marker of an older version lists nothing: then
    only the fixed top-level files count as the report's.
    """
    listed = _listed_files(folder)
    bad = []
    for entry in sorted(folder.iterdir()):
        name = entry.name
        if entry.is_symlink():
            bad.append(name)
        elif entry.is_dir() and name in REPORT_FILES["folders"]:
            suffix = REPORT_FILES["folders"][name]
            for p in sorted(entry.iterdir()):
                rel = f"{name}/{p.name}"
                if (p.is_symlink() or not p.is_file() or p.suffix != suffix
                        or listed is None or rel not in listed):
                    bad.append(rel)
        elif not (entry.is_file() and name in REPORT_FILES["files"]
                  and (listed is None or name in listed or name == MARKER)):
            bad.append(name)
    return bad


def check_replaceable(folder) -> None:
    """Raise OutputPathError unless `folder` is absent, empty, or an earlier report.

    An earlier report is a folder with the marker file :data:`MARKER` holding only the
    files a report writes; a user's own file in it makes it irreplaceable.
    """
    folder = Path(folder)
    try:
        st = folder.lstat()
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise OutputPathError(f"{folder}: a path under a file; choose another -o") from None
    if stat.S_ISLNK(st.st_mode):
        raise OutputPathError(f"{folder}: is a symbolic link; give the real folder as -o")
    if not stat.S_ISDIR(st.st_mode):
        raise OutputPathError(f"{folder}: exists and is not a folder; choose another -o")
    if not any(folder.iterdir()):
        return
    if not (folder / MARKER).is_file():
        raise OutputPathError(
            f"{folder}: exists and is not a bayesbias report folder; refusing to replace it "
            "(choose another -o, or remove the folder yourself)")
    foreign = _foreign_entries(folder)
    if foreign:
        older = "" if _listed_files(folder) is not None else (
            " (its marker, from an older bayesbias, does not list the files it wrote)")
        raise OutputPathError(
            f"{folder}: a bayesbias report folder that also holds files the report did not "
            f"write{older}: {', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''}; "
            "refusing to replace it (move them out, or choose another -o)")


def check_output(folder) -> Path:
    """Check, before any work, that a report can be written at `folder`; return it.

    Refuses (:class:`~bayesbias.errors.OutputPathError`) everything
    :func:`bayesbias._atomic.check_output` refuses for a folder (an empty name, ``.``/``..``,
    a path under a file, a non-folder such as a file, device node, FIFO or symbolic link,
    a read-only or full file system), the current folder or one above it, and a folder that
    is not an earlier report (:func:`check_replaceable`).
    """
    text = os.fspath(folder) if folder is not None else ""
    folder = _check_path(text, what="-o", folder=True)
    absolute = Path(os.path.abspath(folder))
    cwd = Path.cwd()
    if absolute == cwd or absolute in cwd.parents:
        raise OutputPathError(f"-o {text!r} is the current folder or one above it; name a "
                              "report folder inside it")
    check_replaceable(folder)
    return folder


def json_values(obj):
    """`obj` as plain JSON values, NaN / infinity as None (:func:`bayesbias.plain.to_plain`).

    JSON has no NaN: an undefined number (the r-hat of a single chain) is written null.
    """
    return to_plain(obj)


def markdown_table(df: pd.DataFrame, floatfmt: str = ".3f") -> str:
    """`df` as a GitHub-flavoured Markdown table (``|`` in cells escaped)."""
    def fmt(v):
        if isinstance(v, float):
            return "" if pd.isna(v) else format(v, floatfmt)
        return _md_cell(v)

    cols = [_md_cell(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(lines)


def _md_cell(v) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


@dataclass
class Section:
    """One section: a heading, then paragraphs, sub-headings, tables, figures, code blocks."""

    title: str
    items: list = field(default_factory=list)

    def heading(self, text: str) -> Section:
        """Add a sub-heading."""
        self.items.append(("heading", text))
        return self

    def text(self, paragraph: str) -> Section:
        """Add a paragraph (plain text; `code` spans allowed)."""
        self.items.append(("text", paragraph))
        return self

    def bullets(self, lines, css: str = "") -> Section:
        """Add a bulleted list (each item plain text with `code` spans)."""
        self.items.append(("bullets", (list(lines), css)))
        return self

    def block(self, markdown: str, html_text: str) -> Section:
        """Add a block given as Markdown and as HTML (already escaped, e.g. a verdict card)."""
        self.items.append(("block", (markdown, html_text)))
        return self

    def pre(self, text: str) -> Section:
        """Add preformatted text (e.g. a model card)."""
        self.items.append(("pre", text))
        return self

    def table(self, df: pd.DataFrame, name: str, caption: str = "",
              shown: pd.DataFrame | None = None) -> Section:
        """Add a table; it is also written as ``tables/<safe name>.csv``.

        `shown`: the rows the page shows when they are a selection (the CSV has all of `df`).
        """
        shown = None if shown is None else shown.reset_index(drop=True)
        self.items.append(("table", (df.reset_index(drop=True), safe_name(name), caption,
                                     shown)))
        return self

    def figure(self, fig, name: str, caption: str = "") -> Section:
        """Add a matplotlib figure, saved as ``figures/<safe name>.png``."""
        self.items.append(("figure", (fig, safe_name(name), caption)))
        return self

    def figure_from(self, draw, name: str, caption: str = "") -> Section:
        """Add a figure drawn by ``draw(path)`` into ``figures/<safe name>.png`` at write time."""
        self.items.append(("figure", (draw, safe_name(name), caption)))
        return self


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;
margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #345;padding-bottom:.2em}h2{margin-top:2em;color:#234}
h3{color:#345}h1,h2,h3,summary{overflow-wrap:anywhere}
table{border-collapse:collapse;margin:.6em 0 1.4em;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#eef2f6}td:first-child,th:first-child{text-align:left}
tr:nth-child(even) td{background:#fafbfc}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #ddd}
figcaption,.caption{font-size:.85em;color:#555}
code{background:#f3f3f3;padding:0 .2em}pre{background:#f6f6f6;padding:.6em;overflow-x:auto}
.choices{background:#f7f9fb;border-left:4px solid #4a7;padding:.5em 1em}
.verdict{background:#fff8e6;border-left:4px solid #c90;padding:.4em 1em}
.tw{overflow-x:auto;max-width:100%}
"""

_RENAME_EXCHANGE, _RENAME_NOREPLACE = 2, 1
_AT_FDCWD = -100


def _renameat2(src: Path, dst: Path, flags: int) -> bool:
    """Linux renameat2; False when the system lacks it, OSError on failure."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    if fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL):  # kernel or file system without it
        return False
    raise OSError(err, os.strerror(err), str(dst))


def _put_in_place(tmp: Path, folder: Path) -> None:
    """Move the finished folder `tmp` onto `folder`; the last concurrent writer wins."""
    for _ in range(100):
        if not os.path.lexists(folder):
            try:
                if _renameat2(tmp, folder, _RENAME_NOREPLACE):
                    return
                os.rename(tmp, folder)  # no renameat2: an empty target may be replaced
                return
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
                continue  # another writer got there first: replace theirs
        try:
            check_replaceable(folder)
        except FileNotFoundError:
            continue  # another writer is moving it: look again
        try:
            if _renameat2(tmp, folder, _RENAME_EXCHANGE):
                shutil.rmtree(tmp, ignore_errors=True)  # tmp now holds the replaced report
                return
        except FileNotFoundError:
            continue  # another writer moved it away meanwhile
        # Fallback: move the old folder aside, put the new one in, roll back on failure.
        with temporary_dir(folder.parent, temp_prefix(folder.name, 24) + "old.") as aside:
            try:
                os.rename(folder, aside / "r")
            except FileNotFoundError:
                continue
            try:
                os.rename(tmp, folder)
            except OSError:
                if not os.path.lexists(folder):
                    os.rename(aside / "r", folder)
                continue
            except BaseException:
                if not os.path.lexists(folder):
                    os.rename(aside / "r", folder)
                raise
        return
    raise OutputPathError(f"{folder}: could not put the report in place (too many concurrent "
                         "writers)")


class Report:
    """A report under construction; :meth:`write` produces the folder."""

    def __init__(self, title: str, intro: str = ""):
        self.title = title
        self.intro = intro
        self.choices: dict[str, str] = {}
        self.sections: list[Section] = []
        #: Sections after the settings (provenance, how to cite).
        self.after: list[Section] = []
        #: Lines under the title: what was measured (Markdown-style inline text).
        self.summary: list[str] = []
        #: Blocks right under the title, before the introduction and the contents: the
        #: answer first (the verdict cards). Each a (Markdown, escaped HTML) pair.
        self.lead: list[tuple[str, str]] = []
        self.data: dict = {}

    def section(self, title: str, first: bool = False, last: bool = False) -> Section:
        """Start a new section.

        At the end; before all others with `first`; after the settings with `last`.
        """
        sec = Section(title)
        if last:
            self.after.append(sec)
        else:
            self.sections.insert(0 if first else len(self.sections), sec)
        return sec

    def choice(self, name: str, value) -> None:
        """Record a choice that affects a number (shown after the results)."""
        self.choices[name] = str(value)

    def write(self, folder, extra_files: dict | None = None) -> Path:
        """Write the report folder atomically; `extra_files` maps names to writer callables.

        An existing folder is replaced only if it is empty or an earlier bayesbias report
        holding only a report's files (:func:`check_replaceable`); anything else is refused.
        """
        folder = check_output(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        with temporary_dir(folder.parent, temp_prefix(folder.name)) as tmp:
            self._write_into(tmp, folder, extra_files)
        return folder

    def _write_into(self, tmp: Path, folder: Path, extra_files: dict | None) -> None:
        """Write the report's files into the new folder `tmp`, then put it at `folder`."""
        try:
            (tmp / MARKER).write_text(_MARKER_HEADER + "\n", encoding="utf-8")
            (tmp / "tables").mkdir()
            (tmp / "figures").mkdir()
            for name, writer in (extra_files or {}).items():
                writer(tmp / name)
            md, body = self._render(tmp)
            (tmp / "report.md").write_text(md, encoding="utf-8")
            (tmp / "index.html").write_text(self._html(body), encoding="utf-8")
            written = [p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file()]
            (tmp / "results.json").write_text(  # undefined values (r-hat of 1 chain): null
                json.dumps(json_values(self.data), indent=2, allow_nan=False),
                encoding="utf-8")
            (tmp / MARKER).write_text(_marker_text([*written, "results.json"]),
                                      encoding="utf-8")
            _put_in_place(tmp, folder)
        except OSError as exc:  # a full disk while writing: name the report, not tmp
            if isinstance(exc, OutputPathError):
                raise OutputPathError(str(exc).replace(str(tmp), str(folder))) from None
            if exc.errno in _DEVICE_ERRORS:
                raise OutputPathError(f"cannot write the report {folder}: "
                                      f"{os.strerror(exc.errno).lower()}") from None
            raise

    def _choices(self, anchor: str = "") -> tuple[list[str], list[str]]:
        if not self.choices:
            return [], []
        md = ["## Settings: choices that affect the numbers", ""]
        md += [f"- **{k}**: {v}" for k, v in self.choices.items()] + [""]
        ident = f' id="{html.escape(anchor, quote=True)}"' if anchor else ""
        body = [f'<div class="choices"{ident}><h2>Settings: choices that affect the numbers'
                "</h2><ul>"]
        body += [f"<li><b>{html.escape(k)}</b>: {_inline(v)}</li>"
                 for k, v in self.choices.items()]
        body.append("</ul></div>")
        return md, body

    def _render(self, root: Path) -> tuple[str, str]:
        slug = Slugs()
        slug(self.title)
        toc, anchors = [], {}
        settings = "Settings: choices that affect the numbers"
        for sec in [*self.sections, settings, *self.after]:
            if sec is settings:
                if self.choices:
                    anchors[settings] = slug(settings)
                    toc.append((anchors[settings], "Settings", []))
                continue
            subs = [(slug(h), h) for kind, h in sec.items if kind == "heading"]
            anchors[id(sec)] = (slug(sec.title), subs)
            toc.append((anchors[id(sec)][0], sec.title, subs))
        md = [f"# {self.title}", ""]
        body = [f"<h1>{html.escape(self.title)}</h1>"]
        for lead_md, lead_html in self.lead:
            md += [lead_md, ""]
            body.append(lead_html)
        md += [self.intro, ""]
        body.append(f"<p>{_inline(self.intro)}</p>")
        if self.summary:
            md += [f"- {line}" for line in self.summary] + [""]
            body.append('<ul class="measured">' + "".join(
                f"<li>{_inline(line)}</li>" for line in self.summary) + "</ul>")
        if len(toc) > 1:
            md += toc_markdown(toc)
            body.append(toc_html(toc))

        def render(sec: Section):
            anchor, subs = anchors[id(sec)]
            subs = iter(subs)
            md.extend([f"## {sec.title}", ""])
            body.append(f'<section id="{html.escape(anchor, quote=True)}"><details open>'
                        f"<summary><h2>{html.escape(sec.title)}</h2></summary>")
            open_sub = False
            for kind, item in sec.items:
                if kind == "heading":
                    md.extend([f"### {item}", ""])
                    if open_sub:
                        body.append("</details>")
                    body.append(f'<details open id="{html.escape(next(subs)[0], quote=True)}">'
                                f"<summary><h3>{html.escape(item)}</h3></summary>")
                    open_sub = True
                elif kind == "text":
                    md.extend([item, ""])
                    body.append(f"<p>{_inline(item)}</p>")
                elif kind == "bullets":
                    lines, css = item
                    md.extend([f"- {line}" for line in lines] + [""])
                    cls = f' class="{html.escape(css, quote=True)}"' if css else ""
                    body.append(f"<ul{cls}>" + "".join(f"<li>{_inline(line)}</li>"
                                                       for line in lines) + "</ul>")
                elif kind == "block":
                    md.extend([item[0], ""])
                    body.append(item[1])
                elif kind == "pre":
                    md.extend(["```", item, "```", ""])
                    body.append(f'<div class="scroll"><pre>{html.escape(item)}</pre></div>')
                elif kind == "table":
                    df, name, caption, shown = item
                    spreadsheet_safe(df).to_csv(root / "tables" / f"{name}.csv", index=False)
                    df = df if shown is None else shown
                    md.extend([f"*{caption}* (`tables/{name}.csv`)" if caption else
                               f"`tables/{name}.csv`", "", markdown_table(df), ""])
                    href = html.escape(f"tables/{name}.csv", quote=True)
                    body.append(table_html(df, f'{_inline(caption)} (<a href="{href}">CSV</a>)'))
                elif kind == "figure":
                    fig, name, caption = item
                    path = root / "figures" / f"{name}.png"
                    if callable(fig):
                        fig(path)
                    else:
                        save_figure(fig, path, "png", dpi=110)
                    md.extend([f"![{_md_cell(caption or name)}](figures/{name}.png)", "",
                               caption, ""])
                    src = html.escape(f"figures/{name}.png", quote=True)
                    body.append(f'<figure><img src="{src}" alt="{html.escape(name, quote=True)}">'
                                f"<figcaption>{_inline(caption)}</figcaption></figure>")
            if open_sub:
                body.append("</details>")
            body.append("</details></section>")

        for sec in self.sections:
            render(sec)
        cmd, cbody = self._choices(anchors.get(settings, ""))
        md += cmd
        body += cbody
        for sec in self.after:
            render(sec)
        return "\n".join(md), "\n".join(body)

    def _html(self, body: str) -> str:
        return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
                f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
                f"<title>{html.escape(self.title)}</title><style>{_CSS}{NAV_CSS}{CARD_CSS}</style></head>"
                f"<body>{body}</body></html>")


def _inline(text: str) -> str:
    """Escape text (also quotes), turning `code` spans into <code> and **x** into <b>."""
    parts = html.escape(str(text), quote=True).split("`")
    out = "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))
    return re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)

"""Forest plots of fits and comparisons, drawn on :class:`matplotlib.figure.Figure` objects.

Nothing here touches pyplot or the user's matplotlib backend: a figure is saved to a file
(PNG, SVG or PDF) or returned, and a returned figure shows itself in a notebook.
"""

from __future__ import annotations

import functools
import sys
import textwrap
from pathlib import Path

import numpy as np

from .._atomic import atomic_path
from ..config import CONNECTIONS
from ..errors import InvalidArgumentError

__all__ = ["plot_fit_forest", "plot_comparison_forest", "forest_axes", "fit_forest_data",
           "fit_forest_figure", "figure_png", "save_figure", "label_width", "new_figure",
           "prepare", "select_units", "FOREST_MAX_UNITS"]

#: Most protected words (or classes) a forest draws; above it, a selection (the table has all).
FOREST_MAX_UNITS = 60

COLOURS = {"associated": "#c0392b", "different": "#e67e22", "human": "#2980b9",
           "none": "#7f8c8d"}


def new_figure(**kwargs):
    """Return a new :class:`matplotlib.figure.Figure` (Agg canvas) outside pyplot.

    The user's backend and pyplot's figure list are untouched: the figure is not shown by
    ``plt.show()`` or a notebook's end of cell, only where it is returned or saved.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = _notebook_figure()(**kwargs)
    FigureCanvasAgg(fig)
    return fig


@functools.cache
def _notebook_figure():
    from matplotlib.figure import Figure

    class NotebookFigure(Figure):
        """A Figure that shows itself as PNG in IPython even where pyplot is not loaded."""

        def _repr_png_(self):
            import io

            buf = io.BytesIO()
            self.savefig(buf, format="png", dpi=100,
                         bbox_inches=None if self.get_layout_engine() else "tight")
            return buf.getvalue()

    NotebookFigure.__module__ = __name__
    NotebookFigure.__qualname__ = "NotebookFigure"  # pickled by name (module __getattr__)
    return NotebookFigure


def __getattr__(name):  # NotebookFigure is built on first use (matplotlib imported late)
    if name == "NotebookFigure":
        return _notebook_figure()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def prepare() -> None:
    """Import matplotlib's Agg canvas and load the default font: a first figure's fixed cost."""
    from matplotlib.font_manager import FontProperties, findfont, get_font

    new_figure()
    get_font(findfont(FontProperties()))


def forest_axes(ax, labels, mean, lower, upper, colours=None, zero: bool = False,
                title: str = "", xlabel: str = ""):
    """Draw a forest (point and interval per row, first row on top) on `ax`."""
    y = np.arange(len(labels))[::-1]
    colours = colours or ["k"] * len(labels)
    # one collection per kind of mark, not two artists per row (the same picture, drawn
    # at a fraction of the cost for a hundred rows)
    ax.hlines(y, np.asarray(lower, dtype=float), np.asarray(upper, dtype=float),
              colors=colours, lw=2, capstyle="projecting")
    ax.scatter(np.asarray(mean, dtype=float), y, c=colours, s=16, zorder=3)
    ax.set_yticks(y, labels, fontsize=7)
    if zero:
        ax.axvline(0, color="k", lw=0.8, ls="--")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.grid(axis="x", alpha=0.3)


#: Figure formats written by suffix; anything else is refused before drawing.
FIGURE_FORMATS = ("png", "svg", "pdf")


def figure_format(path) -> str:
    """Return the format of a figure at `path` from its suffix (png, svg or pdf)."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FIGURE_FORMATS:
        raise InvalidArgumentError(
            f"figure {str(path)!r}: suffix must be one of .{', .'.join(FIGURE_FORMATS)}")
    return suffix


def _save(fig, path) -> Path:
    path = Path(path)
    fmt = figure_format(path)
    with atomic_path(path, suffix=f".{fmt}") as tmp:
        save_figure(fig, tmp, fmt, dpi=120)
    return path


def save_figure(fig, target, fmt: str, dpi: int) -> None:
    """Save `fig` to a path or file object `target` and close it."""
    try:
        # a layout engine already fits the canvas; "tight" would draw the figure twice
        fig.savefig(target, format=fmt, dpi=dpi,
                    bbox_inches=None if fig.get_layout_engine() else "tight")
    finally:
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None:  # a figure made with pyplot (ours are not) leaves its list
            plt.close(fig)


def figure_png(draw, *args, dpi: int = 120) -> bytes:
    """PNG bytes of the figure ``draw(*args)`` returns (the figure is closed)."""
    import io

    buf = io.BytesIO()
    save_figure(draw(*args), buf, "png", dpi)
    return buf.getvalue()


def label_width(fig, labels, size: float) -> float:
    """Width in inches of the widest of `labels` at font `size` (points)."""
    from matplotlib.font_manager import FontProperties

    renderer = fig.canvas.get_renderer()
    prop = FontProperties(size=size)
    widest = max((renderer.get_text_width_height_descent(str(t), prop, ismath=False)[0]
                  for t in labels), default=0.0)
    return widest / fig.dpi


def _three_panels(words, groups, contrasts, unit: str, titles, xlabels, zero_words: bool,
                  zero_groups: bool, suptitle: str = ""):
    """One figure: per-unit forest on the left, group means and contrasts on the right.

    The margins are set from the widest tick label of each column (measured once), not by
    a layout engine, which draws a figure of a hundred labels several times to fit it.
    """
    from matplotlib.layout_engine import PlaceHolderLayoutEngine

    width, height = 11.0, max(4.0, 0.14 * len(words) + 1)
    fig = new_figure(figsize=(width, height))
    word_labels = [f"{u} · {c}" for u, c in zip(words[unit], words["connection"], strict=True)]
    right_labels = [*groups["connection"], *contrasts["contrast"]]
    # inches: tick label + tick and pad on the left of each column; title (and suptitle)
    # above; x tick labels and x label below; between the right panels, both
    left = label_width(fig, word_labels, 7) + 0.2
    gap = label_width(fig, right_labels, 7) + 0.45
    top = 0.75 + 0.2 * suptitle.count("\n") if suptitle else 0.4
    bottom, between = 0.55, 0.95
    plot_w = width - left - gap - 0.2
    gs = fig.add_gridspec(2, 2, width_ratios=[1.3, 1], left=left / width,
                          right=1 - 0.2 / width, top=1 - top / height, bottom=bottom / height,
                          wspace=gap / (plot_w / 2), hspace=between / ((height - top - bottom
                                                                        - between) / 2))
    ax_w = fig.add_subplot(gs[:, 0])
    forest_axes(ax_w, word_labels, words["m"], words["lower"], words["upper"],
                [COLOURS[c] for c in words["connection"]], zero=zero_words, title=titles[0],
                xlabel=xlabels[0])
    ax_g = fig.add_subplot(gs[0, 1])
    forest_axes(ax_g, list(groups["connection"]), groups["m"], groups["lower"],
                groups["upper"], [COLOURS[c] for c in groups["connection"]], zero=zero_groups,
                title=titles[1], xlabel=xlabels[1])
    ax_c = fig.add_subplot(gs[1, 1])
    forest_axes(ax_c, list(contrasts["contrast"]), contrasts["m"], contrasts["lower"],
                contrasts["upper"], zero=True, title=titles[2], xlabel=xlabels[2])
    if suptitle:
        fig.suptitle(suptitle, fontsize=10, y=1 - 0.12 / height, va="top")
    # laid out: a placeholder engine does nothing, and says so to save_figure (no "tight")
    fig.set_layout_engine(PlaceHolderLayoutEngine(adjust_compatible=True,
                                                  colorbar_gridspec=True))
    return fig


def plot_fit_forest(fit, path=None, ci_prob=None, ci_kind=None, contrasts=None):
    """Per-word means (by connection), group-level means and contrasts of `fit`.

    Saved at `path` (PNG, SVG or PDF by suffix; the path is returned), or the
    :class:`~matplotlib.figure.Figure` is returned when `path` is None. `contrasts` as in
    :meth:`~bayesbias.models.Fit.contrasts` (default: the four verdict contrasts and
    ``different - none``; ``"all"`` for the six pairs).
    """
    if path is not None:
        figure_format(path)  # a bad suffix is refused before drawing
    fig = fit_forest_figure(fit_forest_data(fit, ci_prob, ci_kind, contrasts))
    return fig if path is None else _save(fig, path)


def select_units(words, groups, unit: str, max_units: int = FOREST_MAX_UNITS):
    """Return the rows of at most `max_units` units of `words` to draw, and what was left out.

    Up to `max_units` units: all rows and ``""``. Above: two thirds of `max_units` units
    whose mean lies farthest from their connection's group-level mean (`groups`), then the
    units with the widest intervals among the rest (each unit by its most extreme
    connection); the note says which and how many.
    """
    n = words[unit].nunique()
    if n <= max_units:
        return words, ""
    import pandas as pd

    group_mean = dict(zip(groups["connection"].astype(str), groups["mean"], strict=True))
    centre = words["connection"].astype(str).map(group_mean).to_numpy(dtype=float)
    per = pd.DataFrame({unit: words[unit].to_numpy(),
                        "far": np.abs(words["mean"].to_numpy(dtype=float) - centre),
                        "wide": (words["upper"] - words["lower"]).to_numpy(dtype=float)}
                       ).groupby(unit, sort=False).max()
    n_far = 2 * max_units // 3
    far = per["far"].sort_values(ascending=False, kind="stable").index[:n_far]
    wide = per.drop(far)["wide"].sort_values(ascending=False, kind="stable")
    wide = wide.index[:max_units - n_far]
    what = unit.replace("_", " ") + "s"
    note = (f"{len(far) + len(wide)} of {n:,} {what} shown: the {len(far)} whose mean lies "
            f"farthest from their connection's group-level mean and the {len(wide)} with the "
            f"widest intervals among the rest")
    return words.loc[words[unit].isin(far.union(wide))], note


def fit_forest_data(fit, ci_prob=None, ci_kind=None, contrasts=None) -> dict:
    """Return what :func:`fit_forest_figure` draws: the interval tables of `fit`, labels.

    ``"words"`` holds at most :data:`FOREST_MAX_UNITS` units (:func:`select_units`; its
    note in ``"selection"``, empty when all are drawn).
    """
    words = fit.word_means(ci_prob, ci_kind)
    label = words.attrs["interval"]
    order = {c: i for i, c in enumerate(CONNECTIONS)}
    unit = fit.unit_dim
    keys = (["protected_class"] if "protected_class" in words else []) + [unit, "_c"]
    words = words.assign(_c=words["connection"].map(order)).sort_values(keys, kind="stable")
    groups = fit.group_means(ci_prob, ci_kind)
    shown, note = select_units(words, groups, unit)
    return {"words": shown, "selection": note, "groups": groups,
            "contrasts": fit.contrasts(ci_prob, ci_kind, contrasts=contrasts), "unit": unit,
            "label": label,
            "title": f"{fit.spec.name} model, {fit.cells.n_rows} rows"
                     + ("\n" + textwrap.fill(note, 110) if note else "")}


def fit_forest_figure(data: dict):
    """Draw the forest figure of :func:`plot_fit_forest` from :func:`fit_forest_data`."""
    unit, label = data["unit"], data["label"]
    return _three_panels(
        data["words"].rename(columns={"mean": "m"}),
        data["groups"].rename(columns={"mean": "m"}),
        data["contrasts"].rename(columns={"mean": "m"}), unit,
        (f"mean cosine distance per {unit.replace('_', ' ')} ({label})",
         f"group-level mean per connection ({label})", f"contrasts ({label})"),
        ("cosine distance", "cosine distance", "difference in cosine distance"),
        zero_words=False, zero_groups=False, suptitle=data["title"])


def plot_comparison_forest(comparison, path=None):
    """Differences (b - a) of group-level means, contrasts and per-word means.

    Saved at `path` (the path is returned), or the Figure is returned when `path` is None.
    """
    if path is not None:
        figure_format(path)
    g, c, w = comparison.group_means, comparison.contrasts, comparison.word_means
    label = g.attrs["interval"]
    fig = _three_panels(
        w.rename(columns={"diff_mean": "m"}), g.rename(columns={"diff_mean": "m"}),
        c.rename(columns={"diff_mean": "m"}), comparison.unit_dim,
        (f"per-word change ({label})", "change of group-level means", "change of contrasts"),
        ("change in cosine distance", "change in cosine distance", "change in difference"),
        zero_words=True, zero_groups=True,
        # the two labels (often file paths) in the figure's title, not over one panel
        suptitle=f"b - a: {comparison.labels[1]} - {comparison.labels[0]}")
    return fig if path is None else _save(fig, path)

"""Forest plots (matplotlib, Agg backend) of fits and comparisons, saved as PNG."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._atomic import atomic_path
from ..config import CONNECTIONS

__all__ = ["plot_fit_forest", "plot_comparison_forest", "forest_axes"]

COLOURS = {"associated": "#c0392b", "different": "#e67e22", "human": "#2980b9",
           "none": "#7f8c8d"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def forest_axes(ax, labels, mean, lower, upper, colours=None, zero: bool = False,
                title: str = "", xlabel: str = ""):
    """Draw a forest (point and interval per row, first row on top) on `ax`."""
    y = np.arange(len(labels))[::-1]
    colours = colours or ["k"] * len(labels)
    for yi, m, lo, hi, col in zip(y, mean, lower, upper, colours, strict=True):
        ax.plot([lo, hi], [yi, yi], color=col, lw=2)
        ax.plot([m], [yi], "o", color=col, ms=4)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7)
    if zero:
        ax.axvline(0, color="k", lw=0.8, ls="--")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.grid(axis="x", alpha=0.3)


def _save(fig, path) -> Path:
    path = Path(path)
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    _pyplot().close(fig)
    return path


def plot_fit_forest(fit, path, ci_prob=None, ci_kind=None) -> Path:
    """Per-word means (by connection), group-level means and contrasts of `fit`, as PNG."""
    plt = _pyplot()
    words = fit.word_means(ci_prob, ci_kind)
    groups = fit.group_means(ci_prob, ci_kind)
    contrasts = fit.contrasts(ci_prob, ci_kind)
    label = words.attrs["interval"]
    unit = fit.unit_dim
    height = max(4.0, 0.14 * len(words) + 1)
    fig = plt.figure(figsize=(11, height))
    gs = fig.add_gridspec(2, 2, width_ratios=[1.3, 1])
    ax_w = fig.add_subplot(gs[:, 0])
    order = {c: i for i, c in enumerate(CONNECTIONS)}
    words = words.assign(_c=words["connection"].map(order))
    keys = (["protected_class"] if "protected_class" in words else []) + [unit, "_c"]
    words = words.sort_values(keys, kind="stable")
    labels = [f"{u} · {c}" for u, c in zip(words[unit], words["connection"], strict=True)]
    forest_axes(ax_w, labels,
                words["mean"], words["lower"], words["upper"],
                [COLOURS[c] for c in words["connection"]],
                title=f"mean cosine distance per {unit.replace('_', ' ')} ({label})",
                xlabel="cosine distance")
    ax_g = fig.add_subplot(gs[0, 1])
    forest_axes(ax_g, list(groups["connection"]), groups["mean"], groups["lower"],
                groups["upper"], [COLOURS[c] for c in groups["connection"]],
                title=f"group-level mean per connection ({label})", xlabel="cosine distance")
    ax_c = fig.add_subplot(gs[1, 1])
    forest_axes(ax_c, list(contrasts["contrast"]), contrasts["mean"], contrasts["lower"],
                contrasts["upper"], zero=True, title=f"contrasts ({label})",
                xlabel="difference in cosine distance")
    fig.suptitle(f"{fit.spec.name} model, {fit.cells.n_rows} rows", fontsize=10)
    return _save(fig, path)


def plot_comparison_forest(comparison, path) -> Path:
    """Differences (b - a) of group-level means, contrasts and per-word means, as PNG."""
    plt = _pyplot()
    g, c, w = comparison.group_means, comparison.contrasts, comparison.word_means
    label = g.attrs["interval"]
    unit = comparison.unit_dim
    height = max(4.0, 0.14 * len(w) + 1)
    fig = plt.figure(figsize=(11, height))
    gs = fig.add_gridspec(2, 2, width_ratios=[1.3, 1])
    ax_w = fig.add_subplot(gs[:, 0])
    forest_axes(ax_w, [f"{u} · {k}" for u, k in zip(w[unit], w["connection"], strict=True)],
                w["diff_mean"], w["lower"], w["upper"], [COLOURS[k] for k in w["connection"]],
                zero=True, title=f"per-word change, {comparison.labels[1]} - "
                f"{comparison.labels[0]} ({label})", xlabel="change in cosine distance")
    ax_g = fig.add_subplot(gs[0, 1])
    forest_axes(ax_g, list(g["connection"]), g["diff_mean"], g["lower"], g["upper"],
                [COLOURS[k] for k in g["connection"]], zero=True,
                title="change of group-level means", xlabel="change in cosine distance")
    ax_c = fig.add_subplot(gs[1, 1])
    forest_axes(ax_c, list(c["contrast"]), c["diff_mean"], c["lower"], c["upper"], zero=True,
                title="change of contrasts", xlabel="change in difference")
    return _save(fig, path)

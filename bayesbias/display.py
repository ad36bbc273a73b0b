"""How results show themselves in a notebook: one HTML card per result, and short reprs.

Every result class's ``_repr_html_`` and ``__repr__`` call a function here, so the look is
defined once. A card is a title line, a headline, tables (long ones collapsed in a
``<details>`` block) and notes; everything user-supplied is escaped. The functions read only
the result's public attributes and methods.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

__all__ = ["card", "frame_html", "verdict_html", "verdict_repr", "weat_html", "weat_repr",
           "metric_result_html", "metric_result_repr", "metric_table_html", "metric_table_repr",
           "wordlist_html", "wordlist_repr", "comparison_html", "comparison_repr",
           "classifier_html", "classifier_repr", "bbu_html", "bbu_repr", "fairness_html",
           "mac_html", "mac_repr",
           "fit_html", "fit_text"]

#: Tables longer than this are shown collapsed (the first rows stay visible in text reprs).
COLLAPSE_ROWS = 12

_STYLE = ("font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; font-size: 13px; "
          "line-height: 1.4; max-width: 60em")
_MUTED = "color: #666"


def _esc(text) -> str:
    return html.escape(str(text), quote=True)


def _num(x, fmt: str = ".3f") -> str:
    """`x` formatted, or ``n/a`` for None / NaN."""
    if x is None:
        return "n/a"
    try:
        if not np.isfinite(x):
            return "n/a"
    except TypeError:
        return str(x)
    return format(x, fmt)


def frame_html(frame: pd.DataFrame, caption: str = "", digits: int = 4,
               collapse: int = COLLAPSE_ROWS) -> str:
    """Return `frame` as an escaped HTML table, collapsed when longer than `collapse` rows."""
    rounded = frame.copy()
    for c in rounded.columns:
        if pd.api.types.is_float_dtype(rounded[c]):
            rounded[c] = rounded[c].round(digits)
    table = rounded.to_html(index=False, border=0, escape=True, na_rep="",
                            classes="bayesbias-table")
    table = table.replace('<table border="0" class="dataframe bayesbias-table">',
                          '<table class="bayesbias-table" style="border-collapse: collapse; '
                          'font-size: 12px">', 1)
    if len(frame) > collapse:
        label = f"{_esc(caption) or 'table'} ({len(frame)} rows)"
        return f"<details><summary>{label}</summary>{table}</details>"
    head = f'<div style="{_MUTED}">{_esc(caption)}</div>' if caption else ""
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
    out = [f'<div class="bayesbias-result" style="{_STYLE}">',
           f"<div><b>{_esc(title)}</b>"
           + (f' <span style="{_MUTED}">{_esc(subtitle)}</span>' if subtitle else "")
           + "</div>"]
    if headline:
        out.append(f'<div style="margin: 0.3em 0">{_esc(headline)}</div>')
    if lines:
        out.append('<ul style="margin: 0.2em 0; padding-left: 1.4em">'
                   + "".join(f"<li>{_esc(x)}</li>" for x in lines) + "</ul>")
    for caption, frame in tables:
        out.append(frame_html(frame, caption))
    for n in notes:
        out.append(f'<div style="{_MUTED}; font-size: 12px">{_esc(n)}</div>')
    out.append("</div>")
    return "\n".join(out)


# -- verdicts ----------------------------------------------------------------------------
def verdict_html(v) -> str:
    """HTML card of a :class:`~bayesbias.verdicts.Verdict`: the report's verdict card.

    Headline, badge and the figure of the four contrasts (:mod:`bayesbias.report.card`),
    then the contrast table and the rule.
    """
    from .report.card import CARD_CSS, VerdictCard

    frame = v.to_frame().drop(columns="word list")
    return "\n".join([f"<style>{CARD_CSS}</style>",
                      f'<div class="bayesbias-result" style="{_STYLE}">',
                      VerdictCard.from_verdict(v).html(),
                      frame_html(frame, f"contrasts ({v.interval_label})"),
                      f'<div style="{_MUTED}; font-size: 12px">{_esc(v.rule)}</div>', "</div>"])


def verdict_repr(v) -> str:
    """Short repr of a Verdict."""
    return f"<Verdict {v.name!r}: {v.code} ({v.interval_label})>"


# -- comparators ---------------------------------------------------------------------------
def _weat_title(r) -> str:
    n = r.names
    return (f"{r.test} {n.get('X', 'X')} vs {n.get('Y', 'Y')} / {n.get('A', 'A')} vs "
            f"{n.get('B', 'B')}")


def weat_html(r) -> str:
    """HTML card of a :class:`~bayesbias.comparators.weat.WeatResult` (or SEAT result)."""
    s = r.sizes
    lines = [f"statistic {r.statistic:.6f}; {r.p_value_description}"]
    if r.ci is not None:
        lines.append(f"{r.ci_prob:.0%} bootstrap interval for d: [{r.ci[0]:.3f}, "
                     f"{r.ci[1]:.3f}] ({r.n_bootstrap} resamples of targets and attributes)")
    dropped = {k: v for k, v in r.dropped.items() if v}
    notes = [f"dropped (not in the embedding) {k}: {', '.join(v)}" for k, v in dropped.items()]
    if r.source:
        notes.append(f"source: {r.source}")
    return card(_weat_title(r), f"{s['X']}+{s['Y']} targets, {s['A']}+{s['B']} attributes",
                f"effect size d = {r.effect_size:.3f}, {r.p_text}", lines, notes=notes)


def weat_repr(r) -> str:
    """Short repr of a WeatResult."""
    ci = f", {r.ci_prob:.0%} CI [{r.ci[0]:.3f}, {r.ci[1]:.3f}]" if r.ci is not None else ""
    return f"<{type(r).__name__} {_weat_title(r)}: d = {r.effect_size:.3f}, {r.p_text}{ci}>"


def mac_html(r) -> str:
    """HTML card of a :class:`~bayesbias.comparators.mac.MacResult`."""
    wide = r.scores.drop_duplicates(["protected_word", "attribute_class"]).pivot(
        index="protected_word", columns="attribute_class", values="S").reset_index()
    wide.columns.name = None
    return card("MAC", r.source, f"MAC = {r.mac:.4f} (mean cosine distance; "
                f"{r.n_targets} target occurrences x {r.n_attribute_classes} attribute "
                "classes)", tables=[("S(t, A_j) per target and attribute class", wide)])


def mac_repr(r) -> str:
    """Short repr of a MacResult."""
    return (f"<MacResult MAC = {r.mac:.4f} ({r.n_targets} targets x "
            f"{r.n_attribute_classes} attribute classes)>")


def _null_ranges(r) -> list[str]:
    out = []
    for k, d in r.null.items():
        lo = d.get("lower")
        if lo is None or not np.isfinite(lo):
            out.append(f"null {k}: {d.get('note', 'not available')}")
        else:
            out.append(f"null {k}: {r.null_ci_prob:.0%} of {r.null_reps} draws in "
                       f"[{lo:.4f}, {d['upper']:.4f}]")
    return out


def metric_result_html(r) -> str:
    """HTML card of a :class:`~bayesbias.comparators.metrics.MetricResult`."""
    lines = []
    if r.ci:
        lines.append(f"{r.ci_prob:.0%} bootstrap interval [{r.ci[0]:.4f}, {r.ci[1]:.4f}] "
                     f"({r.n_bootstrap} resamples of words)")
    lines += _null_ranges(r)
    return card(f"{r.info.title} ({r.metric})", f"{r.names.get('X')} vs {r.names.get('Y')}",
                f"value = {r.value:.4f} ({r.info.direction})", lines,
                tables=[("per word", r.per_word)] if len(r.per_word) else (),
                notes=[r.info.paper])


def metric_result_repr(r) -> str:
    """Short repr of a MetricResult."""
    ci = f", {r.ci_prob:.0%} CI [{r.ci[0]:.4f}, {r.ci[1]:.4f}]" if r.ci else ""
    return (f"<MetricResult {r.metric} {r.names.get('X')} vs {r.names.get('Y')}: "
            f"{_num(r.value, '.4f')}{ci}>")


def metric_table_html(t) -> str:
    """HTML card of a :class:`~bayesbias.comparators.metrics.MetricTable`."""
    frame = t.to_frame()
    keep = [c for c in frame.columns if c not in ("ci_prob", "ci_kind")]
    pairs = {(r.names.get("X"), r.names.get("Y")) for r in t.results}
    head = (f"{len({r.metric for r in t.results})} metrics on {len(pairs)} pair(s) of classes, "
            "each with a bootstrap interval and the ranges of its nulls")
    return card(f"Embedding-bias metrics: {t.wordlist}", t.source, head,
                tables=[("value, interval and null ranges per pair and metric",
                         frame[keep] if len(frame) else frame)])


def metric_table_repr(t) -> str:
    """Short repr of a MetricTable."""
    return (f"<MetricTable {t.wordlist!r}: {len(t.results)} results "
            f"({len({r.metric for r in t.results})} metrics) on {t.source or '<memory>'}>")


# -- word lists ----------------------------------------------------------------------------
def wordlist_html(wl) -> str:
    """HTML card of a :class:`~bayesbias.wordlists.WordList` (the words, per part)."""
    rows = [{"part": part, "words": len(words), "list": ", ".join(words)}
            for part, words in wl.parts().items()]
    return card(f"Word list: {wl.name}", wl.path or "", wl.description,
                tables=[("words per part", pd.DataFrame(rows))])


def wordlist_repr(wl) -> str:
    """Short repr of a WordList."""
    classes = ", ".join(f"{c.name} {len(c.protected_words)}" for c in wl.classes)
    controls = ", ".join(f"{g} {len(w)}" for g, w in wl.controls.items())
    return (f"<WordList {wl.name!r}: classes {classes}; {len(wl.stereotypes)} stereotypes"
            + (f"; controls {controls}" if controls else "") + ">")


# -- classifier ----------------------------------------------------------------------------
def classifier_html(r) -> str:
    """HTML card of a :class:`~bayesbias.classifier.ClassifierBias`."""
    cols = [c for c in ("metric", "level", "group", "value", "lower", "upper", "ci_kind", "n",
                        "note") if c in r.table]
    metrics = list(dict.fromkeys(r.table["metric"])) if len(r.table) else []
    return card(f"Classifier bias: {r.model}", f"{r.ci_prob:.0%} intervals",
                f"{len(metrics)} metric(s): {', '.join(map(str, metrics))}",
                tables=[("one row per metric, group and interval", r.table[cols])])


def classifier_repr(r) -> str:
    """Short repr of a ClassifierBias."""
    metrics = list(dict.fromkeys(r.table["metric"])) if len(r.table) else []
    return (f"<ClassifierBias {r.model!r}: {len(r.table)} rows, metrics "
            f"{', '.join(map(str, metrics)) or 'none'}; {r.ci_prob:.0%} intervals>")


def bbu_html(r) -> str:
    """HTML card of a :class:`~bayesbias.classifier.BBUResult`."""
    if r.note:
        return card("Bernstein-bounded disparity", "", f"not computed: {r.note}")
    return card("Bernstein-bounded disparity",
                f"n = {r.n}: {r.n_a} + {r.n_b}",
                f"disparity {r.disparity:.4f}, {r.confidence:.0%} Bernstein interval "
                f"[{r.lower:.4f}, {r.upper:.4f}]"
                + ("; claims bias" if r.claims_bias else "; no claim of bias"),
                [f"gamma {r.gamma:.3g} ({r.gamma_kind}), sigma^2 {r.variance:.3g} "
                 f"({r.variance_kind}), C = {r.C:g}"])


def bbu_repr(r) -> str:
    """Short repr of a BBUResult."""
    if r.note:
        return f"<BBUResult not computed: {r.note}>"
    return (f"<BBUResult disparity {r.disparity:.4f}, {r.confidence:.0%} interval "
            f"[{r.lower:.4f}, {r.upper:.4f}], n = {r.n}>")


def fairness_html(r) -> str:
    """HTML card of a :class:`~bayesbias.classifier.FairnessResult`."""
    by = r.by_group.reset_index()
    tables = [("per group", by)]
    if r.pairs is not None:
        tables.append(("per pair", r.pairs))
    ci = (f", {r.ci_prob:.0%} bootstrap interval [{r.lower:.4g}, {r.upper:.4g}]"
          if r.ci_prob and np.isfinite(r.lower) else "")
    return card(f"Fairness metric: {r.name}", f"{len(r.by_group)} groups",
                f"value {_num(r.value, '.4g')}{ci}", tables=tables)


# -- models (attached to Fit and Comparison in models/) ----------------------------------
def comparison_html(c) -> str:
    """HTML card of a :class:`~bayesbias.models.Comparison` (differences b - a)."""
    iv = c.group_means.attrs.get("interval", "")
    cols = ["a_mean", "b_mean", "diff_mean", "lower", "upper", "excludes_zero"]
    a, b = c.labels
    verdicts = c.verdicts or {}
    lines = [f"verdict of {lab}: {verdicts[k].headline}" for k, lab in (("a", a), ("b", b))
             if k in verdicts] + list(verdicts.get("changes", []))
    return card(f"Comparison: {b} - {a}", f"{iv} of the difference; spec hash {c.spec_hash}",
                " ".join(c.summary), lines,
                tables=[(f"contrasts ({iv})", c.contrasts[["contrast", *cols]]),
                        (f"group-level means ({iv})", c.group_means[["connection", *cols]]),
                        ("averages over the shared words", c.list_means[["connection", *cols]]),
                        ("per-word differences", c.word_means)])


def comparison_repr(c) -> str:
    """Short repr of a Comparison."""
    a, b = c.labels
    moved = ", ".join(m for ms in c.moved.values() for m in ms) or "nothing"
    return f"<Comparison {b!r} - {a!r}: moved {moved}>"


def fit_text(fit) -> str:
    """Plain-text summary of a :class:`~bayesbias.models.Fit` (its ``__str__``).

    The model, the data, the diagnostics, the verdict and the contrast table; the full
    report is :meth:`~bayesbias.models.Fit.to_text`.
    """
    from .verdicts import verdict_from_fit

    contrasts = fit.contrasts()
    iv = contrasts.attrs.get("interval", "")
    v = verdict_from_fit(fit)
    cols = ["contrast", "mean", "lower", "upper", "prob_below_zero"]
    return "\n".join([repr(fit), str(fit.diagnostics()), f"verdict: {v.headline}",
                      f"contrasts ({iv}):",
                      contrasts[cols].round(4).to_string(index=False)])


def fit_html(fit) -> str:
    """HTML card of a :class:`~bayesbias.models.Fit` (its ``_repr_html_``)."""
    from .verdicts import verdict_from_fit

    groups = fit.group_means()
    contrasts = fit.contrasts()
    iv = groups.attrs.get("interval", "")
    s = fit.cells.summary()
    post = fit.idata.posterior
    v = verdict_from_fit(fit)
    d = fit.diagnostics()
    unit = fit.unit_dim.replace("_", " ")
    return card(f"Fit: {fit.spec.name} model", f"{fit.spec.family}, hash {fit.spec.hash}",
                f"Verdict: {v.headline}",
                [f"data: {s['rows']} rows, {s['units']} {unit}s",
                 f"sampler {fit.idata.attrs.get('sampler')}: {post.sizes['chain']} chains x "
                 f"{post.sizes['draw']} draws, seed {fit.idata.attrs.get('seed')}",
                 str(d).splitlines()[0] if str(d) else ""],
                tables=[(f"contrasts ({iv})", contrasts.drop(columns=[
                    k for k in ("sd",) if k in contrasts])),
                        (f"group-level mean cosine distance per connection ({iv})", groups),
                        (f"per-{unit} means ({iv})", fit.word_means())],
                notes=[f"warning: {c.message}" for c in fit.checks if not c.ok] + [v.rule])

"""Word drivers: which protected words drive each verdict contrast.

:func:`word_drivers` gives, per protected word (or attribute), the verdict contrasts with
their interval and P(< 0), sorted; :func:`drivers_sentence` says it in one sentence. The
rule itself is :mod:`bayesbias.verdicts`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..config import CONNECTIONS, defaults
from ..errors import InvalidArgumentError
from ..models.embedding_level import word_means
from ..models.families import family
from . import VERDICT_CONTRASTS, _status, contrast_evidence

__all__ = ["word_drivers", "drivers_sentence"]


def word_drivers(fit, ci_prob: float | None = None, ci_kind: str | None = None,
                 rope: float | None = None, pooled: bool = True) -> pd.DataFrame:
    """Per protected word, the verdict contrasts with interval and P(< 0), sorted.

    Rows are sorted by contrast, then by posterior mean (most negative, i.e. the words that
    most support "stereotypes are closer", first). Cells without rows are left out.

    A fit of many embeddings (``embedding_level``) gives one row per word pooled across
    the embeddings (its corpus-level mean, :func:`bayesbias.models.embedding_level.word_means`)
    with ``embeddings``, the number of embeddings whose rows it has; ``pooled=False`` gives
    one row per word in each embedding instead.

    Returns
    -------
    pandas.DataFrame
        ``contrast, <unit>, protected_class, mean, lower, upper, prob_below_zero, status``
        (and ``share_in_rope`` with a ROPE).
    """
    unit = fit.unit_dim
    if pooled and family(fit.spec.family).EMBEDDINGS:
        return _pooled_word_drivers(fit, ci_prob, ci_kind, rope)
    if getattr(fit, "word_draws", True):
        da = fit.word_contrast_draws(VERDICT_CONTRASTS)
        da = da.transpose(unit, "contrast", "chain", "draw")
        vals = da.values.reshape(da.shape[0], da.shape[1], -1)
        ev = contrast_evidence(vals, ci_prob, ci_kind, rope)
        units = list(da[unit].values)
        labels = list(da["contrast"].values)
    else:  # mixture summaries over the hyper-parameter draws (models.word_summaries)
        if rope is not None and not (np.isfinite(rope) and rope >= 0):
            raise InvalidArgumentError(f"rope must be a finite number >= 0, got {rope!r}")
        from ..models.contrasts import contrast_label, contrast_pairs

        pairs = contrast_pairs(VERDICT_CONTRASTS)
        got = fit._word_summary("contrasts", ci_prob, ci_kind, VERDICT_CONTRASTS, rope)
        units = fit.cells.units.tolist()
        labels = [contrast_label(a, b) for a, b in pairs]
        shape = (len(units), len(labels))
        lo, hi = got["ci"][:, 0].reshape(shape), got["ci"][:, 1].reshape(shape)
        ev = {"mean": got["mean"].reshape(shape), "lower": lo, "upper": hi,
              "prob_below_zero": got["prob_below_zero"].reshape(shape),
              "share_in_rope": got["share_in_rope"].reshape(shape),
              "status": _status(lo, hi, 0.0 if rope is None else float(rope))}
    n = np.asarray(fit.cells.n)
    conn = {c: i for i, c in enumerate(CONNECTIONS)}
    cls = dict(zip(fit.cells.units.tolist(), fit.cells.unit_class.tolist(), strict=True))
    position = {u: i for i, u in enumerate(fit.cells.units.tolist())}
    rows = []
    for j, lab in enumerate(labels):
        a, b = lab.split(" - ")
        for i, u in enumerate(units):
            ui = position[u]
            if n[ui, conn[a]] == 0 or n[ui, conn[b]] == 0:
                continue
            row = {"contrast": lab, unit: u, "protected_class": cls[u],
                   "mean": ev["mean"][i, j], "lower": ev["lower"][i, j],
                   "upper": ev["upper"][i, j], "prob_below_zero": ev["prob_below_zero"][i, j],
                   "status": ev["status"][i, j]}
            if rope is not None:
                row["share_in_rope"] = ev["share_in_rope"][i, j]
            rows.append(row)
    frame = pd.DataFrame(rows)
    if unit == "protected_class" and not frame.empty:
        frame = frame.drop(columns="protected_class")
    return _sorted_drivers(frame, labels, ci_prob, ci_kind)


def _pooled_word_drivers(fit, ci_prob, ci_kind, rope) -> pd.DataFrame:
    """:func:`word_drivers` of an embedding-level fit: one row per word across embeddings."""
    from ..models.contrasts import contrast_label

    means = word_means(fit.posterior)
    words = [str(w) for w in means["word"].values]
    vals = means.values  # chain, draw, connection, word
    vals = vals.reshape(-1, *vals.shape[2:]).transpose(2, 1, 0)  # word, connection, draws
    conn = {c: i for i, c in enumerate(CONNECTIONS)}
    labels = [contrast_label(a, b) for a, b in VERDICT_CONTRASTS]
    d = np.stack([vals[:, conn[a]] - vals[:, conn[b]] for a, b in VERDICT_CONTRASTS], axis=1)
    ev = contrast_evidence(d, ci_prob, ci_kind, rope)
    cells = fit.cells
    base = np.asarray(cells.unit_base).astype(str)
    n = np.asarray(cells.n)
    cls = dict(zip(base.tolist(), cells.unit_class.tolist(), strict=False))
    unit = "protected_word"
    rows = []
    for j, (a, b) in enumerate(VERDICT_CONTRASTS):
        both = (n[:, conn[a]] > 0) & (n[:, conn[b]] > 0)
        for i, w in enumerate(words):
            k = int(both[base == w].sum())
            if k == 0:
                continue
            row = {"contrast": labels[j], unit: w, "protected_class": cls[w],
                   "mean": ev["mean"][i, j], "lower": ev["lower"][i, j],
                   "upper": ev["upper"][i, j], "prob_below_zero": ev["prob_below_zero"][i, j],
                   "status": ev["status"][i, j], "embeddings": k}
            if rope is not None:
                row["share_in_rope"] = ev["share_in_rope"][i, j]
            rows.append(row)
    return _sorted_drivers(pd.DataFrame(rows), labels, ci_prob, ci_kind)


def _sorted_drivers(frame, labels, ci_prob, ci_kind) -> pd.DataFrame:
    """Sort driver rows by contrast, then mean; record the interval in ``attrs``."""
    if not frame.empty:
        order = {lab: k for k, lab in enumerate(labels)}
        frame = frame.sort_values(["contrast", "mean"],
                                  key=lambda s: s.map(order) if s.name == "contrast" else s,
                                  kind="stable").reset_index(drop=True)
    ci_prob = defaults.ci_prob if ci_prob is None else ci_prob
    ci_kind = defaults.ci_kind if ci_kind is None else ci_kind
    frame.attrs.update(ci_prob=ci_prob, ci_kind=ci_kind,
                       interval=f"{ci_prob:.0%} {ci_kind.upper()}")
    return frame


def drivers_sentence(drivers: pd.DataFrame, contrast: str, unit: str = "protected_word",
                     k: int = 3) -> str:
    """Which units drive `contrast`: the `k` most negative and the `k` most positive."""
    sub = drivers.loc[drivers["contrast"] == contrast]
    if sub.empty:
        return f"`{contrast}`: no protected word has rows on both sides"
    below = sub.loc[sub["status"] == "below", unit].tolist()
    above = sub.loc[sub["status"] == "above", unit].tolist()
    head = ", ".join(f"{u} ({m:+.3f})" for u, m in zip(sub[unit][:k], sub["mean"][:k],
                                                         strict=True))
    return (f"`{contrast}`: most negative {head}; credibly below 0 for {len(below)} of "
            f"{len(sub)}" + (f" ({', '.join(below[:8])}{', ...' if len(below) > 8 else ''})"
                             if below else "")
            + (f"; credibly above 0 for {', '.join(above[:8])}" if above else ""))

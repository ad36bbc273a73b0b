"""Comparing fits: the same word list on two embeddings, and model variants by LOO."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._xarray import xr
from ..config import CONNECTIONS
from ..display import card
from ..errors import ModelSpecError
from ..verdicts import verdict_changes, verdict_from_fit
from .fit import Fit
from .plots import plot_comparison_forest
from .summaries import resolve_ci, summarise, to_frame
from .word_summaries import refuse

__all__ = ["Comparison", "compare_fits", "loo_compare", "STEREOTYPE", "NEUTRAL"]

#: Connections that carry stereotypes, and the control connections.
STEREOTYPE = ("associated", "different")
NEUTRAL = ("human", "none")


def _paired(a: xr.DataArray, b: xr.DataArray) -> tuple[xr.DataArray, xr.DataArray]:
    """Flatten chains of two independent posteriors and truncate to a common draw count."""
    def flat(x):
        x = x.stack(sample=("chain", "draw")).transpose("sample", ...)
        return x.drop_vars(["sample", "chain", "draw"], errors="ignore")

    fa, fb = flat(a), flat(b)
    n = min(fa.sizes["sample"], fb.sizes["sample"])
    def back(x):
        x = x.isel(sample=slice(0, n)).rename(sample="draw").expand_dims(chain=[0])
        return x.assign_coords(draw=np.arange(n))
    return back(fa), back(fb)


def _diff_table(a: xr.DataArray, b: xr.DataArray, ci_prob, ci_kind) -> pd.DataFrame:
    da, db = _paired(a, b)
    diff = (db - da).rename("difference")
    frame = to_frame(summarise(diff, ci_prob, ci_kind, zero_check=True))
    frame = frame.rename(columns={"mean": "diff_mean", "sd": "diff_sd"})
    dims = [d for d in diff.dims if d not in ("chain", "draw")]
    ma = a.mean(("chain", "draw")).to_dataframe(name="a_mean").reset_index()
    mb = b.mean(("chain", "draw")).to_dataframe(name="b_mean").reset_index()
    attrs = frame.attrs
    frame = frame.merge(ma[dims + ["a_mean"]], on=dims).merge(mb[dims + ["b_mean"]], on=dims)
    frame = frame[dims + ["a_mean", "b_mean", "diff_mean", "diff_sd", "lower", "upper",
                          "excludes_zero"]]
    frame.attrs = attrs
    return frame


@dataclass
class Comparison:
    """Posterior differences ``b - a`` between two fits of the same spec.

    Attributes
    ----------
    group_means, contrasts, word_means : pandas.DataFrame
        ``a_mean, b_mean, diff_mean, diff_sd, lower, upper, excludes_zero`` per connection,
        per contrast and per (unit, connection) present in both fits.
    list_means : pandas.DataFrame
        The same per connection for the average of the cell means over the words both fits
        share: the change for this word list, without the between-word uncertainty of the
        group-level (population) means.
    moved : dict
        ``{"stereotype": [...], "neutral": [...]}``: connections whose group-level mean moved
        (the interval of the difference excludes 0).
    only_neutral_moved : bool
        Control groups moved but neither stereotype connection did, the pattern the paper
        found for debiasing: an apparent change of bias comes from neutral words moving.
    moved_list : dict
        As `moved`, for the averages over the shared words (``list_means``).
    summary : list of str
        Plain-language reading of the above (``verdict`` before: a deprecated alias).
    verdicts : dict
        The control-group verdict of each side (:class:`~bayesbias.verdicts.Verdict`, keys
        ``"a"``, ``"b"``) and ``"changes"``: sentences saying which verdicts changed.
    """

    labels: tuple[str, str]
    unit_dim: str
    spec_hash: str
    group_means: pd.DataFrame
    contrasts: pd.DataFrame
    word_means: pd.DataFrame
    list_means: pd.DataFrame
    moved: dict
    moved_list: dict
    only_neutral_moved: bool
    summary: list[str] = field(default_factory=list)
    verdicts: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

    @property
    def verdict(self) -> list[str]:
        """Return :attr:`summary` (deprecated name: a verdict is the object of ``verdicts``)."""
        import warnings

        warnings.warn("Comparison.verdict is deprecated; use Comparison.summary",
                      DeprecationWarning, stacklevel=2)
        return self.summary

    def to_dict(self) -> dict:
        """Plain JSON data (tables as lists of records, NaN as None)."""
        def rec(df):
            return json.loads(df.to_json(orient="records", double_precision=15))

        verdicts = {k: (v.to_dict() if hasattr(v, "to_dict") else v)
                    for k, v in self.verdicts.items()}
        return json.loads(json.dumps({
            "a": self.labels[0], "b": self.labels[1], "difference": "b - a",
            "verdicts": verdicts,
            "spec_hash": self.spec_hash, "ci_prob": self.group_means.attrs["ci_prob"],
            "ci_kind": self.group_means.attrs["ci_kind"],
            "group_means": rec(self.group_means), "contrasts": rec(self.contrasts),
            "word_means": rec(self.word_means), "list_means": rec(self.list_means),
            "moved": self.moved, "moved_list": self.moved_list,
            "only_neutral_moved": bool(self.only_neutral_moved), "summary": self.summary,
            **self.extra}, default=str))

    def to_frame(self) -> pd.DataFrame:
        """Return the contrast differences as a tidy table (``contrast, a_mean, b_mean, ...``)."""
        return self.contrasts.copy()

    def plot_forest(self, path=None):
        """Forest plot of the differences: saved at `path`, or returned as a Figure."""
        return plot_comparison_forest(self, path)

    def __repr__(self) -> str:
        return _comparison_repr(self)

    def _repr_html_(self) -> str:
        return _comparison_html(self)

    def __str__(self) -> str:
        iv = self.group_means.attrs["interval"]
        cols = ["a_mean", "b_mean", "diff_mean", "lower", "upper", "excludes_zero"]
        lead = []
        if self.verdicts:
            lead = ["verdicts from the control groups:",
                    *(f"  {line}" for line in self.verdicts.get("changes", [])), ""]
        return "\n".join([
            *lead,
            f"{self.labels[1]} - {self.labels[0]} ({iv} of the difference)",
            "group-level means:", self.group_means.set_index("connection")[cols]
            .round(4).to_string(),
            "contrasts:", self.contrasts.set_index("contrast")[cols].round(4).to_string(),
            "averages over the shared words:",
            self.list_means.set_index("connection")[cols].round(4).to_string(),
            *self.summary])


def _movement(table: pd.DataFrame, iv: str, sentence: str) -> tuple[dict, list[str]]:
    """Return the connections of `table` whose difference excludes 0, a sentence for each.

    Returns ``({"stereotype": [...], "neutral": [...]}, sentences)``; `sentence` is formatted
    with the connection ``c`` and ``way`` ("closer to" / "further from").
    """
    rows = table.set_index("connection")
    moved = {"stereotype": [c for c in STEREOTYPE if rows.loc[c, "excludes_zero"]],
             "neutral": [c for c in NEUTRAL if rows.loc[c, "excludes_zero"]]}
    lines = []
    for c in CONNECTIONS:
        r = rows.loc[c]
        if r["excludes_zero"]:
            way = "closer to" if r["diff_mean"] < 0 else "further from"
            lines.append(sentence.format(c=c, way=way)
                         + f" ({r['diff_mean']:+.4f}; {iv} {r['lower']:+.4f} to "
                         f"{r['upper']:+.4f})")
    return moved, lines


def compare_fits(a: Fit, b: Fit, ci_prob=None, ci_kind=None,
                 labels: tuple[str, str] = ("a", "b"), rope: float | None = None) -> Comparison:
    """Posterior differences (b - a) of group-level means, contrasts and per-word means.

    The two posteriors are independent (different data), so draws are paired by position
    after flattening chains.

    Raises
    ------
    ModelSpecError
        If the fits were made with different specs.
    """
    ci_prob, ci_kind = resolve_ci(ci_prob, ci_kind)
    if a.spec.hash != b.spec.hash:
        raise ModelSpecError(f"cannot compare fits of different specs: {a.spec.name!r} "
                             f"(hash {a.spec.hash}) vs {b.spec.name!r} (hash {b.spec.hash})")
    unit = a.unit_dim
    if not (a.word_draws and b.word_draws):
        raise refuse("comparing two fits word by word (compare)")
    groups = _diff_table(a.group_mean_draws(), b.group_mean_draws(), ci_prob, ci_kind)
    contrasts = _diff_table(a.contrast_draws(), b.contrast_draws(), ci_prob, ci_kind)
    common = [u for u in a.cells.units if u in set(b.cells.units)]
    if not common:
        raise ModelSpecError("the two fits share no protected words")
    wa = a.word_mean_draws().sel({unit: common})
    wb = b.word_mean_draws().sel({unit: common})
    words = _diff_table(wa, wb, ci_prob, ci_kind)
    na = a._n().sel({unit: common})
    nb = b._n().sel({unit: common})
    both = ((na > 0) & (nb > 0)).to_dataframe(name="ok").reset_index()
    words = words.merge(both, on=[unit, "connection"])
    words = words.loc[words.pop("ok")].reset_index(drop=True)
    words.attrs = groups.attrs
    # The same words in both fits: the average of their cell means is compared directly,
    # without the between-word (population) uncertainty that the group-level means carry.
    both_da = (na > 0) & (nb > 0)
    avg_a = wa.where(both_da).sum(unit) / both_da.sum(unit)
    avg_b = wb.where(both_da).sum(unit) / both_da.sum(unit)
    list_means = _diff_table(avg_a.rename("list_mean"), avg_b.rename("list_mean"), ci_prob,
                             ci_kind)

    iv = groups.attrs["interval"]
    moved, summary = _movement(groups, iv, "{c} attributes moved {way} the protected words")
    only_neutral = bool(moved["neutral"]) and not moved["stereotype"]
    if only_neutral:
        summary.append("only the control groups (" + ", ".join(moved["neutral"]) + ") moved; "
                       "the stereotype distances did not change credibly, so any change in a "
                       "bias score comes from neutral words moving")
    crow = contrasts.set_index("contrast")
    for lab in ("associated - none", "associated - human", "associated - different"):
        r = crow.loc[lab]
        summary.append(f"bias contrast {lab}: {r['a_mean']:+.4f} -> {r['b_mean']:+.4f} "
                       + ("(credible change)" if r["excludes_zero"] else
                          f"(change within the {iv} includes 0)"))
    if not any(moved.values()):
        summary.insert(0, f"no group-level mean moved credibly ({iv} of every difference "
                          "includes 0)")
    moved_list, lines = _movement(list_means, iv, "for these words, {c} attributes moved "
                                  "{way} them on average")
    summary += lines
    if moved_list["neutral"] and not moved_list["stereotype"]:
        summary.append("for these words, only the controls moved")

    va = verdict_from_fit(a, labels[0], ci_prob, ci_kind, rope)
    vb = verdict_from_fit(b, labels[1], ci_prob, ci_kind, rope)
    verdicts = {"a": va, "b": vb, "changes": verdict_changes(va, vb, tuple(labels))}
    return Comparison(labels=tuple(labels), unit_dim=unit, spec_hash=a.spec.hash,
                      group_means=groups, contrasts=contrasts, word_means=words,
                      list_means=list_means, moved=moved, moved_list=moved_list,
                      only_neutral_moved=only_neutral, summary=summary, verdicts=verdicts)


def loo_compare(fits: dict[str, Fit]):
    """Compare model variants fitted to the same rows by PSIS-LOO (``arviz.compare``)."""
    import arviz_stats as az  # the functions of `arviz`, without arviz-plots (matplotlib)

    rows = {name: f.cells.n_rows for name, f in fits.items()}
    if len(set(rows.values())) != 1:
        raise ModelSpecError(f"LOO comparison needs fits to the same rows; row counts {rows}")
    ys = [f.cells.y for f in fits.values()]
    if not all(np.array_equal(ys[0], y) for y in ys[1:]):
        raise ModelSpecError("LOO comparison needs fits to the same rows; the data differ")
    return az.compare({name: f.with_log_likelihood() for name, f in fits.items()})


# -- how it shows itself (the card kit: bayesbias.display) --------------------


def _comparison_html(c) -> str:
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


def _comparison_repr(c) -> str:
    """Short repr of a Comparison."""
    a, b = c.labels
    moved = ", ".join(m for ms in c.moved.values() for m in ms) or "nothing"
    return f"<Comparison {b!r} - {a!r}: moved {moved}>"

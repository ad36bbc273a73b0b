"""Posterior summaries that describe themselves: means, sds and ArviZ intervals.

The intervals are ArviZ's (``az.hdi`` / ``az.eti``: the same numbers and the same ``ci_bound``
dim, computed by :mod:`bayesbias._stats` without importing ``arviz_stats``); this module adds
the labels: every result carries ``ci_prob`` and ``ci_kind`` attrs.
"""

from __future__ import annotations

import pandas as pd

from .._stats import eti, hdi
from .._xarray import xr
from ..config import defaults, validate_ci_prob
from ..validation import POSTERIOR_CI_KINDS as CI_KINDS  # interval kinds of posterior draws
from ..validation import validate_ci_kind

__all__ = ["CI_KINDS", "interval", "summarise", "to_frame", "resolve_ci"]


SAMPLE_DIMS = ("chain", "draw")


def resolve_ci(ci_prob: float | None, ci_kind: str | None) -> tuple[float, str]:
    """Fill in package defaults and validate ``ci_prob`` and ``ci_kind``."""
    ci_prob = validate_ci_prob(defaults.ci_prob if ci_prob is None else ci_prob)
    ci_kind = validate_ci_kind(defaults.ci_kind if ci_kind is None else ci_kind, CI_KINDS)
    return ci_prob, ci_kind


def interval(draws: xr.DataArray, ci_prob: float | None = None,
             ci_kind: str | None = None) -> xr.DataArray:
    """Highest-density (``"hdi"``) or equal-tailed (``"eti"``) interval over chain and draw.

    Returns ArviZ's result (dim ``ci_bound`` = lower, upper) with ``ci_prob`` and ``ci_kind``
    attrs.
    """
    ci_prob, ci_kind = resolve_ci(ci_prob, ci_kind)
    fn = hdi if ci_kind == "hdi" else eti
    core = list(SAMPLE_DIMS)

    def _over_samples(a):  # the sample dims are the last two: flatten them
        return fn(a.reshape(a.shape[:-len(core)] + (-1,)), ci_prob)

    bound = xr.DataArray(["lower", "upper"], dims=["ci_bound"],
                         attrs={"ci_kind": ci_kind, "ci_prob": ci_prob})
    out = xr.apply_ufunc(_over_samples, draws, input_core_dims=[core],
                         output_core_dims=[["ci_bound"]]).assign_coords({"ci_bound": bound})
    out.attrs.update(ci_prob=ci_prob, ci_kind=ci_kind)
    return out


def summarise(draws: xr.DataArray, ci_prob: float | None = None, ci_kind: str | None = None,
              zero_check: bool = False) -> xr.Dataset:
    """Posterior mean, sd and interval of `draws` (dims ``chain, draw, ...``).

    Parameters
    ----------
    zero_check : bool
        Add ``excludes_zero`` (the interval lies entirely above or below 0), for contrasts.

    Returns
    -------
    xarray.Dataset
        Variables ``mean``, ``sd``, ``ci`` (dim ``ci_bound``) and optionally
        ``excludes_zero``; attrs ``ci_prob`` and ``ci_kind``.
    """
    ci = interval(draws, ci_prob, ci_kind)
    ds = xr.Dataset({"mean": draws.mean(SAMPLE_DIMS), "sd": draws.std(SAMPLE_DIMS), "ci": ci})
    if zero_check:
        lo, hi = ci.sel(ci_bound="lower"), ci.sel(ci_bound="upper")
        ds["excludes_zero"] = (lo > 0) | (hi < 0)
    ds.attrs.update(ci.attrs, name=draws.name or "")
    return ds


def to_frame(summary: xr.Dataset) -> pd.DataFrame:
    """Flatten a :func:`summarise` result to a table (``lower``/``upper`` for the interval).

    The table's attrs carry ``ci_prob`` and ``ci_kind``; the interval columns are also named
    in ``attrs["interval"]`` (e.g. ``"89% HDI"``).
    """
    flat = summary.drop_vars("ci").copy()
    flat["lower"] = summary["ci"].sel(ci_bound="lower", drop=True)
    flat["upper"] = summary["ci"].sel(ci_bound="upper", drop=True)
    order = [v for v in ("mean", "sd", "lower", "upper", "excludes_zero") if v in flat]
    extra = [v for v in flat.data_vars if v not in order]
    flat = flat[order + extra]
    if flat["mean"].ndim == 0:
        frame = pd.DataFrame({k: [v.item()] for k, v in flat.data_vars.items()})
    else:
        frame = flat.to_dataframe().reset_index()
        frame = frame.drop(columns=[c for c in ("ci_bound",) if c in frame.columns])
    ci_prob, ci_kind = summary.attrs["ci_prob"], summary.attrs["ci_kind"]
    frame.attrs.update(ci_prob=ci_prob, ci_kind=ci_kind,
                       interval=f"{ci_prob:.0%} {ci_kind.upper()}")
    return frame


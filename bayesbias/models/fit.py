"""Fitting a model spec to a distance table, diagnostics, derived quantities, save and load."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import sys
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from .._atomic import atomic_write_bytes
from ..config import CONNECTIONS, DEFAULT_MODEL, defaults
from ..errors import DiagnosticsError, InvalidArgumentError, ModelSpecError
from ..progress import progress
from .base import LIKELIHOODS, build_model, model_data, structure_key
from .cells import Cells, cells_from_table, normal_logp_rows
from .spec import ModelSpec, load_spec
from .summaries import SAMPLE_DIMS, interval, resolve_ci, summarise, to_frame

__all__ = [
    "Fit",
    "Diagnostics",
    "SamplerWarning",
    "fit_model",
    "load_fit",
    "CONTRASTS",
    "ALL_CONTRASTS",
    "contrast_pairs",
    "SAMPLERS",
    "RHAT_MAX",
    "ESS_PER_CHAIN_MIN",
    "FitFileError",
    "Check",
]

log = logging.getLogger(__name__)

#: The contrasts reported by default, as (minuend, subtrahend) connections: the four a
#: verdict reads (:data:`bayesbias.verdicts.VERDICT_CONTRASTS`, in its order), then
#: ``different - none``.
CONTRASTS = (("associated", "none"), ("associated", "human"), ("associated", "different"),
             ("human", "none"), ("different", "none"))
#: All six pairwise contrasts between the four connections (``contrasts="all"``).
ALL_CONTRASTS = CONTRASTS + (("different", "human"),)


def contrast_pairs(contrasts=None) -> tuple[tuple[str, str], ...]:
    """Resolve `contrasts` to (minuend, subtrahend) pairs of connections.

    ``None`` gives :data:`CONTRASTS`, ``"all"`` :data:`ALL_CONTRASTS`; otherwise a sequence of
    pairs or of labels such as ``"associated - human"`` (any pair of connections, either
    order).
    """
    if contrasts is None:
        return CONTRASTS
    if isinstance(contrasts, str):
        if contrasts == "all":
            return ALL_CONTRASTS
        contrasts = [contrasts]
    out = []
    for c in contrasts:
        pair = tuple(p.strip() for p in c.split(" - ")) if isinstance(c, str) else tuple(c)
        if len(pair) != 2 or pair[0] == pair[1] or not set(pair) <= set(CONNECTIONS):
            raise InvalidArgumentError(
                f"contrast {c!r}: give two different connections of {', '.join(CONNECTIONS)} "
                "as a pair or as 'a - b' (or contrasts='all')")
        out.append(pair)
    return tuple(out)
SAMPLERS = ("auto", "nutpie", "pymc")
#: Upper limits of the sampler settings (beyond them a fit cannot finish or fit in memory).
MAX_DRAWS = 1_000_000
MAX_CHAINS = 64
#: Memory a fit keeps per draw and chain, measured with nutpie (the most costly sampler
#: here): about 2.2 kB, plus 120 bytes per cell and, for the crossed family, per attribute
#: word (the posterior with its helper variables, the sampler statistics and the copies
#: made while the draws are converted and summarised). Measured from the peak RSS growth
#: between two draw counts: hierarchical, 60 cells: 8.9 kB (predicted 9.4); crossed, 60
#: cells and 29 / 322 attributes: 12.4 / 46.6 kB (predicted 12.9 / 48.0).
BYTES_PER_DRAW = 2_200
BYTES_PER_CELL = 120
BYTES_PER_ATTRIBUTE = 120
#: Largest memory the draws of one fit may take (checked before sampling): 4 GB.
MAX_FIT_BYTES = 4_000_000_000
#: Posterior variables that are the sampler's helpers, not model parameters: kept last.
HELPERS = ("mu_z", "mu_centred", "w", "attribute_z")
#: A fit warns when its 89% posterior predictive interval holds a share of the rows
#: farther than this from 0.89.
PPC_TOLERANCE = 0.05
#: Largest acceptable rank-normalised split r-hat.
RHAT_MAX = 1.01
#: Smallest acceptable bulk and tail ESS per chain (so 400 for 4 chains).
ESS_PER_CHAIN_MIN = 100


class FitFileError(ModelSpecError):
    """A saved fit that cannot be read: damaged, not a fit, or with external data links."""


class SamplerWarning(UserWarning):
    """Sampler diagnostics failed (r-hat, ESS or divergences); the message names parameters."""


@dataclass(frozen=True)
class Check:
    """One model check: ``code`` (e.g. ``"ppc_coverage"``), ``ok`` and a plain message."""

    code: str
    ok: bool
    message: str
    value: float | None = None

    def to_dict(self) -> dict:
        """Plain data for JSON."""
        return {"code": self.code, "ok": self.ok, "message": self.message, "value": self.value}

    def __str__(self) -> str:
        return ("ok: " if self.ok else "warning: ") + self.message


def _model_checks(fit) -> list[Check]:
    out = []
    rows = fit.cells.n.sum(axis=0)
    for a, b in CONTRASTS:
        empty = [c for c in (a, b) if rows[CONNECTIONS.index(c)] == 0]
        if empty:
            out.append(Check("contrast_no_data", False,
                             f"{_contrast_label(a, b)}: no data (no {' or '.join(empty)} rows); "
                             "its interval comes from the prior alone and is not a finding"))
    from .checks import ATTRIBUTE_ALPHA, attribute_dependence, coverage_tolerance, loo_coverage

    share, se = loo_coverage(fit)
    tol = coverage_tolerance(se)
    if abs(share - 0.89) > tol:
        what = ("too narrow: the model understates the spread of the distances, so its "
                "intervals are likely too narrow (overconfident); prefer a model whose checks "
                "pass before reading them" if share < 0.89 else
                "too wide: the model overstates the spread of the distances, so its intervals "
                "are likely conservative")
        out.append(Check("ppc_coverage", False,
                         f"{share:.1%} of the observed distances lie inside their 89% "
                         f"leave-one-out predictive interval (expected 89% ± {tol:.1%}): the "
                         f"predictive intervals are {what}", share))
    else:
        out.append(Check("ppc_coverage", True,
                         f"{share:.1%} of the observed distances lie inside their 89% "
                         f"leave-one-out predictive interval (expected 89% ± {tol:.1%})",
                         share))
    p = attribute_dependence(fit)
    if p is not None and p < ATTRIBUTE_ALPHA:
        out.append(Check("attribute_dependence", False,
                         f"rows that share an attribute word share a shift this model does not "
                         f"have (attribute-dependence check p = {p:.2g}): its group-level "
                         "intervals treat the listed attributes as fixed and are likely too "
                         "narrow; use the crossed model (the default)", p))
    elif p is not None:
        out.append(Check("attribute_dependence", True,
                         f"no sign of attribute-word effects beyond the model's "
                         f"(attribute-dependence check p = {p:.2g})", p))
    return out


def _contrast_label(a: str, b: str) -> str:
    return f"{a} - {b}"


@dataclass
class Diagnostics:
    """Convergence diagnostics of a fit.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per scalar parameter: ``parameter, rhat, ess_bulk, ess_tail``.
    divergences : int
    chains, draws : int
    max_treedepth_hits : int
        Transitions that hit NUTS's maximum tree depth.
    min_bfmi : float or None
        Smallest E-BFMI over chains (below 0.3 is a problem).
    problems : list of str
        Human-readable failures, each naming the parameters at fault (empty when ok).
    """

    table: pd.DataFrame
    divergences: int
    chains: int
    draws: int
    problems: list[str] = field(default_factory=list)
    max_treedepth_hits: int = 0
    min_bfmi: float | None = None

    @property
    def ok(self) -> bool:
        """Whether every check passed."""
        return not self.problems

    def to_dict(self) -> dict:
        """Plain summary for JSON."""
        t = self.table
        return {"ok": self.ok, "problems": self.problems, "divergences": self.divergences,
                "max_treedepth_hits": self.max_treedepth_hits, "min_bfmi": self.min_bfmi,
                "chains": self.chains, "draws": self.draws,
                "max_rhat": float(t["rhat"].max()), "min_ess_bulk": float(t["ess_bulk"].min()),
                "min_ess_tail": float(t["ess_tail"].min())}

    def __str__(self) -> str:
        d = self.to_dict()
        head = (f"diagnostics: max r-hat {d['max_rhat']:.3f}, min bulk ESS "
                f"{d['min_ess_bulk']:.0f}, min tail ESS {d['min_ess_tail']:.0f}, "
                f"{self.divergences} divergence(s) ({self.chains} chains x {self.draws} draws)")
        return head + ("" if self.ok else "\n  " + "\n  ".join(self.problems))


def _differences(draws: xr.DataArray, contrasts) -> xr.DataArray:
    """Differences between connections of `draws`, along a new ``contrast`` dim."""
    parts = [draws.sel(connection=a, drop=True) - draws.sel(connection=b, drop=True)
             for a, b in contrasts]
    labels = [_contrast_label(a, b) for a, b in contrasts]
    return xr.concat(parts, dim="contrast").assign_coords(contrast=labels).rename("contrast")


def _flat_names(da: xr.DataArray) -> list[str]:
    if da.ndim == 0:
        return [str(da.name)]
    idx = pd.MultiIndex.from_product([da[d].values for d in da.dims]) if da.ndim > 1 else \
        [(v,) for v in da[da.dims[0]].values]
    return [f"{da.name}[{', '.join(map(str, i))}]" for i in idx]


def _stacked(posterior: xr.Dataset) -> tuple[list[str], list[np.ndarray]]:
    """Parameter names, and each variable's draws as (chain, draw, n) blocks of one dtype."""
    names, blocks = [], []
    for name, da in posterior.data_vars.items():
        da = da.transpose("chain", "draw", ...)
        names += _flat_names(da.isel(chain=0, draw=0, drop=True).rename(name))
        blocks.append(da.values.reshape(da.shape[0], da.shape[1], int(np.prod(da.shape[2:]))))
    return names, blocks


def _chain_draw_stats(blocks: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Rank-normalised r-hat, bulk and tail ESS of every column of `blocks`, in order.

    One call of ``arviz_stats``' array functions per dtype, with the arguments that
    ``arviz_stats.rhat`` / ``ess`` use on a Dataset (tail ESS at ``rcParams["stats.ci_prob"]``).
    """
    from arviz_base import rcParams
    from arviz_stats.base import array_stats

    from ._rank_diagnostics import covered, rank_diagnostics

    sizes = [b.shape[2] for b in blocks]
    out = {k: np.empty(sum(sizes)) for k in ("rhat", "ess_bulk", "ess_tail")}
    offsets = np.cumsum([0] + sizes)
    by_dtype: dict = {}
    for i, b in enumerate(blocks):
        by_dtype.setdefault(b.dtype, []).append(i)
    for members in by_dtype.values():
        ary = np.concatenate([blocks[i] for i in members], axis=2)
        where = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in members])
        if covered(ary):  # the same numbers, all parameters at once
            for k, v in rank_diagnostics(ary, rcParams["stats.ci_prob"]).items():
                out[k][where] = v
            continue
        out["rhat"][where] = array_stats.rhat(ary, chain_axis=0, draw_axis=1, method="rank")
        out["ess_bulk"][where] = array_stats.ess(ary, chain_axis=0, draw_axis=1, method="bulk")
        out["ess_tail"][where] = array_stats.ess(ary, chain_axis=0, draw_axis=1, method="tail",
                                                 prob=rcParams["stats.ci_prob"])
    return out


#: E-BFMI below this in a chain is a problem (ArviZ's threshold).
BFMI_MIN = 0.3


def _sampler_checks(sample_stats: xr.Dataset | None) -> tuple[int, int, np.ndarray | None,
                                                               list]:
    """Divergences, maximum-tree-depth hits, E-BFMI per chain and the chains below 0.3.

    The definitions of ``arviz_stats.diagnose``: sums over all transitions, and
    ``arviz_stats``' E-BFMI of the ``energy`` per chain.
    """
    if sample_stats is None:
        return 0, 0, None, []
    from arviz_stats.base import array_stats

    def _count(*names) -> int:
        for v in names:
            if v in sample_stats:
                return int(sample_stats[v].values.sum())
        return 0

    div = _count("diverging")
    maxdepth = _count("reached_max_treedepth", "maxdepth_reached")
    if "energy" not in sample_stats:
        return div, maxdepth, None, []
    energy = sample_stats["energy"].transpose("chain", "draw")
    bfmi = array_stats.bfmi(energy.values, chain_axis=-2, draw_axis=-1)
    chain_ids = energy["chain"].values if "chain" in energy.coords else np.arange(len(bfmi))
    return div, maxdepth, bfmi, chain_ids[bfmi < BFMI_MIN].tolist()


def diagnose(posterior: xr.Dataset, sample_stats: xr.Dataset | None,
             rhat_max: float = RHAT_MAX, ess_per_chain_min: float = ESS_PER_CHAIN_MIN) \
        -> Diagnostics:
    """r-hat, bulk/tail ESS of every posterior variable; divergences, tree depth and E-BFMI.

    The numbers ``arviz_stats.rhat`` / ``ess`` give on the posterior Dataset (rank-normalised,
    per scalar parameter) and the sampler checks of ``arviz_stats.diagnose`` (divergences,
    maximum tree depth, E-BFMI < 0.3).
    """
    posterior = posterior[[v for v in posterior.data_vars if v not in HELPERS]]
    names, blocks = _stacked(posterior)
    table = pd.DataFrame({"parameter": names, **_chain_draw_stats(blocks)})
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    div, maxdepth, bfmi_values, failed_chains = _sampler_checks(sample_stats)
    problems = []
    ess_min = ess_per_chain_min * chains

    def _names(mask) -> str:
        bad = table.loc[mask, "parameter"].tolist()
        return ", ".join(bad[:8]) + (f" and {len(bad) - 8} more" if len(bad) > 8 else "")

    # NaN r-hat (a constant parameter) counts as a failure only with more than one chain.
    bad_rhat = (table["rhat"] > rhat_max) | (table["rhat"].isna() & (chains > 1))
    if bad_rhat.any():
        problems.append(f"r-hat > {rhat_max} for {_names(bad_rhat)} (max "
                        f"{table['rhat'].max():.3f})")
    for col, label in (("ess_bulk", "bulk"), ("ess_tail", "tail")):
        bad = table[col] < ess_min
        if bad.any():
            problems.append(f"{label} ESS < {ess_min:.0f} for {_names(bad)} (min "
                            f"{table[col].min():.0f})")
    if div:
        problems.append(f"{div} divergent transition(s): the posterior geometry is hard for "
                        "NUTS; raise the target acceptance rate (--target-accept 0.95) or tune "
                        "longer (--tune)")
    if maxdepth:
        problems.append(f"{maxdepth} transition(s) hit the maximum tree depth: sampling was "
                        "inefficient; tune longer (--tune)")
    if failed_chains:
        vals = ", ".join(f"{v:.2f}" for v in np.ravel(bfmi_values))
        problems.append(f"E-BFMI below {BFMI_MIN} in chain(s) "
                        f"{', '.join(map(str, failed_chains))} ({vals}): the sampler "
                        "explores the energy poorly; tune longer (--tune)")
    bfmi_min = float(np.min(bfmi_values)) if bfmi_values is not None and len(bfmi_values) \
        else None
    return Diagnostics(table=table, divergences=div, chains=chains, draws=draws,
                       problems=problems, max_treedepth_hits=maxdepth, min_bfmi=bfmi_min)


class Fit:
    """A fitted model: posterior draws (``idata``, an ArviZ DataTree), its spec and data.

    Create with :func:`fit_model` or :func:`load_fit`.
    """

    def __init__(self, idata, spec: ModelSpec, cells: Cells):
        self.idata = idata
        self.spec = spec
        self.cells = cells

    def __repr__(self) -> str:
        s = self.cells.summary()
        p = self.idata.posterior
        return (f"<Fit {self.spec.name!r} ({self.spec.family}, hash {self.spec.hash}) on "
                f"{s['rows']} rows, {s['units']} {self.cells.unit_dim.replace('_', ' ')}s; "
                f"{p.sizes['chain']} chains x {p.sizes['draw']} draws>")

    # -- posterior quantities -------------------------------------------------------------
    @property
    def posterior(self) -> xr.Dataset:
        """The posterior group as a Dataset."""
        return self.idata.posterior.to_dataset()

    @property
    def unit_dim(self) -> str:
        """``"protected_word"`` or ``"protected_class"``."""
        return self.cells.unit_dim

    def _n(self) -> xr.DataArray:
        return xr.DataArray(self.cells.n, dims=(self.unit_dim, "connection"),
                            coords={self.unit_dim: self.cells.units.tolist(),
                                    "connection": list(CONNECTIONS)})

    def group_mean_draws(self) -> xr.DataArray:
        """Draws of the group-level mean distance per connection.

        ``mu_bar`` for the hierarchical families; for the others the average of the cell
        means over the units that have rows in that connection.
        """
        from .families import family_module

        post = self.posterior
        var = family_module(self.spec.family).GROUP_MEAN
        if var is not None:
            out = post[var]
        else:
            has = self._n() > 0
            out = post["mu"].where(has).sum(self.unit_dim) / has.sum(self.unit_dim)
        return out.rename("group_mean")

    def contrast_draws(self, contrasts=CONTRASTS) -> xr.DataArray:
        """Draws of differences between group-level means, dim ``contrast``.

        `contrasts`: pairs, ``"a - b"`` labels or ``"all"`` (see :func:`contrast_pairs`).
        """
        return _differences(self.group_mean_draws(), contrast_pairs(contrasts))

    def word_mean_draws(self) -> xr.DataArray:
        """Draws of the cell means ``mu`` (dims ``chain, draw, unit, connection``)."""
        return self.posterior["mu"].rename("mean")

    def word_contrast_draws(self, contrasts=CONTRASTS) -> xr.DataArray:
        """Per-unit differences between connections, dims ``(..., unit, contrast)``."""
        return _differences(self.word_mean_draws(), contrast_pairs(contrasts))

    # -- tables ---------------------------------------------------------------------------
    def group_means(self, ci_prob=None, ci_kind=None, as_xarray: bool = False):
        """Group-level mean distance per connection with its interval.

        Returns a DataFrame (``connection, mean, sd, lower, upper, rows``) or, with
        `as_xarray`, the Dataset of :func:`~bayesbias.models.summaries.summarise`.
        """
        ds = summarise(self.group_mean_draws(), ci_prob, ci_kind)
        ds["rows"] = ("connection", self.cells.n.sum(axis=0))
        return ds if as_xarray else to_frame(ds)

    def contrasts(self, ci_prob=None, ci_kind=None, as_xarray: bool = False,
                  contrasts=None):
        """Differences between group-level means (associated - none, ...), with intervals.

        `contrasts`: ``None`` for :data:`CONTRASTS` (the four verdict contrasts first, then
        ``different - none``), ``"all"`` for the six pairwise ones, or any pairs / ``"a - b"``
        labels. ``excludes_zero`` says whether the interval lies entirely on one side of 0;
        ``prob_below_zero`` is the posterior probability that the contrast is below 0;
        ``has_data`` is False when one side of the contrast has no rows (the interval is
        then the prior's and ``excludes_zero`` is False; see :attr:`checks`).
        """
        pairs = contrast_pairs(contrasts)
        draws = self.contrast_draws(pairs)
        ds = summarise(draws, ci_prob, ci_kind, zero_check=True)
        ds["prob_below_zero"] = (draws < 0).mean(SAMPLE_DIMS)
        rows = self.cells.n.sum(axis=0)
        has = {c: rows[i] > 0 for i, c in enumerate(CONNECTIONS)}
        ok = [bool(has[a] and has[b]) for a, b in pairs]
        ds["has_data"] = ("contrast", ok)
        # A contrast with no rows on one side is the prior's, not a finding.
        ds["excludes_zero"] = ds["excludes_zero"] & ds["has_data"]
        return ds if as_xarray else to_frame(ds)

    def word_means(self, ci_prob=None, ci_kind=None, as_xarray: bool = False):
        """Mean distance per (protected word or class, connection), for cells with rows."""
        ds = summarise(self.word_mean_draws(), ci_prob, ci_kind)
        ds["rows"] = self._n()
        ds = ds.assign_coords(protected_class_of=(self.unit_dim, self.cells.unit_class.tolist()))
        if as_xarray:
            return ds
        frame = to_frame(ds)
        frame = frame.loc[frame["rows"] > 0].reset_index(drop=True)
        if self.unit_dim == "protected_word":
            frame.insert(1, "protected_class", frame.pop("protected_class_of"))
        else:
            frame = frame.drop(columns="protected_class_of")
        return frame

    def word_contrasts(self, ci_prob=None, ci_kind=None, as_xarray: bool = False,
                       contrasts=None):
        """Per-unit contrasts (e.g. associated - none for each protected word)."""
        ds = summarise(self.word_contrast_draws(contrasts), ci_prob, ci_kind, zero_check=True)
        if as_xarray:
            return ds
        frame = to_frame(ds)
        n = self._n()
        ok = [bool(n.sel({self.unit_dim: u, "connection": lab.split(" - ")[0]}) > 0
                   and n.sel({self.unit_dim: u, "connection": lab.split(" - ")[1]}) > 0)
              for u, lab in zip(frame[self.unit_dim], frame["contrast"], strict=True)]
        return frame.loc[ok].reset_index(drop=True)

    def parameters(self, ci_prob=None, ci_kind=None) -> pd.DataFrame:
        """Every named model parameter (not the sampler's auxiliary ones) with intervals."""
        from .families import family_module

        post = self.posterior
        names = family_module(self.spec.family).PARAMETERS
        frames = []
        for v in names:
            f = to_frame(summarise(post[v], ci_prob, ci_kind))
            dims = [d for d in post[v].dims if d not in SAMPLE_DIMS]
            f.insert(0, "parameter", [f"{v}[{', '.join(str(r[d]) for d in dims)}]" if dims
                                      else v for _, r in f.iterrows()])
            frames.append(f.drop(columns=dims))
        out = pd.concat(frames, ignore_index=True)
        out.attrs = frames[0].attrs
        return out

    # -- checks ---------------------------------------------------------------------------
    def diagnostics(self, rhat_max: float = RHAT_MAX,
                    ess_per_chain_min: float = ESS_PER_CHAIN_MIN) -> Diagnostics:
        """r-hat, bulk/tail ESS and divergences (see :func:`diagnose`)."""
        cache = self.__dict__.setdefault("_cache", {})
        key = ("diagnostics", rhat_max, ess_per_chain_min)
        if key not in cache:  # computed once per fit (fit_model, summary, report all ask)
            ss = self.idata["sample_stats"].to_dataset() if "sample_stats" in self.idata \
                else None
            cache[key] = diagnose(self.posterior, ss, rhat_max, ess_per_chain_min)
        return cache[key]

    @property
    def checks(self) -> list[Check]:
        """Model checks a reader must see: contrasts without data, predictive coverage.

        Each :class:`Check` has a ``code``, an ``ok`` flag and a ``message`` saying what it
        means for the intervals. Computed once per fit.
        """
        if getattr(self, "_checks", None) is None:
            self._checks = _model_checks(self)
        return self._checks

    def to_dict(self, ci_prob=None, ci_kind=None) -> dict:
        """:meth:`summary` as plain JSON data (tables as lists of records)."""
        out = {}
        for k, v in self.summary(ci_prob, ci_kind).items():
            if isinstance(v, pd.DataFrame):
                v = json.loads(v.to_json(orient="records"))
            out[k] = v
        return out

    def _draws_flat(self, da: xr.DataArray) -> np.ndarray:
        return da.transpose(*SAMPLE_DIMS, ...).values

    def _cell_sigma(self) -> np.ndarray:
        sig = self._draws_flat(self.posterior["sigma"])
        if sig.ndim == 2:  # single residual sd
            sig = np.repeat(sig[..., None], len(CONNECTIONS), axis=-1)
        return sig  # (chain, draw, connection)

    def _attribute_effects(self) -> np.ndarray | None:
        """Draws of the attribute effects (chain, draw, attribute), or None."""
        if "attribute_effect" not in self.posterior:
            return None
        return self._draws_flat(self.posterior["attribute_effect"])

    def log_likelihood(self, dtype=np.float64) -> xr.DataArray:
        """Pointwise log-likelihood of every row (dims ``chain, draw, row``).

        Computed from the posterior draws after sampling; the sufficient-statistic fit has
        none of its own.
        """
        c = self.cells
        mu = self._draws_flat(self.posterior["mu"])
        sig = self._cell_sigma()
        effect = self._attribute_effects()
        out = np.empty(mu.shape[:2] + (c.n_rows,), dtype=dtype)
        step = max(1, 2_000_000 // max(mu.shape[0] * mu.shape[1], 1))
        for start in range(0, c.n_rows, step):
            sl = slice(start, start + step)
            mean = mu[..., c.unit_idx[sl], c.conn_idx[sl]]
            if effect is not None:
                mean = mean + effect[..., c.attr_idx[sl]]
            out[..., sl] = normal_logp_rows(c.y[sl], mean, sig[..., c.conn_idx[sl]])
        post = self.idata.posterior
        return xr.DataArray(out, dims=("chain", "draw", "row"),
                            coords={"chain": post["chain"].values, "draw": post["draw"].values,
                                    "row": np.arange(c.n_rows)}, name="cosine_distance")

    def with_log_likelihood(self):
        """Return ``idata`` plus a ``log_likelihood`` group (for ``az.loo`` / ``az.compare``)."""
        tree = self.idata.copy()
        tree["log_likelihood"] = xr.DataTree(self.log_likelihood().to_dataset())
        return tree

    def loo(self):
        """PSIS-LOO of the rows through ``arviz.loo``."""
        import arviz as az

        return az.loo(self.with_log_likelihood())

    def ppc(self, probs=(0.89, 0.5), ci_kind: str = "hdi", seed: int | None = None) \
            -> pd.DataFrame:
        """Posterior predictive check: share of observed distances inside predictive intervals.

        The predictive distribution of a row depends only on its cell, so one replicate per
        draw and cell gives every row's predictive interval.

        Returns
        -------
        pandas.DataFrame
            One row per connection plus ``all``: ``rows`` and, for each probability p,
            ``inside_<p>`` (share of rows inside the p predictive interval; ideally about p).
        """
        _, ci_kind = resolve_ci(None, ci_kind)
        seed = defaults.seed if seed is None else seed
        cache = self.__dict__.setdefault("_cache", {})
        key = ("ppc", tuple(probs), ci_kind, seed)
        if key not in cache:
            cache[key] = self._ppc(probs, ci_kind, seed)
        return cache[key].copy()

    def _ppc(self, probs, ci_kind, seed) -> pd.DataFrame:
        c = self.cells
        rng = np.random.default_rng(seed)
        if "attribute_effect" in self.posterior:
            # each row has its own mean (attribute effects): replicate rows on thinned draws
            from .checks import _row_moments

            mean, sd = _row_moments(self)
            rep = xr.DataArray((mean + sd * rng.standard_normal(mean.shape))[None],
                               dims=("chain", "draw", "row"))

            def bounds(p):
                return interval(rep, p, ci_kind).transpose("row", "ci_bound").values
        else:  # a row's predictive depends only on its cell: one replicate per draw and cell
            mu = self._draws_flat(self.posterior["mu"])
            sig = self._cell_sigma()[:, :, None, :]
            rep = xr.DataArray(mu + sig * rng.standard_normal(mu.shape),
                               dims=("chain", "draw", "unit", "connection"))

            def bounds(p):
                ci = interval(rep, p, ci_kind).transpose("unit", "connection", "ci_bound")
                return ci.values[c.unit_idx, c.conn_idx]
        rows = {"connection": list(CONNECTIONS) + ["all"],
                "rows": list(c.n.sum(axis=0)) + [c.n_rows]}
        for p in probs:
            ci = bounds(p)
            inside = (c.y >= ci[:, 0]) & (c.y <= ci[:, 1])
            per = np.bincount(c.conn_idx, weights=inside, minlength=len(CONNECTIONS))
            with np.errstate(invalid="ignore", divide="ignore"):
                share = per / c.n.sum(axis=0)
            rows[f"inside_{p:g}"] = list(share) + [float(inside.mean())]
        frame = pd.DataFrame(rows)
        frame.attrs.update(ci_kind=ci_kind, probs=list(probs))
        return frame

    # -- output ---------------------------------------------------------------------------
    def plot_forest(self, path, ci_prob=None, ci_kind=None):
        """Forest plots per protected word and per connection, saved as PNG at `path`."""
        from .plots import plot_fit_forest

        return plot_fit_forest(self, path, ci_prob, ci_kind)

    def to_text(self, ci_prob=None, ci_kind=None, ppc: bool = True) -> str:
        """Return a plain-text report: model card, data, diagnostics, means, contrasts, PPC."""
        ci_prob, ci_kind = resolve_ci(ci_prob, ci_kind)
        groups = self.group_means(ci_prob, ci_kind)
        contrasts = self.contrasts(ci_prob, ci_kind)
        iv = groups.attrs["interval"]
        cols = ["mean", "sd", "lower", "upper"]
        a = self.idata.attrs
        post = self.idata.posterior
        lines = [self.spec.card(), "",
                 f"data: {self.cells.n_rows} rows, {self.cells.units.size} "
                 f"{self.unit_dim.replace('_', ' ')}s; sampler {a.get('sampler')}, "
                 f"{post.sizes['chain']} chains x {post.sizes['draw']} draws, seed "
                 f"{a.get('seed')}, {float(a.get('wall_time_s', np.nan)):.1f} s",
                 str(self.diagnostics()),
                 *[f"warning: {c.message}" for c in self.checks if not c.ok], "",
                 f"group-level mean cosine distance per connection ({iv}):",
                 groups.set_index("connection")[cols + ["rows"]].round(4).to_string(), "",
                 f"contrasts ({iv}):",
                 contrasts.set_index("contrast")[cols + ["prob_below_zero", "excludes_zero"]]
                 .round(4).to_string()]
        if ppc:
            lines += ["", "posterior predictive check (share of observed distances inside "
                      "the predictive HDI):",
                      self.ppc().set_index("connection").round(3).to_string()]
        return "\n".join(lines)

    def summary(self, ci_prob=None, ci_kind=None) -> dict:
        """Everything a report needs, as plain data (for JSON)."""
        ci_prob, ci_kind = resolve_ci(ci_prob, ci_kind)
        return {
            "model": self.spec.name, "family": self.spec.family, "spec_hash": self.spec.hash,
            "spec": self.spec.to_dict(), "data": self.cells.summary(),
            "ci_prob": ci_prob, "ci_kind": ci_kind,
            "sampler": self.idata.attrs.get("sampler"),
            "diagnostics": self.diagnostics().to_dict(),
            "group_means": self.group_means(ci_prob, ci_kind),
            "contrasts": self.contrasts(ci_prob, ci_kind),
            "word_means": self.word_means(ci_prob, ci_kind),
            "parameters": self.parameters(ci_prob, ci_kind),
            "checks": [c.to_dict() for c in self.checks],
        }

    def save(self, path, loo: bool = False, provenance: dict | None = None) -> Path:
        """Write the fit (posterior, data, spec, spec hash, version) to netCDF, atomically.

        With `loo`, also the pointwise ``log_likelihood`` group, so that ``arviz.loo`` works
        on the loaded file (one value per row and draw: large for big tables). The
        ``provenance`` attribute (JSON) holds `provenance`, by default
        :func:`bayesbias.provenance.fit_provenance` (versions, date, command line, digests).
        """
        from ..provenance import fit_provenance

        path = Path(path)
        tree = self.with_log_likelihood() if loo else self.idata.copy()
        tree.attrs["provenance"] = json.dumps(provenance if provenance is not None
                                              else fit_provenance(self), default=str)
        if "sample_stats" in tree:  # object-typed messages do not serialise
            ss = tree["sample_stats"].to_dataset()
            ss = ss.drop_vars([v for v in ss.data_vars if ss[v].dtype == object])
            tree["sample_stats"] = xr.DataTree(ss)
        with _no_distributed_probe():  # in memory: h5py crashes on a disk that fills up
            data = tree.to_netcdf(engine="h5netcdf")
        atomic_write_bytes(path, data, suffix=".nc")
        return path


@contextlib.contextmanager
def _no_distributed_probe():
    """Keep xarray's netCDF writer from importing ``distributed`` (0.3 s) to ask for a Client.

    ``to_netcdf`` always asks dask which scheduler is active, importing ``distributed``. When
    it is not imported yet and no dask scheduler is configured, no Client can exist and the
    answer is the default threaded scheduler, with or without the import: the file is the same.
    """
    import dask.config

    if "distributed" in sys.modules or dask.config.get("scheduler", None) is not None:
        yield
        return
    sys.modules["distributed"] = None  # an import now raises ImportError: "not installed"
    try:
        yield
    finally:
        if "distributed" in sys.modules and sys.modules["distributed"] is None:
            del sys.modules["distributed"]


def _data_groups(cells: Cells) -> tuple[xr.Dataset, xr.Dataset]:
    unit = cells.unit_dim
    coords = {unit: cells.units.tolist(), "connection": list(CONNECTIONS)}
    constant = xr.Dataset({
        "cell_rows": ((unit, "connection"), cells.n.astype(np.int64)),
        "cell_mean": ((unit, "connection"), cells.mean),
        "cell_ss": ((unit, "connection"), cells.ss),
        "unit_class": ((unit,), cells.unit_class.astype(str)),
        "row_unit": (("row",), cells.unit_idx),
        "row_connection": (("row",), cells.conn_idx),
    }, coords=coords)
    if cells.attr_idx is not None:
        constant["row_attribute"] = ("row",), cells.attr_idx
        constant["attribute_kind"] = ("attribute",), cells.attribute_kind.astype(str)
        constant = constant.assign_coords(attribute=cells.attributes.astype(str))
    observed = xr.Dataset({"cosine_distance": (("row",), cells.y)})
    return constant, observed


def _cells_from_groups(constant: xr.Dataset, observed: xr.Dataset, level: str) -> Cells:
    unit = {"word": "protected_word", "class": "protected_class"}[level]
    return Cells(level=level, units=np.asarray(constant[unit].values, dtype=object),
                 unit_class=np.asarray(constant["unit_class"].values, dtype=object),
                 n=constant["cell_rows"].values.astype(np.int64),
                 mean=constant["cell_mean"].values, ss=constant["cell_ss"].values,
                 y=observed["cosine_distance"].values,
                 unit_idx=constant["row_unit"].values.astype(np.int32),
                 conn_idx=constant["row_connection"].values.astype(np.int32),
                 **({"attributes": np.asarray(constant["attribute"].values, dtype=object),
                     "attribute_kind": np.asarray(constant["attribute_kind"].values,
                                                  dtype=object),
                     "attr_idx": constant["row_attribute"].values.astype(np.int32)}
                    if "row_attribute" in constant else {}))


#: Compiled nutpie models by structure (see :func:`~bayesbias.models.base.structure_key`):
#: fits of the same spec to tables of the same shape reuse the compiled model with new data.
_COMPILED: OrderedDict = OrderedDict()
_COMPILED_MAX = 16


def _sample_nutpie(spec, cells, draws, tune, chains, cores, seed, progressbar, target_accept):
    import nutpie

    key = structure_key(spec, cells)
    if key in _COMPILED:
        _COMPILED.move_to_end(key)
        compiled, noncentred = _COMPILED[key]
        compiled = compiled.with_data(**model_data(spec, cells))
        log.debug("reusing the compiled model for %s", spec.name)
    else:
        pm_model = build_model(spec, cells, "sufficient")
        noncentred = tuple(getattr(pm_model, "noncentred", ()))
        compiled = nutpie.compile_pymc_model(pm_model)
        _COMPILED[key] = (compiled, noncentred)
        if len(_COMPILED) > _COMPILED_MAX:
            _COMPILED.popitem(last=False)
    t0 = time.perf_counter()
    tree = nutpie.sample(compiled, draws=draws, tune=max(tune, 1), chains=chains, cores=cores,
                         seed=seed, save_warmup=False, progress_bar=progressbar,
                         target_accept=target_accept)
    sampling_time = time.perf_counter() - t0
    post = tree.posterior.to_dataset()
    post = post.assign_coords({cells.unit_dim: cells.units.tolist()})
    out = xr.DataTree()
    out["posterior"] = xr.DataTree(post)
    out["sample_stats"] = xr.DataTree(tree.sample_stats.to_dataset())
    out.posterior.attrs.update(tree.posterior.attrs, sampling_time=sampling_time)
    return out, noncentred


def _resolve_sampler(sampler: str) -> str:
    if sampler not in SAMPLERS:
        raise InvalidArgumentError(f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
    if sampler == "auto":
        return "nutpie" if importlib.util.find_spec("nutpie") else "pymc"
    return sampler


def fit_memory(draws: int, chains: int, n_cells: int, n_attributes: int = 0) -> int:
    """Bytes the draws of a fit take in memory (:data:`BYTES_PER_DRAW` and co).

    `n_attributes`: attribute words with an effect of their own (crossed family), else 0.
    """
    per = (BYTES_PER_DRAW + BYTES_PER_CELL * max(int(n_cells), 1)
           + BYTES_PER_ATTRIBUTE * int(n_attributes))
    return int(draws) * int(chains) * per


def _check_settings(draws, tune, chains, target_accept, n_cells: int,
                    n_attributes: int = 0) -> tuple[int, int, int]:
    def _int(value, name, lo, hi):
        try:
            ok = float(value) == int(value)
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok or not lo <= int(value) <= hi:
            raise InvalidArgumentError(f"{name} must be a whole number from {lo} to {hi:,}, "
                                 f"got {value!r}")
        return int(value)

    draws = _int(draws, "draws", 1, MAX_DRAWS)
    tune = _int(tune, "tune", 0, MAX_DRAWS)
    chains = _int(chains, "chains", 1, MAX_CHAINS)
    try:
        ta = float(target_accept)
    except (TypeError, ValueError):
        ta = float("nan")
    if not 0 < ta < 1:
        raise InvalidArgumentError(f"target_accept must be in (0, 1), got {target_accept!r}")
    need = fit_memory(draws, chains, n_cells, n_attributes)
    if need > MAX_FIT_BYTES:
        extra = f" and {n_attributes:,} attribute effects" if n_attributes else ""
        raise InvalidArgumentError(
            f"draws x chains = {draws:,} x {chains} on {n_cells:,} cells{extra} would keep "
            f"about {need / 1e9:.1f} GB of draws in memory (limit {MAX_FIT_BYTES / 1e9:.0f} GB); "
            "use fewer draws or chains")
    return draws, tune, chains


def fit_model(table: pd.DataFrame, model=DEFAULT_MODEL, *, draws: int | None = None,
              tune: int | None = None, chains: int | None = None, cores: int | None = None,
              seed: int | None = None, sampler: str = "auto", likelihood: str = "sufficient",
              strict: bool = False, progressbar: bool = False, target_accept: float = 0.8,
              marginal: bool | None = None, **spec_overrides) -> Fit:
    """Fit a model spec to a distance table.

    Parameters
    ----------
    table : pandas.DataFrame
        A distance table (:mod:`bayesbias.distances`).
    model : str, path-like or ModelSpec
        Shipped spec name (default ``"crossed"``: the paper's ``"hierarchical"`` model plus
        an effect per attribute word; ``"additive"``, ``"separate"``, ...), TOML file or
        spec; see :func:`~bayesbias.models.spec.load_spec`.
    draws, tune, chains, cores : int
        Sampler settings (defaults in ``bayesbias.config.defaults``); `cores` defaults to
        ``min(chains, 2)``. At most :data:`MAX_DRAWS` draws and :data:`MAX_CHAINS` chains.
    seed : int, optional
        Random seed (default ``bayesbias.config.defaults.seed``); equal seeds give equal draws.
    sampler : {"auto", "nutpie", "pymc"}
        ``"auto"`` uses nutpie when installed, PyMC's NUTS otherwise.
    marginal : bool, optional
        Sample with the per-unit cell means (additive: m and co) integrated out exactly and
        draw them afterwards from their exact conditional (same posterior, at most ~12
        parameters, no funnel or ridge, nothing to compile per table). Default: whenever the
        family supports it, the likelihood is ``"sufficient"`` and the sampler is nutpie.
    likelihood : {"sufficient", "rows"}
        Exact per-cell sufficient statistics (default; cost independent of the row count) or
        one term per row.
    target_accept : float
        NUTS target acceptance rate; raise it (e.g. 0.95) if there are divergences.
    strict : bool
        Raise :class:`~bayesbias.errors.DiagnosticsError` if the diagnostics fail (they are
        always checked, and a :class:`SamplerWarning` is issued otherwise).
    **spec_overrides
        Passed to the spec (``level``, ``residual_sd``, ``noncentred``, ``priors``).
    """
    from .. import __version__
    from .marginal import sample_marginal, supports

    spec = load_spec(model, **spec_overrides)
    if likelihood not in LIKELIHOODS:
        raise InvalidArgumentError(
            f"likelihood must be one of {', '.join(LIKELIHOODS)}, got {likelihood!r}")
    cells = cells_from_table(table, spec.level)
    from ..distances import check_spread

    check_spread(table, str(table.attrs.get("source", "distance table")))  # else: no end
    draws = defaults.draws if draws is None else draws
    tune = defaults.tune if tune is None else tune
    chains = defaults.chains if chains is None else chains
    n_attr = (len(cells.attributes) if spec.family == "crossed" and cells.attributes is not None
              else 0)
    draws, tune, chains = _check_settings(draws, tune, chains, target_accept, cells.n.size,
                                          n_attr)
    seed = defaults.seed if seed is None else int(seed)
    sampler = _resolve_sampler(sampler)
    cores = min(chains, 2) if cores is None else cores
    if marginal is None:
        marginal = sampler == "nutpie" and likelihood == "sufficient" and supports(spec)
    elif marginal and not (sampler == "nutpie" and likelihood == "sufficient"
                           and supports(spec)):
        raise ModelSpecError(f"model {spec.name!r}: the cell-marginal sampler needs the "
                             "nutpie sampler, the sufficient likelihood, a family that "
                             "supports it and a working C compiler (its kernels)")
    progress.info("sampling %s with %s%s: %d chains x (%d tune + %d draws), %d rows in %d "
                  "cells", spec.name, sampler, " (cell means integrated out)" if marginal
                  else "", chains, tune, draws, cells.n_rows, int((cells.n > 0).sum()))
    t0 = time.perf_counter()
    if marginal:
        idata = sample_marginal(spec, cells, draws, tune, chains, cores, seed, target_accept)
        noncentred = ()
    elif sampler == "nutpie" and likelihood == "sufficient":
        idata, noncentred = _sample_nutpie(spec, cells, draws, tune, chains, cores, seed,
                                           progressbar, target_accept)
    else:
        import pymc as pm

        pm_model = build_model(spec, cells, likelihood)
        noncentred = getattr(pm_model, "noncentred", ())
        with pm_model:
            idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=cores,
                              random_seed=seed, nuts_sampler=sampler, progressbar=progressbar,
                              compute_convergence_checks=False, target_accept=target_accept)
    wall = time.perf_counter() - t0
    constant, observed = _data_groups(cells)
    tree = xr.DataTree(name=None)
    post = idata.posterior.to_dataset()
    order = [v for v in post.data_vars if v not in HELPERS] + \
        [v for v in post.data_vars if v in HELPERS]
    tree["posterior"] = xr.DataTree(post[order])
    if "sample_stats" in idata:
        tree["sample_stats"] = xr.DataTree(idata.sample_stats.to_dataset())
    tree["constant_data"] = xr.DataTree(constant)
    tree["observed_data"] = xr.DataTree(observed)
    source = {k: str(v) for k, v in table.attrs.items()
              if k in ("source", "topic", "embedding", "wordlist", "repeats_dropped",
                       "sentinel_rows_dropped", "missing")}
    tree.attrs.update(
        bayesbias_version=__version__, spec=spec.to_json(), spec_hash=spec.hash,
        spec_name=spec.name, data_summary=json.dumps(cells.summary()),
        table_attrs=json.dumps(source), sampler=sampler, likelihood=likelihood, seed=seed,
        draws=draws, tune=tune, chains=chains, target_accept=target_accept,
        marginal=int(bool(marginal)),
        wall_time_s=round(wall, 3),
        sampling_time_s=float(idata.posterior.attrs.get("sampling_time", np.nan)),
    )
    if spec.family in ("hierarchical", "crossed") and not marginal:
        tree.attrs["noncentred"] = json.dumps(list(noncentred))
    if "attribute_noncentred" in idata.posterior.attrs:
        tree.attrs["attribute_noncentred"] = int(idata.posterior.attrs["attribute_noncentred"])
    fit = Fit(tree, spec, cells)
    log.info("fitted %s in %.1f s", spec.name, wall)
    check(fit, strict)
    for c in fit.checks:
        if not c.ok:
            log.warning("model %s: %s", spec.name, c.message)
    return fit


def check(fit: Fit, strict: bool = False) -> Diagnostics:
    """Run the diagnostics; warn naming the parameters at fault, or raise if `strict`."""
    diag = fit.diagnostics()
    if not diag.ok:
        msg = f"model {fit.spec.name!r}: " + "; ".join(diag.problems)
        if strict:
            raise DiagnosticsError(msg)
        warnings.warn(msg, SamplerWarning, stacklevel=3)
        log.warning("%s", msg)
    return diag


def load_fit(path, spec=None) -> Fit:
    """Load a fit saved with :meth:`Fit.save`.

    Parameters
    ----------
    spec : str, path-like or ModelSpec, optional
        The spec the fit must have been made with; a mismatch raises
        :class:`~bayesbias.errors.ModelSpecError`. Without it, the stored spec is used after
        checking that it still hashes to the stored hash.
    """
    path = Path(path)
    if not path.is_file():
        raise FitFileError(f"{path}: no such fit file")
    _refuse_external(path)
    try:
        tree = xr.open_datatree(path)
        tree.load()
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise FitFileError(f"{path}: not a readable fit file: {exc}") from None
    attrs = tree.attrs
    if "spec" not in attrs or "spec_hash" not in attrs:
        raise FitFileError(f"{path}: not a bayesbias fit (no spec in its attributes)")
    try:
        stored = ModelSpec.from_dict(json.loads(attrs["spec"]), f"{path} (stored spec)")
    except (json.JSONDecodeError, TypeError, AttributeError) as exc:
        raise FitFileError(f"{path}: damaged fit file (its stored spec is not valid: "
                           f"{exc})") from None
    if stored.hash != attrs["spec_hash"]:
        raise FitFileError(f"{path}: stored spec hashes to {stored.hash}, file says "
                           f"{attrs['spec_hash']}; the file was altered")
    if spec is not None:
        wanted = load_spec(spec)
        if wanted.hash != stored.hash:
            raise ModelSpecError(
                f"{path}: fitted with spec {stored.name!r} (hash {stored.hash}), which does not "
                f"match the requested spec {wanted.name!r} (hash {wanted.hash})")
    need = {"posterior": ("mu",), "constant_data": ("cell_rows", "cell_mean", "cell_ss",
                                                    "unit_class", "row_unit", "row_connection"),
            "observed_data": ("cosine_distance",)}
    for group, names in need.items():
        if group not in tree.children or any(n not in tree[group].data_vars for n in names):
            raise FitFileError(f"{path}: damaged fit file (group {group!r} lacks "
                               f"{', '.join(names)})")
    try:
        cells = _cells_from_groups(tree["constant_data"].to_dataset(),
                                   tree["observed_data"].to_dataset(), stored.level)
        fit = Fit(tree, stored, cells)
        fit.group_mean_draws()
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        raise FitFileError(f"{path}: damaged fit file: {exc}") from None
    return fit


def _refuse_external(path: Path) -> None:
    """Raise FitFileError if an HDF5 file has external storage, virtual datasets or links.

    Such a file makes a reader pull bytes from other files (e.g. ``/etc/passwd``), which
    :meth:`Fit.save` would then copy. Files that are not HDF5 (netCDF-3) have no links.
    """
    try:
        import h5py
    except ImportError:  # pragma: no cover - h5netcdf/h5py come with the netCDF extra
        return
    try:
        if not h5py.is_hdf5(path):
            return
        f = h5py.File(path, "r")
    except OSError as exc:
        raise FitFileError(f"{path}: not a readable fit file: {exc}") from None
    bad = []

    def walk(group, prefix):
        for key in group.keys():
            name = f"{prefix}/{key}"
            link = group.get(key, getlink=True)
            if isinstance(link, (h5py.ExternalLink, h5py.SoftLink)):
                bad.append(f"{name} (a link)")
                continue
            obj = group[key]
            if isinstance(obj, h5py.Group):
                walk(obj, name)
            elif obj.is_virtual:
                bad.append(f"{name} (a virtual dataset)")
            elif obj.id.get_create_plist().get_external_count() > 0:
                bad.append(f"{name} (external storage)")

    with f:
        walk(f, "")
    if bad:
        raise FitFileError(f"{path}: refused: the file reads data from elsewhere through "
                           f"{', '.join(bad[:3])}; a saved fit never does")

"""Simulation-based calibration (Talts et al. 2018) of the model specs.

Each replication draws every parameter from the spec's priors, simulates a distance table
shaped like a shipped one (:func:`bayesbias.testing.simulate_table`), fits the same spec
and records the rank of the true value among L thinned posterior draws, for the
group-level means, the contrasts and the sds. If the fitting is correct, each rank is
uniform on 0..L. Uniformity is tested per quantity with a chi-square test on bins of
(nearly) equal width (Talts et al.'s histogram check); rank histograms show it.

Fits are full NUTS fits of :func:`bayesbias.models.fit_model` (``method="nuts"``); for the
hierarchical spec, ``method="exact"`` calibrates the exact marginal posterior of
:mod:`bayesbias.studies.exact_posterior` used by design studies and sensitivity refits.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import chdtrc

from .._atomic import atomic_path
from .._xarray import xr
from ..config import CONNECTIONS, defaults
from ..errors import InputDataError, InvalidArgumentError
from ..models import cells_from_table, fit_model, load_spec
from ..models.cells import ATTRIBUTE_KINDS
from ..models.families import family
from ..models.plots import new_figure
from ..parallel import chunks, run_tasks
from ..testing import simulate_table
from .exact_posterior import _check, marginal_posterior

__all__ = ["SBCResult", "sbc", "SHAPES", "DEFAULT_MODELS", "rank_bins", "rank_edges"]

log = logging.getLogger(__name__)

#: Table shapes of the shipped lists (classes, words per class, stereotypes per class,
#: human and neutral controls); religion by default.
SHAPES = {
    "religion": dict(n_classes=3, words_per_class=5, stereotypes_per_class=4, n_human=85,
                     n_none=226),
    "small": dict(n_classes=2, words_per_class=4, stereotypes_per_class=3, n_human=10,
                  n_none=20),
}
#: The specs calibrated by the notebook (those shipped in this build).
DEFAULT_MODELS = ("hierarchical", "additive", "separate", "hierarchical_authors")
_CONTRASTS = (("associated", "none"), ("associated", "human"), ("associated", "different"),
              ("human", "none"))


def _quantities(group: np.ndarray, sds: dict) -> dict[str, np.ndarray]:
    """Named scalar quantities from group means (..., 4) and sd arrays (..., 4) or (...)."""
    out = {f"group_mean[{c}]": group[..., i] for i, c in enumerate(CONNECTIONS)}
    idx = {c: i for i, c in enumerate(CONNECTIONS)}
    for a, b in _CONTRASTS:
        out[f"contrast[{a} - {b}]"] = group[..., idx[a]] - group[..., idx[b]]
    for name, v in sds.items():
        if name == "omega" and v.ndim and v.shape[-1] == len(ATTRIBUTE_KINDS):
            # crossed family with attribute_sd = "per_kind": one sd per attribute kind
            out.update({f"{name}[{k}]": v[..., i] for i, k in enumerate(ATTRIBUTE_KINDS)})
        elif v.ndim and v.shape[-1] == len(CONNECTIONS):
            out.update({f"{name}[{c}]": v[..., i] for i, c in enumerate(CONNECTIONS)})
        else:
            out[name] = v
    return out


#: Scale parameters whose ranks are checked when the family has them (omega: crossed).
_SDS = ("tau", "sigma", "omega")


def _truth(truth: xr.Dataset) -> dict[str, np.ndarray]:
    sds = {k: truth[k].values for k in _SDS if k in truth}
    return _quantities(truth["group_mean"].transpose("connection").values, sds)


def _posterior(fit, n_keep: int) -> dict[str, np.ndarray]:
    group = fit.group_mean_draws().transpose("chain", "draw", "connection").values
    group = group.reshape(-1, len(CONNECTIONS))
    post = fit.posterior
    sds = {}
    for k in _SDS:
        if k in post:
            v = post[k].values
            sds[k] = v.reshape((-1,) + v.shape[2:])
    q = _quantities(group, sds)
    step = max(1, group.shape[0] // n_keep)
    return {k: v[::step][:n_keep] for k, v in q.items()}


def _exact_posterior(table, spec, n_keep, rng):
    cells = cells_from_table(table, spec.level)
    d = marginal_posterior(cells.n, cells.mean, cells.ss, spec).draw(rng, n_keep)
    return _quantities(d["mu_bar"][0], {"tau": d["tau"][0], "sigma": d["sigma"][0]})


def _sbc_chunk(model, n_reps, shape, method, n_keep, fit_kwargs, rng):
    """Ranks (n_reps, quantities) of one chunk of SBC replications."""
    spec = load_spec(model)
    fit_spec = spec
    if (family(spec.family).NONCENTRED and hasattr(family(spec.family), "structure_key")
            and spec.noncentred == "auto"):
        # "auto" chooses the parametrisation from each table, so each replication would
        # compile its own model (the family's structure key); a fixed choice has the same
        # posterior and compiles once (a row-level model compiles per table anyway)
        fit_spec = spec.replace(noncentred=["associated", "different"])
    ranks, names, diverged = [], None, []
    for _ in range(n_reps):
        table, truth = simulate_table(spec, params="prior", seed=int(rng.integers(2**31)),
                                      **shape)
        true = _truth(truth)
        if method == "exact":
            post = _exact_posterior(table, spec, n_keep, rng)
            diverged.append(0)
        else:
            # sampler warnings are counted below and each fit's own progress would bury
            # the replication count: both are silenced while the replication fits
            quiet = [logging.getLogger(n) for n in ("bayesbias.models.fit", "bayesbias.progress")]
            levels = [q.level for q in quiet]
            for q in quiet:
                q.setLevel(logging.ERROR)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fit = fit_model(table, fit_spec, seed=int(rng.integers(2**31)),
                                    **fit_kwargs)
            finally:
                for q, level in zip(quiet, levels, strict=True):
                    q.setLevel(level)
            post = _posterior(fit, n_keep)
            ss = fit.idata["sample_stats"] if "sample_stats" in fit.idata else None
            diverged.append(int(ss["diverging"].sum()) if ss is not None
                            and "diverging" in ss else 0)
        names = names or list(true)
        # ties (e.g. a quantity that is constant) are broken at random, as Talts et al. do
        ranks.append([int((post[k] < true[k]).sum() + rng.integers(
            0, (post[k] == true[k]).sum() + 1)) for k in names])
    return {"ranks": np.asarray(ranks), "names": names, "divergent": np.asarray(diverged)}



#: Expected replications per bin below which the chi-square test of uniformity is unreliable.
MIN_PER_BIN = 5


def rank_bins(bins: int, n_keep: int, replications: int, warn: bool = False) -> int:
    """Return the number of bins for rank histograms.

    At most ``n_keep + 1``, and few enough that each expects :data:`MIN_PER_BIN`
    replications (the chi-square's rule); with `warn`, say so when fewer bins than asked
    are used because replications are too few.
    """
    bins = max(1, min(int(bins), n_keep + 1))
    enough = max(2, replications // MIN_PER_BIN)
    if bins > enough:
        if warn:
            msg = (f"only {replications} replications: the chi-square test of uniform ranks "
                   f"needs about {MIN_PER_BIN} per bin, so {enough} bins are used instead of "
                   f"{bins}; run more --reps for a finer check")
            warnings.warn(msg, UserWarning, stacklevel=3)
            log.warning("%s", msg)
        bins = enough
    return bins


def rank_edges(bins: int, n_keep: int) -> np.ndarray:
    """Integer bin edges for ranks 0..`n_keep`: `bins` bins of equal width within one rank.

    Bin k holds the ranks ``edges[k] <= r < edges[k + 1]``, so ``np.diff(edges)`` is the
    number of possible ranks in each bin and ``np.diff(edges) / (n_keep + 1)`` its
    probability under uniform ranks. (Edges at non-integers, e.g. 20 bins of 2.5 ranks
    among 50, make bins of 3 and 2 ranks whose widths must be counted, not assumed.)
    """
    bins = max(1, min(int(bins), n_keep + 1))
    return np.round(np.linspace(0, n_keep + 1, bins + 1))


@dataclass
class SBCResult:
    """Ranks of the true values among the posterior draws, per replication and quantity.

    Attributes
    ----------
    ranks : xarray.DataArray
        Dims ``(replication, quantity)``, values in 0..``n_keep``.
    n_keep : int
        Posterior draws each rank is taken among (L).
    divergent : ndarray
        Divergent transitions per replication (NUTS).
    """

    model: str
    ranks: xr.DataArray
    n_keep: int
    divergent: np.ndarray
    settings: dict = field(default_factory=dict)
    complete: bool = True

    def uniformity(self, bins: int = 20) -> pd.DataFrame:
        """Chi-square test of uniform ranks per quantity (bins of :func:`rank_edges`).

        Returns ``quantity, chi2, df, p_value``; the attrs hold the smallest p and the
        Bonferroni-adjusted one (min p times the number of quantities).
        """
        L = self.n_keep
        bins = rank_bins(bins, L, int(self.ranks.sizes["replication"]))
        edges = rank_edges(bins, L)
        expected_share = np.diff(edges) / (L + 1)  # possible ranks per bin / all of them
        rows = []
        for q in self.ranks.quantity.values:
            r = self.ranks.sel(quantity=q).values
            counts, _ = np.histogram(r, bins=edges)
            expected = r.size * expected_share
            chi2 = float(((counts - expected) ** 2 / expected).sum())
            rows.append({"quantity": str(q), "chi2": chi2, "df": bins - 1,
                         "p_value": float(chdtrc(bins - 1, chi2))})
        out = pd.DataFrame(rows)
        pmin = float(out["p_value"].min())
        out.attrs.update(min_p=pmin, bonferroni_p=min(1.0, pmin * len(out)), bins=bins,
                         replications=int(self.ranks.sizes["replication"]))
        return out

    def to_dict(self) -> dict:
        """Plain data for JSON."""
        u = self.uniformity()
        return {"model": self.model, "settings": self.settings, "complete": self.complete,
                "replications": int(self.ranks.sizes["replication"]), "n_keep": self.n_keep,
                "fits_with_divergences": int((self.divergent > 0).sum()),
                "uniformity": u.to_dict(orient="records"),
                "min_p": u.attrs["min_p"], "bonferroni_p": u.attrs["bonferroni_p"],
                "ranks": {str(q): self.ranks.sel(quantity=q).values.tolist()
                          for q in self.ranks.quantity.values}}

    def __str__(self) -> str:
        u = self.uniformity()
        s = self.settings
        return "\n".join([
            f"SBC of {self.model!r} ({s.get('method')}; {u.attrs['replications']} "
            f"replications, ranks among {self.n_keep} draws, tables shaped like "
            f"{s.get('shape')}; {int((self.divergent > 0).sum())} fits with divergences)",
            f"uniformity (chi-square, {u.attrs['bins']} bins): smallest p "
            f"{u.attrs['min_p']:.3f}, Bonferroni-adjusted {u.attrs['bonferroni_p']:.3f}",
            u.set_index("quantity").round(3).to_string()])

    def plot(self, path=None, bins: int = 20, ax=None):
        """Rank histograms with the 99% band of a uniform histogram.

        Parameters
        ----------
        path : path-like, optional
            Write a PNG there and return the path; otherwise return the Figure.
        bins : int
            Histogram bins (fewer when the replications are too few for them).
        ax : matplotlib Axes or array of Axes, optional
            Draw on these, one per quantity in ``ranks.quantity`` order, instead of on a
            new figure.
        """
        qs = list(self.ranks.quantity.values)
        if ax is None:
            ncol = 4
            nrow = int(np.ceil(len(qs) / ncol))
            fig = new_figure(figsize=(11, 2.1 * nrow))
            axes = fig.subplots(nrow, ncol, squeeze=False)
        else:
            axes = np.atleast_2d(np.asarray(ax, dtype=object))
            if axes.size < len(qs):
                raise InvalidArgumentError(
                    f"ax: {len(qs)} axes needed (one per quantity: {', '.join(map(str, qs))}), "
                    f"got {axes.size}")
            fig = axes.flat[0].figure
        L = self.n_keep
        R = self.ranks.sizes["replication"]
        bins = rank_bins(bins, L, R, warn=True)
        edges = rank_edges(bins, L)
        from scipy import stats  # here: the report imports this module, not this plot

        lo, hi = stats.binom.ppf([[0.005], [0.995]], R, np.diff(edges) / (L + 1))
        for ax_, q in zip(axes.ravel(), qs, strict=False):
            ax_.stairs(hi, edges, baseline=lo, fill=True, color="0.88")
            ax_.hist(self.ranks.sel(quantity=q).values, bins=edges, color="C0")
            ax_.set_title(str(q), fontsize=8)
            ax_.tick_params(labelsize=7)
        for row in axes:
            row[0].set_ylabel("replications", fontsize=8)
        for ax_ in axes.ravel()[len(qs):] if ax is None else ():
            ax_.axis("off")
        title = (f"SBC rank histograms: {self.model} ({R} replications, {bins} bins; "
                 "grey: 99% band for uniform ranks)")
        if ax is None:
            fig.suptitle(title, fontsize=10)
            fig.tight_layout()
        else:  # the caller's figure: its layout and title are the caller's
            axes.flat[0].set_title(f"{qs[0]} ({R} replications, {bins} bins)", fontsize=8)
        if path is not None:
            with atomic_path(path, suffix=".png") as tmp:
                fig.savefig(tmp, dpi=110, format="png")
            return path
        return fig


def sbc(model="hierarchical", *, reps: int = 500, shape="religion", method: str = "nuts",
        n_keep: int = 99, draws: int = 500, tune: int = 500, chains: int = 2,
        seed: int | None = None, chunk_size: int = 10, workers: int | None = None,
        scheduler: str | None = None) -> SBCResult:
    """Simulation-based calibration of a model spec.

    Parameters
    ----------
    model : str, path-like or ModelSpec
    reps : int
        Replications (Talts et al. use 1000; >= 500 for a sharp test).
    shape : str or dict
        Table shape: a key of :data:`SHAPES` or keyword arguments of
        :func:`bayesbias.testing.simulate_table`.
    method : {"nuts", "exact"}
        Full NUTS fits, or the exact marginal posterior (hierarchical spec only).
    n_keep : int
        L: thinned posterior draws per replication (ranks are 0..L).
    draws, tune, chains : int
        NUTS settings (``draws * chains`` must be at least `n_keep`).
    seed, chunk_size, workers, scheduler
        See :func:`bayesbias.parallel.run_tasks`.
    """
    spec = load_spec(model)
    if method not in ("nuts", "exact"):
        raise InvalidArgumentError(f"method must be 'nuts' or 'exact', got {method!r}")
    if method == "exact":
        _check(spec)
    if isinstance(shape, str):
        if shape not in SHAPES:
            raise InvalidArgumentError(f"unknown shape {shape!r}; valid: {', '.join(SHAPES)}")
        shape_kw, shape_name = SHAPES[shape], shape
    else:
        shape_kw, shape_name = dict(shape), "custom"
    if method == "nuts" and draws * chains < n_keep:
        raise InvalidArgumentError(
            f"draws x chains ({draws * chains}) must be >= n_keep ({n_keep})")
    seed = defaults.seed if seed is None else int(seed)
    fit_kwargs = {"draws": draws, "tune": tune, "chains": chains}
    parts = chunks(int(reps), int(chunk_size))
    tasks = [((k,), (spec, n, shape_kw, method, n_keep, fit_kwargs))
             for k, (_, n) in enumerate(parts)]
    res = run_tasks(_sbc_chunk, tasks, seed=seed, workers=workers, scheduler=scheduler,
                    label=f"SBC {spec.name}")
    done = res.ordered()
    if not done:
        raise InputDataError("no SBC replication finished")
    ranks = np.concatenate([d["ranks"] for d in done])
    names = done[0]["names"]
    da = xr.DataArray(ranks, dims=("replication", "quantity"),
                      coords={"replication": np.arange(ranks.shape[0]), "quantity": names})
    settings = {"method": method, "shape": shape_name, "shape_kwargs": shape_kw,
                "seed": seed, "reps": int(reps), "chunk_size": int(chunk_size),
                **({"draws": draws, "tune": tune, "chains": chains} if method == "nuts"
                   else {})}
    return SBCResult(spec.name, da, int(n_keep),
                     np.concatenate([d["divergent"] for d in done]), settings, res.complete)

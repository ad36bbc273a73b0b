"""Null-simulation studies: what WEAT, MAC and the other metrics report with no bias.

A :class:`NullStudy` names a generative null (how cosine similarities arise with no bias),
the list sizes, the statistics, the number of replications and a seed.
:func:`run_null_study` returns an :class:`xarray.Dataset` with one variable per statistic
over the ``replication`` dim; :func:`summarize` gives quantiles, the fraction of
replications whose |effect| reaches given thresholds, and each test's false-positive rate.
:func:`run_grid` runs a grid of list sizes x sd on Dask (a local cluster by default, or a
client you pass); results do not depend on the number of workers because each
(grid cell, chunk) draws from its own :class:`numpy.random.SeedSequence`, keyed by the cell and
chunk index, never by the worker.

Nulls
-----
``independent``
    Every similarity is Normal(mean, sd), independently (the paper's simulation).
``hierarchical``
    similarity = mean + word effect + attribute effect + Normal(0, sd) noise, with word
    effects ~ Normal(0, word_sd) and attribute effects ~ Normal(0, attribute_sd): some
    words are close to everything, as in real embeddings, yet no class is closer to its
    own stereotypes.
``resample``
    Blocks of real similarities between protected words and *neutral* attributes
    (connection ``none``) of a distance table: each replication draws target words and
    attribute words (without replacement when the table has enough) and labels them X, Y,
    A, B at random, keeping the real word-level structure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .._xarray import xr
from ..config import defaults
from ..errors import DistanceTableError, InputDataError, InvalidArgumentError
from ..models import fit_model
from ..parallel import dask_client
from ..progress import progress
from ..resampling import ordered_subsets
from .mac import class_scores, mac_value
from .weat import (
    ALTERNATIVES,
    SD_CONVENTIONS,
    association,
    effect_size,
    permutation_test,
    sum_statistic,
    weat_bound,
)

__all__ = [
    "NULLS",
    "STATISTICS",
    "NullStudy",
    "draw_similarities",
    "replication_table",
    "run_null_study",
    "run_grid",
    "summarize",
    "summary_dict",
    "neutral_pool",
    "weat_bound",
    "BayesExcludesZero",
    "VECTOR_NULLS",
    "VectorNull",
]

log = logging.getLogger(__name__)

NULLS = ("independent", "hierarchical", "resample")
#: Built-in statistics. ``mac_gap`` is S(t, own class) - S(t, other class) averaged over
#: targets (negative = closer to own stereotypes); ``mac_gap_p`` its paired t-test over targets.
STATISTICS = {
    "weat_effect": "WEAT effect size d",
    "weat_statistic": "WEAT test statistic (sum over X minus sum over Y of s)",
    "weat_p": "WEAT permutation p-value",
    "mac": "MAC (mean cosine distance to the stereotype classes)",
    "mac_gap": "mean S(t, own class) - S(t, other class)",
    "mac_gap_p": "paired t-test p-value of S(t, own) vs S(t, other) over targets",
}
EFFECTS = ("weat_effect",)
TESTS = ("weat_p", "mac_gap_p")
DEFAULT_STATISTICS = ("weat_effect", "weat_statistic", "weat_p", "mac", "mac_gap", "mac_gap_p")


@dataclass(frozen=True)
class NullStudy:
    """A null-simulation study (validated on construction).

    Parameters
    ----------
    null : {"independent", "hierarchical", "resample"}
    targets, attributes : pair of int
        Sizes of X, Y and of A, B.
    sd : float
        Noise sd of the similarities (ignored by ``resample``).
    reps : int
        Replications.
    seed : int
    statistics : sequence of str
        Any of :data:`STATISTICS`.
    mean : float
        Mean similarity (independent, hierarchical).
    word_sd, attribute_sd : float
        Random-effect sds of the hierarchical null.
    human, neutral : int
        Control attributes (connections ``human`` and ``none``) drawn from the same null;
        only used by `extra` callables (e.g. a Bayesian model with control groups).
    alternative : {"greater", "less", "two-sided"}
        Of the WEAT permutation test.
    sd_convention : {"sample", "population"}
        Of the WEAT effect size.
    n_permutations, exact_limit : int
        Of the WEAT permutation test (exact when the split count <= exact_limit).
    chunk_size : int
        Replications per seeded chunk (part of the seed scheme: keep it fixed to reproduce).
    pool : ndarray, optional
        (protected word, neutral attribute) similarity block for ``resample``; build it
        with :func:`neutral_pool`.
    extra : mapping of str to callable, optional
        Extra statistics, each called once per replication with the replication's distance
        table (see :func:`replication_table`) and returning a number or bool, e.g. whether a
        Bayesian interval for associated - neutral excludes zero.
    """

    null: str = "independent"
    targets: tuple[int, int] = (8, 8)
    attributes: tuple[int, int] = (8, 8)
    sd: float = 0.08
    reps: int = 10_000
    seed: int = field(default_factory=lambda: defaults.seed)
    statistics: tuple[str, ...] = DEFAULT_STATISTICS
    mean: float = 0.0
    word_sd: float = 0.05
    attribute_sd: float = 0.05
    human: int = 0
    neutral: int = 0
    alternative: str = "two-sided"
    sd_convention: str = "sample"
    n_permutations: int = 999
    exact_limit: int = 20_000
    chunk_size: int = 2_000
    pool: np.ndarray | None = field(default=None, repr=False, compare=False)
    extra: Mapping[str, Callable] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "targets", tuple(int(v) for v in self.targets))
        object.__setattr__(self, "attributes", tuple(int(v) for v in self.attributes))
        object.__setattr__(self, "statistics", tuple(self.statistics))
        if self.null not in NULLS:
            raise InvalidArgumentError(f"null must be one of {', '.join(NULLS)}, got {self.null!r}")
        if len(self.targets) != 2 or min(self.targets) < 1:
            raise InvalidArgumentError(f"targets must be two sizes >= 1, got {self.targets}")
        if len(self.attributes) != 2 or min(self.attributes) < 1:
            raise InvalidArgumentError(f"attributes must be two sizes >= 1, got {self.attributes}")
        if sum(self.targets) - SD_CONVENTIONS.get(self.sd_convention, 1) < 1:
            raise InvalidArgumentError("need at least two target words in total")
        unknown = [s for s in self.statistics if s not in STATISTICS]
        if unknown:
            raise InvalidArgumentError(f"unknown statistic(s) {', '.join(unknown)}; valid: "
                             f"{', '.join(STATISTICS)}")
        clash = set(self.extra) & set(STATISTICS)
        if clash:
            raise InputDataError(f"extra statistic name(s) {sorted(clash)} clash with built-ins")
        for name, fn in self.extra.items():
            if not callable(fn):
                raise InputDataError(f"extra statistic {name!r} is not callable")
        if self.alternative not in ALTERNATIVES:
            raise InvalidArgumentError(f"alternative must be one of {', '.join(ALTERNATIVES)}")
        if self.sd_convention not in SD_CONVENTIONS:
            raise InvalidArgumentError(f"sd_convention must be one of {', '.join(SD_CONVENTIONS)}")
        for name in ("sd", "word_sd", "attribute_sd"):
            if not getattr(self, name) >= 0:
                raise InvalidArgumentError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.reps < 1 or self.chunk_size < 1 or self.neutral < 0 or self.human < 0:
            raise InvalidArgumentError("reps and chunk_size must be >= 1; human and neutral >= 0")
        if self.null == "resample":
            if self.pool is None:
                raise InputDataError("null='resample' needs pool=neutral_pool(table)")
            pool = np.asarray(self.pool, dtype=np.float64)
            if pool.ndim != 2 or pool.shape[0] < 2 or pool.shape[1] < 2 or np.isnan(pool).any():
                raise InputDataError("pool must be a complete 2-d block of similarities")
            n_attr = sum(self.attributes) + self.human + self.neutral
            if sum(self.targets) > pool.shape[0] or n_attr > pool.shape[1]:
                raise InputDataError(
                    f"the resampling pool has {pool.shape[0]} protected words and "
                    f"{pool.shape[1]} neutral attributes; a replication needs "
                    f"{sum(self.targets)} and {n_attr} distinct ones (lower --targets or "
                    "--attributes)")
            object.__setattr__(self, "pool", pool)

    @property
    def layout(self) -> dict:
        """Sizes of X, Y, A, B and the control attributes."""
        return {"X": self.targets[0], "Y": self.targets[1], "A": self.attributes[0],
                "B": self.attributes[1], "human": self.human, "none": self.neutral}

    def describe(self) -> dict:
        """Return the spec as plain data (no pool, callables by name)."""
        out = {k: getattr(self, k) for k in (
            "null", "targets", "attributes", "sd", "reps", "seed", "statistics", "mean",
            "word_sd", "attribute_sd", "human", "neutral", "alternative", "sd_convention",
            "n_permutations", "exact_limit", "chunk_size")}
        out["targets"], out["attributes"] = list(self.targets), list(self.attributes)
        out["statistics"] = list(self.statistics) + list(self.extra)
        if self.pool is not None:
            out["pool_shape"] = list(self.pool.shape)
        return out

    def to_dict(self) -> dict:
        """Plain JSON data: the spec as :meth:`describe` gives it (no pool, callables named)."""
        return self.describe()


def neutral_pool(table: pd.DataFrame) -> np.ndarray:
    """(protected word x neutral attribute) cosine similarities of a distance table.

    Raises
    ------
    DistanceTableError
        No ``none`` rows, or the block has gaps.
    """
    none = table.loc[table["connection"].astype(str) == "none"]
    if none.empty:
        raise DistanceTableError("distance table has no neutral ('none') rows to resample")
    block = none.pivot_table(index="protected_word", columns="attribute",
                             values="cosine_similarity", aggfunc="first")
    block = block.dropna(axis=1, how="any")
    if block.shape[0] < 2 or block.shape[1] < 2:
        raise DistanceTableError("neutral block of the table is too small to resample")
    return block.to_numpy(dtype=np.float64)


@dataclass(frozen=True)
class BayesExcludesZero:
    """Extra statistic: 1.0 when a Bayesian model's interval for `contrast` excludes zero.

    Pass an instance in ``NullStudy(extra={"bayes_excludes_zero": BayesExcludesZero()})``
    together with ``human`` / ``neutral`` control attributes. Each replication is one model
    fit (seconds, not microseconds): keep ``reps`` small. :mod:`bayesbias.models` is
    imported only when the statistic is called.

    Parameters
    ----------
    contrast : str
        Row of ``Fit.contrasts()``, e.g. ``"associated - none"``.
    model : str
        Model spec name for :func:`bayesbias.models.fit_model`.
    ci_prob : float, optional
        Interval probability (default ``defaults.ci_prob``).
    fit_kwargs : dict
        Passed to :func:`bayesbias.models.fit_model` (draws, tune, chains, seed, ...).
    """

    contrast: str = "associated - none"
    model: str = "hierarchical"
    ci_prob: float | None = None
    fit_kwargs: Mapping = field(default_factory=dict)

    def __call__(self, table: pd.DataFrame) -> float:
        """Fit the model to one replication's table and check the interval."""
        fit = fit_model(table, self.model, **dict(self.fit_kwargs))
        ct = fit.contrasts(ci_prob=self.ci_prob)
        row = ct.loc[ct["contrast"] == self.contrast]
        if row.empty:
            raise InvalidArgumentError(f"contrast {self.contrast!r} not in the fit; valid: "
                             f"{', '.join(ct['contrast'])}")
        return float(bool(row["excludes_zero"].iloc[0]))


# --------------------------------------------------------------------------------------
# Drawing
# --------------------------------------------------------------------------------------
def draw_similarities(study: NullStudy, n: int, rng) -> np.ndarray:
    """Draw similarities of n replications, shape (n, n_X + n_Y, n_A + n_B + human + neutral).

    Columns are A, then B, then the human and neutral control attributes.
    """
    rng = np.random.default_rng(rng)
    n_t = sum(study.targets)
    n_a = sum(study.attributes) + study.human + study.neutral
    if study.null == "independent":
        return study.mean + study.sd * rng.standard_normal((n, n_t, n_a))
    if study.null == "hierarchical":
        word = study.word_sd * rng.standard_normal((n, n_t, 1))
        attr = study.attribute_sd * rng.standard_normal((n, 1, n_a))
        return study.mean + word + attr + study.sd * rng.standard_normal((n, n_t, n_a))
    pool = study.pool
    rows = ordered_subsets(rng, n, pool.shape[0], n_t)
    cols = ordered_subsets(rng, n, pool.shape[1], n_a)
    return pool[rows[:, :, None], cols[:, None, :]]


def replication_table(sim: np.ndarray, study: NullStudy) -> pd.DataFrame:
    """Build the long distance table of one replication (for `extra` statistics).

    Protected words ``x0..``, ``y0..`` of classes X, Y; attributes ``a0..`` (class X),
    ``b0..`` (class Y), ``h0..`` (connection ``human``) and ``n0..`` (connection ``none``).
    """
    n_x, n_y = study.targets
    n_a, n_b = study.attributes
    words = [f"x{i}" for i in range(n_x)] + [f"y{i}" for i in range(n_y)]
    wclass = ["X"] * n_x + ["Y"] * n_y
    attrs = ([f"a{i}" for i in range(n_a)] + [f"b{i}" for i in range(n_b)]
             + [f"h{i}" for i in range(study.human)] + [f"n{i}" for i in range(study.neutral)])
    aclass = ["X"] * n_a + ["Y"] * n_b + ["human"] * study.human + ["none"] * study.neutral
    pw = np.repeat(words, len(attrs))
    pc = np.repeat(wclass, len(attrs))
    ac = np.tile(aclass, len(words))
    conn = np.where(np.isin(ac, ["human", "none"]), ac,
                    np.where(ac == pc, "associated", "different"))
    flat = np.asarray(sim, dtype=np.float64).ravel()
    return pd.DataFrame({
        "protected_word": pw, "protected_class": pc, "attribute": np.tile(attrs, len(words)),
        "attribute_class": ac, "connection": conn,
        "cosine_distance": 1.0 - flat, "cosine_similarity": flat,
    })


# --------------------------------------------------------------------------------------
# Statistics on a chunk
# --------------------------------------------------------------------------------------
def _chunk_statistics(study: NullStudy, sim: np.ndarray, rng) -> dict[str, np.ndarray]:
    n_x, _ = study.targets
    n_a, n_b = study.attributes
    sa, sb = sim[..., :n_a], sim[..., n_a:n_a + n_b]
    out: dict[str, np.ndarray] = {}
    wanted = set(study.statistics)
    if wanted & {"weat_effect", "weat_statistic", "weat_p"}:
        s = association(sa, sb)
        s_x, s_y = s[:, :n_x], s[:, n_x:]
        if "weat_effect" in wanted:
            out["weat_effect"] = effect_size(s_x, s_y, sd=study.sd_convention)
        if "weat_statistic" in wanted:
            out["weat_statistic"] = sum_statistic(s_x, s_y)
        if "weat_p" in wanted:
            out["weat_p"] = permutation_test(
                s_x, s_y, alternative=study.alternative, n_permutations=study.n_permutations,
                exact_limit=study.exact_limit, seed=rng).p_value
    if wanted & {"mac", "mac_gap", "mac_gap_p"}:
        scores = class_scores(1.0 - sim[..., :n_a + n_b], [0] * n_a + [1] * n_b, 2)
        d_a, d_b = scores[..., 0], scores[..., 1]  # S(t, A), S(t, B), shape (n, n_t)
        if "mac" in wanted:
            out["mac"] = mac_value(scores)
        own = np.concatenate([d_a[:, :n_x], d_b[:, n_x:]], axis=1)
        other = np.concatenate([d_b[:, :n_x], d_a[:, n_x:]], axis=1)
        if "mac_gap" in wanted:
            out["mac_gap"] = (own - other).mean(axis=-1)
        if "mac_gap_p" in wanted:
            from scipy import stats as _stats  # only here: a 1 s import off the report path

            with np.errstate(invalid="ignore", divide="ignore"):
                out["mac_gap_p"] = _stats.ttest_rel(own, other, axis=-1).pvalue
    for name, fn in study.extra.items():
        out[name] = np.array([float(fn(replication_table(sim[i], study)))
                              for i in range(sim.shape[0])])
    return out


def _run_chunk(study: NullStudy, cell: int, chunk: int, n: int) -> dict[str, np.ndarray]:
    """Statistics of one seeded chunk; the seed depends only on (seed, cell, chunk)."""
    ss = np.random.SeedSequence(study.seed, spawn_key=(cell, chunk))
    draw_seed, perm_seed = ss.spawn(2)
    sim = draw_similarities(study, n, np.random.default_rng(draw_seed))
    return _chunk_statistics(study, sim, np.random.default_rng(perm_seed))


def _chunks(study: NullStudy) -> list[tuple[int, int]]:
    starts = range(0, study.reps, study.chunk_size)
    return [(i, min(study.chunk_size, study.reps - s)) for i, s in enumerate(starts)]


def _to_dataset(parts: list[dict], study: NullStudy) -> xr.Dataset:
    names = list(parts[0])
    data = {k: ("replication", np.concatenate([p[k] for p in parts])) for k in names}
    ds = xr.Dataset(data, coords={"replication": np.arange(study.reps)})
    for k in names:
        ds[k].attrs["description"] = STATISTICS.get(k, "user-supplied statistic")
    return ds


def _stamp(ds: xr.Dataset, study: NullStudy) -> xr.Dataset:
    from .. import __version__

    spec = study.describe()
    ds.attrs.update({
        "bayesbias_version": __version__,
        "null": study.null,
        "seed": study.seed,
        "seed_scheme": "numpy SeedSequence(seed, spawn_key=(cell, chunk)), "
                       f"chunk_size {study.chunk_size}",
        "spec": repr(spec),
        "weat_sd_convention": study.sd_convention,
        "weat_alternative": study.alternative,
    })
    return ds


def _run_cells(cells: list[tuple[int, NullStudy]], client=None, n_workers=None,
               processes=True, use_dask=True) -> list[list[dict]]:
    tasks = [(ci, study, chunk, n) for ci, study in cells for chunk, n in _chunks(study)]
    if not use_dask:
        results = []
        for i, (ci, study, chunk, n) in enumerate(tasks, start=1):
            results.append(_run_chunk(study, ci, chunk, n))
            if len(tasks) > 1:
                progress.info("null study: %d of %d chunks done", i, len(tasks))
    else:
        own_client, cluster = dask_client(n_workers, processes=processes, client=client)
        try:
            futures = [own_client.submit(_run_chunk, study, ci, chunk, n, pure=False)
                       for ci, study, chunk, n in tasks]
            progress.info("null study: %d chunks submitted to Dask (%s)", len(tasks),
                          own_client.dashboard_link or "no dashboard")
            results = own_client.gather(futures)
        finally:
            if cluster is not None:
                own_client.close()
                cluster.close()
    by_cell: dict[int, list[dict]] = {}
    for (ci, *_), res in zip(tasks, results, strict=True):
        by_cell.setdefault(ci, []).append(res)
    return [by_cell[ci] for ci, _ in cells]


def run_null_study(study: NullStudy, *, client=None, n_workers: int | None = None,
                   processes: bool = True) -> xr.Dataset:
    """Run a null study; one variable per statistic over the ``replication`` dim.

    Runs in this process unless `client` (a ``dask.distributed.Client``) or `n_workers`
    (a local Dask cluster of that size) is given; the numbers are the same either way.
    """
    use_dask = client is not None or n_workers is not None
    (parts,) = _run_cells([(0, study)], client, n_workers, processes, use_dask)
    return _stamp(_to_dataset(parts, study), study)


def run_grid(study: NullStudy, *, sizes: Sequence | None = None, sds: Sequence | None = None,
             client=None, n_workers: int | None = None, processes: bool = True,
             use_dask: bool = True) -> xr.Dataset:
    """Run `study` over a grid of list sizes x sd, on Dask.

    Parameters
    ----------
    study : NullStudy
        The template; each cell replaces its targets/attributes and sd.
    sizes : sequence of ((n_X, n_Y), (n_A, n_B)), optional
        Default: the study's own sizes.
    sds : sequence of float, optional
        Default: the study's own sd.
    client : dask.distributed.Client, optional
        Use this cluster; by default a ``LocalCluster`` with `n_workers` workers is started
        and closed.
    processes : bool
        Worker processes (True) or threads of this process (False) for the local cluster.
    use_dask : bool
        False runs the cells in this process (same numbers).

    Returns
    -------
    xarray.Dataset
        Dims ``(size, sd, replication)``; cell ``(i, j)`` is seeded by key
        ``i * len(sds) + j``, so cell (0, 0) equals ``run_null_study`` of that cell.
    """
    sizes = [tuple(map(tuple, s)) for s in (sizes or [(study.targets, study.attributes)])]
    sds = [float(v) for v in (sds or [study.sd])]
    cells = []
    for i, (t, a) in enumerate(sizes):
        for j, sd in enumerate(sds):
            cells.append((i * len(sds) + j, replace(study, targets=t, attributes=a, sd=sd)))
    results = _run_cells(cells, client, n_workers, processes, use_dask)
    per_cell = [_to_dataset(parts, s) for (_, s), parts in zip(cells, results, strict=True)]
    labels = [f"{t[0]}+{t[1]} targets, {a[0]}+{a[1]} attributes" for t, a in sizes]
    rows = [xr.concat(per_cell[i * len(sds):(i + 1) * len(sds)], dim="sd")
            for i in range(len(sizes))]
    ds = xr.concat(rows, dim="size").assign_coords(
        size=labels, sd=sds,
        n_targets=("size", [f"{t[0]}+{t[1]}" for t, _ in sizes]),
        n_attributes=("size", [f"{a[0]}+{a[1]}" for _, a in sizes]))
    return _stamp(ds, study)


# --------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------
def summarize(ds: xr.Dataset, *, thresholds: Sequence[float] = (0.5, 0.8, 1.27),
              alpha: float = 0.05,
              quantiles: Sequence[float] = (0.025, 0.05, 0.25, 0.5, 0.75, 0.95, 0.975)
              ) -> xr.Dataset:
    """Quantiles, |effect| exceedance fractions and false-positive rates over replications.

    Returns
    -------
    xarray.Dataset
        ``quantiles`` (statistic, quantile, ...), ``mean`` and ``std`` (statistic, ...),
        ``exceedance`` (effect, threshold, ...): fraction of replications with
        |effect| >= threshold, and ``false_positive_rate`` (test, ...): fraction with
        p <= alpha (boolean extras: fraction True).
    """
    names = list(ds.data_vars)
    arr = ds[names].to_array("statistic")
    out = xr.Dataset({
        "quantiles": arr.quantile(list(quantiles), dim="replication", skipna=True),
        "mean": arr.mean("replication", skipna=True),
        "std": arr.std("replication", ddof=1, skipna=True),
        "nan_fraction": arr.isnull().mean("replication"),
    })
    effects = [k for k in EFFECTS if k in ds]
    if effects:
        thr = xr.DataArray(list(thresholds), dims="threshold")
        eff = ds[effects].to_array("effect")
        out["exceedance"] = (abs(eff) >= thr).where(eff.notnull()).mean("replication")
        out = out.assign_coords(threshold=list(thresholds))
    tests = [k for k in TESTS if k in ds]
    extras = [k for k in names if k not in STATISTICS]
    if tests or extras:
        cols = [(ds[k] <= alpha).where(ds[k].notnull()).mean("replication") for k in tests]
        cols += [(ds[k] != 0).where(ds[k].notnull()).mean("replication") for k in extras]
        out["false_positive_rate"] = xr.concat(cols, dim="test").assign_coords(
            test=tests + extras)
    out.attrs.update(ds.attrs)
    out.attrs["alpha"] = alpha
    return out


def summary_dict(summary: xr.Dataset) -> dict:
    """Return a single-cell summary as nested plain dicts (for JSON and text output)."""
    if set(summary.dims) - {"statistic", "quantile", "threshold", "effect", "test"}:
        raise InputDataError("summary_dict handles one cell; select a grid cell first")
    out = {
        "quantiles": {str(s): {f"{q:g}": float(v) for q, v in zip(
            summary.coords["quantile"].values,
            summary["quantiles"].sel(statistic=s).values, strict=True)}
            for s in summary.statistic.values},
        "mean": {str(s): float(summary["mean"].sel(statistic=s)) for s in
                 summary.statistic.values},
        "std": {str(s): float(summary["std"].sel(statistic=s)) for s in summary.statistic.values},
        "alpha": summary.attrs.get("alpha"),
    }
    if "exceedance" in summary:
        out["fraction_abs_effect_at_least"] = {
            str(e): {f"{t:g}": float(summary["exceedance"].sel(effect=e, threshold=t))
                     for t in summary.threshold.values} for e in summary.effect.values}
    if "false_positive_rate" in summary:
        out["false_positive_rate"] = {
            str(t): float(summary["false_positive_rate"].sel(test=t))
            for t in summary.test.values}
    return out


# --------------------------------------------------------------------------------------
# Vector nulls (metrics that need vectors, not only similarities: RND, RNSB, ECT, RIPA,
# Bolukbasi's direct and indirect bias)
# --------------------------------------------------------------------------------------
#: Nulls for word vectors, the vector-level counterparts of :data:`NULLS`.
VECTOR_NULLS = NULLS


class VectorNull:
    """Word vectors with no bias, at a study's list sizes, matched to its real vectors.

    ``independent``
        Every vector ~ Normal(0, s^2 I), s^2 = mean squared coordinate of the study's real
        vectors: isotropic, no structure at all.
    ``hierarchical``
        vector = m + r_w z_w with m the mean of the real vectors (the shared direction every
        real embedding has), z_w ~ Normal(0, s^2 I) with s^2 the mean squared coordinate of
        the real residuals, and a per-word scale log r_w ~ Normal(-tau^2/2, tau^2), tau the sd
        of the log residual norms: some words sit nearer everything than others, as in real
        embeddings, yet no set is nearer another.
    ``resample``
        Real vectors: targets (X, Y and the pairs) drawn without replacement from the study's
        target words with random labels, attributes (A, B) from the word list's control
        words (connections ``human`` and ``none``).

    Parameters
    ----------
    null : str
    sizes : tuple of int
        n_X, n_Y, n_A, n_B, n_pairs.
    reference : ndarray, shape (n, dim)
        The study's real vectors (independent, hierarchical).
    target_pool, attribute_pool : ndarray, optional
        Real vectors for ``resample``.
    """

    def __init__(self, null: str, sizes, reference, target_pool=None, attribute_pool=None):
        if null not in VECTOR_NULLS:
            raise InvalidArgumentError(
                f"null must be one of {', '.join(VECTOR_NULLS)}, got {null!r}")
        self.null = null
        self.sizes = tuple(int(s) for s in sizes)
        ref = np.asarray(reference, dtype=np.float64)
        if ref.ndim != 2 or ref.shape[0] < 2:
            raise InputDataError("the vector null needs at least two reference vectors")
        self.dim = ref.shape[1]
        n_x, n_y, n_a, n_b, n_p = self.sizes
        if null == "independent":
            self.scale = float(np.sqrt(np.mean(ref ** 2)))
            self.description = (f"isotropic Normal vectors, dim {self.dim}, coordinate sd "
                                f"{self.scale:.4g} (matched to the real vectors)")
        elif null == "hierarchical":
            self.mean = ref.mean(axis=0)
            resid = ref - self.mean
            self.scale = float(np.sqrt(np.mean(resid ** 2)))
            norms = np.linalg.norm(resid, axis=1)
            self.tau = float(np.std(np.log(norms[norms > 0]), ddof=1)) if (norms > 0).sum() > 2 \
                else 0.0
            self.description = (f"shared mean vector + Normal residuals (coordinate sd "
                                f"{self.scale:.4g}) with per-word log-scale sd {self.tau:.3g}, "
                                "matched to the real vectors")
        else:
            t = np.asarray(target_pool, dtype=np.float64) if target_pool is not None else None
            a = (np.asarray(attribute_pool, dtype=np.float64)
                 if attribute_pool is not None else None)
            need_t = n_x + n_y
            need_p = 2 * n_p
            need_a = n_a + n_b
            if t is None or a is None or len(t) < max(need_t, need_p) or len(a) < need_a:
                raise InputDataError(
                    f"resampled-neutral null needs {max(need_t, need_p)} target and {need_a} "
                    f"control words; the pools have {0 if t is None else len(t)} and "
                    f"{0 if a is None else len(a)}")
            self.target_pool, self.attribute_pool = t, a
            self.description = (f"real vectors: targets from {len(t)} target words, attributes "
                                f"from {len(a)} control words, without replacement")

    def draw(self, rng, n: int | None = None):
        """Vectors (x, y, a, b, pair_x, pair_y) of one draw, or of `n` draws stacked.

        With `n`, every array has a leading axis of length n, holding the same vectors as
        n successive one-draw calls on the same generator.
        """
        rng = np.random.default_rng(rng)
        k = 1 if n is None else int(n)
        n_x, n_y, n_a, n_b, n_p = self.sizes
        if self.null == "resample":
            ti, pi, ai = ordered_subsets(
                rng, k, (len(self.target_pool), len(self.target_pool), len(self.attribute_pool)),
                (n_x + n_y, 2 * n_p, n_a + n_b))
            t, p, a = self.target_pool[ti], self.target_pool[pi], self.attribute_pool[ai]
        else:
            total = n_x + n_y + 2 * n_p + n_a + n_b
            # one call for the k draws: the same normals, in the same order, as k calls
            e = rng.standard_normal((k, total * self.dim + (self.null == "hierarchical") * total))
            z = self.scale * e[:, :total * self.dim].reshape(k, total, self.dim)
            if self.null == "hierarchical":
                r = np.exp(self.tau * e[:, total * self.dim:, None] - self.tau ** 2 / 2)
                z = self.mean + r * z
            t, p, a = (z[:, :n_x + n_y], z[:, n_x + n_y:n_x + n_y + 2 * n_p],
                       z[:, n_x + n_y + 2 * n_p:])
        out = (t[:, :n_x], t[:, n_x:], a[:, :n_a], a[:, n_a:], p[:, :n_p], p[:, n_p:])
        return tuple(o[0] for o in out) if n is None else out

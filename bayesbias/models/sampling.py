"""Sampling a model spec on a distance table: settings, samplers and :func:`fit_model`."""

from __future__ import annotations

import importlib.util
import json
import logging
import time
from collections import OrderedDict

import numpy as np
import pandas as pd

from .._xarray import xr
from ..config import DEFAULT_MODEL, defaults
from ..errors import InvalidArgumentError, ModelSpecError
from ..inputs.distances import check_spread, single_embedding
from ..progress import EVERY_SECONDS, chain_callback, progress
from ..progress import enabled as progress_enabled
from ..validation import MAX_CHAINS, MAX_DRAWS, validate_int, validate_probability
from . import marginal as _marginal
from .base import LIKELIHOODS, build_model, model_data, structure_key
from .cells import cells_from_table
from .diagnostics import HELPERS, check
from .families import family as family_of
from .files import _data_groups
from .marginal import supports, word_summaries_supported
from .result import Fit
from .spec import load_spec
from .word_summaries import keep_word_draws as _keep_default

__all__ = ["fit_model", "warn_checks", "fit_memory", "default_target_accept", "default_draws",
           "default_tune",
           "SAMPLERS",
           "MAX_DRAWS", "MAX_CHAINS", "MAX_FIT_BYTES", "BYTES_PER_DRAW", "BYTES_PER_CELL",
           "BYTES_PER_ATTRIBUTE"]

log = logging.getLogger(__name__)


SAMPLERS = ("auto", "nutpie", "pymc")



#: Memory a fit keeps per draw and chain, measured with nutpie (the most costly sampler
#: here): about 2.2 kB, plus 120 bytes per cell and, for the crossed family, per attribute
#: word (the posterior with its helper variables, the sampler statistics and the copies
#: made while the draws are converted and summarised). Measured from the peak RSS growth
#: between two draw counts: hierarchical, 60 cells: 8.9 kB (predicted 9.4); crossed, 60
#: cells and 29 / 322 attributes: 12.4 / 46.6 kB (predicted 12.9 / 48.0).
BYTES_PER_DRAW = 2_200


BYTES_PER_CELL = 120


BYTES_PER_ATTRIBUTE = 120


#: Memory per cell of a fit without per-word draws (:mod:`.word_summaries`), independent of
#: the draws: the cell statistics, the per-word summary tables and the model checks' share.
#: Measured: peak RSS 1,647 / 1,944 MB at 40,000 / 400,000 cells (10,000 / 100,000 words,
#: 15 rows per cell; ``benchmarks/bench_scale.py --words``), i.e. about 150 bytes per cell
#: on top of a fixed 1.4 GB of imports and bounded work arrays; 400 leaves room for more
#: rows per cell.
BYTES_PER_SUMMARY_CELL = 400


#: Largest memory the draws of one fit may take (checked before sampling): 4 GB.
MAX_FIT_BYTES = 4_000_000_000


#: Compiled nutpie models by structure (see :func:`~bayesbias.models.base.structure_key`):
#: fits of the same spec to tables of the same shape reuse the compiled model with new data.
_COMPILED: OrderedDict = OrderedDict()


_COMPILED_MAX = 16


def _exact_math():
    """PyTensor flags under which a compiled model gives the same draws from a cold or warm cache.

    PyTensor compiles numba code with ``fastmath``; a fresh compile and a load from its cache
    (``~/.pytensor/numba``) then round differently and NUTS amplifies that: the same seed gave
    different draws on the first run after installing (embedding_level, the ensemble of
    docs/guide/ensembles.md: ``mu_bar`` sum 3331.59 cold against 3345.77 warm). Without
    fastmath both agree.
    """
    import pytensor

    return pytensor.config.change_flags(numba__fastmath=False)


def _sample_nutpie(spec, cells, draws, tune, chains, cores, seed, progressbar, target_accept):
    import nutpie

    key = structure_key(spec, cells)
    if key in _COMPILED:
        _COMPILED.move_to_end(key)
        compiled, noncentred = _COMPILED[key]
        compiled = compiled.with_data(**model_data(spec, cells))
        log.debug("reusing the compiled model for %s", spec.name)
    else:
        progress.info("compiling the %s model (once per table shape in this process)",
                      spec.name)
        pm_model = build_model(spec, cells, "sufficient")
        noncentred = tuple(getattr(pm_model, "noncentred", ()))
        with _exact_math():
            compiled = nutpie.compile_pymc_model(pm_model)
        _COMPILED[key] = (compiled, noncentred)
        if len(_COMPILED) > _COMPILED_MAX:
            _COMPILED.popitem(last=False)
    t0 = time.perf_counter()
    shown = {}
    if not progressbar and progress_enabled():  # per-chain draws, as the cell-marginal sampler
        shown = {"progress_callback": chain_callback(f"sampling {spec.name}"),
                 "progress_rate": int(EVERY_SECONDS * 1000)}
    tree = nutpie.sample(compiled, draws=draws, tune=max(tune, 1), chains=chains, cores=cores,
                         seed=seed, save_warmup=False, progress_bar=progressbar,
                         target_accept=target_accept, **shown)
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


def fit_memory(draws: int, chains: int, n_cells: int, n_attributes: int = 0,
               word_draws: bool = True) -> int:
    """Bytes the draws of a fit take in memory (:data:`BYTES_PER_DRAW` and co).

    `n_attributes`: attribute words with an effect of their own (crossed family), else 0.
    Without `word_draws` (per-word summaries, :mod:`.word_summaries`) the cells cost
    :data:`BYTES_PER_SUMMARY_CELL` each, once, instead of per draw.
    """
    if not word_draws:
        per = BYTES_PER_DRAW + BYTES_PER_ATTRIBUTE * int(n_attributes)
        return int(draws) * int(chains) * per + BYTES_PER_SUMMARY_CELL * max(int(n_cells), 1)
    per = (BYTES_PER_DRAW + BYTES_PER_CELL * max(int(n_cells), 1)
           + BYTES_PER_ATTRIBUTE * int(n_attributes))
    return int(draws) * int(chains) * per


def _family_target_accept(family) -> float:
    return float(family.TARGET_ACCEPT)


def _family_draws(family) -> int:
    return int(family.DRAWS or defaults.draws)


def default_draws(model) -> int:
    """Return the posterior draws per chain `model` (a name or spec) gets when none is given."""
    return _family_draws(family_of(load_spec(model).family))


def _family_tune(family, marginal: bool) -> int:
    return int(family.TUNE if marginal and family.TUNE is not None else defaults.tune)


def default_tune(model, pymc: bool = False) -> int:
    """Return the tuning steps per chain `model` (a name or spec) gets when none is given.

    A family's ``TUNE`` applies to its cell-marginal sampler; ``pymc=True``: the steps when
    its PyMC model is sampled (always the configured default).
    """
    return _family_tune(family_of(load_spec(model).family), marginal=not pymc)


def default_target_accept(model, pymc: bool = False) -> float:
    """Return the NUTS target acceptance rate `model` (a name or spec) gets when none is given.

    ``pymc=True``: the rate when its PyMC model is sampled (a family's
    ``PYMC_TARGET_ACCEPT``, else the same).
    """
    fam = family_of(load_spec(model).family)
    if pymc and fam.PYMC_TARGET_ACCEPT is not None:
        return float(fam.PYMC_TARGET_ACCEPT)
    return _family_target_accept(fam)


def _check_settings(draws, tune, chains, target_accept, n_cells: int,
                    n_attributes: int = 0, word_draws: bool = True) -> tuple[int, int, int]:
    """Validate the sampler settings (:mod:`bayesbias.validation`) and the memory they need."""
    draws = validate_int(draws, "draws", low=1, high=MAX_DRAWS)
    tune = validate_int(tune, "tune", low=0, high=MAX_DRAWS)
    chains = validate_int(chains, "chains", low=1, high=MAX_CHAINS)
    validate_probability(target_accept, "target_accept")
    need = fit_memory(draws, chains, n_cells, n_attributes, word_draws)
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
              strict: bool = False, progressbar: bool = False, target_accept: float | None = None,
              marginal: bool | None = None, keep_word_draws: bool | None = None,
              checked: bool = True, **spec_overrides) -> Fit:
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
        Sampler settings (defaults in ``bayesbias.config.defaults``; draws: the family's
        ``DRAWS`` when it has one, tune: its ``TUNE`` for the cell-marginal sampler, e.g.
        500 for ``crossed``); `cores` defaults to
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
    keep_word_draws : bool, optional
        Keep the draws of every per-word cell mean. Default: unless they would take more
        than :data:`~bayesbias.models.word_summaries.WORD_DRAWS_BYTES` (about 2,000
        protected words at the default settings) in a fit with the cell means integrated
        out of a family that allows it (``hierarchical``, ``separate``, ``crossed``); the
        per-word means, sds and intervals are then Rao-Blackwellised over the draws of the
        sampled parameters (:mod:`~bayesbias.models.word_summaries`), on which convergence is
        judged. ``False`` forces that (where allowed).
    likelihood : {"sufficient", "rows"}
        Exact per-cell sufficient statistics (default; cost independent of the row count) or
        one term per row.
    target_accept : float, optional
        NUTS target acceptance rate (default 0.8, the context family 0.9); raise it (e.g.
        0.95) if there are divergences.
    strict : bool
        Raise :class:`~bayesbias.errors.DiagnosticsError` if the diagnostics fail (they are
        always checked, and a :class:`SamplerWarning` is issued otherwise).
    checked : bool
        Run the diagnostics and model checks now, warning on failures (default). ``False``
        leaves them to :func:`warn_checks`, for a fit that may be replaced by a refit.
    **spec_overrides
        Passed to the spec (``level``, ``residual_sd``, ``noncentred``, ``priors``).
    """
    from .. import __version__

    spec = load_spec(model, **spec_overrides)
    if likelihood not in LIKELIHOODS:
        raise InvalidArgumentError(
            f"likelihood must be one of {', '.join(LIKELIHOODS)}, got {likelihood!r}")
    family = family_of(spec.family)
    if not family.EMBEDDINGS:
        table = single_embedding(table, spec.name, str(table.attrs.get("source", "")))
    layout = getattr(family, "cells", None) or cells_from_table
    cells = layout(table, spec.level)

    check_spread(table, str(table.attrs.get("source", "distance table")))  # else: no end
    draws = _family_draws(family) if draws is None else draws
    chains = defaults.chains if chains is None else chains
    accept_given = target_accept is not None
    if target_accept is None:
        target_accept = _family_target_accept(family)
    n_attr = family.n_effects(cells) if hasattr(family, "n_effects") else 0
    sampler = _resolve_sampler(sampler)
    covers = getattr(family, "native_supported", None)  # a kernel for some tables only
    if marginal is None:
        marginal = sampler == "nutpie" and likelihood == "sufficient" and supports(spec) \
            and (covers is None or covers(cells))
    elif marginal and not (sampler == "nutpie" and likelihood == "sufficient"
                           and supports(spec) and (covers is None or covers(cells))):
        raise ModelSpecError(f"model {spec.name!r}: the cell-marginal sampler needs the "
                             "nutpie sampler, the sufficient likelihood, a family that "
                             "supports it and a working C compiler (its kernels)")

    if not accept_given and not marginal and family.PYMC_TARGET_ACCEPT is not None:
        target_accept = float(family.PYMC_TARGET_ACCEPT)  # the PyMC model's own default
    tune = _family_tune(family, bool(marginal)) if tune is None else tune
    # a family whose kernel can leave out the cell means' draws (embedding_level: its
    # checks and per-word summaries from their conditional moments, ``cell_moments``)
    optional = bool(marginal) and getattr(family, "WORD_DRAWS_OPTIONAL", False) \
        and getattr(family, "cell_moments", None) is not None
    summaries_ok = bool(marginal) and (word_summaries_supported(spec) or optional)
    # a large fit (per-word draws above WORD_DRAWS_BYTES): its density on groups of cells
    large = summaries_ok and not _keep_default(
        validate_int(draws, "draws", low=1, high=MAX_DRAWS),
        validate_int(chains, "chains", low=1, high=MAX_CHAINS), cells.n.size)
    if keep_word_draws is None:
        word_draws = not large
    elif not keep_word_draws and not summaries_ok:
        raise ModelSpecError(f"model {spec.name!r}: per-word summaries without per-word draws "
                             "need the cell-marginal sampler (nutpie, sufficient likelihood) "
                             "and a family whose cell means are independent given its "
                             "parameters (hierarchical, separate, crossed, embedding_level)")
    else:
        word_draws = bool(keep_word_draws)
    draws, tune, chains = _check_settings(draws, tune, chains, target_accept, cells.n.size,
                                          n_attr, word_draws)
    seed = defaults.seed if seed is None else int(seed)
    cores = min(chains, 2) if cores is None else cores
    progress.info("sampling %s with %s%s: %d chains x (%d tune + %d draws), %d rows in %d "
                  "cells", spec.name, sampler, " (cell means integrated out)" if marginal
                  else "", chains, tune, draws, cells.n_rows, int((cells.n > 0).sum()))
    t0 = time.perf_counter()
    if marginal:
        # the density on groups of cells: for a large fit, and for the crossed family
        # whenever its groups' loop is shorter than its rows (every shipped table)
        cheaper = getattr(family, "grouped_is_cheaper", None)
        grouped = (large and word_summaries_supported(spec)) or \
            (cheaper is not None and cheaper(cells))
        idata = _marginal.sample_marginal(spec, cells, draws, tune, chains, cores, seed,
                                          target_accept, word_draws, grouped=grouped)
        noncentred = ()
    elif sampler == "nutpie" and likelihood == "sufficient" and \
            not family.PM_SAMPLE:
        idata, noncentred = _sample_nutpie(spec, cells, draws, tune, chains, cores, seed,
                                           progressbar, target_accept)
    else:
        import pymc as pm

        pm_model = build_model(spec, cells, likelihood)
        noncentred = getattr(pm_model, "noncentred", ())
        with pm_model, _exact_math():
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
                       "sentinel_rows_dropped", "missing", "manifest")}
    if "embeddings" in table.attrs:  # a table of several embeddings: their labels, as JSON
        source["embeddings"] = json.dumps([str(x) for x in table.attrs["embeddings"]])
    tree.attrs.update(
        bayesbias_version=__version__, spec=spec.to_json(), spec_hash=spec.hash,
        spec_name=spec.name, data_summary=json.dumps(cells.summary()),
        table_attrs=json.dumps(source), sampler=sampler, likelihood=likelihood, seed=seed,
        draws=draws, tune=tune, chains=chains, target_accept=target_accept,
        marginal=int(bool(marginal)),
        wall_time_s=round(wall, 3),
        sampling_time_s=float(idata.posterior.attrs.get("sampling_time", np.nan)),
    )
    if family.NONCENTRED and not marginal:
        tree.attrs["noncentred"] = json.dumps(list(noncentred))
    if "attribute_noncentred" in idata.posterior.attrs:
        # the attribute groups sampled non-centred (crossed: a JSON list of kinds)
        tree.attrs["attribute_noncentred"] = idata.posterior.attrs["attribute_noncentred"]
    fit = Fit(tree, spec, cells)
    log.info("fitted %s in %.1f s", spec.name, wall)
    if checked:
        warn_checks(fit, strict)
    return fit


def warn_checks(fit: Fit, strict: bool = False) -> Fit:
    """Run `fit`'s diagnostics and model checks, warning on failures.

    With `strict`, failed diagnostics raise :class:`~bayesbias.errors.DiagnosticsError`.
    """
    progress.info("%s: r-hat, ESS and divergences; model checks (leave-one-out predictive "
                  "coverage, attribute dependence)", fit.spec.name)
    check(fit, strict)
    for c in fit.checks:
        if not c.ok:
            log.warning("model %s: %s", fit.spec.name, c.message)
    return fit

"""Running NUTS on a cell-marginal kernel with nutpie: its compiled core, or its public API.

Two drivers give the same draws (``tests/test_models_sampling.py``):

- the **core** driver (default) loads nutpie's compiled extension ``nutpie._lib`` without
  importing the ``nutpie`` package and builds the sampler from the C functions' addresses,
  as ``nutpie.sample`` would; the package's ``__init__`` imports ArviZ (with arviz-plots and
  matplotlib) and PyArrow's pandas glue, which the report's worker processes then skip.
  Measured by ``benchmarks/bench_nutpie_core.py``: see :data:`MEASURED_SAVING_S`;
- the **public** driver goes through ``nutpie.compiled_pyfunc.from_pyfunc`` and
  ``nutpie.sample``, with the compiled log-density called through ``ctypes``.

The core driver uses nutpie's private API, so it is chosen only when the core has the
names it needs and their calls succeed (:func:`core_usable`); otherwise, or with
``BAYESBIAS_NUTPIE=public``, the public driver runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import time

import numpy as np

from .._xarray import xr
from ..config import CONNECTIONS
from ..progress import progress

__all__ = ["run", "core", "core_usable", "MEASURED_SAVING_S", "DRIVERS"]

log = logging.getLogger(__name__)

#: The drivers, by the name ``BAYESBIAS_NUTPIE`` takes.
DRIVERS = ("core", "public")

#: Wall time per process that the core driver saves over the public one (seconds): a small
#: default fit in a fresh process, median of 5, ``python benchmarks/bench_nutpie_core.py``
#: on 2 shared cores: core 5.6 s, public 7.8 s (ratio 1.40) at a load average of 6; 12.1 s
#: and 14.0 s (1.9 s saved) at 11. Loading alone: 1.5 s against 5.9 s for ``import nutpie``.
#: The issue measured 1.3-1.5 s on a quieter machine; not the "about 3 s" once stated here.
MEASURED_SAVING_S = 2.2

#: The core's names the core driver calls.
_CORE_NAMES = ("LogpFunc", "ExpandFunc", "PyVariable", "PyMcModel", "PyNutsSettings",
               "ProgressType", "PySampler", "PyStorage")

_TEMPLATE = ("{% for chain in chains %}{{ chain.finished_draws }}/{{ chain.total_draws }}"
             "{% if not loop.last %}, {% endif %}{% endfor %}")


def core():
    """Return nutpie's compiled core (``nutpie._lib``) without importing the ``nutpie`` package.

    The package's ``__init__`` imports ArviZ (with arviz-plots and matplotlib) and PyArrow's
    pandas glue for its high-level wrapper: time that the
    cell-marginal sampler, which drives the core directly, does not need
    (:data:`MEASURED_SAVING_S` per process).
    """
    import importlib.machinery
    import importlib.util
    import sys
    from pathlib import Path

    lib = sys.modules.get("nutpie._lib")
    if lib is not None:
        return lib
    pkg = importlib.util.find_spec("nutpie")  # locates the package without running it
    if pkg is None or not pkg.submodule_search_locations:
        raise ImportError("nutpie is not installed")
    for folder in pkg.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / f"_lib{suffix}"
            if path.is_file():
                loader = importlib.machinery.ExtensionFileLoader("nutpie._lib", str(path))
                spec = importlib.util.spec_from_file_location("nutpie._lib", path,
                                                              loader=loader)
                lib = importlib.util.module_from_spec(spec)
                loader.exec_module(lib)
                sys.modules["nutpie._lib"] = lib  # a later `import nutpie` reuses it
                return lib
    raise ImportError("nutpie's compiled core (nutpie/_lib) was not found")


#: Sampler statistics nutpie leaves out unless the matching setting is on (as nutpie does).
_SKIPPED_STATS = {
    "store_gradient": ("gradient",),
    "store_unconstrained": ("unconstrained_draw",),
    "adapt_options.mass_matrix_options.store_mass_matrix": (
        "mass_matrix_inv", "mass_matrix_eigvals", "mass_matrix_stds"),
    "store_divergences": ("divergence_start", "divergence_end", "divergence_momentum",
                          "divergence_start_gradient"),
    "store_transformed": ("transformed_position", "transformed_gradient",
                          "transformation_mu"),
}


def _arrow_columns(batches, skip=()) -> tuple[dict, dict]:
    """Per-chain arrow record batches -> name -> (chain, draw, ...) arrays and item dims.

    Rows with ``tuning`` set (in `batches`' companion stats) are dropped by the caller.
    """
    import pyarrow

    out, dims = {}, {}
    n_chains = len(batches)
    length = max(b.num_rows for b in batches)
    for chain, batch in enumerate(batches):
        for name in batch.column_names:
            if name in skip or name in ("chain", "draw"):  # indices, not variables
                continue
            col = batch.column(name)
            meta = col.field.metadata or {}
            item_dims = meta.get(b"dims", b"").decode()
            item_shape = [int(v) for v in meta.get(b"shape", b"").decode().split(",") if v]
            col = pyarrow.array(col)
            is_null = col.is_null()
            if hasattr(col, "flatten"):
                col = col.flatten()
            dtype = col.type.to_pandas_dtype()
            if name not in out:
                shape = [n_chains, length, *item_shape]
                if dtype in (np.float64, np.float32):
                    out[name] = np.full(shape, np.nan, dtype=dtype)
                elif dtype == np.dtype("O"):
                    out[name] = np.full(shape, None, dtype=dtype)
                else:
                    out[name] = np.zeros(shape, dtype=dtype)
                dims[name] = item_dims.split(",") if item_dims else []
            values = col.to_numpy(False)
            rows = batch.num_rows
            if is_null.sum() == 0:
                out[name][chain, :rows] = values.reshape((rows, *item_shape))
            else:
                mask = is_null.to_numpy(False)
                if values.shape[0] == rows:
                    values = values[~mask]
                out[name][chain, :rows][~mask] = values.reshape(((~mask).sum(), *item_shape))
    return out, dims


def _dataset(values: dict, dims: dict, chains: int, draws: int) -> xr.Dataset:
    """Name -> (chain, draw, ...) arrays as a Dataset (ArviZ's default names for other dims)."""
    out = xr.Dataset(coords={"chain": np.arange(chains), "draw": np.arange(draws)})
    for name, arr in values.items():
        extra = list(dims.get(name) or [f"{name}_dim_{i}" for i in range(arr.ndim - 2)])
        out[name] = ("chain", "draw", *extra), arr
    if "connection" in out.dims:
        out = out.assign_coords(connection=list(CONNECTIONS))
    return out


def _core_sampler(kernel, init_fn, label: str, draws: int, tune: int, chains: int,
                  cores: int, seed: int, target_accept: float, every_ms: int = 2000):
    """Build nutpie's sampler on `kernel` from its core: ``(sampler, settings)``.

    The settings and seeding are those of ``nutpie.sample``; progress (draws per chain,
    elapsed) goes to the ``bayesbias.progress`` logger. Raises AttributeError or TypeError
    when the core's API is not the one this was written for.
    """
    lib = core()
    data = kernel.data
    k = int(data[0]) if kernel.dim is None else kernel.dim
    t0 = time.perf_counter()

    def report(formatted):
        progress.info("%s: draws per chain %s (incl. tuning), %.1f s", label, formatted,
                      time.perf_counter() - t0)

    logp = lib.LogpFunc(kernel.logp.address, data.ctypes.data, data)
    expand = lib.ExpandFunc(k, k if kernel.expanded_dim is None else kernel.expanded_dim,
                            kernel.expand.address, data.ctypes.data, data)
    coords = {"connection": list(CONNECTIONS), **(kernel.coords or {})}
    sizes = {name: len(labels) for name, labels in coords.items()}
    variables = lib.PyVariable.new_variables(kernel.names, ["float64"] * len(kernel.names),
                                             kernel.shapes, sizes, kernel.dims)
    model = lib.PyMcModel(logp, expand, variables, k, sizes, coords, init_fn, None)
    make = lib.PyNutsSettings.LowRank if kernel.adaptation == "low_rank" else \
        lib.PyNutsSettings.Diag
    settings = make(seed)
    settings.update({"target_accept": target_accept, "num_tune": tune, "num_draws": draws,
                     "num_chains": chains})
    ptype = lib.ProgressType.template_callback(every_ms, _TEMPLATE, cores, report)
    sampler = lib.PySampler.from_pymc(settings, cores, model, ptype, None, 100,
                                      lib.PyStorage.arrow())
    return sampler, settings


def _run_core(sampler, settings, chains: int) -> tuple[xr.Dataset, xr.Dataset]:
    """Run a sampler of :func:`_core_sampler`; its trace as ``nutpie.sample`` converts it."""
    try:
        sampler.wait(None)
    except BaseException:  # Ctrl-C, SIGTERM or a sampler error: stop the chains, re-raise
        with contextlib.suppress(Exception):
            sampler.abort()
        raise
    draw_batches, stat_batches = sampler.take_results().get_arrow_trace()
    opts = settings.as_dict()["settings"]

    skip = [v for key, names in _SKIPPED_STATS.items() if not _nested(opts, key)
            for v in names]
    n_tune = [int(s.column("tuning").to_numpy().sum()) for s in stat_batches]
    post = [b.slice(t, b.num_rows - t) for b, t in zip(draw_batches, n_tune, strict=True)]
    stats = [b.slice(t, b.num_rows - t) for b, t in zip(stat_batches, n_tune, strict=True)]
    n_draws = max(b.num_rows for b in post)
    values, dims = _arrow_columns(post)
    stat_values, stat_dims = _arrow_columns(stats, skip)
    return (_dataset(values, dims, chains, n_draws),
            _dataset(stat_values, stat_dims, chains, n_draws))


def _nested(settings: dict, name: str):
    for part in name.split("."):
        if not isinstance(settings, dict) or part not in settings:
            return False
        settings = settings[part]
    return settings




def core_usable() -> bool:
    """Return whether the core driver can run.

    It is not refused by ``BAYESBIAS_NUTPIE=public`` and the core has the names it calls.
    """
    if os.environ.get("BAYESBIAS_NUTPIE", "core").lower() == "public":
        return False
    try:
        lib = core()
    except ImportError:
        return False
    return all(hasattr(lib, n) for n in _CORE_NAMES)


def run(kernel, init_fn, label: str, draws: int, tune: int, chains: int, cores: int,
        seed: int, target_accept: float) -> tuple[xr.Dataset, xr.Dataset]:
    """NUTS on `kernel`: ``(posterior, sample_stats)`` without warmup.

    By the core driver when it is usable (and its calls succeed), else by nutpie's public API.
    """
    if core_usable():
        try:
            sampler, settings = _core_sampler(kernel, init_fn, label, draws, tune, chains,
                                              cores, seed, target_accept)
        except (AttributeError, TypeError) as exc:  # the private API changed
            log.info("nutpie's core API differs (%s): using its public API", exc)
        else:
            return _run_core(sampler, settings, chains)
    return _run_public(kernel, init_fn, label, draws, tune, chains, cores, seed,
                       target_accept)


def _run_public(kernel, init_fn, label: str, draws: int, tune: int, chains: int, cores: int,
                seed: int, target_accept: float) -> tuple[xr.Dataset, xr.Dataset]:
    """NUTS on `kernel` through ``nutpie.compiled_pyfunc.from_pyfunc`` and ``nutpie.sample``."""
    import nutpie
    from nutpie.compiled_pyfunc import from_pyfunc

    data = kernel.data
    k = int(data[0]) if kernel.dim is None else kernel.dim
    n_out = k if kernel.expanded_dim is None else kernel.expanded_dim
    ptr = ctypes.POINTER(ctypes.c_double)
    data_ptr = data.ctypes.data_as(ptr)
    sizes = [int(np.prod(s)) for s in kernel.shapes]
    bounds = np.cumsum([0] + sizes)

    def make_logp():
        def logp(x):
            x = np.ascontiguousarray(x, dtype=np.float64)
            grad, lp = np.empty(k), np.zeros(1)
            rc = kernel.logp.ctypes(k, x.ctypes.data_as(ptr), grad.ctypes.data_as(ptr),
                                    lp.ctypes.data_as(ptr), data_ptr)
            if rc != 0:  # non-finite density or gradient: nutpie treats it as a divergence
                return -np.inf, np.zeros(k)
            return lp[0], grad
        return logp

    def make_expand(seed1, seed2, chain):
        def expand(x):
            x = np.ascontiguousarray(x, dtype=np.float64)
            out = np.empty(n_out)
            kernel.expand.ctypes(k, n_out, x.ctypes.data_as(ptr), out.ctypes.data_as(ptr),
                                 data_ptr)
            return {name: out[bounds[i]:bounds[i + 1]].reshape(shape)
                    for i, (name, shape) in enumerate(zip(kernel.names, kernel.shapes,
                                                          strict=True))}
        return expand

    coords = {"connection": list(CONNECTIONS), **(kernel.coords or {})}
    model = from_pyfunc(k, make_logp, make_expand, [np.dtype("float64")] * len(kernel.names),
                        kernel.shapes, kernel.names, coords=coords, dims=kernel.dims,
                        make_initial_point_fn=init_fn)
    t0 = time.perf_counter()
    tree = nutpie.sample(model, draws=draws, tune=tune, chains=chains, cores=cores, seed=seed,
                         save_warmup=False, progress_bar=False, target_accept=target_accept,
                         adaptation=kernel.adaptation)
    progress.info("%s: %d chains x %d draws (nutpie's public API), %.1f s", label, chains,
                  draws + tune, time.perf_counter() - t0)
    post, stats = tree.posterior.to_dataset(), tree.sample_stats.to_dataset()
    # as the core driver: coordinates of chain, draw and connection only (the caller adds
    # the kernel's own)
    return tuple(ds.drop_vars([c for c in ds.coords if c not in ("chain", "draw", "connection")
                               or c not in ds.dims]) for ds in (post, stats))

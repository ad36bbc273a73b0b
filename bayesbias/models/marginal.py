"""Sampling with the per-unit cell means integrated out exactly, then drawn exactly.

For a family whose cell means are ``mu[u, c] ~ Normal(M[c], T[c])`` given a few parameters
and whose rows are ``Normal(mu[u, c], S[c])``, the rows of a cell with n rows, mean ybar and
within-cell sum of squares ss have the exact marginal log-density

    -n/2 log(2 pi) - (n - 1) log S - ss / (2 S^2) - 1/2 log n
      - 1/2 log V - (ybar - M)^2 / (2 V),       V = T^2 + S^2 / n

(the cell mean is ``Normal(M, sqrt(V))`` and ss depends on S alone). NUTS samples only the
hyperparameters (about 12, no funnel); afterwards every ``mu[u, c]`` is drawn from its
Normal conditional (precision ``1/T^2 + n/S^2``), so the joint draws have exactly the
posterior of the full model. A family opts in by defining ``marginal_blocks(spec)``, or,
when its cell means are not independent given a few parameters (the additive family), by
defining ``marginal_kernel(spec, cells)`` returning a :class:`Kernel`.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import numpy as np
import xarray as xr

from ..config import CONNECTIONS
from ..progress import progress
from .cells import Cells, cell_mean_conditional

__all__ = ["Block", "Kernel", "supports", "sample_marginal", "conditional_cell_means"]

_NC = len(CONNECTIONS)


@dataclass(frozen=True)
class Block:
    """A named parameter of a cell-marginal family.

    role : "M" (group mean per connection), "I" (an intercept added to every M), "T"
    (between-unit sd), "S" (residual sd). ``per_connection``: one value per connection
    (dim ``connection``) or a single shared value.
    """

    name: str
    prior: object
    role: str
    per_connection: bool = True


@dataclass(frozen=True)
class Kernel:
    """What nutpie samples for one fit, and how the integrated-out parameters come back.

    ``names``, ``shapes``, ``dims``: the sampled (constrained) variables; ``data``: the flat
    array the C functions ``logp`` and ``expand`` read (``logp(dim, x, grad, logp, data)``,
    ``expand(dim, expanded, x, out, data)``, each a
    :class:`~bayesbias.models._native.CFunc`); ``init(rng)``: a start on the
    unconstrained scale; ``complete(raw, rng)``: from the sampled draws (name -> array with
    leading chain, draw) the remaining posterior variables, name -> (dims, array), in
    posterior order, with ``mu`` last.
    """

    names: list
    shapes: list
    dims: dict
    data: np.ndarray
    logp: object
    expand: object
    init: object
    complete: object
    adaptation: str = "diag"
    #: Coordinates of dims other than chain, draw, connection and the unit (name -> labels).
    coords: dict | None = None
    #: Attributes recorded on the posterior (e.g. the parametrisation chosen).
    attrs: dict | None = None
    #: Number of sampled (unconstrained) values; default ``data[0]``.
    dim: int | None = None
    #: Number of values ``expand`` writes; default `dim`.
    expanded_dim: int | None = None


def supports(spec) -> bool:
    """Whether `spec` can be sampled with the cell means integrated out.

    Its family defines ``marginal_kernel`` or ``marginal_blocks`` (not None for `spec`), and
    the compiled kernels are available (:func:`bayesbias.models._native.library`; without a
    C compiler the PyMC model is sampled instead).
    """
    from ._native import library
    from .families import family_module

    mod = family_module(spec.family)
    if getattr(mod, "marginal_kernel", None) is None:
        fn = getattr(mod, "marginal_blocks", None)
        if fn is None or fn(spec) is None:
            return False
    return library() is not None


def _layout(spec):
    from .families import family_module
    from .priors import kernel_row

    mod = family_module(spec.family)
    blocks, fixed = mod.marginal_blocks(spec)
    rows, maps, names = [], [], []
    for b in blocks:
        size = _NC if b.per_connection else 1
        for i in range(size):
            rows.append(kernel_row(b.prior))
            col = np.zeros((3, _NC))
            r = {"M": 0, "I": 0, "T": 1, "S": 2}[b.role]
            if b.per_connection:
                col[r, i] = 1.0
            else:
                col[r, :] = 1.0
            maps.append(col)
            names.append(b.name)
    offsets = np.zeros((2, _NC))
    offsets[0] = fixed.get("M", 0.0)
    offsets[1] = fixed.get("T", 0.0)
    return (blocks, np.asarray(rows, dtype=np.float64).reshape(-1, 5),
            np.ascontiguousarray(np.stack(maps, axis=-1)), offsets, names)


def _cell_array(cells: Cells) -> np.ndarray:
    ui, ci = cells.observed
    return np.ascontiguousarray(np.stack([ci.astype(np.float64), cells.n[ui, ci].astype(float),
                                          cells.mean[ui, ci], cells.ss[ui, ci]]))


def _initial(blocks, cells: Cells, rng) -> np.ndarray:
    """Return a start near the data (pooled means and sds), jittered with `rng`."""
    n = cells.n.sum(axis=0)
    tot = np.where(cells.n > 0, cells.n * np.nan_to_num(cells.mean), 0.0).sum(axis=0)
    overall = tot.sum() / max(n.sum(), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, tot / np.maximum(n, 1), overall)
        within = np.sqrt(cells.ss.sum(axis=0) / np.maximum(n - 1, 1))
    within = np.where(np.isfinite(within) & (within > 1e-6), within, 0.1)
    between = np.array([np.nanstd(cells.mean[cells.n[:, j] > 0, j])
                        if (cells.n[:, j] > 0).sum() > 1 else 0.1 for j in range(_NC)])
    between = np.clip(np.nan_to_num(between, nan=0.1), 0.01, None)
    has_i = any(b.role == "I" for b in blocks)
    out = []
    for b in blocks:
        if b.role == "I":
            vals = np.array([overall])
        elif b.role == "M":
            vals = mean - overall if has_i else mean
        elif b.role == "T":
            vals = between if b.per_connection else np.array([between.mean()])
        else:
            vals = within if b.per_connection else np.array([within.mean()])
        vals = np.log(vals) if b.prior.positive else vals
        out.append(vals if b.per_connection or vals.size == 1 else vals[:1])
    x = np.concatenate(out).astype(np.float64)
    return x + rng.uniform(-0.1, 0.1, x.size)


def _values(blocks, v: np.ndarray) -> dict[str, np.ndarray]:
    out, k = {}, 0
    for b in blocks:
        size = _NC if b.per_connection else 1
        out[b.name] = v[k:k + size] if b.per_connection else v[k:k + 1].reshape(())
        k += size
    return out


def _mts(blocks, fixed, post: dict[str, np.ndarray], shape) -> tuple[np.ndarray, ...]:
    """Per-connection M, T, S draws, each (chain, draw, connection)."""
    m = np.broadcast_to(np.asarray(fixed.get("M", 0.0), float), shape + (_NC,)).copy()
    t = np.broadcast_to(np.asarray(fixed.get("T", 0.0), float), shape + (_NC,)).copy()
    s = np.zeros(shape + (_NC,))
    for b in blocks:
        val = post[b.name]
        val = val if b.per_connection else val[..., None]
        if b.role in ("M", "I"):
            m = m + val
        elif b.role == "T":
            t = t + val
        else:
            s = s + val
    return m, t, s


def conditional_cell_means(m, t, s, cells: Cells, rng) -> np.ndarray:
    """Draw ``mu[u, c]`` from its Normal conditional given M, T, S (chain, draw, connection).

    Returns an array (chain, draw, unit, connection); empty cells get prior draws.
    """
    n = cells.n[None, None].astype(float)
    ybar = np.nan_to_num(cells.mean)[None, None]
    mean, prec = cell_mean_conditional(m[:, :, None, :], t[:, :, None, :], s[:, :, None, :],
                                       n, ybar)
    z = rng.standard_normal(np.broadcast_shapes(mean.shape))
    return mean + z / np.sqrt(prec)


_TEMPLATE = ("{% for chain in chains %}{{ chain.finished_draws }}/{{ chain.total_draws }}"
             "{% if not loop.last %}, {% endif %}{% endfor %}")


def nutpie_lib():
    """Return nutpie's compiled core (``nutpie._lib``) without importing the ``nutpie`` package.

    The package's ``__init__`` imports ArviZ (with arviz-plots and matplotlib), numba and
    PyArrow's pandas glue for its high-level wrapper: about 3 s per process that the
    cell-marginal sampler, which drives the core directly, does not need.
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


def _run_nutpie(kernel: Kernel, init_fn, label: str, draws: int, tune: int, chains: int,
                cores: int, seed: int, target_accept: float,
                every_ms: int = 2000) -> tuple[xr.Dataset, xr.Dataset]:
    """NUTS on `kernel` through nutpie's core: ``(posterior, sample_stats)`` without warmup.

    The settings, seeding and trace conversion are those of ``nutpie.sample`` (same draws);
    progress (draws per chain, elapsed) goes to the ``bayesbias.progress`` logger.
    """
    lib = nutpie_lib()
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


def _blocks_kernel(spec, cells: Cells) -> Kernel:
    """Return the :class:`Kernel` of a family defined by ``marginal_blocks``."""
    from ._native import entry_points, pack_cells
    from .families import family_module

    mod = family_module(spec.family)
    blocks, priors, maps, offsets, _ = _layout(spec)
    _, fixed = mod.marginal_blocks(spec)
    names = [b.name for b in blocks]
    native = entry_points("cell")
    if native is None:
        raise RuntimeError("no compiled kernels (no C compiler): check supports() first")
    logp, expand = native

    def complete(raw, rng):
        shape = raw[names[0]].shape[:2]
        m, t, s = _mts(blocks, fixed, raw, shape)
        out = {b.name: (("chain", "draw", "connection") if b.per_connection
                        else ("chain", "draw"), raw[b.name]) for b in blocks}
        for name, da in mod.derived(raw, m).items():
            out[name] = ("chain", "draw", "connection"), da
        out["mu"] = ("chain", "draw", cells.unit_dim, "connection"), \
            conditional_cell_means(m, t, s, cells, rng)
        return out

    return Kernel(names=names, shapes=[(_NC,) if b.per_connection else () for b in blocks],
                  dims={b.name: ("connection",) for b in blocks if b.per_connection},
                  data=pack_cells(priors, maps, offsets, _cell_array(cells)),
                  logp=logp, expand=expand,
                  init=lambda rng: _initial(blocks, cells, rng), complete=complete,
                  adaptation=getattr(mod, "ADAPTATION", "diag"))


def sample_marginal(spec, cells: Cells, draws: int, tune: int, chains: int, cores: int,
                    seed: int, target_accept: float = 0.8) -> xr.DataTree:
    """Sample `spec` on `cells` with nutpie on the cell-marginal density.

    Returns a DataTree with ``posterior`` (the family's parameters, derived group means and
    the cell means ``mu``) and nutpie's ``sample_stats``.
    """
    from .families import family_module

    mod = family_module(spec.family)
    make = getattr(mod, "marginal_kernel", None)
    kernel = make(spec, cells) if make is not None else _blocks_kernel(spec, cells)

    def make_init(s):
        return kernel.init(np.random.default_rng([seed, int(s) % (2**63)]))

    t0 = time.perf_counter()
    post, stats = _run_nutpie(kernel, make_init, f"sampling {spec.name}", draws, max(tune, 1),
                              chains, cores, seed, target_accept)
    sampling_time = time.perf_counter() - t0
    raw = {n: post[n].transpose("chain", "draw", ...).values for n in kernel.names}
    rng = np.random.default_rng([seed, 20240101])
    unit = cells.unit_dim
    out = xr.Dataset(coords={"chain": post["chain"].values, "draw": post["draw"].values,
                             "connection": list(CONNECTIONS), unit: cells.units.tolist()})
    for name, (dims, values) in kernel.complete(raw, rng).items():
        out[name] = dims, values
    out = out.assign_coords(kernel.coords or {})
    out.attrs.update(kernel.attrs or {}, sampling_time=sampling_time,
                     marginal="cell means integrated out")
    res = xr.DataTree()
    res["posterior"] = xr.DataTree(out)
    res["sample_stats"] = xr.DataTree(stats)
    return res

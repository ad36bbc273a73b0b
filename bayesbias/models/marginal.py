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

import time
from dataclasses import dataclass

import numpy as np

from .._xarray import xr
from ..config import CONNECTIONS
from ._native import entry_points, library, pack_cells
from ._nutpie import core, run
from .cells import Cells, cell_mean_conditional
from .families import family
from .priors import kernel_row

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
    mod = family(spec.family)
    if getattr(mod, "marginal_kernel", None) is None:
        fn = getattr(mod, "marginal_blocks", None)
        if fn is None or fn(spec) is None:
            return False
    return library() is not None


def _layout(spec):
    mod = family(spec.family)
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


def _grouped_cells(cell_array: np.ndarray) -> np.ndarray:
    """Cells that share (connection, n) summed into one group each (the ``cmg`` kernel).

    Returns (6, groups): connection, n, cells, mean of their cell means, sum of squares of
    the cell means about it, summed within-cell sums of squares. The marginal density is the
    same sum over cells, computed in O(groups) instead of O(cells) per gradient.
    """
    conn, n, ybar, ss = cell_array
    key, inv = np.unique(np.stack([conn, n], axis=1), axis=0, return_inverse=True)
    inv = inv.ravel()
    w = np.bincount(inv, minlength=len(key)).astype(float)
    c = np.bincount(inv, weights=ybar, minlength=len(key)) / w
    q = np.bincount(inv, weights=(ybar - c[inv]) ** 2, minlength=len(key))
    tot = np.bincount(inv, weights=ss, minlength=len(key))
    return np.ascontiguousarray(np.stack([key[:, 0], key[:, 1], w, c, q, tot]))


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


def _run_nutpie(kernel: Kernel, init_fn, label: str, draws: int, tune: int, chains: int,
                cores: int, seed: int, target_accept: float) -> tuple[xr.Dataset, xr.Dataset]:
    """NUTS on `kernel`: ``(posterior, sample_stats)`` without warmup (:mod:`._nutpie`)."""
    return run(kernel, init_fn, label, draws, tune, chains, cores, seed, target_accept)


def nutpie_lib():
    """Return nutpie's compiled core without importing the ``nutpie`` package (:mod:`._nutpie`)."""
    return core()


def _blocks_kernel(spec, cells: Cells, word_draws: bool = True,
                   grouped: bool = False) -> Kernel:
    """Return the :class:`Kernel` of a family defined by ``marginal_blocks``.

    `grouped`: the density summed over groups of cells that share (connection, n)
    (:func:`_grouped_cells`; same posterior, cost independent of the number of words, but
    other rounding, hence other draws than the per-cell kernel).
    """
    mod = family(spec.family)
    blocks, priors, maps, offsets, _ = _layout(spec)
    _, fixed = mod.marginal_blocks(spec)
    names = [b.name for b in blocks]
    native = entry_points("grouped" if grouped else "cell")
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
        if word_draws:
            out["mu"] = ("chain", "draw", cells.unit_dim, "connection"), \
                conditional_cell_means(m, t, s, cells, rng)
        return out

    return Kernel(names=names, shapes=[(_NC,) if b.per_connection else () for b in blocks],
                  dims={b.name: ("connection",) for b in blocks if b.per_connection},
                  data=pack_cells(priors, maps, offsets,
                                  _grouped_cells(_cell_array(cells)) if grouped
                                  else _cell_array(cells)),
                  logp=logp, expand=expand,
                  init=lambda rng: _initial(blocks, cells, rng), complete=complete,
                  adaptation=mod.ADAPTATION)


def word_summaries_supported(spec) -> bool:
    """Whether fits of `spec` can do without per-word draws (:mod:`.word_summaries`).

    Families defined by ``marginal_blocks``, whose cell means are independent Normals given
    the sampled parameters, and families with ``WORD_SUMMARIES`` (crossed: independent
    given the parameters and the attribute effects; its ``marginal_kernel`` takes
    ``word_draws`` and ``grouped``).
    """
    mod = family(spec.family)
    if mod.WORD_SUMMARIES:  # its kernel takes word_draws and grouped
        return True
    return getattr(mod, "marginal_kernel", None) is None and \
        getattr(mod, "marginal_blocks", None) is not None


def sample_marginal(spec, cells: Cells, draws: int, tune: int, chains: int, cores: int,
                    seed: int, target_accept: float = 0.8,
                    word_draws: bool = True, grouped: bool = False) -> xr.DataTree:
    """Sample `spec` on `cells` with nutpie on the cell-marginal density.

    Returns a DataTree with ``posterior`` (the family's parameters, derived group means and,
    with `word_draws`, the cell means ``mu``) and nutpie's ``sample_stats``. Without
    `word_draws` (families of :func:`word_summaries_supported` only) the per-word summaries
    come from the parameters' draws (:mod:`.word_summaries`). `grouped`: evaluate the
    density on groups of cells that share (connection, n) (those families only).
    """
    mod = family(spec.family)
    make = getattr(mod, "marginal_kernel", None)
    optional = getattr(mod, "WORD_DRAWS_OPTIONAL", False)  # its kernel takes word_draws
    if not word_draws and not (word_summaries_supported(spec) or optional):
        raise ValueError(f"{spec.name}: per-word summaries without draws are not supported")
    if grouped and not word_summaries_supported(spec):
        raise ValueError(f"{spec.name}: no grouped kernel")
    if make is None:
        kernel = _blocks_kernel(spec, cells, word_draws, grouped)
    elif mod.WORD_SUMMARIES:
        kernel = make(spec, cells, word_draws=word_draws, grouped=grouped)
    elif optional:
        kernel = make(spec, cells, word_draws=word_draws)
    else:
        kernel = make(spec, cells)

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
    if not word_draws:
        out = out.drop_vars(unit)  # no variable has the unit dim: the cells hold the labels
    res = xr.DataTree()
    res["posterior"] = xr.DataTree(out)
    res["sample_stats"] = xr.DataTree(stats)
    return res

"""The additive family: a mean per unit plus a shift per connection.

``mu[u, c] = m[u] + co[c]`` with Normal priors on ``m`` and ``co`` is linear-Gaussian given the
residual sd, so the default sampler integrates ``theta = (m, co)`` out exactly: nutpie samples
only the log residual sd(s) on the marginal density (``add_logp`` in :mod:`._native`, a C
function compiled once per machine: nothing compiled per table, no ridge), and every draw of
``theta`` then comes from its exact Gaussian conditional (:func:`conditional_theta`). The
joint draws have exactly the posterior of the full model.

The PyMC model (``--sampler pymc``, the reference path) keeps ``theta``: it has a ridge
(adding t to every m and subtracting t from every co leaves the likelihood unchanged), which
defeats samplers with a diagonal mass matrix, so it samples ``theta = mu0 + s * (V @ w)`` with
``w ~ Normal(0, 1)`` and V the right singular vectors of the whitened, count-weighted cell
design. The map is linear with orthogonal V, so prior and posterior are unchanged, while the
posterior curvature in ``w`` is diagonal (exactly so for the weights used).
"""

from __future__ import annotations

import numpy as np

from ..config import CONNECTIONS
from ..errors import ModelSpecError
from ._native import entry_points, pack_additive
from .cells import Cells
from .priors import kernel_row
from .spec import ModelSpec

__all__ = ["cell_means", "rotation", "card_lines", "validate", "model_data", "marginal_kernel",
           "conditional_theta"]

PRIORS = ("m", "co", "sigma")
SCALES = ("sigma",)
PARAMETERS = ("co", "m", "sigma")
GROUP_MEAN = None


def card_lines(spec: ModelSpec, unit: str, s: str) -> list[str]:
    """Return the model card's equations."""
    p = spec.priors
    return [f"  distance_i ~ Normal(m[{unit}] + co[c], {s})",
            f"  m[{unit}] ~ {p['m']}",
            f"  co[c] ~ {p['co']}",
            "  identified: contrasts co[c] - co[none]; m and co integrated out exactly "
            "(PyMC sampler: an exact rotation)"]


def validate(spec: ModelSpec, source: str) -> None:
    """Refuse priors other than Normal for m and co (the rotation needs them)."""
    for p in ("m", "co"):
        if spec.priors[p].dist != "Normal":
            raise ModelSpecError(
                f"{source}: the additive family samples an exact rotation of (m, co) "
                f"and needs Normal priors for them; got {p} ~ {spec.priors[p]}")


def model_data(spec: ModelSpec, cells: Cells) -> dict:
    """Values of the rotation's ``pm.Data``."""
    mu0, s, v = rotation(spec, cells)
    return {"prior_mean": mu0, "prior_sd": s, "rotation": v}


def simulate_cell_means(spec: ModelSpec, rng, n_u: int, unit: str, given: dict | None):
    """Return true cell means ``(n_u, 4)`` and parameters (name -> (dims, values)).

    For :func:`bayesbias.testing.simulate_table`: drawn from the spec's priors when `given`
    is None, else from the values in `given` (see :data:`bayesbias.testing.REALISTIC`).
    """
    p = spec.priors
    if given is None:
        m = np.asarray(p["m"].draw(rng, n_u), dtype=float)
        co = np.asarray(p["co"].draw(rng, len(CONNECTIONS)), dtype=float)
    else:
        m = given["m_mean"] + given["m_sd"] * rng.standard_normal(n_u)
        co = np.asarray(given["co"], float)
    return m[:, None] + co[None, :], {"m": ((unit,), m), "co": (("connection",), co)}


def prior_moments(spec: ModelSpec, n_u: int) -> tuple[np.ndarray, np.ndarray]:
    """Prior mean and sd of ``theta = (m, co)`` (units first, then connections)."""
    n_c = len(CONNECTIONS)
    pm_, pc = dict(spec.priors["m"].params), dict(spec.priors["co"].params)
    return (np.r_[np.full(n_u, pm_["mu"]), np.full(n_c, pc["mu"])],
            np.r_[np.full(n_u, pm_["sigma"]), np.full(n_c, pc["sigma"])])


def rotation(spec: ModelSpec, cells: Cells) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prior mean, prior sd and orthogonal rotation V of ``theta = (m, co)``."""
    n_u, n_c = cells.units.size, len(CONNECTIONS)
    mu0, s = prior_moments(spec, n_u)
    ui, ci = cells.observed
    n = cells.n[ui, ci].astype(float)
    # Pooled within-cell variance per connection approximates sigma^2 in the curvature.
    tot_ss, tot_n = cells.ss.sum(axis=0), cells.n.sum(axis=0)
    overall = max(cells.ss.sum() / max(cells.n.sum() - 1, 1), 1e-12)
    var_c = np.where(tot_n > 1, tot_ss / np.maximum(tot_n - 1, 1), overall)
    var_c = np.maximum(var_c, 1e-12) if spec.residual_sd == "per_connection" else overall
    w = np.sqrt(n / np.broadcast_to(var_c, (n_c,))[ci])
    design = np.zeros((ui.size, n_u + n_c))
    design[np.arange(ui.size), ui] = 1.0
    design[np.arange(ui.size), n_u + ci] = 1.0
    _, _, vt = np.linalg.svd(w[:, None] * design * s[None, :], full_matrices=True)
    return mu0, s, vt.T


def cell_means(spec: ModelSpec, cells: Cells):
    """Add the rotated coordinates ``w``, deterministic ``m``, ``co`` and cell means ``mu``."""
    import pymc as pm

    unit = cells.unit_dim
    n_u = cells.units.size
    mu0, s, v = rotation(spec, cells)
    model = pm.modelcontext(None)
    model.add_coord("rotated", np.arange(n_u + len(CONNECTIONS)))
    w = pm.Normal("w", 0.0, 1.0, dims="rotated")
    mu0, s, v = pm.Data("prior_mean", mu0), pm.Data("prior_sd", s), pm.Data("rotation", v)
    theta = mu0 + s * pm.math.dot(v, w)
    m = pm.Deterministic("m", theta[:n_u], dims=unit)
    co = pm.Deterministic("co", theta[n_u:], dims="connection")
    return pm.Deterministic("mu", m[:, None] + co[None, :], dims=(unit, "connection"))


def _cell_array(cells: Cells) -> np.ndarray:
    ui, ci = cells.observed
    return np.ascontiguousarray(np.stack([ui.astype(float), ci.astype(float),
                                          cells.n[ui, ci].astype(float), cells.mean[ui, ci],
                                          cells.ss[ui, ci]]))


def _initial_sd(spec: ModelSpec, cells: Cells) -> np.ndarray:
    """Pooled within-cell sd (per connection or overall), for the sampler's start."""
    n, ss = cells.n, cells.ss
    has = n > 0
    df_all = n.sum() - has.sum()
    overall = np.sqrt(ss.sum() / df_all) if df_all > 0 else 0.1
    overall = overall if np.isfinite(overall) and overall > 1e-6 else 0.1
    if spec.residual_sd != "per_connection":
        return np.array([overall])
    df = n.sum(axis=0) - has.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(ss.sum(axis=0) / df)
    return np.where((df > 0) & np.isfinite(sd) & (sd > 1e-6), sd, overall)


def marginal_kernel(spec: ModelSpec, cells: Cells):
    """Return the sampler's :class:`~bayesbias.models.marginal.Kernel` (log residual sds only)."""
    from .marginal import Kernel

    per = spec.residual_sd == "per_connection"
    n_c = len(CONNECTIONS)
    k = n_c if per else 1
    priors = np.tile(kernel_row(spec.priors["sigma"]), (k, 1))
    smap = np.arange(n_c, dtype=float) if per else np.zeros(n_c)
    n_u = cells.units.size
    mu0, s0 = prior_moments(spec, n_u)
    data = pack_additive(priors.astype(float), smap, mu0, s0, _cell_array(cells), n_u)
    native = entry_points("additive")
    if native is None:
        return None  # no C compiler: the PyMC model is sampled
    start = np.log(_initial_sd(spec, cells))

    def complete(raw, rng):
        sig = raw["sigma"]
        s = sig if per else np.repeat(sig[..., None], n_c, axis=-1)
        m, co = conditional_theta(s, spec, cells, rng)
        unit = cells.unit_dim
        return {"co": (("chain", "draw", "connection"), co),
                "m": (("chain", "draw", unit), m),
                "sigma": (("chain", "draw", "connection") if per else ("chain", "draw"), sig),
                "mu": (("chain", "draw", unit, "connection"), m[..., None] + co[..., None, :])}

    return Kernel(names=["sigma"], shapes=[(n_c,) if per else ()],
                  dims={"sigma": ("connection",)} if per else {}, data=data,
                  logp=native[0], expand=native[1],
                  init=lambda rng: start + rng.uniform(-0.1, 0.1, start.size),
                  complete=complete)


def conditional_theta(s: np.ndarray, spec: ModelSpec, cells: Cells, rng,
                      chunk: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``(m, co)`` from their exact Gaussian conditional given residual sds `s`.

    `s` has shape (..., connection); returns ``m`` (..., unit) and ``co`` (..., connection).
    ``co`` comes from its marginal (precision: the Schur complement of the unit block), then
    ``m`` given ``co`` (a diagonal precision).
    """
    n_u, n_c = cells.units.size, len(CONNECTIONS)
    mu0, s0 = prior_moments(spec, n_u)
    lead = s.shape[:-1]
    flat = s.reshape(-1, n_c)
    total = flat.shape[0]
    z = rng.standard_normal((total, n_c + n_u))
    n = cells.n.astype(float)
    r = np.where(n > 0, np.nan_to_num(cells.mean) - mu0[:n_u, None] - mu0[None, n_u:], 0.0)
    m_out, co_out = np.empty((total, n_u)), np.empty((total, n_c))
    for lo in range(0, total, chunk):
        sl = slice(lo, lo + chunk)
        w = n[None] / flat[sl, None, :] ** 2                    # (d, unit, connection)
        a = 1.0 / s0[None, :n_u] ** 2 + w.sum(-1)               # (d, unit)
        e = 1.0 / s0[None, n_u:] ** 2 + w.sum(1)                # (d, connection)
        bu, bc = (w * r).sum(-1), (w * r).sum(1)
        g = w / a[..., None]
        schur = -np.einsum("dua,dub->dab", g, w) + np.eye(n_c) * e[:, None, :]
        rhs = bc - np.einsum("dua,du->da", g, bu)
        low = np.linalg.cholesky(schur)
        mean_c = np.linalg.solve(schur, rhs[..., None])[..., 0]
        # L^-T z has covariance (L L')^-1, the marginal covariance of co
        dev = np.linalg.solve(np.swapaxes(low, -1, -2), z[sl, :n_c, None])[..., 0]
        phi_c = mean_c + dev
        phi_u = (bu - np.einsum("dua,da->du", w, phi_c)) / a + z[sl, n_c:] / np.sqrt(a)
        co_out[sl] = mu0[n_u:] + phi_c
        m_out[sl] = mu0[:n_u] + phi_u
    return m_out.reshape(lead + (n_u,)), co_out.reshape(lead + (n_c,))

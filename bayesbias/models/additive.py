"""The additive family: a mean per unit plus a shift per connection, sampled on a rotation.

``mu[u, c] = m[u] + co[c]`` has a ridge: adding t to every m and subtracting t from every co
leaves the likelihood unchanged, which defeats samplers with a diagonal mass matrix. With
Normal priors, write ``theta = (m, co) = mu0 + s * (V @ w)`` with ``w ~ Normal(0, 1)`` and V
the right singular vectors of the whitened, count-weighted cell design. The map is linear
with orthogonal V, so prior and posterior are exactly those of the original model, while the
posterior curvature in ``w`` is diagonal (exactly so for the weights used).
"""

from __future__ import annotations

import numpy as np

from ..config import CONNECTIONS
from .cells import Cells
from .spec import ModelSpec

__all__ = ["cell_means", "rotation", "card_lines", "validate", "model_data"]

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
            "  identified: contrasts co[c] - co[none]; sampled on an exact rotation"]


def validate(spec: ModelSpec, source: str) -> None:
    """Refuse priors other than Normal for m and co (the rotation needs them)."""
    from ..errors import ModelSpecError

    for p in ("m", "co"):
        if spec.priors[p].dist != "Normal":
            raise ModelSpecError(
                f"{source}: the additive family samples an exact rotation of (m, co) "
                f"and needs Normal priors for them; got {p} ~ {spec.priors[p]}")


def model_data(spec: ModelSpec, cells: Cells) -> dict:
    """Values of the rotation's ``pm.Data``."""
    mu0, s, v = rotation(spec, cells)
    return {"prior_mean": mu0, "prior_sd": s, "rotation": v}


def rotation(spec: ModelSpec, cells: Cells) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prior mean, prior sd and orthogonal rotation V of ``theta = (m, co)``."""
    n_u, n_c = cells.units.size, len(CONNECTIONS)
    pm_, pc = dict(spec.priors["m"].params), dict(spec.priors["co"].params)
    mu0 = np.r_[np.full(n_u, pm_["mu"]), np.full(n_c, pc["mu"])]
    s = np.r_[np.full(n_u, pm_["sigma"]), np.full(n_c, pc["sigma"])]
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

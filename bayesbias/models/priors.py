"""The prior distributions a spec may use: one table, one row per distribution.

Each row (:class:`Distribution`) holds everything the package needs of a distribution:

- ``params``: its parameters, in PyMC's names and order (``p1``, ``p2``, ``p3`` in C);
  those in ``real`` may take any real value, the others must be positive;
- ``positive``: whether its support is the positive reals (sampled on the log scale);
- ``c_logp``: C statements computing its log-density at ``v`` (returned) and the derivative
  in ``v`` (``*g``), from which the compiled kernels' ``prior()`` function is generated
  (:mod:`bayesbias.models._native`): the one compiled density of the package;
- ``sample``: NumPy draws (``rng, params, size``), used by simulations;
- ``scipy``: the frozen SciPy distribution (``params``), folded at 0 when ``folded``: the
  reference of the closed forms below and the fallback of a row without them;
- ``closed``: the same distribution's log-density and quantile function in closed form
  through NumPy and :mod:`scipy.special` (:class:`Closed`), computed as SciPy computes them
  (the same numbers, tested), so that the exact posterior does not import
  :mod:`scipy.stats` (0.7 s); None: through ``scipy``;
- ``pymc``: the PyMC distribution's name (``pymc.<name>``), used by the PyMC model, the
  reference the tests compare the compiled kernels against.

Everything else is looked up here: :class:`~bayesbias.models.spec.Prior` validates and
draws through the table, the kernels' distribution codes are the rows' positions, the exact
posterior (:mod:`bayesbias.studies.exact_posterior`) asks for :func:`logpdf` and :func:`ppf`.
A new prior is one :func:`register` call (``tests/test_models_priors.py`` registers one and
fits it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Distribution", "Closed", "DISTRIBUTIONS", "register", "code", "kernel_row",
           "scipy_dist", "logpdf", "ppf", "c_source"]


@dataclass(frozen=True)
class Closed:
    """A location-scale distribution in closed form, as SciPy's ``rv_continuous`` has it.

    ``loc_scale(params) -> (loc, scale, shape or None)``: the frozen SciPy distribution's
    location, scale and shape parameter; ``logpdf(z, shape)`` and ``ppf(q, shape)``: its
    standardised log-density and quantile function (SciPy's ``_logpdf`` and ``_ppf``);
    ``support``: the standardised support. :func:`logpdf` and :func:`ppf` wrap them as
    ``rv_continuous.logpdf`` and ``.ppf`` do (support, bounds, NaN), so the numbers are
    SciPy's: the same operations in the same order.
    """

    loc_scale: Callable
    logpdf: Callable
    ppf: Callable
    support: tuple[float, float] = (-np.inf, np.inf)


@dataclass(frozen=True)
class Distribution:
    """One prior distribution: its parameters and every implementation the package uses."""

    name: str
    params: tuple[str, ...]
    positive: bool
    c_logp: str
    sample: Callable
    scipy: Callable
    pymc: str
    folded: bool = False
    #: Parameters that may take any real value (the others must be > 0).
    real: tuple[str, ...] = ("mu",)
    #: The log-density and quantiles in closed form (None: through ``scipy``).
    closed: Closed | None = None

    def __post_init__(self):
        if not 1 <= len(self.params) <= 3:
            raise ValueError(f"distribution {self.name}: 1 to 3 parameters, got {self.params}")


def _stats():
    from scipy import stats

    return stats


def _sc():
    from scipy import special

    return special


#: SciPy's log of the standard Normal density's constant (``_norm_pdf_logC``).
_NORM_LOGC = np.log(np.sqrt(2 * np.pi))


def _t_logpdf(z, df):
    # scipy.stats.t._logpdf at finite df
    return (np.log(_sc().poch(0.5 * df, 0.5)) - 0.5 * (np.log(df) + np.log(np.pi))
            - (df + 1) / 2 * np.log1p(z * z / df))


def _lognorm_logpdf(z, s):
    # scipy.stats.lognorm._logpdf: -inf at 0
    out = np.full(z.shape, -np.inf)
    pos = z != 0
    zp = z[pos]
    out[pos] = -np.log(zp) ** 2 / (2 * s**2) - np.log(s * zp * np.sqrt(2 * np.pi))
    return out


_POSITIVE = (0.0, np.inf)


#: Name -> row, in kernel-code order (a row's code is its position).
DISTRIBUTIONS: dict[str, Distribution] = {}


def register(dist: Distribution, replace: bool = False) -> Distribution:
    """Add a row to :data:`DISTRIBUTIONS` (its code is the next position).

    The compiled kernels are regenerated from the table (their cache key is the source), so
    the new distribution is usable by the C sampler, the PyMC model, simulations and the
    exact posterior at once.
    """
    if dist.name in DISTRIBUTIONS and not replace:
        raise ValueError(f"distribution {dist.name!r} is already registered")
    DISTRIBUTIONS[dist.name] = dist
    if replace:
        scipy_dist.cache_clear()
        _scalar_ppf.cache_clear()
    return dist


def unregister(name: str) -> None:
    """Remove a row added with :func:`register` (tests)."""
    DISTRIBUTIONS.pop(name)


def code(name: str) -> int:
    """Return the kernels' integer code of distribution `name` (its position in the table)."""
    return list(DISTRIBUTIONS).index(name)


def kernel_row(prior) -> list[float]:
    """``[code, positive, p1, p2, p3]``: how the compiled kernels read one prior."""
    vals = [float(v) for _, v in prior.params]
    return [float(code(prior.dist)), float(DISTRIBUTIONS[prior.dist].positive), *vals,
            *[0.0] * (3 - len(vals))]


@functools.lru_cache(maxsize=256)
def scipy_dist(prior):
    """``(frozen, folded)``: the SciPy distribution of `prior` and whether it folds at 0.

    Cached per prior (a frozen spec value): building a frozen SciPy distribution costs about
    1 ms, and the exact posterior asks for the same few priors thousands of times per report.
    """
    row = DISTRIBUTIONS[prior.dist]
    return row.scipy(dict(prior.params)), row.folded


def _closed(prior):
    """``(row.closed, loc, scale, shape)`` of `prior`, or None (SciPy's path).

    None without a closed form, or with parameters SciPy would call invalid (NaN, infinite,
    a positive one <= 0), whose NaN results SciPy gives.
    """
    row = DISTRIBUTIONS[prior.dist]
    if row.closed is None:
        return None
    p = dict(prior.params)
    if not all(np.isfinite(v) and (k in row.real or v > 0) for k, v in p.items()):
        return None
    return (row.closed, *row.closed.loc_scale(p))


def _closed_logpdf(form, loc, scale, shape, x):
    # rv_continuous.logpdf: standardise, -inf off the support, NaN for NaN, minus log scale
    x, loc, scale = map(np.asarray, (x, loc, scale))
    z = np.asarray((x - loc) / scale, dtype=np.promote_types(x.dtype, np.float64))
    lo, hi = form.support
    with np.errstate(invalid="ignore"):
        inside = (lo <= z) & (z <= hi)
    out = np.full(z.shape, -np.inf, dtype=z.dtype)
    out[np.isnan(z)] = np.nan
    if inside.any():
        out[inside] = form.logpdf(z[inside], shape) - np.log(scale)
    return out[()] if out.ndim == 0 else out


def _closed_ppf(form, loc, scale, shape, q):
    # rv_continuous.ppf: the support's ends at q = 0 and 1, NaN outside [0, 1]
    q, loc, scale = map(np.asarray, (q, loc, scale))
    out = np.full(q.shape, np.nan)
    lo, hi = form.support
    out[q == 0] = lo * scale + loc
    out[q == 1] = hi * scale + loc
    inside = (0 < q) & (q < 1)
    if inside.any():
        out[inside] = form.ppf(q[inside], shape) * scale + loc
    return out[()] if out.ndim == 0 else out


def logpdf(prior, x):
    """Log-density of `prior` at `x`: the row's closed form, else SciPy (the same numbers)."""
    folded = DISTRIBUTIONS[prior.dist].folded
    closed = _closed(prior)
    if closed is None:
        dist, folded = scipy_dist(prior)
        out = dist.logpdf(x)
    else:
        out = _closed_logpdf(*closed, x)
    return out + np.log(2.0) if folded else out


def ppf(prior, q):
    """Quantile function of `prior`: closed form, else SciPy (a scalar `q`: cached)."""
    if np.ndim(q) == 0:
        return _scalar_ppf(prior, float(q))
    return _ppf(prior, q)


def _ppf(prior, q):
    folded = DISTRIBUTIONS[prior.dist].folded
    q = 0.5 + np.asarray(q) / 2 if folded else q
    closed = _closed(prior)
    if closed is None:
        return scipy_dist(prior)[0].ppf(q)
    return _closed_ppf(*closed, q)


@functools.lru_cache(maxsize=1024)
def _scalar_ppf(prior, q: float) -> np.float64:
    # the exact posterior's grids ask for the same few prior quantiles thousands of times
    # per report (a frozen SciPy distribution's ppf costs about 0.1 ms per call)
    return np.float64(_ppf(prior, np.asarray(q)))


def c_source() -> str:
    """Return the C function ``prior(code, p1, p2, p3, v, &g)`` generated from the table."""
    parts = ["/* Log-density of one prior at v (return) and its derivative in v (*g);",
             "   generated from bayesbias.models.priors.DISTRIBUTIONS. */",
             "static double prior(int code, double p1, double p2, double p3, double v, "
             "double *g) {",
             "    double z, c;",
             "    (void)z; (void)c; (void)p2; (void)p3;"]
    for i, (name, row) in enumerate(DISTRIBUTIONS.items()):
        args = ", ".join(row.params)
        parts.append(f"    if (code == {i}) {{  /* {name}({args}) */")
        parts += ["        " + line.strip() for line in row.c_logp.strip().splitlines()]
        parts.append("    }")
    parts += ["    *g = NAN;", "    return NAN;", "}"]
    return "\n".join(parts) + "\n"


# -- the table ----------------------------------------------------------------------------
# C: p1, p2, p3 are the parameters in order; LOG_2PI and PI are defined; z and c are free.

register(Distribution(
    "Normal", ("mu", "sigma"), False,
    """
    z = (v - p1) / p2;
    *g = -z / p2;
    return -0.5 * LOG_2PI - log(p2) - 0.5 * z * z;
    """,
    lambda rng, p, size: rng.normal(p["mu"], p["sigma"], size),
    lambda p: _stats().norm(p["mu"], p["sigma"]), "Normal",
    closed=Closed(lambda p: (p["mu"], p["sigma"], None), lambda z, _: -z**2 / 2.0 - _NORM_LOGC,
                  lambda q, _: _sc().ndtri(q))))

register(Distribution(
    "StudentT", ("nu", "mu", "sigma"), False,
    """
    z = (v - p2) / p3;
    c = (lgamma(0.5 * (p1 + 1.0)) - lgamma(0.5 * p1) - 0.5 * log(p1 * PI) - log(p3));
    *g = -(p1 + 1.0) * z / (p3 * (p1 + z * z));
    return c - 0.5 * (p1 + 1.0) * log1p(z * z / p1);
    """,
    lambda rng, p, size: p["mu"] + p["sigma"] * rng.standard_t(p["nu"], size),
    lambda p: _stats().t(p["nu"], p["mu"], p["sigma"]), "StudentT",
    closed=Closed(lambda p: (p["mu"], p["sigma"], p["nu"]), _t_logpdf,
                  lambda q, df: _sc().stdtrit(df, q))))

register(Distribution(
    "Exponential", ("lam",), True,
    """
    *g = -p1;
    return log(p1) - p1 * v;
    """,
    lambda rng, p, size: rng.exponential(1.0 / p["lam"], size),
    lambda p: _stats().expon(scale=1.0 / p["lam"]), "Exponential",
    closed=Closed(lambda p: (0.0, 1.0 / p["lam"], None), lambda z, _: -z,
                  lambda q, _: -_sc().log1p(-q), _POSITIVE)))

register(Distribution(
    "HalfNormal", ("sigma",), True,
    """
    z = v / p1;
    *g = -z / p1;
    return log(2.0) - 0.5 * LOG_2PI - log(p1) - 0.5 * z * z;
    """,
    lambda rng, p, size: abs(rng.normal(0.0, p["sigma"], size)),
    lambda p: _stats().halfnorm(scale=p["sigma"]), "HalfNormal",
    closed=Closed(lambda p: (0.0, p["sigma"], None),
                  lambda z, _: 0.5 * np.log(2.0 / np.pi) - z * z / 2.0,
                  lambda q, _: _sc().ndtri((1 + q) / 2.0), _POSITIVE)))

register(Distribution(
    "HalfCauchy", ("beta",), True,
    """
    z = v / p1;
    *g = -2.0 * v / (p1 * p1 + v * v);
    return log(2.0) - log(PI) - log(p1) - log1p(z * z);
    """,
    lambda rng, p, size: abs(p["beta"] * rng.standard_cauchy(size)),
    lambda p: _stats().halfcauchy(scale=p["beta"]), "HalfCauchy",
    closed=Closed(lambda p: (0.0, p["beta"], None),
                  lambda z, _: np.log(2.0 / np.pi) - _sc().log1p(z * z),
                  lambda q, _: np.tan(np.pi / 2 * q), _POSITIVE)))

register(Distribution(
    "HalfStudentT", ("nu", "sigma"), True,
    """
    z = v / p2;
    c = (log(2.0) + lgamma(0.5 * (p1 + 1.0)) - lgamma(0.5 * p1)
         - 0.5 * log(p1 * PI) - log(p2));
    *g = -(p1 + 1.0) * z / (p2 * (p1 + z * z));
    return c - 0.5 * (p1 + 1.0) * log1p(z * z / p1);
    """,
    lambda rng, p, size: abs(p["sigma"] * rng.standard_t(p["nu"], size)),
    lambda p: _stats().t(p["nu"], scale=p["sigma"]), "HalfStudentT", folded=True,
    closed=Closed(lambda p: (0.0, p["sigma"], p["nu"]), _t_logpdf,
                  lambda q, df: _sc().stdtrit(df, q))))

register(Distribution(
    "LogNormal", ("mu", "sigma"), True,
    """
    c = log(v);
    z = (c - p1) / p2;
    *g = -1.0 / v - z / (p2 * v);
    return -c - 0.5 * LOG_2PI - log(p2) - 0.5 * z * z;
    """,
    lambda rng, p, size: rng.lognormal(p["mu"], p["sigma"], size),
    lambda p: _stats().lognorm(p["sigma"], scale=np.exp(p["mu"])), "LogNormal",
    closed=Closed(lambda p: (0.0, np.exp(p["mu"]), p["sigma"]), _lognorm_logpdf,
                  lambda q, s: np.exp(s * _sc().ndtri(q)), _POSITIVE)))

register(Distribution(
    "Gamma", ("alpha", "beta"), True,  # beta a rate
    """
    *g = (p1 - 1.0) / v - p2;
    return p1 * log(p2) - lgamma(p1) + (p1 - 1.0) * log(v) - p2 * v;
    """,
    lambda rng, p, size: rng.gamma(p["alpha"], 1.0 / p["beta"], size),
    lambda p: _stats().gamma(p["alpha"], scale=1.0 / p["beta"]), "Gamma",
    closed=Closed(lambda p: (0.0, 1.0 / p["beta"], p["alpha"]),
                  lambda z, a: _sc().xlogy(a - 1.0, z) - z - _sc().gammaln(a),
                  lambda q, a: _sc().gammaincinv(a, q), _POSITIVE)))

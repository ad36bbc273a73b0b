"""Exact posterior of the hierarchical model from cell statistics, without MCMC.

For the hierarchical spec with one residual sd per connection (the default), the posterior
factorises over connections. Within connection c, with words w having n_w rows, mean ybar_w
and within-cell sum of squares ss_w, integrating the cell means mu_w ~ Normal(mu_bar, tau)
and then mu_bar ~ Normal(m0, s0) out analytically leaves a two-dimensional posterior of
(tau, sigma):

    p(tau, sigma | y) ∝ p(tau) p(sigma) sigma^-(sum(n_w) - W) exp(-sum(ss_w) / (2 sigma^2))
                        * Normal(ybar | m0 1, diag(tau^2 + sigma^2 / n_w) + s0^2 1 1')

which is integrated by quadrature on a log-spaced grid (the grid is placed from the data and
checked: mass on its edges raises). Draws of (tau, sigma) come from the grid (uniform jitter
within the cell), then mu_bar | tau, sigma and mu_w | mu_bar, tau, sigma are Normal and drawn
exactly. Everything is vectorised over a leading batch axis (replications of a study, or
left-out words), which is what makes design studies and sensitivity refits cheap.

Agreement with NUTS on the same tables is tested (tests/test_design.py, slow).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import special

from ..config import CONNECTIONS
from ..errors import InvalidArgumentError, ModelSpecError
from ..inputs.distances import check_spread, single_embedding
from ..models import load_spec, priors
from ..models.cells import cell_mean_conditional, cells_from_table
from ..models.families import family
from ..models.result import Fit
from ..models.word_summaries import keep_word_draws

__all__ = ["MarginalPosterior", "marginal_posterior", "exact_fit", "supports", "prior_logpdf"]

#: Grid points for log tau and log sigma.
N_TAU, N_SIGMA = 64, 24
_EDGE_MASS = 1e-3


def supports(spec) -> bool:
    """Whether `spec` has the exact marginal form.

    Hierarchical family, one residual sd per connection, Normal ``mu_bar`` prior.
    """
    return (family(spec.family).EXACT_MARGINAL
            and spec.residual_sd == "per_connection" and spec.priors["mu_bar"].dist == "Normal")


def _check(spec) -> None:
    if not supports(spec):
        raise ModelSpecError(
            f"model {spec.name!r}: the exact marginal method needs the hierarchical family "
            "with residual_sd = per_connection and a Normal mu_bar prior; use method='nuts' "
            "(CLI: --method nuts)")


def prior_logpdf(prior, x):
    """Log-density of a positive :class:`~bayesbias.models.spec.Prior` at `x` (SciPy).

    The SciPy object comes from the priors' table (:mod:`bayesbias.models.priors`).
    """
    if not prior.positive:
        raise ModelSpecError(f"prior {prior} is not a positive distribution")
    return priors.logpdf(prior, x)


def _prior_ppf(prior, q):
    return priors.ppf(prior, q)


@dataclass
class MarginalPosterior:
    """Grid posterior of (tau, sigma) and the Normal conditionals, per batch and connection.

    Arrays have shape ``(batch, connection, ...)``; ``weights`` sums to 1 over the
    ``(tau, sigma)`` grid of each batch member and connection.
    """

    log_tau: np.ndarray     # (B, C, T)
    log_sigma: np.ndarray   # (B, C, S)
    weights: np.ndarray     # (B, C, T, S)
    n: np.ndarray           # (B, W, C)
    mean: np.ndarray        # (B, W, C)
    m0: float
    s0: float

    @property
    def batch(self) -> int:
        """Size of the batch axis."""
        return self.n.shape[0]

    def _cond_mu_bar(self, tau, sigma, c):
        """Mean and sd of mu_bar | tau, sigma for connection c; tau, sigma (B, D)."""
        n = self.n[..., c]                              # (B, W)
        has = n > 0
        y = np.where(has, self.mean[..., c], 0.0)
        _, a, b, _ = _cell_sums(tau[..., None] ** 2, sigma[..., None] ** 2, n, has, y,
                                log=False)
        prec = 1.0 / self.s0**2 + a
        mhat = (self.m0 / self.s0**2 + b) / prec
        return mhat, 1.0 / np.sqrt(prec)

    def draw(self, rng, n_draws: int = 4000, words: bool = False,
             common: bool = False, moments: bool = False) -> dict[str, np.ndarray]:
        """Posterior draws: ``mu_bar``, ``tau``, ``sigma`` (B, D, C), and ``mu`` (B, D, W, C).

        ``mu`` (per-word cell means; NaN for empty cells) only with `words`. With `common`,
        every batch member uses the same underlying random numbers (common random numbers:
        differences between members then reflect their data, not Monte Carlo noise). With
        `moments`, also ``mu_bar_mean`` and ``mu_bar_sd`` (B, D, C): the Normal of mu_bar
        given each draw's tau and sigma (for Rao-Blackwellised summaries).
        """
        B, C = self.batch, self.log_tau.shape[1]

        def rand(shape, normal=False):
            if common:
                shape = (1,) + shape[1:]
            x = rng.standard_normal(shape) if normal else rng.random(shape)
            return np.broadcast_to(x, (B,) + shape[1:])

        T, S = self.log_tau.shape[2], self.log_sigma.shape[2]
        out = {k: np.empty((B, n_draws, C)) for k in ("mu_bar", "tau", "sigma")
               + (("mu_bar_mean", "mu_bar_sd") if moments else ())}
        if words:
            out["mu"] = np.full((B, n_draws, self.n.shape[1], C), np.nan)
        for c in range(C):
            w = self.weights[:, c].reshape(B, T * S)
            cdf = np.cumsum(w, axis=1)
            base = rand((B, n_draws))
            u = base * cdf[:, -1:]
            idx = np.empty(u.shape, dtype=np.intp)
            if common:  # one order for all members: sorted keys search faster, same indices
                order = np.argsort(base[0])
                idx[:, order] = [np.searchsorted(cdf[b], u[b, order]) for b in range(B)]
            else:
                idx[:] = [np.searchsorted(cdf[b], u[b]) for b in range(B)]
            idx = np.minimum(idx, T * S - 1)
            it, js = np.divmod(idx, S)
            dt = np.diff(self.log_tau[:, c], axis=1).mean(axis=1)[:, None]
            ds = np.diff(self.log_sigma[:, c], axis=1).mean(axis=1)[:, None]
            lt = np.take_along_axis(self.log_tau[:, c], it, 1) + dt * (rand(it.shape)
                                                                        - 0.5)
            ls = np.take_along_axis(self.log_sigma[:, c], js, 1) + ds * (rand(js.shape)
                                                                          - 0.5)
            tau, sigma = np.exp(lt), np.exp(ls)
            mhat, sd = self._cond_mu_bar(tau, sigma, c)
            mu_bar = mhat + sd * rand(mhat.shape, normal=True)
            out["mu_bar"][..., c], out["tau"][..., c], out["sigma"][..., c] = mu_bar, tau, sigma
            if moments:
                out["mu_bar_mean"][..., c], out["mu_bar_sd"][..., c] = mhat, sd
            if words:
                n = self.n[:, None, :, c]
                has = n > 0
                mean, prec = cell_mean_conditional(
                    mu_bar[..., None], tau[..., None], sigma[..., None], np.where(has, n, 0.0),
                    np.nan_to_num(self.mean[:, None, :, c]))
                mu = mean + rand(prec.shape, normal=True) / np.sqrt(prec)
                out["mu"][..., c] = np.where(has, mu, np.nan)
        return out


def _grid_bounds(n, mean, ss, spec):
    """Per-batch log tau and log sigma grids for one connection; inputs (B, W)."""
    has = n > 0
    df = np.where(has, n - 1, 0).sum(-1)
    tot_ss = np.where(has, ss, 0.0).sum(-1)
    s_prior_lo, s_prior_hi = (_prior_ppf(spec.priors["sigma"], q) for q in (1e-6, 1 - 1e-6))
    with np.errstate(invalid="ignore", divide="ignore"):
        s_hat = np.sqrt(tot_ss / df)
        half = 8.0 / np.sqrt(2.0 * np.maximum(df, 1)) + 0.02
    rich = (df >= 20) & np.isfinite(s_hat) & (s_hat > 0)
    ls_lo = np.where(rich, np.log(np.where(rich, s_hat, 1.0)) - half, np.log(s_prior_lo))
    ls_hi = np.where(rich, np.log(np.where(rich, s_hat, 1.0)) + half, np.log(s_prior_hi))
    k = has.sum(-1)
    ym = np.where(has, mean, 0.0)
    centre = ym.sum(-1) / np.maximum(k, 1)
    spread = np.sqrt(np.where(has, (ym - centre[:, None]) ** 2, 0.0).sum(-1) / np.maximum(k - 1, 1))
    noise = np.where(np.isfinite(s_hat), s_hat, s_prior_hi) / np.sqrt(
        np.maximum(np.where(has, n, 1).min(-1), 1))
    t_prior_lo, t_prior_hi = (_prior_ppf(spec.priors["tau"], q) for q in (1e-6, 1 - 1e-6))
    lt_hi = np.log(np.minimum(t_prior_hi, 30.0 * (spread + noise) + 1e-6))
    lt_lo = lt_hi - np.log(1e6)
    # no rows of this connection: the posterior is the prior, so the grid spans the prior
    lt_lo = np.where(k > 0, lt_lo, np.log(t_prior_lo))
    lt_hi = np.where(k > 0, lt_hi, np.log(t_prior_hi))
    return lt_lo, lt_hi, ls_lo, ls_hi


def _support(grid, mass, floor: float = 1e-10):
    """Range of `grid` (B, K) where `mass` (B, K) exceeds floor * max, one step wider."""
    keep = mass > floor * mass.max(axis=1, keepdims=True)
    k = grid.shape[1]
    first = np.clip(np.argmax(keep, axis=1) - 1, 0, k - 1)
    last = np.clip(k - np.argmax(keep[:, ::-1], axis=1), 0, k - 1)
    rows = np.arange(grid.shape[0])
    return grid[rows, first], grid[rows, last]


#: Below this many terms numpy's sum over an axis adds them one at a time, in order (from
#: 8 on, in eight interleaved partial sums).
_SHORT_SUM = 8


def _count_groups(n, has, y):
    """Each member's distinct cell counts: ``(G, k, count, y1, y2)``.

    G groups (the most any member has); per member and group (B, G) the number of cells, their
    count (1 where none), and the sums of y and y**2 over them.
    """
    key = np.where(has, n, np.inf)
    order = np.argsort(key, axis=-1, kind="stable")
    ranked = np.take_along_axis(key, order, -1)
    new = np.ones(ranked.shape, dtype=bool)
    new[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    gid = np.empty(order.shape, dtype=np.intp)
    np.put_along_axis(gid, order, np.cumsum(new, -1) - 1, -1)
    groups = int(gid[has].max()) + 1 if has.any() else 1
    member = has[..., None] & (gid[..., None] == np.arange(groups))   # (B, W, G)
    k = member.sum(1).astype(float)                                   # (B, G)
    count = np.where(k > 0, np.where(member, n[..., None], 0.0).max(1), 1.0)
    y1 = np.einsum("bw,bwg->bg", y, member)
    y2 = np.einsum("bw,bwg->bg", y * y, member)
    return groups, k, count, y1, y2


def _cell_sums(tau2, sig2, n, has, y, log: bool = True, grouped=None):
    """Return the sums over each member's nonempty cells of log v, 1/v, y/v and y^2/v.

    ``v = tau^2 + sigma^2 / n``. `tau2` and `sig2` broadcast to ``(B, ..., 1)``; `n`, `has`
    and `y` (zero in empty cells) are ``(B, W)``. Cells of one member with the same row count
    share ``v``, so the sums run over a member's distinct counts (one or a few per class when
    every word meets every attribute word of its kinds) instead of its cells: the same sums to
    rounding (about 1e-16 relative). ``log=False`` skips the first sum (0). `grouped`: the
    :func:`_count_groups` of (`n`, `has`, `y`), when already made.
    """
    groups, k, count, y1, y2 = _count_groups(n, has, y) if grouped is None else grouped
    nd = max(np.ndim(tau2), np.ndim(sig2))
    if groups >= _SHORT_SUM:
        grow = (slice(None),) + (None,) * (nd - 2) + (slice(None),)
        v = tau2 + sig2 / count[grow]                                 # (B, ..., G)
        inv = 1.0 / v
        logv = (k[grow] * np.log(v)).sum(-1) if log else 0.0
        return (logv, (k[grow] * inv).sum(-1), (y1[grow] * inv).sum(-1),
                (y2[grow] * inv).sum(-1))
    # fewer groups: numpy's sum over them adds in order, as this loop over (B, ...) arrays
    # does (the same numbers; a (B, ..., G) layout with G = 1-3 runs many short inner loops)
    # (products and sums in place: the same operations, fewer temporaries)
    tau2, sig2 = np.asarray(tau2)[..., 0], np.asarray(sig2)[..., 0]
    col = (slice(None),) + (None,) * (nd - 2)
    sums = None
    for g in range(groups):
        kg = k[:, g][col]
        v = tau2 + sig2 / count[:, g][col]                            # (B, ...)
        inv = np.divide(1.0, v)
        terms = [kg * inv, y1[:, g][col] * inv, np.multiply(inv, y2[:, g][col], out=inv)]
        if log:
            terms.insert(0, np.multiply(np.log(v, out=v), kg, out=v))
        if sums is None:  # 0 + the first term, as numpy's sum starts
            sums = [np.add(t, 0.0, out=t) for t in terms]
        else:
            sums = [np.add(s, t, out=s) for s, t in zip(sums, terms, strict=True)]
    return tuple(sums) if log else (0.0, *sums)


def _logsumexp(a, axis):
    """:func:`scipy.special.logsumexp` (keepdims) of a real array, the same numbers.

    Finite `a`: SciPy's steps (1.15-1.18: the largest terms taken out of the sum, ``log1p``
    of the rest) without its array-API dispatch and its fallback sum of ``exp(a)`` (used
    only for a result that is not finite); otherwise SciPy itself.
    """
    if not np.isfinite(a).all():
        return special.logsumexp(a, axis=axis, keepdims=True)
    a_max = a.max(axis=axis, keepdims=True)
    top = a == a_max
    m = np.sum(top.astype(a.dtype), axis=axis, keepdims=True, dtype=a.dtype)
    s = np.sum(np.exp(np.where(top, -np.inf, a) - a_max), axis=axis, keepdims=True,
               dtype=a.dtype)
    s = np.where(s == 0, s, s / m)
    return np.log1p(s) + np.log(m) + a_max


def _log_post(lt, ls, nc, mc, sc, has, m0, s0, spec, memo=None):
    """Normalised log posterior of (log tau, log sigma) on the grid, shape (B, T, S).

    `memo`: a dict kept between the grids of one connection (what does not depend on them).
    """
    tau2 = np.exp(2 * lt)[:, :, None, None]                           # (B, T, 1, 1)
    sig2 = np.exp(2 * ls)[:, None, :, None]                           # (B, 1, S, 1)
    memo = {} if memo is None else memo
    if not memo:
        k = has.sum(-1)
        ref = np.where(has, mc, 0.0).sum(-1) / np.maximum(k, 1)       # centring (B,)
        y = np.where(has, mc - ref[:, None], 0.0)
        memo.update(ref=ref, grouped=_count_groups(nc, has, y),
                    df=np.where(has, nc - 1, 0).sum(-1)[:, None, None],
                    tot_ss=np.where(has, sc, 0.0).sum(-1)[:, None, None])
    ref, df, tot_ss = memo["ref"], memo["df"], memo["tot_ss"]
    logv, a, b, q = _cell_sums(tau2, sig2, nc, has, None, grouped=memo["grouped"])
    m0c = (m0 - ref)[:, None, None]
    # in place on the (B, T, S) arrays, the operations (and their order) of
    #   prec = 1 / s0^2 + a;  mhat = (m0c / s0^2 + b) / prec
    #   logml = -0.5 logv - 0.5 log(s0^2 prec) - 0.5 (q + m0c^2 / s0^2 - prec mhat^2)
    #   lp = logml + within + log p(tau) + log tau + log p(sigma) + log sigma
    prec = np.add(a, 1.0 / s0**2, out=a)
    mhat = np.add(b, m0c / s0**2, out=b)
    mhat /= prec
    half_log = np.multiply(prec, s0**2)
    np.log(half_log, out=half_log)
    half_log *= 0.5
    lp = np.multiply(logv, -0.5, out=logv)
    lp -= half_log
    inner = np.add(q, m0c**2 / s0**2, out=q)
    np.square(mhat, out=mhat)
    mhat *= prec
    inner -= mhat
    inner *= 0.5
    lp -= inner                                                       # logml
    lp += -df * ls[:, None, :] - tot_ss / (2 * np.exp(2 * ls)[:, None, :])   # within
    lp += prior_logpdf(spec.priors["tau"], np.exp(lt))[:, :, None]
    lp += lt[:, :, None]
    lp += prior_logpdf(spec.priors["sigma"], np.exp(ls))[:, None, :]
    lp += ls[:, None, :]
    lp -= _logsumexp(lp, (1, 2))
    return lp


def marginal_posterior(n, mean, ss, spec, *, n_tau: int = N_TAU,
                       n_sigma: int = N_SIGMA) -> MarginalPosterior:
    """Exact (quadrature) posterior of the hierarchical model from cell statistics.

    Parameters
    ----------
    n, mean, ss : array_like, shape (batch, unit, connection) or (unit, connection)
        Counts, means and within-cell sums of squares (empty cells: n = 0).
    spec : ModelSpec
        Hierarchical, ``residual_sd = "per_connection"``, Normal ``mu_bar`` prior.

    Raises
    ------
    ModelSpecError
        The spec has no exact marginal form.
    RuntimeError
        Posterior mass on the edge of the grid (should not happen; report it).
    """
    _check(spec)
    n = np.asarray(n, dtype=float)
    mean = np.asarray(mean, dtype=float)
    ss = np.asarray(ss, dtype=float)
    if n.ndim == 2:
        n, mean, ss = n[None], mean[None], ss[None]
    B, W, C = n.shape
    p_mu = dict(spec.priors["mu_bar"].params)
    m0, s0 = float(p_mu["mu"]), float(p_mu["sigma"])
    LT = np.empty((B, C, n_tau))
    LS = np.empty((B, C, n_sigma))
    WT = np.zeros((B, C, n_tau, n_sigma))
    for c in range(C):
        nc, mc, sc = n[..., c], mean[..., c], ss[..., c]
        has = nc > 0
        lt_lo, lt_hi, ls_lo, ls_hi = _grid_bounds(nc, mc, sc, spec)
        u_t, u_s = np.linspace(0, 1, n_tau), np.linspace(0, 1, n_sigma)
        # pass 1 on the wide grid finds where the mass is; pass 2 resolves it finely
        memo = {}
        for _ in range(2):
            lt = lt_lo[:, None] + (lt_hi - lt_lo)[:, None] * u_t          # (B, T)
            ls = ls_lo[:, None] + (ls_hi - ls_lo)[:, None] * u_s          # (B, S)
            lp = _log_post(lt, ls, nc, mc, sc, has, m0, s0, spec, memo)
            w = np.exp(lp)
            lt_lo, lt_hi = _support(lt, w.sum(2))
            ls_lo, ls_hi = _support(ls, w.sum(1))
        edge = np.maximum(w[:, [0, -1], :].sum((1, 2)), w[:, :, [0, -1]].sum((1, 2)))
        edge = np.where(has.any(-1), edge, 0.0)  # a prior-only member spans its prior
        if (edge > _EDGE_MASS).any():
            raise RuntimeError(f"marginal posterior: mass on the grid edge for connection "
                               f"{CONNECTIONS[c]} ({edge.max():.2g}); please report")
        LT[:, c], LS[:, c], WT[:, c] = lt, ls, w
    return MarginalPosterior(LT, LS, WT, n, mean, m0, s0)


def exact_fit(table, model: str = "hierarchical", *, draws: int = 1000, chains: int = 4,
              seed: int = 0):
    """Return a :class:`~bayesbias.models.Fit` of `model` from its exact posterior, no MCMC.

    ``chains x draws`` independent draws of ``mu_bar``, ``tau``, ``sigma`` and the per-word
    cell means ``mu`` (:meth:`MarginalPosterior.draw`), shaped as a sampler's. The same
    posterior as ``fit_model`` samples, up to the quadrature's error and with independent
    draws; it has no ``sample_stats`` (nothing to diagnose). Verdicts
    (:func:`bayesbias.verdicts.verdict_from_fit`) and model checks read it as any fit.

    Raises
    ------
    ModelSpecError
        `model` has no exact marginal form (:func:`supports`).
    InvalidArgumentError
        The per-word draws would take more than
        :data:`~bayesbias.models.word_summaries.WORD_DRAWS_BYTES` (``fit_model`` keeps
        per-word summaries instead).
    RuntimeError
        Posterior mass on the edge of the quadrature grid.
    """
    spec = load_spec(model)
    _check(spec)
    source = str(table.attrs.get("source", "distance table"))
    table = single_embedding(table, spec.name, source)
    check_spread(table, source)
    cells = cells_from_table(table, spec.level)
    if not keep_word_draws(draws, chains, cells.n.size):
        raise InvalidArgumentError(
            f"{source}: {chains} x {draws} draws of {cells.n.size:,} cell means would take "
            f"{8 * draws * chains * cells.n.size / 1e9:.1f} GB; use fit_model (per-word "
            "summaries) or fewer draws")
    post = marginal_posterior(cells.n, cells.mean, cells.ss, spec)
    d = post.draw(np.random.default_rng([seed, 1729]), chains * draws, words=True)

    def shaped(name):
        return d[name][0].reshape((chains, draws) + d[name].shape[2:])

    conn = ("chain", "draw", "connection")
    ds = xr.Dataset({"mu_bar": (conn, shaped("mu_bar")), "tau": (conn, shaped("tau")),
                     "sigma": (conn, shaped("sigma")),
                     "mu": (("chain", "draw", cells.unit_dim, "connection"), shaped("mu"))},
                    coords={"chain": np.arange(chains), "draw": np.arange(draws),
                            "connection": list(CONNECTIONS),
                            cells.unit_dim: cells.units.tolist()},
                    attrs={"method": "exact posterior: cell means and mu_bar integrated out "
                                     "analytically, quadrature over tau and sigma"})
    tree = xr.DataTree()
    tree["posterior"] = xr.DataTree(ds)
    return Fit(tree, spec, cells)

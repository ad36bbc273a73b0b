"""Per-word summaries without per-word draws: Rao-Blackwellised over the hyper-parameter draws.

In a family sampled with the cell means integrated out (:mod:`.marginal`, ``marginal_blocks``),
every cell mean is, given the few sampled hyper-parameters (M, T, S per connection), exactly
Normal with precision ``1/T^2 + n/S^2`` and mean ``alpha + beta ybar``
(:func:`~bayesbias.models.cells.cell_mean_conditional`; alpha, beta and the sd depend on the
draw, the connection and the cell's row count n only). Its posterior is the equal-weight
mixture of these Normals over the hyper-parameter draws k, so

* posterior mean = mean over k of the conditional means; variance = mean of the conditional
  variances + variance of the conditional means (closed forms in ybar, over every draw: the
  Rao-Blackwellised estimates, with less Monte Carlo error than the same numbers from one
  draw of each cell mean per hyper-parameter draw);
* equal-tailed interval: the mixture's quantiles, by safeguarded Newton steps on the mixture
  CDF; highest-density interval: the (l, u) with ``F(u) - F(l) = p`` and ``f(l) = f(u)`` by
  Newton steps from the ETI, accepted when the density inside stays above ``f(l)`` (else
  from the density on a fine grid); both over :data:`INTERVAL_DRAWS` evenly thinned draws
  (:data:`SHIFTED_INTERVAL_DRAWS` with attribute effects);
* ``P(< 0)`` (and the share inside a ROPE) of a per-word contrast, a difference of two
  conditionally independent cell means and so Normal given k: the mean over k of
  ``Phi(-m_k / s_k)``.

With attribute effects (the crossed family) a cell mean is that Normal given the parameters
and the effects v, with data mean ``ybar - vbar`` (vbar: the mean effect of the cell's
rows); cells that share (connection, n, attribute multiset) share vbar per draw, so the
same closed forms hold per such group with alpha shifted by ``-beta vbar``
(:func:`fit_shift`); groups of fewer than :data:`MIN_GROUP` cells are summarised cell by
cell (mean, sd and probabilities in closed form over every draw, the interval from one exact
draw of each cell mean per draw: the accuracy of per-word draws, at a cost that grows with
the cells).

Cells that share (connection, n) differ only in ybar: their intervals and probabilities are
computed on a grid of ybar (two cell means for a contrast; :data:`GRID_POINTS`, Chebyshev
nodes and a polynomial, checked between the nodes), so the cost grows with the number of
such groups, and memory with the number of cells, not with draws x cells. A fit keeps its
per-word draws unless they would take more than :data:`WORD_DRAWS_BYTES` (or
``keep_word_draws=False``); without them, what needs draws (``Fit.word_mean_draws``,
PSIS-LOO, comparing fits word by word) raises :class:`WordDrawsError` naming
``--keep-word-draws``.
"""

from __future__ import annotations

import numpy as np

from .._stats import eti, hdi_sorted
from ..config import CONNECTIONS
from ..errors import ModelSpecError
from ..parallel import thread_map
from .families import family

__all__ = ["WORD_DRAWS_BYTES", "INTERVAL_DRAWS", "WordDrawsError", "keep_word_draws",
           "mixture_moments", "mixture_interval", "mixture_cdf", "cell_summaries",
           "linear_summary", "fit_shift", "MIN_GROUP", "drawn_summaries"]


#: Per-word draws above this many bytes (8 per draw and cell: 4 chains x 1,000 draws x 4
#: connections makes 1,000 protected words 128 MB, 10,000 words 1.28 GB) are not kept; the
#: per-word summaries are then accumulated from the hyper-parameter draws. 256 MB: about
#: 2,000 protected words at the default settings, below which fits behave as before; above,
#: a process held about 15 working copies of the draws (18.5 GiB at 10,000 words).
WORD_DRAWS_BYTES = 256_000_000


#: Hyper-parameter draws (evenly thinned) whose Normal mixture gives the per-word intervals.
INTERVAL_DRAWS = 500


#: Hyper-parameter draws of the per-word intervals with attribute effects (crossed): there a
#: cell mean's spread over draws is largely that of its attributes' effects, not of its
#: conditional Normal, and 500 draws left interval ends 0.15 sd from those of 4,000 (0.2 sd
#: from the per-word draws' on religion/Reddit; 0.09 with 4,000); on a grid the cost does
#: not grow with the words.
SHIFTED_INTERVAL_DRAWS = 4000


#: Thinned draws of the rows' predictive intervals outside big groups (as
#: :data:`bayesbias.models.checks.CHECK_DRAWS` for a fit with per-word draws).
ROW_CHECK_DRAWS = 1000


#: Draws x elements held at once by the mixture computations (about 8 arrays of this many
#: float64 values: 200 MB at this size).
CHUNK_ELEMENTS = 3_000_000


class WordDrawsError(ModelSpecError):
    """A fit without per-word draws was asked for them; refit with ``--keep-word-draws``."""


def keep_word_draws(draws: int, chains: int, n_cells: int) -> bool:
    """Whether a fit keeps its per-word draws by default (:data:`WORD_DRAWS_BYTES`)."""
    return 8 * int(draws) * int(chains) * int(n_cells) <= WORD_DRAWS_BYTES


def refuse(what: str):
    """Return the :class:`WordDrawsError` for `what` on a fit without per-word draws."""
    return WordDrawsError(
        f"{what} needs the per-word posterior draws, which this fit does not keep (above "
        f"{WORD_DRAWS_BYTES / 1e6:.0f} MB of them a fit keeps Rao-Blackwellised per-word "
        "summaries instead); refit with --keep-word-draws (fit_model(..., "
        "keep_word_draws=True))")


def thinned(total: int, k: int = INTERVAL_DRAWS) -> np.ndarray:
    """Return the indices of at most `k` evenly spaced draws of `total`."""
    return np.unique(np.linspace(0, total - 1, min(k, total)).astype(int))


def mixture_moments(mean: np.ndarray, sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sd (ddof 0) of the equal-weight Normal mixture over axis 0."""
    mu = mean.mean(axis=0)
    var = (sd * sd).mean(axis=0) + ((mean - mu) ** 2).mean(axis=0)
    return mu, np.sqrt(var)


#: Draws x elements per block of the mixture evaluations (:func:`_by_blocks`): 512 kB per
#: float64 array, which stays in a core's cache through the passes of one evaluation. On four
#: of the 5M-row crossed fit's per-word interval calls (4,000 draws x 54-75 elements each),
#: in blocks of 16 elements: 0.94-1.33 s of CPU against 1.48-1.70 s in whole calls (best and
#: median of 4, machine under load; the same numbers).
EVAL_ELEMENTS = 64_000


def _blocks(draws: int, m: int) -> list[slice]:
    """Blocks of `m` elements (:data:`EVAL_ELEMENTS`), none of one element unless `m` is 1.

    NumPy sums a C-ordered (draws, k) array over axis 0 draw by draw when k >= 2, but a single
    column pairwise: a block of one element would change the rounding of its sums.
    """
    starts = list(range(0, m, max(2, EVAL_ELEMENTS // max(draws, 1))))
    if len(starts) > 1 and m - starts[-1] == 1:
        starts.pop()
    return [slice(a, b) for a, b in zip(starts, starts[1:] + [m], strict=True)]


def _by_blocks(f, x, mean, sd) -> tuple:
    """``f(x, mean, sd)`` (per-element results, summed over draws) block by block.

    `x` (elements,), `mean` (draws, elements) and `sd` broadcast to it; other shapes in one
    call.
    """
    if np.ndim(x) != 1 or np.ndim(mean) != 2 or np.shape(mean)[1] != np.shape(x)[0]:
        return f(x, mean, sd)
    sd = np.broadcast_to(sd, mean.shape)
    got = [f(x[sl], mean[:, sl], sd[:, sl]) for sl in _blocks(mean.shape[0], x.shape[0])]
    return got[0] if len(got) == 1 else tuple(np.concatenate(r) for r in zip(*got, strict=True))


def _cdf_pdf_block(x, mean, sd):
    from scipy.special import ndtr

    z = x[None] - mean  # (x - mean) / sd and exp(-0.5 z z) / sd in place: the same numbers
    z /= sd
    e = -0.5 * z
    e *= z
    np.exp(e, out=e)
    e /= sd
    return ndtr(z).mean(axis=0), e.mean(axis=0) / np.sqrt(2 * np.pi)


def _cdf_pdf(x, mean, sd):
    """CDF and density at `x` (elements) of the Normal mixtures over axis 0."""
    return _by_blocks(_cdf_pdf_block, x, mean, sd)


def mixture_cdf(x, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """CDF at `x` (elements) of the Normal mixture over axis 0 of `mean`, `sd`."""
    return _cdf_pdf(np.asarray(x, float), mean, sd)[0]


def _quantile(q: float, mean, sd, x0, tol: float = 1e-10, steps: int = 60):
    """Mixture quantile by Newton steps kept inside the bracket of the component quantiles."""
    from scipy.special import ndtri

    zq = ndtri(q)
    lo, hi = (mean + sd * zq).min(axis=0), (mean + sd * zq).max(axis=0)
    x = np.clip(x0, lo, hi)
    for _ in range(steps):
        f, d = _cdf_pdf(x, mean, sd)
        r = f - q
        if np.all(np.abs(r) < tol):
            break
        lo = np.where(r < 0, x, lo)
        hi = np.where(r > 0, x, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            nx = x - r / d
        bad = ~np.isfinite(nx) | (nx <= lo) | (nx >= hi)
        x = np.where(bad, 0.5 * (lo + hi), nx)
    return x


def _hdi(prob: float, mean, sd, lo, hi, tol: float = 1e-10, steps: int = 30):
    """HDI of a unimodal mixture: Newton on F(up) - F(lw) = p, f(up) = f(lw), from the ETI."""
    from scipy.special import ndtr

    c = 1 / np.sqrt(2 * np.pi)

    def z_phi(x, mean, sd):
        # the operations of (x - mean) / sd and exp(-0.5 z z) / sd * c, in place (the same
        # numbers, without four temporaries of draws x elements per call)
        z = x[None] - mean
        z /= sd
        phi = -0.5 * z
        phi *= z
        np.exp(phi, out=phi)
        phi /= sd
        phi *= c
        return z, phi

    def parts_block(x, mean, sd):
        z, phi = z_phi(x, mean, sd)
        g = np.negative(z)  # -z / sd * phi
        g /= sd
        g *= phi
        return ndtr(z).mean(axis=0), phi.mean(axis=0), g.mean(axis=0)

    def density_block(x, mean, sd):
        return (z_phi(x, mean, sd)[1].mean(axis=0),)

    def parts(x):
        return _by_blocks(parts_block, x, mean, sd)

    def density(x):
        return _by_blocks(density_block, x, mean, sd)[0]

    lw, up = lo.copy(), hi.copy()
    ok = np.zeros(lw.shape, bool)
    level = None
    for _ in range(steps):
        fl, dl, gl = parts(lw)
        fu, du, gu = parts(up)
        r1, r2 = fu - fl - prob, du - dl
        scale = np.maximum(du, dl)
        ok = (np.abs(r1) < tol) & (np.abs(r2) < tol * scale)
        if ok.all():
            level = dl  # the density at lw, as density(lw) computes it
            break
        # Jacobian of (r1, r2) in (lw, up): [[-dl, du], [-gl, gu]]
        det = -dl * gu + du * gl
        with np.errstate(divide="ignore", invalid="ignore"):
            stepl = (gu * r1 - du * r2) / det
            stepu = (gl * r1 - dl * r2) / det
        nl, nu = lw - stepl, up - stepu
        good = np.isfinite(nl) & np.isfinite(nu) & (nl < nu)
        lw, up = np.where(good & ~ok, nl, lw), np.where(good & ~ok, nu, up)
    # an HDI only if the density stays above its level f(lw) = f(up) inside (no second mode
    # outside a dip): checked at 15 interior points (the density alone: no CDF)
    level = density(lw) if level is None else level
    for w in np.linspace(0, 1, 17)[1:-1]:
        ok &= density(lw + w * (up - lw)) >= level * (1 - 1e-9)
    return lw, up, ok


def _grid_hdi(mean, sd, prob: float, points: int = 20_001) -> tuple[float, float]:
    """Return the HDI of one mixture from its density on a grid.

    The smallest and largest point of the highest-density set holding `prob` (an interval
    that covers every mode's part).
    """
    from scipy.special import ndtr

    x = np.linspace((mean - 8 * sd).min(), (mean + 8 * sd).max(), points)
    z = (x[:, None] - mean) / sd
    pdf = (np.exp(-0.5 * z * z) / sd).mean(axis=1)
    cdf = ndtr(z).mean(axis=1)
    mass = np.r_[0.0, np.diff(cdf)]  # probability of each grid step
    order = np.argsort(pdf)[::-1]
    inside = order[:np.searchsorted(np.cumsum(mass[order]), prob) + 1]
    return float(x[inside].min()), float(x[inside].max())


def mixture_interval(mean: np.ndarray, sd: np.ndarray, prob: float, kind: str,
                     rng_seed: int = 0) -> np.ndarray:
    """Equal-tailed or highest-density interval of the Normal mixture over axis 0.

    Returns (..., 2). An HDI whose Newton steps do not converge (a mixture that is not
    unimodal) comes from the density on a grid of 20,001 points instead.
    """
    shape = mean.shape[1:]
    mean = mean.reshape(mean.shape[0], -1)
    sd = sd.reshape(sd.shape[0], -1)
    mu, s = mixture_moments(mean, sd)
    a = (1 - prob) / 2
    from scipy.special import ndtri

    lo = _quantile(a, mean, sd, mu + s * ndtri(a))
    hi = _quantile(1 - a, mean, sd, mu + s * ndtri(1 - a))
    if kind == "hdi":
        lw, up, ok = _hdi(prob, mean, sd, lo, hi)
        for e in np.flatnonzero(~ok):  # not unimodal: the density's level set on a grid
            lw[e], up[e] = _grid_hdi(mean[:, e], sd[:, e], prob)
        lo, hi = lw, up
    return np.stack([lo, hi], axis=-1).reshape(shape + (2,))


def chunks(n: int, k: int):
    """Slices over `n` elements with at most :data:`CHUNK_ELEMENTS` // `k` each."""
    step = max(1, CHUNK_ELEMENTS // max(k, 1))
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


def _mts_draws(fit):
    """M, T, S draws of a summary fit, each (draws, connection)."""
    from .marginal import _mts

    mod = family(fit.spec.family)
    post = fit.idata.posterior
    nc = len(CONNECTIONS)
    if getattr(mod, "marginal_blocks", None) is None:  # crossed: mu_bar, tau, sigma sampled
        m, t = (post[v].transpose("chain", "draw", ...).values.reshape(-1, nc)
                for v in ("mu_bar", "tau"))
        return m, t, fit._cell_sigma().reshape(-1, nc)
    blocks, fixed = mod.marginal_blocks(fit.spec)
    raw = {b.name: post[b.name].transpose("chain", "draw", ...).values for b in blocks}
    shape = raw[blocks[0].name].shape[:2]
    return tuple(a.reshape(-1, nc) for a in _mts(blocks, fixed, raw, shape))


def fit_shift(fit):
    """Return None, or ``(gid, vbar)`` of a fit with attribute effects (crossed).

    ``gid`` (units, connection): each cell's group of cells sharing (connection, n, attribute
    multiset) (:func:`~bayesbias.models.crossed.cell_groups`; -1: empty);
    ``vbar(groups, keep)``: the mean attribute effect of those groups' cells, (draws,
    groups), at flat draws `keep` (None: all). Given the parameters and v, a cell mean is
    the hierarchical one of the data mean ``ybar - vbar``. Cached on the fit.
    """
    if "attribute_effect" not in fit.idata.posterior.data_vars:
        return None
    cache = fit.__dict__.setdefault("_cache", {})
    if "word_shift" not in cache:
        import scipy.sparse as sp

        from .crossed import cell_groups

        g = cell_groups(fit.cells)
        ng = g["w"].size
        owner = np.repeat(np.arange(ng), np.diff(g["start"]))
        w = sp.csr_matrix((g["k"] / g["n"][owner], (owner, g["attr"])),
                          shape=(max(ng, 1), fit.cells.attributes.size))
        v = fit._attribute_effects()
        v = v.reshape(-1, v.shape[-1])

        def vbar(groups, keep=None):
            groups = np.asarray(groups, dtype=np.int64)
            u, inv = np.unique(groups, return_inverse=True)
            vv = v if keep is None else v[keep]
            out = np.zeros((vv.shape[0], u.size))
            ok = u >= 0
            if ok.any():
                out[:, ok] = (w[u[ok]] @ vv.T).T
            return out[:, inv.ravel()]

        cache["word_shift"] = (g["gid"].reshape(fit.cells.n.shape), vbar)
    return cache["word_shift"]


def fit_moments(fit):
    """Return ``moments(keep, sl, cells)`` and the draws of M, T, S of a summary fit.

    ``moments``: conditional means and sds over the flat (unit, connection) cells, (draws,
    cells), at flat draws `keep` (None: all); M, T, S: (draws, connection) arrays. With
    attribute effects (:func:`fit_shift`) the conditional means are given v as well.
    """
    m, t, s = _mts_draws(fit)
    n = fit.cells.n.reshape(-1).astype(float)
    ybar = np.nan_to_num(fit.cells.mean).reshape(-1)
    conn = np.tile(np.arange(len(CONNECTIONS)), fit.cells.n.shape[0])
    shift = fit_shift(fit)

    def moments(keep, sl, cells=None):
        idx = np.arange(n.size)[sl] if cells is None else cells
        k = slice(None) if keep is None else keep
        if shift is not None:
            return shifted(k, keep, idx)
        c = conn[idx]
        mm, tt, ss = m[k][:, c], t[k][:, c], s[k][:, c]
        from .cells import cell_mean_conditional

        mean, prec = cell_mean_conditional(mm, tt, ss, n[idx][None], ybar[idx][None])
        return mean, 1.0 / np.sqrt(prec)

    def shifted(k, keep, idx):
        # per group of cells (connection, n, attributes; empty cells per connection): mean
        # alpha - beta vbar + beta ybar, with alpha, beta, sd and vbar on (draws, groups)
        gid = shift[0].reshape(-1)[idx]
        key = np.where(gid >= 0, gid, -1 - conn[idx])
        u, inv = np.unique(key, return_inverse=True)
        first = np.full(u.size, -1, dtype=np.int64)
        first[inv[::-1]] = np.arange(idx.size)[::-1]
        c, nn = conn[idx[first]], n[idx[first]]
        mm, tt, ss = m[k][:, c], t[k][:, c], s[k][:, c]
        prec = 1.0 / (tt * tt) + nn / (ss * ss)
        beta = nn / (ss * ss) / prec
        alpha = mm / (tt * tt) / prec - beta * shift[1](np.where(u >= 0, u, -1), keep)
        inv = inv.ravel()
        mean = beta[:, inv]  # alpha + beta ybar, in place in the picked array
        mean *= ybar[idx][None]
        mean += alpha[:, inv]
        return mean, (1.0 / np.sqrt(prec))[:, inv]

    return moments, (m, t, s)


#: Chebyshev-Lobatto nodes per data dimension of the grids on which a group's intervals are
#: computed (1-D: cells that share a connection and a row count; 2-D: per-word contrasts of
#: two such groups), interpolated by a polynomial (barycentric form): a coarse grid first,
#: the fine one where the coarse one fails its check (the coarse nodes are every other fine
#: node, so their values are kept). Interval ends within 1e-8 of the sd of those from each
#: element's own mixture on the test's mixtures, as with the cubic splines on 129 even
#: points / 41 x 41 before; the fine grids are a quarter / a fifth of those points, the
#: coarse ones an eighth / a seventeenth (each a mixture's Newton steps over thousands of
#: draws).
GRID_POINTS = {1: (17, 33), 2: (10, 19)}

#: Even points per data dimension of the grid of the probabilities (P(< 0), the ROPE share:
#: closed forms, cheap per point), interpolated by cubic splines. A steep probability is
#: no polynomial of low degree.
SPLINE_POINTS = {1: 129, 2: 41}

#: Points between the nodes at which the interpolated interval ends are checked against the
#: mixture's own (:func:`linear_summary`), per data dimension.
CHECK_POINTS = {1: 8, 2: 16}

#: Largest difference of the interval ends at the check points, in sds of the element,
#: above which a group's intervals are computed element by element instead (a mixture whose
#: interval moves abruptly with the data mean, e.g. between modes), from one draw of each
#: element's Normal per draw (the accuracy of per-word draws; a mixture's own interval per
#: element can cost seconds each when it has two modes).
GRID_TOLERANCE = 1e-6

#: Fewest elements of a group summarised on a grid (1-D, 2-D): the same groups as with the
#: grids before the Chebyshev nodes (a cubic spline on 129 points, a 41 x 41 grid).
GRID_MIN_ELEMENTS = {1: 130, 2: 41 ** 2 + 1}


def _at_points(alpha, beta, sd, points, keep, prob, kind, rope, drawn_seed=None,
               parts=("probabilities", "intervals")):
    """Mixture summaries of the elements whose component means are ``alpha + beta @ p``.

    `parts`: the probabilities (P(< 0), the ROPE share) and/or the intervals. With
    `drawn_seed`, the intervals come from one draw of each element's Normal per draw over
    every draw (:func:`_drawn_interval`), as a fit with per-word draws has them.
    """
    from scipy.special import ndtr

    n = points.shape[0]
    out = {}
    s_all = sd[:, None]
    if "probabilities" in parts:
        out["prob_below_zero"], out["share_in_rope"] = np.empty(n), np.full(n, np.nan)
        for sl in chunks(n, alpha.size):
            m = alpha[:, None] + beta @ points[sl].T
            out["prob_below_zero"][sl] = ndtr(-m / s_all).mean(axis=0)
            if rope is not None:
                out["share_in_rope"][sl] = (ndtr((rope - m) / s_all)
                                            - ndtr((-rope - m) / s_all)).mean(axis=0)
    if "intervals" not in parts:
        return out
    out["ci"] = np.empty((n, 2))
    if drawn_seed is not None:
        for sl in chunks(n, alpha.size):
            m = alpha[:, None] + beta @ points[sl].T
            out["ci"][sl] = _drawn_interval(m, np.broadcast_to(s_all, m.shape), [prob], kind,
                                            [*drawn_seed, sl.start])[0]
        return out
    for sl in chunks(n, 10 * keep.size):
        m = alpha[keep, None] + beta[keep] @ points[sl].T
        s = np.broadcast_to(sd[keep, None], m.shape)
        out["ci"][sl] = mixture_interval(m, s, prob, kind, rng_seed=sl.start)
    return out


def _chebyshev_nodes(lo: float, hi: float, k: int) -> np.ndarray:
    """Return the `k` Chebyshev-Lobatto points of [lo, hi], increasing."""
    return lo + (hi - lo) * (1 - np.cos(np.pi * np.arange(k) / (k - 1))) / 2


def _lagrange_basis(nodes: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Return the Lagrange polynomials through Chebyshev-Lobatto `nodes` at `x`, (x, nodes).

    The barycentric form: weights (-1)^j, halved at the two ends.
    """
    w = (-1.0) ** np.arange(nodes.size)
    w[[0, -1]] *= 0.5
    diff = x[:, None] - nodes[None]
    at_node = diff == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        basis = w / diff
        basis /= basis.sum(axis=1, keepdims=True)
    hit = at_node.any(axis=1)
    basis[hit] = at_node[hit]
    return basis


def _interpolate(nodes: list, values: dict, x: np.ndarray) -> dict:
    """Tensor-product polynomial through `values` on the grid of `nodes` (per axis), at x."""
    bases = [_lagrange_basis(nd, x[:, j]) for j, nd in enumerate(nodes)]
    if len(bases) == 1:
        return {k: bases[0] @ v for k, v in values.items()}
    shape = tuple(nd.size for nd in nodes)
    return {k: np.einsum("ei,ij,ej->e", bases[0], v.reshape(shape), bases[1])
            for k, v in values.items()}


def _check_points(nodes: list, k: int) -> np.ndarray:
    """Return `k` points between the grid's nodes, spread over it, (k, dimensions)."""
    mids = [0.5 * (nd[:-1] + nd[1:]) for nd in nodes]
    picks = np.linspace(0, mids[0].size - 1, k).round().astype(int)
    cols = [mids[0][picks]]
    for j in range(1, len(nodes)):  # the other axes in a shuffled order of the same picks
        cols.append(mids[j][np.linspace(0, mids[j].size - 1, k).round().astype(int)[
            (np.arange(k) * 5 + j) % k]])
    return np.stack(cols, axis=1)


def _grid_interval_ends(a, beta, sd, lo, hi, keep, prob, kind, sd_at):
    """Interval ends on the :data:`GRID_POINTS` grids of the centred data means: coarse, then fine.

    Returns ``(nodes, ends)`` of the first grid whose polynomial is within
    :data:`GRID_TOLERANCE` sds of the mixture's own ends at its :data:`CHECK_POINTS`, or None.
    """
    d = lo.size
    done = None  # the last grid's values, (nodes per axis)^d x 2
    for g in GRID_POINTS[d]:
        nodes = [_chebyshev_nodes(lo[j], hi[j], g) for j in range(d)]
        pts = np.stack(np.meshgrid(*nodes, indexing="ij"), axis=-1).reshape(-1, d)
        ci = np.empty((g,) * d + (2,))
        known = np.zeros((g,) * d, dtype=bool)
        if done is not None:  # every other node of this grid: the last grid's nodes
            every_other = (slice(None, None, 2),) * d
            ci[every_other], known[every_other] = done, True
        ci, known = ci.reshape(-1, 2), known.ravel()
        check = _check_points(nodes, CHECK_POINTS[d])
        new = _at_points(a, beta, sd, np.r_[pts[~known], check], keep, prob, kind, None,
                         parts=("intervals",))["ci"]
        ci[~known] = new[:len(new) - len(check)]
        ends = {"lower": ci[:, 0], "upper": ci[:, 1]}
        guess = _interpolate(nodes, ends, check)
        worst = max(np.max(np.abs(guess[k] - new[len(new) - len(check):, j]) / sd_at(check))
                    for j, k in enumerate(("lower", "upper")))
        if worst <= GRID_TOLERANCE:
            return nodes, ends
        done = ci.reshape((g,) * d + (2,))
    return None


def linear_summary(alpha, beta, sd, y, prob: float, kind: str, rope: float | None = None,
                   grid: bool = True, interval_draws: int = INTERVAL_DRAWS
                   ) -> dict[str, np.ndarray]:
    """Return summaries of elements whose posterior is a mixture over draws k.

    Element e: ``Normal(alpha_k + beta_k . y_e, sd_k)`` (one group of cells or contrasts).

    alpha, sd (draws,); beta (draws, d); y (elements, d). Mean and sd in closed form over
    every draw; P(< 0) and the ROPE share over every draw; the interval over
    `interval_draws` thinned draws. With `grid` and more elements than
    :data:`GRID_MIN_ELEMENTS`, those three are computed on grids of y and interpolated: the
    probabilities on :data:`SPLINE_POINTS`, the intervals on :data:`GRID_POINTS`, checked
    at :data:`CHECK_POINTS` points between the nodes and computed at every element when
    they differ there by more than :data:`GRID_TOLERANCE` (from draws, then).
    """
    d = y.shape[1]
    y0 = y.mean(axis=0)
    yc = y - y0
    a = alpha + beta @ y0
    am, bm = a.mean(), beta.mean(axis=0)
    da, db = a - am, beta - bm
    cov_ab = (da[:, None] * db).mean(axis=0)
    cov_bb = (db[:, :, None] * db[:, None, :]).mean(axis=0)
    base = (sd * sd).mean() + (da * da).mean()

    def sd_at(x):
        var = base + 2 * x @ cov_ab + np.einsum("ej,jl,el->e", x, cov_bb, x)
        return np.sqrt(np.maximum(var, 0.0))

    out = {"mean": am + yc @ bm, "sd": sd_at(yc)}
    keep = thinned(alpha.size, interval_draws)
    lo, hi = yc.min(axis=0), yc.max(axis=0)
    if not grid or y.shape[0] < GRID_MIN_ELEMENTS[d] or np.any(hi - lo <= 0):
        out.update(_at_points(a, beta, sd, yc, keep, prob, kind, rope))
        return out
    # probabilities (cheap closed forms): on an even grid, cubic splines
    axes = [np.linspace(lo[j], hi[j], SPLINE_POINTS[d]) for j in range(d)]
    even = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, d)
    at = _at_points(a, beta, sd, even, keep, prob, kind, rope, parts=("probabilities",))
    names = ["prob_below_zero"] + (["share_in_rope"] if rope is not None else [])
    got = {}
    if d == 1:
        from scipy.interpolate import CubicSpline

        for k in names:
            got[k] = CubicSpline(axes[0], at[k])(yc[:, 0])
    else:
        from scipy.interpolate import RectBivariateSpline

        g = SPLINE_POINTS[d]
        for k in names:
            got[k] = RectBivariateSpline(axes[0], axes[1], at[k].reshape(g, g))(
                yc[:, 0], yc[:, 1], grid=False)
    # intervals (Newton steps on the mixture): Chebyshev nodes, checked between them
    grid = _grid_interval_ends(a, beta, sd, lo, hi, keep, prob, kind, sd_at)
    if grid is not None:
        got.update(_interpolate(*grid, yc))
    else:  # ends that do not follow a polynomial in y (modes): drawn, as with draws
        group = np.frombuffer(np.ascontiguousarray(y0, dtype=float).tobytes(), np.uint32)
        ci = _at_points(a, beta, sd, yc, keep, prob, kind, rope, parts=("intervals",),
                        drawn_seed=[20240106, y.shape[0], *group.tolist()])["ci"]
        got.update(lower=ci[:, 0], upper=ci[:, 1])
    out["ci"] = np.stack([got["lower"], got["upper"]], axis=-1)
    out["prob_below_zero"] = np.clip(got["prob_below_zero"], 0.0, 1.0)
    out["share_in_rope"] = np.clip(got["share_in_rope"], 0.0, 1.0) if rope is not None \
        else np.full(y.shape[0], np.nan)
    return out


def _coefficients(m, t, s, n):
    """alpha, beta, sd (draws,) of a cell with `n` rows: conditional mean alpha + beta ybar."""
    prec = 1.0 / (t * t) + n / (s * s)
    return m / (t * t) / prec, (n / (s * s)) / prec, 1.0 / np.sqrt(prec)


#: Fewest cells (or units, for contrasts) of a group of a fit with attribute effects that is
#: summarised as a mixture on its own (None: :data:`GRID_MIN_ELEMENTS`, so that its cost
#: does not grow with the cells); smaller groups are summarised element by element
#: (:func:`_direct_summary`).
MIN_GROUP = None


def _min_group(d: int) -> int:
    return GRID_MIN_ELEMENTS[d] if MIN_GROUP is None else MIN_GROUP


def cell_summaries(m, t, s, n, ybar, prob, kind, pairs=None, rope=None, extra_sd=None,
                   grid: bool = True, shift=None) -> dict[str, np.ndarray]:
    """Return summaries of every cell mean or, with `pairs`, of every per-unit contrast.

    Cell means flat over (unit, connection); contrasts (`pairs`: connection index pairs) flat
    over (unit, pair).

    m, t, s: hyper-parameter draws (draws, connection); n, ybar: (units, connection).
    `extra_sd` (draws, connection): added in quadrature (a row's predictive: sigma).
    Cells are grouped by (connection, n) (:func:`linear_summary` per group). `shift`
    (:func:`fit_shift`, attribute effects): ``(gid, vbar)``; a cell's data mean is then
    ``ybar - vbar`` with vbar common to its group (connection, n, attribute multiset), so
    cells are grouped by gid; groups of fewer than :data:`MIN_GROUP` are summarised
    element by element, their intervals from one exact draw per element and draw.
    """
    n_u, nc = n.shape
    ybar = np.nan_to_num(ybar)
    coef = {}

    def cell_coef(c, k):
        if (c, k) not in coef:
            al, be, sd = _coefficients(m[:, c], t[:, c], s[:, c], float(k))
            if extra_sd is not None:
                sd = np.sqrt(sd * sd + extra_sd[:, c] ** 2)
            coef[(c, k)] = al, be, sd
        return coef[(c, k)]

    if pairs is None:
        size = n_u * nc
        cols = [(c,) for c in range(nc)]
    else:
        size = n_u * len(pairs)
        cols = pairs
    out = {k: np.empty(size) for k in ("mean", "sd", "prob_below_zero", "share_in_rope")}
    out["ci"] = np.empty((size, 2))
    ncol = len(cols)
    tasks = []  # (flat indices, function, arguments): each group's summaries, independent
    for j, col in enumerate(cols):
        keys = np.stack([(n if shift is None else shift[0])[:, c] for c in col], axis=1)
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)
        inv = inv.ravel()
        rest = []
        for g, key in enumerate(uniq):
            units = np.flatnonzero(inv == g)
            if shift is not None and units.size < _min_group(len(col)):
                rest.append(units)
                continue
            parts = [cell_coef(c, int(n[units[0], c])) for c in col]
            if shift is not None:  # alpha - beta vbar: the group's mean attribute effect
                parts = [(al - be * shift[1]([gk])[:, 0], be, sd)
                         for (al, be, sd), gk in zip(parts, key, strict=True)]
            if len(parts) == 1:
                al, be, sd = parts[0]
                beta = be[:, None]
            else:
                (aa, ba, sa), (ab, bb, sb) = parts
                al, beta, sd = aa - ab, np.stack([ba, -bb], axis=1), np.sqrt(sa * sa + sb * sb)
            y = np.stack([ybar[units, c] for c in col], axis=1)
            tasks.append((units * ncol + j, linear_summary,
                          (al, beta, sd, y, prob, kind, rope, grid,
                           INTERVAL_DRAWS if shift is None else SHIFTED_INTERVAL_DRAWS)))
        if rest:
            units = np.concatenate(rest)
            tasks.append((units * ncol + j, _direct_summary,
                          (m, t, s, n, ybar, col, units, shift, prob, kind, rope, extra_sd)))

    results = thread_map(lambda f, a: f(*a), [f for _, f, _ in tasks], [a for _, _, a in tasks])
    for (flat, _, _), got in zip(tasks, results, strict=True):
        for k in ("mean", "sd", "prob_below_zero", "share_in_rope", "ci"):
            out[k][flat] = got[k]
    return out


def _drawn_interval(mean, sd, probs, kind, seed) -> np.ndarray:
    """Intervals of each element from one draw of its Normal per draw (draws, elements).

    Returns (len(probs), elements, 2): every probability from the same draws (one sort).
    """
    x = (mean + sd * np.random.default_rng(seed).standard_normal(mean.shape)).T
    if kind != "hdi":
        return np.stack([eti(x, p) for p in probs])
    x = np.sort(x, axis=-1)
    return np.stack([hdi_sorted(x, p) for p in probs])


def _direct_summary(m, t, s, n, ybar, col, units, shift, prob, kind, rope, extra_sd):
    """Summaries of `units`' cell means (one column) or contrasts (two), each on its own.

    Mean, sd, P(< 0) and the ROPE share from the component means and sds over every draw
    (in chunks of elements); the interval from one exact draw of each element's Normal per
    draw (the accuracy of per-word draws: a mixture's Newton steps over thousands of
    components cost far more per element than sorting as many draws).
    """
    from scipy.special import ndtr

    total = m.shape[0]
    e = units.size
    out = {"mean": np.empty(e), "sd": np.empty(e), "prob_below_zero": np.empty(e),
           "share_in_rope": np.full(e, np.nan), "ci": np.empty((e, 2))}

    def components(sl):
        mean, var = 0.0, 0.0
        for sign, c in zip((1.0, -1.0)[:len(col)], col, strict=True):
            nn = n[units[sl], c].astype(float)[None]
            tt, ss = t[:, c][:, None], s[:, c][:, None]
            prec = 1.0 / (tt * tt) + nn / (ss * ss)
            y = ybar[units[sl], c][None] - shift[1](shift[0][units[sl], c])
            mean = mean + sign * (m[:, c][:, None] / (tt * tt) + nn * y / (ss * ss)) / prec
            sd2 = 1.0 / prec
            if extra_sd is not None:
                sd2 = sd2 + extra_sd[:, c][:, None] ** 2
            var = var + sd2
        return mean, np.sqrt(var)

    for sl in chunks(e, total):
        mean, sd = components(sl)
        out["mean"][sl], out["sd"][sl] = mixture_moments(mean, sd)
        out["prob_below_zero"][sl] = ndtr(-mean / sd).mean(axis=0)
        if rope is not None:
            out["share_in_rope"][sl] = (ndtr((rope - mean) / sd)
                                        - ndtr((-rope - mean) / sd)).mean(axis=0)
        out["ci"][sl] = _drawn_interval(mean, sd, [prob], kind,
                                        [20240104, *col, int(units[sl][0]), sl.start])[0]
    return out


def row_intervals(m, t, s, sig, cells, shift, v, probs, kind: str,
                  rows=None) -> np.ndarray:
    """Predictive intervals of every row (or of `rows`) of a fit with attribute effects.

    Returns (len(probs), rows, 2), one interval per probability in `probs`; `rows` is an
    index array (default: every row).

    Given the parameters and v, row i of cell q (group g) and attribute a is Normal with mean
    ``alpha + beta (ybar_q - vbar_g) + v_a`` and sd ``sqrt(sd^2 + sigma_c^2)`` (alpha, beta,
    sd: those of the cell mean given (connection, n)): its predictive is the mixture over the
    draws. Rows of one (cell, attribute) share it; the (cell, attribute) pairs of one
    (group, attribute) differ only in ybar (:func:`linear_summary`, interpolated on a grid);
    pairs of smaller groups than :data:`MIN_GROUP` from one replicate per draw over
    :data:`ROW_CHECK_DRAWS` thinned draws, as a fit with per-word draws replicates its rows.
    """
    nc = len(CONNECTIONS)
    na = cells.attributes.size
    gid = shift[0].reshape(-1)
    sel = slice(None) if rows is None else rows
    flat = cells.unit_idx[sel].astype(np.int64) * nc + cells.conn_idx[sel]
    pair, inv = np.unique(flat * na + cells.attr_idx[sel], return_inverse=True)
    pcell, pattr = pair // na, pair % na
    conn = pcell % nc
    nn = cells.n.reshape(-1)[pcell].astype(float)
    ybar = np.nan_to_num(cells.mean).reshape(-1)[pcell]
    key, kinv = np.unique(gid[pcell] * na + pattr, return_inverse=True)
    kinv = kinv.ravel()
    size = np.bincount(kinv, minlength=key.size)
    out = np.empty((len(probs), pair.size, 2))
    order = np.argsort(kinv, kind="stable")
    bounds = np.r_[0, np.cumsum(size)]
    small, big = [], []
    for j in range(key.size):
        el = order[bounds[j]:bounds[j + 1]]
        (small if size[j] < _min_group(1) else big).append(el)

    def group_intervals(el):
        e0 = el[0]
        c = conn[e0]
        al, be, sd = _coefficients(m[:, c], t[:, c], s[:, c], nn[e0])
        al = al - be * shift[1]([gid[pcell[e0]]])[:, 0] + v[:, pattr[e0]]
        sd = np.sqrt(sd * sd + sig[:, c] ** 2)
        return [linear_summary(al, be[:, None], sd, ybar[el][:, None], p, kind,
                               interval_draws=SHIFTED_INTERVAL_DRAWS)["ci"] for p in probs]

    for el, got in zip(big, thread_map(group_intervals, big), strict=True):
        for i, ci in enumerate(got):
            out[i, el] = ci
    if small:
        el = np.concatenate(small)
        keep = thinned(m.shape[0], ROW_CHECK_DRAWS)
        # the per-connection factors once per draw, then picked per element (the numbers of
        # computing them on the picked arrays, in fewer passes over draws x elements)
        t2, s2 = t[keep] * t[keep], s[keep] * s[keep]
        inv_t2, m_t2, sig2, vk = 1.0 / t2, m[keep] / t2, sig[keep] ** 2, v[keep]
        for sl in chunks(el.size, keep.size):
            e = el[sl]
            c = conn[e]
            s2c = s2[:, c]
            prec = inv_t2[:, c] + nn[e] / s2c
            mean = nn[e] * (ybar[e] - shift[1](gid[pcell[e]], keep))
            mean /= s2c
            mean += m_t2[:, c]  # (m / t^2 + n y / s^2) / prec + v
            mean /= prec
            mean += vk[:, pattr[e]]
            sd = 1.0 / prec
            sd += sig2[:, c]
            out[:, e] = _drawn_interval(mean, np.sqrt(sd, out=sd), probs, kind,
                                        [20240105, sl.start])
    return out[:, inv.ravel()]


def drawn_summaries(moments, shape, total: int, prob: float, kind: str, pairs=None,
                    rope: float | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """Summaries of every cell mean, or of every per-unit contrast, from conditional moments.

    For a family whose cell means are Normal given more than M, T, S (embedding_level: given
    the parameters and the word, embedding and attribute effects; its ``cell_moments``):
    ``moments(keep, None, cells)`` gives their conditional means and sds, (draws, cells). Over
    :data:`INTERVAL_DRAWS` evenly thinned of the `total` draws: mean and sd of the Normal
    mixture, ``P(< 0)`` and the ROPE share as means of the Normal probabilities, the interval
    from one draw of each Normal per draw (seeded by `seed`). A contrast of two connections
    of one unit: the difference of two conditionally independent Normals. Keys and layout
    as :func:`cell_summaries` (flat over (unit, connection) or (unit, pair)), `shape` the
    cells' (units, connections).
    """
    from scipy.special import ndtr

    n_u, nc = shape
    keep = thinned(total)
    cols = [(c,) for c in range(nc)] if pairs is None else [tuple(p) for p in pairs]
    size = n_u * len(cols)
    out = {k: np.empty(size) for k in ("mean", "sd", "prob_below_zero")}
    out["share_in_rope"] = np.full(size, np.nan)
    out["ci"] = np.empty((size, 2))
    step = max(1, CHUNK_ELEMENTS // (keep.size * nc))
    for lo in range(0, n_u, step):
        units = np.arange(lo, min(n_u, lo + step))
        m, s = moments(keep, None, (units[:, None] * nc + np.arange(nc)).ravel())
        m, s = m.reshape(keep.size, units.size, nc), s.reshape(keep.size, units.size, nc)
        for j, col in enumerate(cols):
            if len(col) == 1:
                mean, sd = m[..., col[0]], s[..., col[0]]
            else:
                mean = m[..., col[0]] - m[..., col[1]]
                sd = np.sqrt(s[..., col[0]] ** 2 + s[..., col[1]] ** 2)
            at = units * len(cols) + j
            out["mean"][at], out["sd"][at] = mixture_moments(mean, sd)
            out["prob_below_zero"][at] = ndtr(-mean / sd).mean(axis=0)
            if rope is not None:
                out["share_in_rope"][at] = (ndtr((rope - mean) / sd)
                                            - ndtr((-rope - mean) / sd)).mean(axis=0)
            out["ci"][at] = _drawn_interval(mean, sd, [prob], kind,
                                            [int(seed), 20240105, j, lo])[0]
    return out

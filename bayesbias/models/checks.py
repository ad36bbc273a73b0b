"""Model checks with a known reference: leave-one-out predictive coverage, attribute dependence.

Both are computed from a thinned set of posterior draws (at most :data:`CHECK_DRAWS`), holding
at most :data:`CHECK_ELEMENTS` draws x rows at once: on tables of more than
:data:`LOO_ROWS` rows the coverage check uses a fixed random subset of that many rows (the same
subset for the same table), and the attribute check fewer draws (at least
:data:`MIN_CHECK_DRAWS`), taken in chunks.

``ppc_coverage``
    The share of rows inside their 89% *leave-one-out* predictive interval, from
    Rao-Blackwellised LOO-PIT values: ``PIT_i = sum_s w_is Phi((y_i - m_is) / s_is)`` with
    PSIS weights ``w_is`` (``arviz_stats``' algorithm over all rows at once,
    :mod:`bayesbias.models._psis`). In-sample coverage is inflated when cells have few rows
    (a row helps fit its own cell mean); the LOO version is not. Under the true model the
    share is about 0.89 within sampling noise; rows that share an attribute word (or a cell)
    are not independent, so the noise is the cluster standard error of the share over
    attribute words (cells without them), and the tolerance is
    ``max(0.05, 3.5 * cluster se)``.
``attribute_dependence``
    Do rows that share an attribute word share a shift the model does not have? Given the
    parameters, a row's standardised residual ``(y_i - m_i) / s_i`` is Normal(0, 1), so
    ``D = sum_a n_a rbar_a^2`` (``rbar_a``: the mean residual of attribute a's ``n_a`` rows) is
    chi-square with one degree of freedom per attribute. The check's p-value is the posterior
    mean of ``P(chi2 >= D)`` (a realised-discrepancy check, Gelman, Meng & Stern 1996); it
    fires below :data:`ATTRIBUTE_ALPHA`. A model with attribute effects (``crossed``) removes
    the shift; the paper's model fitted to a table with attribute effects does not.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ..config import CONNECTIONS
from ..parallel import thread_map
from ._psis import psislw, tail_draws
from .families import family

__all__ = ["loo_pit", "loo_coverage", "loo_skip_reason", "attribute_dependence", "CHECK_DRAWS",
           "ATTRIBUTE_ALPHA", "coverage_tolerance", "CHECK_ELEMENTS", "LOO_ROWS"]

#: Posterior draws used by the checks (evenly thinned).
CHECK_DRAWS = 1000
#: Draws x rows a check holds at once (160 MB per float64 array): bounds memory on big tables.
CHECK_ELEMENTS = 20_000_000
#: Rows of the coverage check; a larger table is checked on a fixed random subset of them.
LOO_ROWS = CHECK_ELEMENTS // CHECK_DRAWS
#: Rows of the coverage check's PSIS at a time (its temporaries: 4 MB per array at 1000
#: draws; blocks of 2048 rows took 90 MB more at the peak on 5M rows, and no less time).
LOO_BLOCK_ROWS = 512
#: Fewest draws of the attribute check on a big table.
MIN_CHECK_DRAWS = 40
#: p-value below which the attribute-dependence check fires.
ATTRIBUTE_ALPHA = 0.01
#: Smallest tolerance of the coverage check.
MIN_TOLERANCE = 0.05


def thinned_draws(fit, draws: int = CHECK_DRAWS) -> np.ndarray:
    """Return the indices of at most `draws` evenly spaced draws of the flat (chain, draw) axis."""
    post = fit.posterior
    total = post.sizes["chain"] * post.sizes["draw"]
    return np.unique(np.linspace(0, total - 1, min(draws, total)).astype(int))


def _row_moments(fit, keep=None, rows=None) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sd of each row's predictive Normal, (draws, rows).

    `keep` indexes the flattened draws (default: :func:`thinned_draws`); `rows` selects rows
    (an index array or slice; default all).
    """
    mean, sig, conn = _row_mean_and_sds(fit, keep, rows)
    return mean, sig[:, conn]


def _row_mean_and_sds(fit, keep=None, rows=None) -> tuple[np.ndarray, np.ndarray,
                                                           np.ndarray]:
    """:func:`_row_moments` with the sd as (draws, connection) and each row's connection.

    Inside :func:`shared_row_moments`, computed once per (draws, rows) asked for and
    returned read-only thereafter.
    """
    memo = getattr(fit, "_row_moments_memo", None)
    if memo is None:
        return _compute_row_mean_and_sds(fit, keep, rows)
    keep = thinned_draws(fit) if keep is None else keep
    n = fit.cells.n_rows
    if rows is None or (isinstance(rows, slice) and rows.indices(n) == (0, n, 1)):
        key = (keep.tobytes(), None)
    elif isinstance(rows, np.ndarray):
        key = (keep.tobytes(), rows.tobytes())
    else:
        return _compute_row_mean_and_sds(fit, keep, rows)
    if key not in memo:
        out = _compute_row_mean_and_sds(fit, keep, rows)
        for a in out:
            a.flags.writeable = False
        memo[key] = out
    return memo[key]


@contextmanager
def shared_row_moments(fit):
    """Within the block, the checks of `fit` share its rows' predictive moments.

    The posterior predictive check, the coverage check and the attribute check each ask for
    the rows' means and sds at the same thinned draws; inside this block they are computed
    once (the same arrays, read-only) and dropped when it ends.
    """
    if getattr(fit, "_row_moments_memo", None) is not None:  # nested: the outer block's
        yield
        return
    fit._row_moments_memo = {}
    try:
        yield
    finally:
        fit._row_moments_memo = None


def _compute_row_mean_and_sds(fit, keep=None, rows=None):
    c = fit.cells
    post = fit.posterior
    keep = thinned_draws(fit) if keep is None else keep
    rows = slice(None) if rows is None else rows
    sig = post["sigma"].transpose("chain", "draw", ...).values
    sig = sig.reshape(-1, sig.shape[-1] if sig.ndim > 2 else 1)[keep]
    if sig.shape[1] == 1:
        sig = np.repeat(sig, len(CONNECTIONS), axis=1)
    conn = c.conn_idx[rows]
    if "mu" in post:
        mu = post["mu"].transpose("chain", "draw", ...).values
        mu = mu.reshape(-1, *mu.shape[2:])[keep]
        mean = mu[:, c.unit_idx[rows], conn]
    else:
        mean = _drawn_cell_means(fit, keep, c.unit_idx[rows], conn)
    spec = getattr(fit, "spec", None)
    hook = None
    if spec is not None:
        hook = getattr(family(spec.family), "row_attribute_effects", None)
    if hook is not None:  # embedding_level: per corpus sample, and the strengths
        idx, effects = hook(post, c, keep)
        mean += effects[:, idx[rows]]
    elif "attribute_effect" in post:
        v = post["attribute_effect"].transpose("chain", "draw", ...).values
        v = v.reshape(-1, v.shape[-1])[keep]
        attr = c.attr_idx[rows]
        for sl in _draw_blocks(keep.size, attr.size):  # no (draws, rows) temporary
            mean[sl] += v[sl][:, attr]
    return mean, sig, conn


#: Draws x columns of the cell means drawn (and of the attribute effects added) at a time.
DRAW_BLOCK_ELEMENTS = 2_000_000


def _draw_blocks(draws: int, columns: int) -> list[slice]:
    """Slices of the draw axis of about :data:`DRAW_BLOCK_ELEMENTS` elements each."""
    step = max(1, DRAW_BLOCK_ELEMENTS // max(columns, 1))
    return [slice(a, a + step) for a in range(0, draws, step)]


def _add_drawn(m: np.ndarray, sd: np.ndarray, rng) -> np.ndarray:
    """``m + sd * rng.standard_normal(m.shape)``, in place in the drawn array."""
    x = rng.standard_normal(m.shape)
    x *= sd
    x += m
    return x


def _drawn_cell_means(fit, keep, unit, conn) -> np.ndarray:
    """Return cell means at the flat draws `keep` for rows in cells (`unit`, `conn`).

    For a fit without per-word draws: (draws, rows), drawn from their exact conditional, one
    draw per cell and draw shared by the cell's rows (seeded by the fit's seed and the draws).
    """
    nc = len(CONNECTIONS)
    flat = unit.astype(np.int64) * nc + conn
    if flat.size >= fit.cells.n.size:  # many rows: every cell (no sort of the rows)
        return _every_cell_mean(fit, keep, flat)
    cells, inv = np.unique(flat, return_inverse=True)
    return _drawn_means(fit, keep, cells, inv.ravel())


def _every_cell_mean(fit, keep, pick=None) -> np.ndarray:
    """Return every flat cell's mean at the flat draws `keep`, (draws, cells), or columns `pick`.

    The draws of a fit with per-word draws, else drawn as :func:`_drawn_cell_means` draws
    them for many rows.
    """
    post = fit.posterior
    if "mu" in post:
        mu = post["mu"].transpose("chain", "draw", ...).values
        mu = mu.reshape(-1, mu.shape[2] * mu.shape[3])[keep]
        return mu if pick is None else mu[:, pick]
    return _drawn_means(fit, keep, np.arange(fit.cells.n.size), pick)


def _drawn_means(fit, keep, cells, pick=None) -> np.ndarray:
    """Draw the flat `cells`' means from their conditional at draws `keep`; columns `pick`.

    In blocks of draws: the same numbers as one (draws, cells) draw, since a Generator fills
    an array in C order, without holding its (draws, cells) means, sds and normals at once.
    """
    moments, _ = fit._word_moments()
    rng = np.random.default_rng([int(fit.idata.attrs.get("seed", 0)), 20240103,
                                 int(keep[0]), int(keep.size)])
    out = np.empty((keep.size, cells.size if pick is None else pick.size))
    for sl in _draw_blocks(keep.size, cells.size):
        m, sd = moments(keep[sl], None, cells)
        drawn = _add_drawn(m, sd, rng)
        del m, sd
        out[sl] = drawn if pick is None else drawn[:, pick]
    return out


def check_rows(fit) -> np.ndarray | None:
    """Rows of the coverage check: None (all) up to :data:`LOO_ROWS`, else a fixed subset."""
    n = fit.cells.n_rows
    if n <= LOO_ROWS:
        return None
    return np.sort(np.random.default_rng(20240101).choice(n, LOO_ROWS, replace=False))


def loo_pit(fit, rows=None) -> np.ndarray:
    """Return the Rao-Blackwellised LOO-PIT value of every row, or of `rows`.

    PSIS weights of all rows at once (:func:`bayesbias.models._psis.psislw`: ``arviz_stats``'
    algorithm, vectorised).
    """
    from scipy.special import ndtr

    y = fit.cells.y if rows is None else fit.cells.y[rows]
    mean, sig, conn = _row_mean_and_sds(fit, rows=rows)

    def block(lo, hi):
        # (rows, draws) in C order: PSIS sorts, reduces and scans each row's draws, a pass
        # over contiguous memory (on a transposed view these strided passes took 3x as long)
        z = np.ascontiguousarray((y[None, lo:hi] - mean[:, lo:hi]).T)
        s = np.ascontiguousarray(sig[:, conn[lo:hi]].T)
        z /= s
        loglik = -0.5 * z
        loglik *= z
        loglik -= np.log(s)
        lw, _ = psislw(loglik)  # normalised over draws
        np.exp(lw, out=lw)
        return np.einsum("ij,ij->i", lw, ndtr(z))

    # blocks of rows, over threads: each row's PSIS is its own, so the values are those of
    # one pass, and the (rows, draws) temporaries stay a few blocks' (a pass held 4-5
    # arrays of all rows)
    starts = np.arange(0, y.size, LOO_BLOCK_ROWS)
    parts = thread_map(block, starts, np.minimum(starts + LOO_BLOCK_ROWS, y.size))
    return np.concatenate(parts) if parts else np.empty(0)


def loo_skip_reason(fit) -> str | None:
    """Why the coverage check cannot run (too few draws for PSIS's 5 tail draws), else None."""
    n = len(thinned_draws(fit))
    if tail_draws(n) >= 5:
        return None
    return (f"leave-one-out coverage not checked: {n} posterior draws in total are too few for "
            f"PSIS (it smooths {tail_draws(n)} tail draws of at least 5, which needs 25 draws "
            "or more); draw more (--draws) to check the predictive intervals")


def coverage_tolerance(cluster_se: float) -> float:
    """Return the allowed distance of the LOO coverage share from its nominal value."""
    return max(MIN_TOLERANCE, 3.5 * float(cluster_se))


def loo_coverage(fit, prob: float = 0.89) -> tuple[float, float]:
    """Return the share of rows inside their `prob` leave-one-out predictive interval.

    Also its cluster standard error (clusters: attribute words, else cells). The interval is
    the central one.
    """
    c = fit.cells
    rows = check_rows(fit)
    pit = loo_pit(fit, rows)
    a = (1 - prob) / 2
    inside = ((pit >= a) & (pit <= 1 - a)).astype(float)
    if c.attr_idx is not None:
        cluster = c.attr_idx
    else:
        cluster = c.unit_idx.astype(np.int64) * len(CONNECTIONS) + c.conn_idx
    if rows is not None:
        cluster = cluster[rows]
    _, cluster = np.unique(cluster, return_inverse=True)
    k = cluster.max() + 1
    n = np.bincount(cluster, minlength=k)
    dev = np.bincount(cluster, weights=inside - inside.mean(), minlength=k)
    # ratio-estimator cluster se of a mean: sqrt(sum_k (sum_i dev_i)^2) / N
    se = float(np.sqrt(np.sum(dev**2) * k / max(k - 1, 1)) / n.sum())
    return float(inside.mean()), se


def _attribute_sums(fit):
    """Return ``sums(keep)``: each attribute's summed standardised residual, (draws, attrs).

    ``sum_i (y_i - mu_cell(i) - v_a) / s_c(i)`` over attribute a's rows, from the rows'
    sums per (attribute, connection) and a sparse (attribute, connection) x cell count
    matrix (canonical CSR: sorted cells, one entry per pair): O(cells + (cell, attribute)
    pairs) per draw instead of O(rows). The cell means are those :func:`_row_moments`
    draws, so the values equal the per-row sums up to rounding. For fits without per-word
    draws (big tables).
    """
    import scipy.sparse as sp

    c = fit.cells
    nc = len(CONNECTIONS)
    na = c.attributes.size
    ac = c.attr_idx.astype(np.int64)  # each row's (attribute, connection), in place
    ac *= nc
    ac += c.conn_idx
    y_ac = np.bincount(ac, weights=c.y, minlength=na * nc).reshape(na, nc)
    n_ac = np.bincount(ac, minlength=na * nc).reshape(na, nc).astype(float)
    # rows per ((attribute, connection), cell): scipy's COO to CSR conversion counts them in
    # linear passes, with sorted, summed duplicates (the matrix of sorting the distinct keys,
    # 4x faster on 5M rows)
    count = sp.coo_matrix((np.ones(ac.size), (ac, c.row_cells())),
                          shape=(na * nc, c.n.size)).tocsr()
    del ac
    post = fit.posterior
    sig = post["sigma"].transpose("chain", "draw", ...).values
    sig = sig.reshape(-1, sig.shape[-1] if sig.ndim > 2 else 1)
    if sig.shape[1] == 1:
        sig = np.repeat(sig, nc, axis=1)
    v = None
    if "attribute_effect" in post:
        v = post["attribute_effect"].transpose("chain", "draw", ...).values
        v = v.reshape(-1, v.shape[-1])

    def sums(keep):
        mu = _every_cell_mean(fit, keep)  # (draws, cells)
        m_ac = (count @ mu.T).T.reshape(keep.size, na, nc)
        r = y_ac[None] - m_ac
        if v is not None:
            r = r - n_ac[None] * v[keep][:, :, None]
        return (r / sig[keep][:, None, :]).sum(axis=2)

    return sums


def attribute_dependence(fit) -> float | None:
    """p-value of the attribute-dependence check, or None without attribute words."""
    from scipy.special import chdtrc  # chi2.sf's own function, without scipy.stats' import

    c = fit.cells
    if c.attr_idx is None:
        return None
    per_chunk = max(1, CHECK_ELEMENTS // c.n_rows)
    keep = thinned_draws(fit, max(min(CHECK_DRAWS, per_chunk), MIN_CHECK_DRAWS))
    na = c.attributes.size
    n = np.bincount(c.attr_idx, minlength=na).astype(float)
    starts = range(0, keep.size, per_chunk)
    spec = getattr(fit, "spec", None)
    own_rows = spec is not None and \
        getattr(family(spec.family), "row_attribute_effects", None) is not None
    if not getattr(fit, "word_draws", True) and not own_rows:
        # sums per (attribute, connection) and cell

        pooled = _attribute_sums(fit)
        fit._word_moments()  # cached before the threads share it
        sums = thread_map(lambda a: pooled(keep[a:a + per_chunk]), starts)
    else:
        sums = []
        for start in starts:
            mean, sd = _row_moments(fit, keep[start:start + per_chunk])
            r = (c.y[None, :] - mean) / sd
            sums += [np.bincount(c.attr_idx, weights=row, minlength=na) for row in r]
    d = (np.vstack(sums) ** 2 / np.maximum(n, 1)).sum(axis=1)  # sum_a n_a rbar_a^2
    dof = int((n > 0).sum())
    return float(np.mean(chdtrc(dof, d)))

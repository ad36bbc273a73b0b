"""The crossed family: the hierarchical model plus an effect of every attribute word.

``distance_i ~ Normal(mu[w, c] + v[a], sigma[c])``, ``mu[w, c] ~ Normal(mu_bar[c], tau[c])``,
``v[a] ~ Normal(0, omega)``: an attribute's distance is shifted for every protected word that
meets it, and the attribute words are a sample from a population of such words, as the
protected words are. The group-level means ``mu_bar`` then describe the population of
attributes, not the listed ones, so their contrasts carry the uncertainty of which
stereotypes and controls were chosen (``associated - different`` is hardly affected: the same
stereotypes appear on both sides). With ``attribute_sd = "per_kind"`` (the shipped spec)
stereotypes, human attributes and neutral words have an sd each, ``v[a] ~ Normal(0,
omega[kind(a)])``: on the shipped tables stereotype words vary more than the controls, and
one shared sd would make the stereotype contrasts' intervals too narrow.

Default sampler: nutpie on the scales alone, ``log (tau, sigma, omega)`` (about a dozen
values). Given them the model is linear-Gaussian, so the cell means, the attribute effects
and ``mu_bar`` are integrated out exactly (:mod:`.crossed_integrated`: on the groups of
cells sharing (connection, n, attribute multiset), :func:`cell_groups`, with the attributes
collapsed onto a few types; a C kernel, :mod:`._native`); then ``(mu_bar, v)`` are drawn
jointly from their Gaussian conditional at every draw, and each ``mu[w, c]`` from its own,
or, above :data:`~bayesbias.models.word_summaries.WORD_DRAWS_BYTES` of them, per-word
summaries are Rao-Blackwellised over the draws (:mod:`.word_summaries`). The verdict's
mixture reads mu_bar's conditional moments from the same form. With more than
:data:`MAX_INTEGRATED_GROUPS` groups (protected words meeting many different attribute sets)
or a non-Normal ``mu_bar`` prior, nutpie samples ``(mu_bar, tau, sigma, omega, v)`` with the
cell means integrated out given ``v`` (on the groups of cells, or row by row when that is
shorter). There the attribute effects are sampled centred when the data say more about each
of them than the spread between them, non-centred otherwise, in coordinates free of two
ridges (the kernel's comment in :mod:`._native`): each attribute kind's mean effect is
sampled apart from ``mu_bar``, always non-centred (the rows never see it), and, centred, the
raw effects' mean per kind, which meets neither the rows nor the effects, gets a fixed
Normal density on the deviations' scale (:func:`_anchor_sds`). With the omega-scaled density
it had until 2026-12 it was a ridge correlated with omega: on a 5M-row table of 15,528 words
and 11 stereotypes, 3 of 6 seeds warned with r-hat up to 1.045 and a bulk ESS of 57 for
``omega[stereotype]``; now every seed has r-hat <= 1.006 and ESS >= 7,000 (the posterior is
the same).
The PyMC model (``--sampler pymc``, ``likelihood="rows"``) is the reference the tests compare
against, beside a bambi formula model.
"""

from __future__ import annotations

import json

import numpy as np

from .._stats import sorted_counts
from ..config import CONNECTIONS
from ..errors import DistanceTableError, ModelSpecError
from . import crossed_integrated as _ci
from . import hierarchical
from ._native import entry_points
from .cells import ATTRIBUTE_KINDS, Cells, cell_mean_conditional
from .priors import kernel_row
from .spec import ModelSpec

__all__ = ["cell_means", "row_effects", "card_lines", "validate", "marginal_kernel",
           "attribute_noncentred", "noncentred_groups", "ATTRIBUTE_SDS"]

PRIORS = ("mu_bar", "tau", "sigma", "omega")
SCALES = ("tau", "sigma", "omega")
PARAMETERS = ("mu_bar", "tau", "sigma", "omega")
GROUP_MEAN = "mu_bar"
#: Given the scale parameters the group means are exactly Gaussian (Normal mu_bar prior):
#: the verdict reads Rao-Blackwellised interval ends (:mod:`.contrast_mixture`).
GAUSSIAN_GROUP_MEANS = True
#: Whether attribute effects share one sd or have one per attribute kind.
ATTRIBUTE_SDS = ("shared", "per_kind")
#: The spec's ``noncentred`` choice applies (cell means pooled).
NONCENTRED = True
#: Spec keys of this family alone, with their defaults.
SPEC_KEYS = {"attribute_sd": "per_kind"}
#: The hierarchical model plus one random effect per attribute word: design and sensitivity
#: studies analyse it in plug-in form (attribute deviations removed, the hierarchical part
#: exact), :func:`bayesbias.testing.simulate_table` draws the effects, and the report
#: compares it with the paper's model.
ATTRIBUTE_EFFECTS = True
#: Fits can keep Rao-Blackwellised per-word summaries instead of per-word draws
#: (:mod:`.word_summaries`): given the parameters and v the cell means are independent
#: Normals; :func:`marginal_kernel` takes ``word_draws`` and ``grouped``.
WORD_SUMMARIES = True
# The density is evaluated on groups of cells (``cxg_logp``) or classes (``cxc_logp``)
# whenever that loop is shorter than the rows (:func:`grouped_is_cheaper`), as on every
# shipped table (about 350 group entries against 3,250-17,689 rows: the default report's
# fits sample about 2x faster). Until 2026-12 the row kernel (``cx_logp``) ran below 50,000
# rows, to keep earlier draws bit for bit; the posterior is the same (log-density and
# gradient equal to 1e-14), the draws differ by rounding.

#: Data-to-prior information ratio below which the attribute effects are sampled non-centred.
AUTO_RATIO = 10.0
#: Tuning steps per chain of the cell-marginal sampler (the PyMC model keeps the configured
#: 1,000). nutpie's adaptation has settled by then on every shipped table: over the 7 shipped
#: lists x 10 seeds, r-hat above 1.01 in 1 of 70 fits (2 of 70 at 1,000), min bulk ESS
#: 529-3,637 (624-3,363), 27% less CPU per fit (docs/speed-and-progress.md; issue 49).
TUNE = 500
#: NUTS target acceptance of the cell-marginal samplers. On the scales alone, 0.8 left one
#: divergence in 7 of 1,200 null tables (all with no attribute effect, omega = 0, where
#: log omega has a funnel-shaped tail); 0.9 removed them (and the 11 r-hat/ESS warnings of
#: those tables) for about one more leapfrog step per draw (5.6-6.3 -> 6.8-7.0 on the
#: shipped lists; docs/validation.md). The PyMC model keeps 0.8.
TARGET_ACCEPT = 0.9
PYMC_TARGET_ACCEPT = 0.8

#: Most groups of cells (:func:`cell_groups`) for which the sampler runs on the scales alone
#: (:func:`integrated`); its cost per step grows with their cube.
MAX_INTEGRATED_GROUPS = 16
_NC = len(CONNECTIONS)


def card_lines(spec: ModelSpec, unit: str, s: str) -> list[str]:
    """Return the model card's equations."""
    p = spec.priors
    o = "omega[kind(a)]" if spec.attribute_sd == "per_kind" else "omega"
    return [f"  distance_i ~ Normal(mu[{unit}, c] + v[a], {s})",
            "  a: the row's attribute word (a sample of attributes, like the protected words)",
            f"  mu[{unit}, c] ~ Normal(mu_bar[c], tau[c])",
            f"  v[a] ~ Normal(0, {o})"
            + ("  (kind: stereotype, human or none)" if spec.attribute_sd == "per_kind" else ""),
            f"  mu_bar[c] ~ {p['mu_bar']}",
            f"  tau[c] ~ {p['tau']}",
            f"  {o.split('[')[0]} ~ {p['omega']}"]


def simulate_cell_means(spec: ModelSpec, rng, n_u: int, unit: str, given: dict | None):
    """Return true cell means and parameters: those of the hierarchical family."""
    return hierarchical.simulate_cell_means(spec, rng, n_u, unit, given)


def simulate_row_effects(spec: ModelSpec, rng, table, given: dict | None):
    """Return each row's attribute effect, the true parameters and their coordinates.

    For :func:`bayesbias.testing.simulate_table`. Every attribute word gets one effect
    ``v[a] ~ Normal(0, omega)`` (one ``omega``, or one per attribute kind with
    ``attribute_sd = "per_kind"``), shared by every protected word that meets it; ``omega``
    from the prior when `given` is None, else ``given["omega"]``.
    """
    p = spec.priors
    attrs = list(table["attribute"].cat.categories)
    ai = table["attribute"].cat.codes.to_numpy()
    a_kind = np.empty(len(attrs), dtype=object)
    a_kind[ai] = table["attribute_class"].astype(str).to_numpy()
    a_kind = np.where(np.isin(a_kind, ("human", "none")), a_kind, "stereotype")
    kinds = ("stereotype", "human", "none")
    truth, coords = {}, {}
    if spec.attribute_sd == "per_kind":
        omega = (np.asarray(p["omega"].draw(rng, 3), dtype=float) if given is None else
                 np.broadcast_to(np.asarray(given["omega"], float), (3,)).copy())
        truth["omega"] = (("attribute_kind",), omega)
        coords["attribute_kind"] = list(kinds)
        scale = omega[[kinds.index(k) for k in a_kind]]
    else:
        omega = (float(np.asarray(p["omega"].draw(rng, None), dtype=float)) if given is None
                 else float(given["omega"]))
        truth["omega"] = ((), omega)
        scale = np.full(len(attrs), omega)
    v = scale * rng.standard_normal(len(attrs))
    truth["attribute_effect"] = (("attribute",), v)
    coords["attribute"] = attrs
    return v[ai], truth, coords


def n_effects(cells: Cells) -> int:
    """Values per draw beyond the cell means: one effect per attribute word."""
    return len(cells.attributes) if cells.attributes is not None else 0


def validate(spec: ModelSpec, source: str) -> None:
    """Check the structural choices of a crossed spec."""
    if spec.attribute_sd not in ATTRIBUTE_SDS:
        raise ModelSpecError(f"{source}: attribute_sd must be one of "
                             f"{', '.join(ATTRIBUTE_SDS)}, got {spec.attribute_sd!r}")


def check_cells(cells: Cells) -> None:
    """Refuse a table without an ``attribute`` for every row (the family needs them)."""
    if cells.attr_idx is None:
        raise DistanceTableError(
            "the crossed model needs the column attribute, filled in every row (the attribute "
            "word of each distance); use --model hierarchical for a table without it")


def _kinds(spec: ModelSpec, cells: Cells) -> tuple[np.ndarray, list[str]]:
    """Index of each attribute's sd, and the labels of the sds."""
    if spec.attribute_sd == "shared":
        return np.zeros(cells.attributes.size, dtype=np.int64), []
    present = [k for k in ATTRIBUTE_KINDS if (cells.attribute_kind == k).any()]
    index = {k: i for i, k in enumerate(present)}
    return np.array([index[k] for k in cells.attribute_kind], dtype=np.int64), present


def _residual_moments(cells: Cells) -> tuple[np.ndarray, float, float]:
    """Per-attribute mean residual from its cells, the residual variance and rows/attribute.

    Cached on `cells` (one pass over the rows).
    """
    cache = cells.__dict__.get("_residual_moments")
    if cache is None:
        cache = _residual_moments_of(cells)
        object.__setattr__(cells, "_residual_moments", cache)
    return cache


def _residual_moments_of(cells: Cells) -> tuple[np.ndarray, float, float]:
    resid = cells.y - cells.mean[cells.unit_idx, cells.conn_idx]
    na = cells.attributes.size
    cnt = np.bincount(cells.attr_idx, minlength=na).astype(float)
    means = np.bincount(cells.attr_idx, weights=resid, minlength=na) / np.maximum(cnt, 1)
    has = cells.n > 0
    df = cells.n.sum() - has.sum()
    s2 = float(cells.ss.sum() / df) if df > 0 else 0.01
    return means, max(s2, 1e-12), float(np.median(cnt))


def attribute_noncentred(cells: Cells, moments: tuple[float, float, float] | None = None
                         ) -> bool:
    """Whether to sample the attribute effects non-centred (sparse information per attribute).

    Moment estimates from the within-cell variance s2 (= sigma^2 + omega^2) and the variance
    of the attributes' mean residuals (= omega^2 + sigma^2 / n, n rows per attribute);
    non-centred when ``n * omega^2 / sigma^2 < AUTO_RATIO``. `moments`: :func:`_moments` of
    `cells`, when already computed.
    """
    return _information_ratio(_moments(cells) if moments is None else moments) < AUTO_RATIO


def _moments(cells: Cells) -> tuple[float, float, float]:
    """Moment estimates of omega^2 and sigma^2, and the rows per attribute."""
    means, s2, n = _residual_moments(cells)
    o2 = _omega2(means, s2, n)
    return o2, max(s2 - o2, 1e-3 * s2), n


def _omega2(means: np.ndarray, s2: float, n: float) -> float:
    """Moment estimate of omega^2 from attributes' mean residuals (variance less s2 / n)."""
    var_means = float(np.var(means, ddof=1)) if means.size > 1 else 0.0
    return max((var_means - s2 / n) / max(1.0 - 1.0 / n, 1e-3), 1e-8) if n > 1 else 1e-8


def noncentred_groups(spec: ModelSpec, cells: Cells,
                      moments: tuple[float, float, float] | None = None
                      ) -> tuple[bool, bool, bool]:
    """Return per attribute group (stereotype, human, none) whether to sample it non-centred.

    With one sd per kind (``attribute_sd = "per_kind"``) each group is judged by its own
    ratio ``n omega_k^2 / sigma^2`` (omega_k from its attributes' mean residuals), a group
    of fewer than two attributes by the pooled ratio of :func:`attribute_noncentred`; with
    one shared sd every group by the pooled ratio. (One pooled choice sampled a kind with
    little information centred whenever another kind varied much more: divergences in 9 of
    87 such prior-simulated fits.)
    """
    moments = _moments(cells) if moments is None else moments
    pooled = _information_ratio(moments) < AUTO_RATIO
    if spec.attribute_sd != "per_kind":
        return (pooled,) * 3
    means, s2, n = _residual_moments(cells)
    kind = np.asarray(cells.attribute_kind)
    out = []
    for k in ATTRIBUTE_KINDS:
        m = means[kind == k]
        out.append(pooled if m.size < 2 else
                   _information_ratio((_omega2(m, s2, n), moments[1], n)) < AUTO_RATIO)
    return tuple(out)


def _noncentred_flags(noncentred) -> np.ndarray:
    """Return three flags (stereotype, human, none) from one bool (every group) or three."""
    return np.broadcast_to(np.asarray(noncentred, dtype=bool), (3,))


def _noncentred_mask(noncentred) -> float:
    """Return the kernel's flag: bit g set if group g is non-centred."""
    return float(sum(1 << g for g, flag in enumerate(_noncentred_flags(noncentred)) if flag))


def _information_ratio(moments: tuple[float, float, float]) -> float:
    """``n omega^2 / sigma^2`` from :func:`_moments`."""
    o2, s2, n = moments
    return n * o2 / s2


def cell_means(spec: ModelSpec, cells: Cells):
    """Add the hierarchical cell means ``mu`` to the current PyMC model."""
    return hierarchical.cell_means(spec, cells)


def row_effects(spec: ModelSpec, cells: Cells):
    """Add ``omega`` and the attribute effects; return each row's effect (PyMC)."""
    import pymc as pm

    check_cells(cells)
    model = pm.modelcontext(None)
    model.add_coord("attribute", cells.attributes.tolist())
    kind, labels = _kinds(spec, cells)
    if labels:
        model.add_coord("attribute_kind", labels)
        omega = spec.priors["omega"].create("omega", dims="attribute_kind")
        scale = omega[kind]
    else:
        omega = spec.priors["omega"].create("omega")
        scale = omega
    if attribute_noncentred(cells):
        z = pm.Normal("attribute_z", 0.0, 1.0, dims="attribute")
        v = pm.Deterministic("attribute_effect", scale * z, dims="attribute")
    else:
        v = pm.Normal("attribute_effect", 0.0, scale, dims="attribute")
    return v[cells.attr_idx]


def _cell_layout(cells: Cells):
    """Non-empty cells (unit, connection), each row's cell number, counts."""
    ui, ci = cells.observed
    number = -np.ones(cells.n.shape, dtype=np.int64)
    number[ui, ci] = np.arange(ui.size)
    return ui, ci, number[cells.unit_idx, cells.conn_idx], cells.n[ui, ci].astype(float)


def _kernel_header(spec: ModelSpec, cells: Cells):
    """Return what both kernel layouts start with: kinds, sd counts, prior rows, sd map."""
    per = spec.residual_sd == "per_connection"
    kind, labels = _kinds(spec, cells)
    ns, no = (_NC if per else 1), max(len(labels), 1)
    rows = []
    for name, count in (("mu_bar", _NC), ("tau", _NC), ("sigma", ns), ("omega", no)):
        rows += [kernel_row(spec.priors[name])] * count
    smap = np.arange(_NC, dtype=float) if per else np.zeros(_NC)
    return kind, ns, no, rows, smap


def pack(spec: ModelSpec, cells: Cells, noncentred,
         moments: tuple[float, float, float] | None = None) -> np.ndarray:
    """One flat float64 array: what ``cx_logp`` reads.

    `noncentred`: whether the attribute effects are sampled non-centred, for every group (a
    bool) or per group (stereotype, human, none; :func:`noncentred_groups`).

    Sizes, priors, each cell's connection and count, each attribute's sd and group, each
    group's sd index and :func:`_anchor_sds`, then the rows sorted by cell (stable: a cell's
    rows keep their table order, so the kernel adds them in the same order as a row-order
    loop), each cell's ``log n`` (``math.log``: libm's, as the kernel's), and an int32 block
    viewed as float64: each cell's first row (ncell + 1) and each sorted row's attribute.
    """
    import math

    kind, ns, no, rows, smap = _kernel_header(spec, cells)
    _, ci, row_cell, n = _cell_layout(cells)
    if cells.n_rows >= 2**31 or cells.attributes.size >= 2**31:
        raise DistanceTableError(f"the crossed kernel takes < 2**31 rows and attributes, got "
                                 f"{cells.n_rows} rows")
    order = np.argsort(row_cell, kind="stable")
    start = np.zeros(ci.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_cell, minlength=ci.size), out=start[1:])
    ints = np.concatenate([start, cells.attr_idx[order]]).astype(np.int32)
    if ints.size % 2:
        ints = np.append(ints, np.int32(0))
    return np.ascontiguousarray(np.concatenate([
        [float(ns), float(no), float(cells.attributes.size), float(ci.size),
         float(cells.n_rows), _noncentred_mask(noncentred)],
        np.asarray(rows, dtype=float).ravel(), smap, ci.astype(float), n, kind.astype(float),
        _groups(cells).astype(float), _group_sd_index(spec, cells),
        _anchor_sds(cells, moments), np.asarray(cells.y, dtype=float)[order],
        [math.log(k) for k in n], ints.view(np.float64)]))


def _hash64(x: np.ndarray, seed: int) -> np.ndarray:
    """splitmix64 of the uint64 values `x` xor `seed` (wrapping arithmetic)."""
    z = x ^ np.uint64(seed)
    t = np.empty_like(z)  # the shifts' one buffer: two arrays of x's size, not six
    with np.errstate(over="ignore"):
        z += np.uint64(0x9E3779B97F4A7C15)
        for shift, mult in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
            np.right_shift(z, np.uint64(shift), out=t)
            z ^= t
            z *= np.uint64(mult)
    np.right_shift(z, np.uint64(31), out=t)
    z ^= t
    return z


def cell_groups(cells: Cells) -> dict:
    """Group the non-empty cells by (connection, n, multiset of their rows' attributes).

    Returns a dict of arrays: ``gid`` (flat cells ``unit * 4 + connection``, -1 if empty),
    per group ``conn``, ``n``, ``w`` (cells), ``start`` (groups + 1: its entries), per entry
    ``attr`` and ``k`` (rows of that attribute in each of the group's cells). Cells of a
    group share their mean attribute effect given v. The key is a sum of 64-bit hashes of
    the cell's (attribute, count) pairs and its connection, then checked exactly (every
    member has the group's connection and (attribute, count) pairs and no other); a group
    that fails the check (a hash collision) is split into single cells. Cached on `cells`.
    """
    cache = cells.__dict__.get("_cell_groups")
    if cache is not None:
        return cache

    nc = _NC
    na = int(cells.attributes.size)
    # each row's (cell, attribute) key, built in place (the arrays here have the rows' size)
    pair = cells.row_cells()
    pair *= na
    pair += cells.attr_idx
    pair, k = sorted_counts(pair)
    pcell, pattr = np.divmod(pair, na)
    del pair
    first = np.flatnonzero(np.r_[True, pcell[1:] != pcell[:-1]])
    ucell = pcell[first]
    del pcell
    conn = ucell % nc
    npairs = np.diff(np.r_[first, pattr.size])
    key = pattr.astype(np.uint64)
    key <<= np.uint64(32)
    key |= k.view(np.uint64)
    key = _hash64(key, 0x5EED1)
    with np.errstate(over="ignore"):
        h = np.add.reduceat(key, first) + _hash64(conn.astype(np.uint64), 0x5EED2)
    del key
    _, ginv = np.unique(h, return_inverse=True)
    ginv = ginv.ravel()
    ng = int(ginv.max()) + 1 if ginv.size else 0
    w = np.bincount(ginv, minlength=ng)
    # exact check: one connection per group, and every (group, attribute, count) triple in
    # every member of the group
    bad = np.zeros(ng, bool)
    cmin = np.full(ng, nc)
    np.minimum.at(cmin, ginv, conn)
    bad[ginv[conn != cmin[ginv]]] = True
    trip = np.repeat(ginv.astype(np.int64), npairs)  # (group, attribute, count), in place
    kmax = int(k.max()) + 1 if k.size else 1
    trip *= na
    trip += pattr
    trip *= kmax
    trip += k
    trip, tcount = sorted_counts(trip)
    tg = trip // (na * kmax)
    per_group = np.bincount(tg, minlength=ng)
    bad[tg[tcount != w[tg]]] = True
    bad[ginv[npairs != per_group[ginv]]] = True
    if bad.any():  # a collision: those cells alone
        lone = bad[ginv]
        ginv = np.where(lone, ng + np.cumsum(lone) - 1, ginv)
        _, ginv = np.unique(ginv, return_inverse=True)
        ng = int(ginv.max()) + 1
        w = np.bincount(ginv, minlength=ng)
    # entries: the (attribute, count) pairs of each group's first cell
    rep = np.full(ng, -1, dtype=np.int64)
    rep[ginv[::-1]] = np.arange(ginv.size)[::-1]
    rstart, rcount = first[rep], npairs[rep]
    start = np.zeros(ng + 1, dtype=np.int64)
    np.cumsum(rcount, out=start[1:])
    idx = np.repeat(rstart - start[:-1], rcount) + np.arange(start[-1])
    gid = -np.ones(cells.n.size, dtype=np.int64)
    gid[ucell] = ginv
    out = {"gid": gid, "conn": conn[rep], "n": cells.n.reshape(-1)[ucell[rep]].astype(np.int64),
           "w": w.astype(float), "start": start, "attr": pattr[idx], "k": k[idx].astype(float)}
    object.__setattr__(cells, "_cell_groups", out)
    return out


def pack_grouped(spec: ModelSpec, cells: Cells, noncentred,
                 groups: dict | None = None,
                 moments: tuple[float, float, float] | None = None) -> np.ndarray:
    """One flat float64 array: what ``cxg_logp`` reads (:func:`cell_groups`).

    As :func:`pack` up to the anchors, with groups in place of cells
    (connection, n), then per group: cells w, mean cbar and sum of squares Q of their cell
    means, summed within-cell sums of squares, ``log n``; per entry: rows per cell k and the
    summed deviations D of those rows from their cell means; an int32 block: each group's
    first entry (groups + 1) and each entry's attribute.
    """
    import math

    g = cell_groups(cells) if groups is None else groups
    kind, ns, no, rows, smap = _kernel_header(spec, cells)
    ng, na = g["w"].size, cells.attributes.size
    if g["attr"].size >= 2**31 or na >= 2**31:
        raise DistanceTableError("the crossed kernel takes < 2**31 attributes and entries")
    ybar = np.nan_to_num(cells.mean).reshape(-1)
    ssc = cells.ss.reshape(-1)
    gid = g["gid"]
    has = gid >= 0
    gi = gid[has]
    cbar = np.bincount(gi, weights=ybar[has], minlength=ng) / g["w"]
    q = np.bincount(gi, weights=(ybar[has] - cbar[gi]) ** 2, minlength=ng)
    ss0 = np.bincount(gi, weights=ssc[has], minlength=ng)
    # per row (in place: arrays of the rows' size, a few at a time)
    flat = cells.row_cells()
    dev = ybar[flat]
    np.subtract(np.asarray(cells.y, float), dev, out=dev)  # deviation from its cell mean
    # entry of each row: position of (group, attribute) among the group's entries
    ekey = np.repeat(np.arange(ng), np.diff(g["start"])) * na + g["attr"]
    rkey = gid[flat]
    del flat
    rkey *= na
    rkey += cells.attr_idx
    pos = np.searchsorted(ekey, rkey)
    del rkey
    d = np.bincount(pos, weights=dev, minlength=ekey.size)
    ints = np.concatenate([g["start"], g["attr"]]).astype(np.int32)
    if ints.size % 2:
        ints = np.append(ints, np.int32(0))
    return np.ascontiguousarray(np.concatenate([
        [float(ns), float(no), float(na), float(ng), float(g["attr"].size),
         _noncentred_mask(noncentred)],
        np.asarray(rows, dtype=float).ravel(), smap, g["conn"].astype(float),
        g["n"].astype(float), kind.astype(float), _groups(cells).astype(float),
        _group_sd_index(spec, cells), _anchor_sds(cells, moments), g["w"], cbar, q, ss0,
        [math.log(k) for k in g["n"]], g["k"], d, ints.view(np.float64)]))


def _classes(conn: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the distinct (connection, n) classes (ascending) and each element's class.

    Returns the classes' connection and n, and the class of each (conn, n) element.
    """
    n = np.asarray(n).astype(np.int64)
    span = int(n.max(initial=0)) + 1
    key, cls = np.unique(np.asarray(conn).astype(np.int64) * span + n, return_inverse=True)
    return key // span, key % span, cls.ravel()


def cell_classes(cells: Cells) -> dict:
    """Classes of the non-empty cells that share (connection, n), with their attribute sums.

    Returns per class ``conn``, ``n``, ``w`` (cells), ``cbar`` and ``q`` (mean and sum of
    squares of their cell means), ``ss0`` (summed within-cell sums of squares), ``start``
    (classes + 1: its entries); per entry (the attributes met in the class, ascending) ``attr``,
    ``k`` (rows), ``d`` (summed deviations of those rows from their cell means) and ``e``
    (sum over cells of ``(ybar - cbar) k``); ``g``: per class the dense matrix
    ``sum_q k_q k_q'`` (k_q: a cell's rows per entry), row-major, concatenated.
    """
    import scipy.sparse as sp

    ui, ci, row_cell, n = _cell_layout(cells)
    na = int(cells.attributes.size)
    conn, count, cls = _classes(ci, n)
    ncl = conn.size
    w = np.bincount(cls, minlength=ncl).astype(float)
    ybar = np.nan_to_num(cells.mean)[ui, ci]
    cbar = np.bincount(cls, weights=ybar, minlength=ncl) / w
    q = np.bincount(cls, weights=(ybar - cbar[cls]) ** 2, minlength=ncl)
    ss0 = np.bincount(cls, weights=cells.ss[ui, ci], minlength=ncl)
    row_cls = cls[row_cell]
    ekey, pos, k = np.unique(row_cls * na + cells.attr_idx, return_inverse=True,
                             return_counts=True)
    pos = pos.ravel()
    y = np.asarray(cells.y, float)
    d = np.bincount(pos, weights=y - ybar[row_cell], minlength=ekey.size)
    e = np.bincount(pos, weights=(ybar - cbar[cls])[row_cell], minlength=ekey.size)
    start = np.zeros(ncl + 1, dtype=np.int64)
    np.cumsum(np.bincount(ekey // na, minlength=ncl), out=start[1:])
    counts = sp.csr_matrix((np.ones(pos.size), (row_cell, pos)),
                           shape=(ui.size, ekey.size))  # cells x entries: rows k_q
    gram = (counts.T @ counts).tocsr()  # block diagonal: a cell is in one class
    g = [gram[a:b, a:b].toarray().ravel() for a, b in zip(start[:-1], start[1:], strict=True)]
    return {"conn": conn, "n": count, "w": w, "cbar": cbar, "q": q,
            "ss0": ss0, "start": start, "attr": ekey % na, "k": k.astype(float), "d": d,
            "e": e, "g": np.concatenate(g) if g else np.zeros(0)}


def grouped_is_cheaper(cells: Cells) -> bool:
    """Whether the groups' (or classes') density loop is shorter than the row kernel's.

    The row kernel loops over rows; :func:`pack_grouped` over the groups' entries and
    :func:`pack_classes` over the squares of their classes' attribute counts.
    """
    check_cells(cells)
    return min(_group_loop(cells)) < cells.n_rows


def _group_loop(cells: Cells) -> tuple[float, float]:
    """Return the density loop's length on groups and on classes of cells (cached on `cells`)."""
    cache = cells.__dict__.get("_group_loop")
    if cache is not None:
        return cache
    g = cell_groups(cells)  # from the groups' entries, not the rows (computed anyway)
    na = int(cells.attributes.size)
    cls = _classes(g["conn"], g["n"])[2]
    entry_cls = np.repeat(cls, np.diff(g["start"]))
    per_class = np.bincount(np.unique(entry_cls * na + g["attr"]) // na)
    out = (float(g["attr"].size), float((per_class.astype(float) ** 2).sum()))
    object.__setattr__(cells, "_group_loop", out)
    return out


def classes_are_cheaper(cells: Cells) -> bool:
    """Whether :func:`pack_classes` makes a shorter density loop than :func:`pack_grouped`.

    Groups (connection, n, attribute multiset) cost their entries; classes (connection, n)
    the squares of their attribute counts. Complete designs have a few groups of all their
    attributes; tables whose cells meet different attributes about a group per cell.
    """
    entries, squares = _group_loop(cells)
    return squares < entries


def pack_classes(spec: ModelSpec, cells: Cells, noncentred,
                 moments: tuple[float, float, float] | None = None) -> np.ndarray:
    """One flat float64 array: what ``cxc_logp`` reads (:func:`cell_classes`).

    As :func:`pack` up to the anchors, with classes in place of cells
    (connection, n), then the size of the G blocks; per class: cells w, mean cbar and sum of
    squares Q of their cell means, summed within-cell sums of squares, ``log n``; per entry:
    rows K, summed deviations D, E; the G blocks; an int32 block: each class's first entry
    (classes + 1) and each entry's attribute.
    """
    import math

    c = cell_classes(cells)
    kind, ns, no, rows, smap = _kernel_header(spec, cells)
    ncl, na = c["w"].size, cells.attributes.size
    if c["attr"].size >= 2**31 or na >= 2**31:
        raise DistanceTableError("the crossed kernel takes < 2**31 attributes and entries")
    ints = np.concatenate([c["start"], c["attr"]]).astype(np.int32)
    if ints.size % 2:
        ints = np.append(ints, np.int32(0))
    return np.ascontiguousarray(np.concatenate([
        [float(ns), float(no), float(na), float(ncl), float(c["attr"].size),
         _noncentred_mask(noncentred)],
        np.asarray(rows, dtype=float).ravel(), smap, c["conn"].astype(float),
        c["n"].astype(float), kind.astype(float), _groups(cells).astype(float),
        _group_sd_index(spec, cells), _anchor_sds(cells, moments), [float(c["g"].size)],
        c["w"], c["cbar"], c["q"], c["ss0"], [math.log(k) for k in c["n"]], c["k"], c["d"],
        c["e"], c["g"], ints.view(np.float64)]))


def _group_sd_index(spec: ModelSpec, cells: Cells) -> np.ndarray:
    """For each group (stereotype, human, none): the index of its sd, or -1 if absent."""
    _, labels = _kinds(spec, cells)
    out = []
    for k in ATTRIBUTE_KINDS:
        if not (cells.attribute_kind == k).any():
            out.append(-1.0)
        else:
            out.append(float(labels.index(k)) if labels else 0.0)
    return np.asarray(out)


def _anchor_sds(cells: Cells, moments: tuple[float, float, float] | None = None
                ) -> np.ndarray:
    """Sd of each group's mean raw effect ``abar`` in the centred kernel (3 values).

    ``abar`` meets neither the rows nor the effects, so its density only has to be proper and
    free of the other parameters; ``sigma / sqrt(rows per attribute)`` from the moment
    estimates (:func:`_moments`), near the posterior sd of each attribute's deviation, keeps
    that direction on the scale of the others.
    """
    _, s2, n = _moments(cells) if moments is None else moments
    return np.full(3, np.sqrt(s2 / max(n, 1.0)))


def _groups(cells: Cells) -> np.ndarray:
    """Each attribute's group: 0 stereotype, 1 human, 2 none (as in ATTRIBUTE_KINDS)."""
    index = {k: i for i, k in enumerate(ATTRIBUTE_KINDS)}
    return np.array([index[k] for k in cells.attribute_kind], dtype=np.int64)


def _initial(spec: ModelSpec, cells: Cells, noncentred, rng,
             moments: tuple[float, float, float] | None = None) -> np.ndarray:
    """Return a start near the data (pooled means and sds, moment estimates), jittered.

    `moments`: :func:`_moments` of `cells`, when already computed (one pass over the rows
    for all chains).
    """
    per = spec.residual_sd == "per_connection"
    _, labels = _kinds(spec, cells)
    n = cells.n.sum(axis=0)
    tot = np.where(cells.n > 0, cells.n * np.nan_to_num(cells.mean), 0.0).sum(axis=0)
    overall = tot.sum() / max(n.sum(), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, tot / np.maximum(n, 1), overall)
    between = np.array([np.std(cells.mean[cells.n[:, j] > 0, j])
                        if (cells.n[:, j] > 0).sum() > 1 else 0.1 for j in range(_NC)])
    between = np.clip(np.nan_to_num(between, nan=0.1), 0.01, None)
    o2, s2, _ = _moments(cells) if moments is None else moments
    sd, omega = np.sqrt(s2), max(np.sqrt(o2), 0.01)
    no = max(len(labels), 1)
    v0 = np.zeros(3 + cells.attributes.size)
    x = np.concatenate([mean, np.log(between), np.log(np.full(_NC if per else 1, sd)),
                        np.log(np.full(no, omega)), v0])
    x[: x.size - v0.size] += rng.uniform(-0.1, 0.1, x.size - v0.size)
    jitter = rng.uniform(-0.1, 0.1, v0.size)
    nonc = _noncentred_flags(noncentred)[_groups(cells)]
    jitter[3:] *= np.where(nonc, 1.0, omega)  # zb: always standardised
    x[x.size - v0.size:] += jitter
    return x


def conditional_cell_means(m, t, s, v, cells: Cells, rng, chunk: int = 256) -> np.ndarray:
    """Draw ``mu[u, c]`` given M, T, S (chain, draw, connection) and v (chain, draw, attr).

    The rows of a cell minus their attributes' effects have mean ``rbar``; ``mu`` is Normal
    with precision ``1/T^2 + n/S^2`` and mean ``(M/T^2 + n rbar/S^2) / precision``.
    Empty cells get prior draws.
    """
    import scipy.sparse as sp

    ui, ci, row_cell, n_obs = _cell_layout(cells)
    # average of v over the rows of each non-empty cell: (cell x attribute) weights
    w = sp.csr_matrix((1.0 / n_obs[row_cell], (row_cell, cells.attr_idx)),
                      shape=(ui.size, cells.attributes.size))
    lead = m.shape[:2]
    n_u = cells.units.size
    out = np.empty(lead + (n_u, _NC))
    n = cells.n.astype(float)
    ybar = np.nan_to_num(cells.mean)
    vf = v.reshape(-1, v.shape[-1])
    mf, tf, sf = (a.reshape(-1, _NC) for a in (m, t, s))
    of = out.reshape(-1, n_u, _NC)
    for lo in range(0, vf.shape[0], chunk):
        sl = slice(lo, lo + chunk)
        vbar = np.zeros((vf[sl].shape[0], n_u, _NC))
        vbar[:, ui, ci] = (w @ vf[sl].T).T
        mm, tt, ss = mf[sl, None, :], tf[sl, None, :], sf[sl, None, :]
        mean, prec = cell_mean_conditional(mm, tt, ss, n[None], ybar[None] - vbar)
        of[sl] = mean + rng.standard_normal(mean.shape) / np.sqrt(prec)
    return out


def marginal_kernel(spec: ModelSpec, cells: Cells, word_draws: bool = True,
                    grouped: bool = False):
    """Return the sampler's :class:`~bayesbias.models.marginal.Kernel`, or None.

    None without a C compiler (the PyMC model is then sampled). `grouped`: the density from
    groups of cells sharing (connection, n, attribute multiset) (``cxg_logp``, cost
    independent of the rows; same posterior, other rounding, hence other draws), or from
    classes sharing (connection, n) (``cxc_logp``) when that loop is shorter
    (:func:`classes_are_cheaper`: cells that meet different attributes); without
    `word_draws` no cell means are drawn (:mod:`.word_summaries`).
    """
    from .marginal import Kernel

    check_cells(cells)
    if integrated(spec, cells):
        return Kernel(**_integrated_kernel(spec, cells, word_draws))
    layout = "crossed"
    if grouped:
        layout = "crossed_classes" if classes_are_cheaper(cells) else "crossed_grouped"
    native = entry_points(layout)
    if native is None:
        return None
    per = spec.residual_sd == "per_connection"
    kind, labels = _kinds(spec, cells)
    moments = _moments(cells)  # once, for the parameterisation and every chain's start
    noncentred = noncentred_groups(spec, cells, moments)
    na = cells.attributes.size
    names = ["mu_bar", "tau", "sigma", "omega", "attribute_effect"]
    shapes = [(_NC,), (_NC,), (_NC,) if per else (), (len(labels),) if labels else (), (na,)]

    def complete(raw, rng):
        sd_dims = ("chain", "draw", "connection") if per else ("chain", "draw")
        o_dims = ("chain", "draw", "attribute_kind") if labels else ("chain", "draw")
        out = {"mu_bar": (("chain", "draw", "connection"), raw["mu_bar"]),
               "tau": (("chain", "draw", "connection"), raw["tau"]),
               "sigma": (sd_dims, raw["sigma"]),
               "omega": (o_dims, raw["omega"]),
               "attribute_effect": (("chain", "draw", "attribute"), raw["attribute_effect"])}
        if word_draws:
            sig = raw["sigma"] if per else np.repeat(raw["sigma"][..., None], _NC, axis=-1)
            out["mu"] = (("chain", "draw", cells.unit_dim, "connection"),
                         conditional_cell_means(raw["mu_bar"], raw["tau"], sig,
                                                raw["attribute_effect"], cells, rng))
        return out

    coords = {"attribute": cells.attributes.tolist()}
    if labels:
        coords["attribute_kind"] = labels
    return Kernel(names=names, shapes=shapes,
                  dims={"mu_bar": ("connection",), "tau": ("connection",),
                        **({"sigma": ("connection",)} if per else {}),
                        **({"omega": ("attribute_kind",)} if labels else {}),
                        "attribute_effect": ("attribute",)},
                  data={"crossed": pack, "crossed_grouped": pack_grouped,
                        "crossed_classes": pack_classes}[layout](spec, cells, noncentred,
                                                                 moments=moments),
                  logp=native[0], expand=native[1],
                  init=lambda rng: _initial(spec, cells, noncentred, rng, moments),
                  complete=complete,
                  coords=coords,
                  attrs={"attribute_noncentred": json.dumps(
                      [k for k, f in zip(ATTRIBUTE_KINDS, noncentred, strict=True) if f])},
                  dim=8 + (_NC if per else 1) + max(len(labels), 1) + 3 + na,
                  expanded_dim=8 + (_NC if per else 1) + max(len(labels), 1) + na)


def integrated_data(spec: ModelSpec, cells: Cells) -> dict:
    """Sufficient statistics of `cells` for :mod:`.crossed_integrated` (one pass over rows).

    Per group g (:func:`.crossed.cell_groups`): connection, n, cells, attribute counts
    ``kd`` (attributes x groups), sum and sum of squares of its cells' means; per connection:
    rows per attribute, summed deviations of rows from their cell means per attribute, and
    within-cell sums of squares; the sd maps and the priors.
    """
    if cells.attr_idx is None:
        raise ValueError("the crossed model needs an attribute in every row")
    na = int(cells.attributes.size)
    g = cell_groups(cells)
    ng = int(g["w"].size)
    gid = g["gid"]
    has = gid >= 0
    gi = gid[has]
    ybar = np.nan_to_num(cells.mean).reshape(-1)
    ysum = np.bincount(gi, weights=ybar[has], minlength=ng)
    ysq = np.bincount(gi, weights=ybar[has] ** 2, minlength=ng)
    kd = np.zeros((na, ng))
    gidx = np.repeat(np.arange(ng), np.diff(g["start"]))
    kd[g["attr"], gidx] = g["k"]
    flat = cells.row_cells()
    key = cells.conn_idx.astype(np.int64) * na + cells.attr_idx
    ksum = np.bincount(key, minlength=_NC * na).reshape(_NC, na).astype(float)
    dev = np.asarray(cells.y, float) - ybar[flat]
    dsum = np.bincount(key, weights=dev, minlength=_NC * na).reshape(_NC, na)
    ss = np.nan_to_num(cells.ss).sum(axis=0).astype(float)
    kind, labels = _kinds(spec, cells)
    per = spec.residual_sd == "per_connection"
    mu_prior = spec.priors["mu_bar"]
    if mu_prior.dist != "Normal":
        raise ValueError("the integrated crossed model needs a Normal mu_bar prior")
    p = dict(mu_prior.params)
    return {
        "na": na, "ng": ng, "gc": g["conn"].astype(np.int64), "gn": g["n"].astype(float),
        "gw": g["w"].astype(float), "kd": kd, "ysum": ysum, "ysq": ysq, "ksum": ksum,
        "dsum": dsum, "ss": ss, "kind": kind, "nk": max(len(labels), 1),
        "kind_labels": labels, "ns": _NC if per else 1,
        "smap": np.arange(_NC) if per else np.zeros(_NC, dtype=np.int64),
        "m0": float(p["mu"]), "s0": float(p["sigma"]), "n_rows": int(cells.n_rows),
        "priors": (spec.priors["tau"], spec.priors["sigma"], spec.priors["omega"]),
    }


def integrated(spec: ModelSpec, cells: Cells) -> bool:
    """Whether the sampler runs on the scales alone (:mod:`.crossed_integrated`).

    It does with a Normal ``mu_bar`` prior, at most :data:`MAX_INTEGRATED_GROUPS` groups of
    cells (:func:`cell_groups`) and a C compiler.
    """
    prior = spec.priors.get("mu_bar")
    if prior is None or prior.dist != "Normal" or cells.attr_idx is None:
        return False
    if cell_groups(cells)["w"].size > MAX_INTEGRATED_GROUPS:
        return False
    return _ci.entry_points() is not None


def _integrated_kernel(spec: ModelSpec, cells: Cells, word_draws: bool) -> dict:
    """Return the fields of the :class:`~bayesbias.models.marginal.Kernel` on the scales."""
    per = spec.residual_sd == "per_connection"
    _, labels = _kinds(spec, cells)
    data = integrated_data(spec, cells)
    draws_data = _ci.pack_draws_c(data)
    logp, expand = _ci.entry_points()
    k = _NC + data["ns"] + data["nk"]

    def complete(raw, rng):
        lead = raw["tau"].shape[:2]
        theta = np.log(np.concatenate([raw[n].reshape(lead + (-1,))
                                       for n in ("tau", "sigma", "omega")], axis=-1))
        mu_bar, v = _ci.draw_c(theta, draws_data, rng)
        sd_dims = ("chain", "draw", "connection") if per else ("chain", "draw")
        o_dims = ("chain", "draw", "attribute_kind") if labels else ("chain", "draw")
        out = {"mu_bar": (("chain", "draw", "connection"), mu_bar),
               "tau": (("chain", "draw", "connection"), raw["tau"]),
               "sigma": (sd_dims, raw["sigma"]),
               "omega": (o_dims, raw["omega"]),
               "attribute_effect": (("chain", "draw", "attribute"), v)}
        if word_draws:
            sig = raw["sigma"] if per else np.repeat(raw["sigma"][..., None], _NC, axis=-1)
            out["mu"] = (("chain", "draw", cells.unit_dim, "connection"),
                         conditional_cell_means(mu_bar, raw["tau"], sig, v, cells, rng))
        return out

    coords = {"attribute": cells.attributes.tolist()}
    if labels:
        coords["attribute_kind"] = labels
    return dict(names=["tau", "sigma", "omega"],
                shapes=[(_NC,), (_NC,) if per else (), (len(labels),) if labels else ()],
                dims={"tau": ("connection",), **({"sigma": ("connection",)} if per else {}),
                      **({"omega": ("attribute_kind",)} if labels else {})},
                data=draws_data, logp=logp, expand=expand,
                init=lambda rng: _ci.initial_point(data, rng), complete=complete,
                coords=coords, attrs={"sampled": "tau, sigma, omega (mu_bar and the "
                                      "attribute effects integrated out)"},
                dim=k, expanded_dim=k)


def derived(values: dict, m) -> dict:
    """Return no derived variables (mu_bar is sampled)."""
    return {}

"""The batched sensitivity refits give the numbers of the straightforward per-variant loop.

The references below are the code before the batching (one :meth:`_Rows.stats` call per
left-out word or resampled list, ``rng.choice``, ``_cell_sums`` over a (B, ..., G) layout,
SciPy's ``logsumexp``, the grid's log posterior recomputing everything per grid); every
comparison is bit for bit (``np.array_equal``), since the batched sums add the same terms in
the same order.
"""

import importlib

import numpy as np
import pandas as pd
import pytest
from scipy import special

from bayesbias.datasets import published_table
from bayesbias.inputs.distances import distance_table
from bayesbias.inputs.embeddings import default_embedding_path, load_embedding
from bayesbias.inputs.wordlists import load_wordlist
from bayesbias.models import load_spec
from bayesbias.parallel import task_rng

S = importlib.import_module("bayesbias.studies.sensitivity")
E = importlib.import_module("bayesbias.studies.exact_posterior")


# -- references: the per-variant code before the batching ---------------------------------

def ref_variant_stats(rows, variants):
    ns, means, sss = [], [], []
    for kind, i in variants:
        if kind == "all":
            n, s1, s2 = rows.stats()
        elif kind == "word":
            n, s1, s2 = rows.stats(drop_unit=i)
        else:
            w = np.ones(rows.attrs.size)
            w[i] = 0.0
            n, s1, s2 = rows.stats(attr_weight=w)
        n, mean, ss = S._cells(n, s1, s2)
        ns.append(n), means.append(mean), sss.append(ss)
    return np.stack(ns), np.stack(means), np.stack(sss)


def ref_resampled_stats(rows, n_lists, rng):
    ns, means, sss = [], [], []
    unit_classes = [np.flatnonzero(rows.unit_class == k) for k in pd.unique(rows.unit_class)]
    attr_groups = [np.flatnonzero(rows.attr_group == g) for g in pd.unique(rows.attr_group)]
    for _ in range(n_lists):
        units = np.concatenate([rng.choice(members, size=members.size)
                                for members in unit_classes])
        w = np.zeros(rows.attrs.size)
        for members in attr_groups:
            np.add.at(w, rng.choice(members, size=members.size), 1.0)
        n, s1, s2 = rows.stats(attr_weight=w)
        n, mean, ss = S._cells(n[units], s1[units], s2[units])
        ns.append(n), means.append(mean), sss.append(ss)
    return np.stack(ns), np.stack(means), np.stack(sss)


def ref_cell_sums(tau2, sig2, n, has, y, log=True):
    key = np.where(has, n, np.inf)
    order = np.argsort(key, axis=-1, kind="stable")
    ranked = np.take_along_axis(key, order, -1)
    new = np.ones(ranked.shape, dtype=bool)
    new[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    gid = np.empty(order.shape, dtype=np.intp)
    np.put_along_axis(gid, order, np.cumsum(new, -1) - 1, -1)
    groups = int(gid[has].max()) + 1 if has.any() else 1
    member = has[..., None] & (gid[..., None] == np.arange(groups))
    k = member.sum(1).astype(float)
    count = np.where(k > 0, np.where(member, n[..., None], 0.0).max(1), 1.0)
    y1 = np.einsum("bw,bwg->bg", y, member)
    y2 = np.einsum("bw,bwg->bg", y * y, member)
    grow = (slice(None),) + (None,) * (max(np.ndim(tau2), np.ndim(sig2)) - 2) + (slice(None),)
    v = tau2 + sig2 / count[grow]
    inv = 1.0 / v
    logv = (k[grow] * np.log(v)).sum(-1) if log else 0.0
    return logv, (k[grow] * inv).sum(-1), (y1[grow] * inv).sum(-1), (y2[grow] * inv).sum(-1)


def ref_logsumexp(a, axis):
    return special.logsumexp(a, axis=axis, keepdims=True)


def ref_log_post(lt, ls, nc, mc, sc, has, m0, s0, spec, memo=None):
    prior_logpdf = E.prior_logpdf
    tau2 = np.exp(2 * lt)[:, :, None, None]
    sig2 = np.exp(2 * ls)[:, None, :, None]
    k = has.sum(-1)
    ref = np.where(has, mc, 0.0).sum(-1) / np.maximum(k, 1)
    y = np.where(has, mc - ref[:, None], 0.0)
    logv, a, b, q = ref_cell_sums(tau2, sig2, nc, has, y)
    m0c = (m0 - ref)[:, None, None]
    prec = 1.0 / s0**2 + a
    mhat = (m0c / s0**2 + b) / prec
    logml = (-0.5 * logv - 0.5 * np.log(s0**2 * prec)
             - 0.5 * (q + m0c**2 / s0**2 - prec * mhat**2))
    df = np.where(has, nc - 1, 0).sum(-1)[:, None, None]
    tot_ss = np.where(has, sc, 0.0).sum(-1)[:, None, None]
    within = -df * ls[:, None, :] - tot_ss / (2 * np.exp(2 * ls)[:, None, :])
    lp = (logml + within
          + prior_logpdf(spec.priors["tau"], np.exp(lt))[:, :, None] + lt[:, :, None]
          + prior_logpdf(spec.priors["sigma"], np.exp(ls))[:, None, :] + ls[:, None, :])
    return lp - special.logsumexp(lp, axis=(1, 2), keepdims=True)


def same(a, b):
    return all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b, strict=True))


# -- tables ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def emb():
    return load_embedding(default_embedding_path())


def _rows(table, crossed=True):
    rows = S._Rows.from_table(table)
    return S._attribute_adjusted(rows) if crossed else rows


@pytest.fixture(scope="module")
def tables(emb):
    """Shipped and published tables, one with its rows shuffled and rows dropped.

    The shuffled one has its attribute words in a different order in every cell and cells of
    different sizes (several count groups per connection).
    """
    race = distance_table(emb, load_wordlist("race"), on_missing="drop")
    gender = published_table("gender", "glove")
    rng = np.random.default_rng(0)
    ragged = gender.sample(frac=1.0, random_state=1).reset_index(drop=True)
    ragged = ragged.drop(index=rng.choice(len(ragged), size=len(ragged) // 9,
                                          replace=False)).reset_index(drop=True)
    return {"race": race, "gender-glove": gender, "gender-ragged": ragged}


@pytest.mark.parametrize("name", ["race", "gender-glove", "gender-ragged"])
@pytest.mark.parametrize("crossed", [True, False])
def test_variant_stats_equal_the_per_variant_loop(tables, name, crossed):
    rows = _rows(tables[name], crossed)
    loo = ([("all", -1)] + [("word", i) for i in range(rows.units.size)]
           + [("attribute", j) for j in range(rows.attrs.size)])
    assert same(S._variant_stats(rows, loo), ref_variant_stats(rows, loo))
    # a chunk in another order, with repeats, as the chunked tasks pass them
    part = loo[::-7] + loo[3:5]
    assert same(S._variant_stats(rows, part), ref_variant_stats(rows, part))


@pytest.mark.parametrize("name", ["race", "gender-ragged"])
def test_resampled_stats_equal_the_per_list_loop_with_the_same_draws(tables, name):
    rows = _rows(tables[name])
    for key in ((2, 0), (2, 3)):
        a, b = task_rng(5, key), task_rng(5, key)
        assert same(S._resampled_stats(rows, 25, a), ref_resampled_stats(rows, 25, b))
        assert a.random() == b.random()  # the generators are left in the same state


def test_block_sums_in_chunks(tables, monkeypatch):
    """Blocks smaller than a connection's rows (memory bound) give the same numbers."""
    rows = _rows(tables["gender-ragged"])
    loo = [("attribute", j) for j in range(rows.attrs.size)]
    full = S._variant_stats(rows, loo), S._resampled_stats(rows, 30, task_rng(2, (2, 1)))
    monkeypatch.setattr(S, "_CHUNK", 5_000)
    small = S._variant_stats(rows, loo), S._resampled_stats(rows, 30, task_rng(2, (2, 1)))
    assert all(same(x, y) for x, y in zip(full, small, strict=True))


def test_ordered_sum_adds_in_order():
    rng = np.random.default_rng(3)
    for shape in [(0, 4), (1, 3), (7, 1), (7, 1, 1), (9, 2), (225, 15, 25), (300, 1, 1)]:
        z = rng.normal(size=shape) * 10 ** rng.uniform(-8, 8, size=shape)
        seq = np.zeros(shape[1:])
        for r in range(shape[0]):
            seq = seq + z[r]
        assert np.array_equal(S._ordered_sum(z), seq)
    assert np.signbit(S._ordered_sum(np.full((3, 2), -0.0))).sum() == 0  # +0, as bincount


@pytest.mark.parametrize("groups", [1, 2, 3, 5, 7, 8, 11])
def test_cell_sums_equal_the_grouped_layout(groups):
    """Member counts with 1-11 distinct values (members with fewer: padding groups)."""
    rng = np.random.default_rng(groups)
    B, W = 6, 14
    n = rng.choice(np.arange(3, 3 + groups), size=(B, W)).astype(float)
    n[0] = 5.0  # one group only
    n[1, :4] = 0.0  # empty cells
    n[2] = 0.0  # a member without rows
    has = n > 0
    y = np.where(has, rng.normal(size=(B, W)), 0.0)
    lt, ls = rng.normal(-3, 1, size=(B, 64)), rng.normal(-2, 0.5, size=(B, 24))
    shapes = [(np.exp(2 * lt)[:, :, None, None], np.exp(2 * ls)[:, None, :, None]),  # grid
              (np.exp(2 * lt[:1])[..., None], np.exp(2 * ls[:, :1])[..., None]),   # screen
              (np.exp(lt)[..., None] ** 2, np.exp(lt)[..., None] ** 2)]             # draws
    for tau2, sig2 in shapes:
        for log in (True, False):
            got = E._cell_sums(tau2, sig2, n, has, y, log=log)
            assert same(got, ref_cell_sums(tau2, sig2, n, has, y, log=log))


def test_logsumexp_equals_scipy():
    rng = np.random.default_rng(0)
    for trial in range(60):
        a = rng.normal(size=tuple(rng.integers(1, 20, size=3))) * 10 ** rng.uniform(-3, 3)
        if trial % 3 == 0:
            a = np.round(a, 1)  # ties at the maximum
        assert np.array_equal(E._logsumexp(a, (1, 2)), ref_logsumexp(a, (1, 2)))
    a = np.zeros((3, 4, 5))
    a[0] = -np.inf
    a[1, 0, 0] = np.inf
    assert np.array_equal(E._logsumexp(a, (1, 2)), ref_logsumexp(a, (1, 2)), equal_nan=True)


def _reference_module(monkeypatch):
    monkeypatch.setattr(S, "_variant_stats", ref_variant_stats)
    monkeypatch.setattr(S, "_resampled_stats", ref_resampled_stats)
    monkeypatch.setattr(E, "_cell_sums", ref_cell_sums)
    monkeypatch.setattr(E, "_logsumexp", ref_logsumexp)
    monkeypatch.setattr(E, "_log_post", ref_log_post)


def _frames(s):
    return s.baseline, s.leave_one_out, s.resampled


@pytest.mark.parametrize("kw", [
    dict(model="crossed", n_draws=250, estimator="mixture", screen=True, n_resamples=60),
    dict(model="crossed", n_draws=250, estimator="mixture", n_resamples=30, chunk_size=40),
    dict(model="hierarchical", n_draws=300, n_resamples=30),
])
def test_sensitivity_equals_the_reference_code(tables, monkeypatch, kw):
    """End to end: every frame of the result identical to the per-variant code's."""
    table = tables["race"]
    new = S.sensitivity(table, seed=3, **kw)  # in this process (the references patched in)
    with monkeypatch.context() as m:
        _reference_module(m)
        old = S.sensitivity(table, seed=3, **kw)
    for a, b in zip(_frames(new), _frames(old), strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert new.settings == old.settings


def test_exact_fit_unchanged(tables, monkeypatch):
    """The report's paper-model column (exact_fit) draws the same numbers."""
    table = tables["gender-glove"]
    new = E.exact_fit(table, draws=200, chains=2, seed=1).idata.posterior
    with monkeypatch.context() as m:
        _reference_module(m)
        old = E.exact_fit(table, draws=200, chains=2, seed=1).idata.posterior
    for v in ("mu_bar", "tau", "sigma", "mu"):
        assert np.array_equal(new[v].values, old[v].values, equal_nan=True), v


def test_marginal_posterior_of_the_screened_refits_unchanged(tables, monkeypatch):
    """Grid weights of a batch of resampled lists (several count groups per member)."""
    rows = _rows(tables["gender-ragged"])
    n, mean, ss = S._resampled_stats(rows, 12, task_rng(1, (2, 0)))
    spec = S._hierarchical_part(load_spec("crossed"))
    new = E.marginal_posterior(n, mean, ss * rows.ss_scale, spec)
    with monkeypatch.context() as m:
        _reference_module(m)
        old = E.marginal_posterior(n, mean, ss * rows.ss_scale, spec)
    for f in ("log_tau", "log_sigma", "weights"):
        assert np.array_equal(getattr(new, f), getattr(old, f)), f

"""The batched bootstrap and null draws of the embedding metrics equal a per-draw loop.

The reference below is the per-draw loop the metrics used before they were batched: one
resample (or null draw) at a time from the same generator, each metric computed on it
alone, a draw that raises InputDataError counted as NaN. Batched, the same generator calls
happen in the same order and every draw must give the same number (tolerance 1e-12
relative: the batched linear algebra may round differently in the last bit; RNSB's Newton
solve converges to the same optimum).
"""

import numpy as np
import pytest

from bayesbias.comparators import metrics as M
from bayesbias.comparators import rnsb
from bayesbias.comparators.null import VECTOR_NULLS, VectorNull
from bayesbias.embeddings import Embedding
from bayesbias.errors import InputDataError
from bayesbias.resampling import bootstrap_indices, ordered_subsets, percentile_interval
from bayesbias.wordlists import load_wordlist

RTOL = 1e-12


# ---------------------------------------------------------------- the per-draw reference
def _one_resample(v, rng):
    ip = bootstrap_indices(rng, len(v.px))

    def pick(m):
        return m[bootstrap_indices(rng, len(m))]

    return M.Vectors(pick(v.x), pick(v.y), pick(v.a), pick(v.b), v.px[ip], v.py[ip])


def _one_null_draw(gen, rng):
    n_x, n_y, n_a, n_b, n_p = gen.sizes
    if gen.null == "resample":
        ti = ordered_subsets(rng, 1, len(gen.target_pool), n_x + n_y)[0]
        pi = ordered_subsets(rng, 1, len(gen.target_pool), 2 * n_p)[0]
        ai = ordered_subsets(rng, 1, len(gen.attribute_pool), n_a + n_b)[0]
        t, p, a = gen.target_pool[ti], gen.target_pool[pi], gen.attribute_pool[ai]
    else:
        total = n_x + n_y + 2 * n_p + n_a + n_b
        z = gen.scale * rng.standard_normal((total, gen.dim))
        if gen.null == "hierarchical":
            r = np.exp(gen.tau * rng.standard_normal((total, 1)) - gen.tau ** 2 / 2)
            z = gen.mean + r * z
        t, p, a = z[:n_x + n_y], z[n_x + n_y:n_x + n_y + 2 * n_p], z[n_x + n_y + 2 * n_p:]
    return M.Vectors(t[:n_x], t[n_x:], a[:n_a], a[n_a:], p[:n_p], p[n_p:])


def _loop(name, opts, make, n, rng):
    opts = {**opts, "test_size": 0.0} if name == "rnsb" else opts
    out = np.full(n, np.nan)
    for i in range(n):
        try:
            out[i] = M.compute_metric(name, make(rng), opts)[0]
        except InputDataError:
            pass
    return out


def _study(emb, wl, classes):
    sets = M.metric_sets(wl, classes)
    m = emb.matrix
    v = M.Vectors(m(sets.X), m(sets.Y), m(sets.A), m(sets.B), m([p[0] for p in sets.pairs]),
                  m([p[1] for p in sets.pairs]))
    t_pool, n_pool = M._pools(emb, sets, wl)
    sizes = (len(v.x), len(v.y), len(v.a), len(v.b), len(v.px))
    gens = {k: VectorNull(k, sizes, np.vstack([v.x, v.y, v.a, v.b]), t_pool, n_pool)
            for k in VECTOR_NULLS}
    return v, gens


def _same(batched, looped):
    assert np.array_equal(np.isnan(batched), np.isnan(looped))
    ok = ~np.isnan(looped)
    np.testing.assert_allclose(batched[ok], looped[ok], rtol=RTOL, atol=1e-14)


# ---------------------------------------------------------------- the checks
def test_stacked_draws_are_the_per_draw_vectors(glove):
    wl = load_wordlist("religion")
    v, gens = _study(glove, wl, ("jew", "muslim"))
    stacked = M._resampled(v, np.random.default_rng(3), 25)
    rng = np.random.default_rng(3)
    for i in range(25):
        one = _one_resample(v, rng)
        assert all(np.array_equal(getattr(stacked, k)[i], getattr(one, k))
                   for k in ("x", "y", "a", "b", "px", "py"))
    for k, gen in gens.items():
        many = gen.draw(np.random.default_rng(4), 15)
        rng = np.random.default_rng(4)
        for i in range(15):
            one = _one_null_draw(gen, rng)
            assert all(np.array_equal(part[i], getattr(one, key)) for part, key in
                       zip(many, ("x", "y", "a", "b", "px", "py"), strict=True)), k


@pytest.mark.parametrize("name", list(M.METRICS))
def test_batched_metric_equals_the_per_draw_loop(glove, name):
    wl = load_wordlist("religion")
    v, gens = _study(glove, wl, ("jew", "christian"))
    opts = M._validate_options(name, {})
    got = M._draws(name, opts, M._resampled(v, np.random.default_rng(11), 40))
    _same(got, _loop(name, opts, lambda r: _one_resample(v, r), 40, np.random.default_rng(11)))
    for gen in gens.values():
        got = M._draws(name, opts, M.Vectors(*gen.draw(np.random.default_rng(12), 20)))
        _same(got, _loop(name, opts, lambda r, g=gen: _one_null_draw(g, r), 20,
                         np.random.default_rng(12)))


def test_embedding_metric_interval_and_null_ranges_match_the_loop(glove):
    # end to end through the public function: what the report shows
    wl = load_wordlist("gender")
    seed, boot, reps = 7, 80, 40
    r = M.embedding_metric("indirect_bias", glove, wl, bootstrap=boot, null_reps=reps,
                           seed=seed, on_missing="drop")
    v, gens = _study(glove, wl, None)
    opts = M._validate_options("indirect_bias", {})
    _, boot_seed, null_seed = np.random.SeedSequence(seed).spawn(3)
    draws = _loop("indirect_bias", opts, lambda q: _one_resample(v, q), boot,
                  np.random.default_rng(boot_seed))
    assert r.ci == pytest.approx(percentile_interval(draws, r.ci_prob), rel=RTOL)
    for k, s in zip(VECTOR_NULLS, null_seed.spawn(len(VECTOR_NULLS)), strict=True):
        draws = _loop("indirect_bias", opts, lambda q, g=gens[k]: _one_null_draw(g, q), reps,
                      np.random.default_rng(s))
        lo, hi = percentile_interval(draws, 0.95)
        assert (r.null[k]["lower"], r.null[k]["upper"]) == pytest.approx((lo, hi), rel=RTOL)


def test_metric_table_shares_draws_without_changing_results(glove):
    kw = dict(bootstrap=30, null_reps=15, seed=2, on_missing="drop")
    table = M.metric_table(glove, "race", metrics=["ect", "rnsb", "direct_bias"], **kw)
    for res in table.results:
        classes = (res.names["X"], res.names["Y"])
        alone = M.embedding_metric(res.metric, glove, "race", classes=classes, **kw)
        assert alone.to_dict() == res.to_dict()


def test_degenerate_draws_are_nan_exactly_where_one_draw_raises():
    # two target words share a vector: resampled-neutral null draws that pair them are
    # degenerate for RIPA and the bias direction (a pair without a difference)
    rng = np.random.default_rng(0)
    words = ["t0", "t1", "t2", "t3", "a0", "a1", "a2", "b0", "b1", "b2", "n0", "n1", "n2",
             "n3", "n4", "n5"]
    vecs = rng.normal(size=(len(words), 6))
    vecs[1] = vecs[0]
    emb = Embedding(tuple(words), vecs)
    sets = {"X": ["t0", "t2"], "Y": ["t1", "t3"], "A": ["a0", "a1", "a2"],
            "B": ["b0", "b1", "b2"], "pairs": [("t0", "t1"), ("t2", "t3")]}
    m = emb.matrix
    v = M.Vectors(m(sets["X"]), m(sets["Y"]), m(sets["A"]), m(sets["B"]), m(["t0", "t2"]),
                  m(["t1", "t3"]))
    gen = VectorNull("resample", (2, 2, 3, 3, 1), np.vstack([v.x, v.y, v.a, v.b]),
                     m(["t0", "t1", "t2", "t3"]), m(["n0", "n1", "n2", "n3", "n4", "n5"]))
    for name in ("ripa", "direct_bias", "indirect_bias", "weat_es", "rnsb"):
        opts = M._validate_options(name, {})
        got = M._draws(name, opts, M.Vectors(*gen.draw(np.random.default_rng(5), 80)))
        want = _loop(name, opts, lambda r: _one_null_draw(gen, r), 80,
                     np.random.default_rng(5))
        _same(got, want)
        if name in ("ripa", "direct_bias", "indirect_bias"):
            assert 0 < np.isnan(want).sum() < 80  # some draws degenerate, not all
    # one set of vectors still raises, as before
    bad = M.Vectors(v.x, v.y, v.a, v.b, m(["t0"]), m(["t1"]))
    with pytest.raises(InputDataError, match="identical vectors"):
        M.compute_metric("ripa", bad)
    with pytest.raises(InputDataError, match="identical vectors"):
        M.compute_metric("direct_bias", bad)


def test_rnsb_batched_fit_and_splits_equal_one_problem_at_a_time(glove):
    wl = load_wordlist("gender")
    v, _ = _study(glove, wl, None)
    got = rnsb.rnsb_splits(v.a, v.b, v.targets, n_splits=25, test_size=0.2, seed=9)
    rng = np.random.default_rng(9)
    want = np.array([rnsb.rnsb(v.a, v.b, v.targets, test_size=0.2, rng=rng)[0]
                     for _ in range(25)])
    np.testing.assert_allclose(got, want, rtol=RTOL)
    # the batched Newton solve reaches each problem's own optimum
    x = np.random.default_rng(1).normal(size=(6, 12, 30))
    y = (np.random.default_rng(2).random((6, 12)) < 0.5).astype(float)
    y[:, 0], y[:, 1] = 0.0, 1.0
    w, b = rnsb.fit_logistic(x, y)
    for i in range(6):
        wi, bi = rnsb.fit_logistic(x[i], y[i])
        np.testing.assert_allclose(w[i], wi, rtol=1e-10, atol=1e-12)
        assert b[i] == pytest.approx(bi, rel=1e-10, abs=1e-12)

"""CEAT: DerSimonian-Laird random effects by hand, and the per-draw effect sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from bayesbias.comparators.ceat import ceat_draws, ceat_from_pools, random_effects
from bayesbias.comparators.weat import weat
from bayesbias.embeddings import Embedding
from bayesbias.errors import InputDataError


def test_random_effects_by_hand():
    """Three effect sizes worked through on paper.

    w = 1/v = (10, 5, 20); sum w = 35; sum w*es = 5 + 5 + 4 = 14;
    sum w*es^2 = 2.5 + 5 + 0.8 = 8.3; Q = 8.3 - 14^2/35 = 2.7 on df = 2;
    c = 35 - (100 + 25 + 400)/35 = 20; tau^2 = (2.7 - 2)/20 = 0.035;
    w* = 1/(0.135, 0.235, 0.085); CES = sum w* es / sum w*; Var = 1/sum w*.
    """
    re = random_effects([0.5, 1.0, 0.2], [0.1, 0.2, 0.05], ci_prob=0.95)
    assert re.q == pytest.approx(2.7, abs=1e-12)
    assert re.df == 2
    assert re.tau2 == pytest.approx(0.035, abs=1e-12)
    w = [1 / 0.135, 1 / 0.235, 1 / 0.085]
    ces = (w[0] * 0.5 + w[1] * 1.0 + w[2] * 0.2) / sum(w)
    se = math.sqrt(1 / sum(w))
    assert re.estimate == pytest.approx(ces, abs=1e-12)
    assert re.estimate == pytest.approx(0.44017, abs=1e-5)
    assert re.se == pytest.approx(se, abs=1e-12)
    assert re.se == pytest.approx(0.20660, abs=1e-5)
    assert re.ci == pytest.approx((ces - 1.959964 * se, ces + 1.959964 * se), abs=1e-6)
    assert re.p_greater == pytest.approx(stats.norm.sf(ces / se), abs=1e-12)


def test_random_effects_homogeneous_gives_fixed_effect():
    """Q below its df: tau^2 = 0 and the estimate is the inverse-variance mean."""
    es, v = np.array([0.30, 0.32, 0.31]), np.array([0.1, 0.1, 0.2])
    re = random_effects(es, v)
    assert re.tau2 == 0.0
    assert re.estimate == pytest.approx(np.sum(es / v) / np.sum(1 / v), abs=1e-12)
    with pytest.raises(InputDataError):
        random_effects([0.1], [0.1])
    with pytest.raises(InputDataError):
        random_effects([0.1, 0.2], [0.1, 0.0])


def _vectors(seed, n, dim=6):
    return np.random.default_rng(seed).normal(size=(n, dim))


def test_one_context_per_word_is_weat():
    """With one context per word every draw is the same WEAT; V is var(s) with n - 1."""
    words = {k: [f"{k}{i}" for i in range(4)] for k in "XYAB"}
    vecs = {k: _vectors(i, 4) for i, k in enumerate("XYAB")}
    pools = {k: [vecs[k][i:i + 1] for i in range(4)] for k in "XYAB"}
    es, v = ceat_draws(pools, 5, seed=0)
    emb = Embedding([w for k in "XYAB" for w in words[k]], np.vstack([vecs[k] for k in "XYAB"]))
    res = weat(emb, {k: words[k] for k in "XYAB"}, exact_limit=10)
    np.testing.assert_allclose(es, res.effect_size, atol=1e-12)
    s = np.array(list(res.association.values()))
    np.testing.assert_allclose(v, s.var(ddof=1), atol=1e-12)


def test_ceat_draws_are_seeded_and_vary_with_contexts():
    pools = {k: [_vectors(10 * i + j, 3) for j in range(4)] for i, k in enumerate("XYAB")}
    a = ceat_from_pools(pools, n_draws=200, seed=3)
    b = ceat_from_pools(pools, n_draws=200, seed=3)
    c = ceat_from_pools(pools, n_draws=200, seed=4)
    np.testing.assert_array_equal(a.effect_sizes, b.effect_sizes)
    assert a.combined == b.combined and a.combined != c.combined
    assert a.effect_sizes.std() > 0
    re = random_effects(a.effect_sizes, a.variances, a.ci_prob)
    assert a.combined == re.estimate and a.ci == re.ci
    d = a.to_dict()
    assert d["n_draws"] == 200 and "effect_size_quantiles" in d
    assert "CEAT" in str(a)

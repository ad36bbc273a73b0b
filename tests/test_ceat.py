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


# -- the interval over words and contexts (issue 25) -----------------------------------------

def _population_pools(rng, n_words=10, n_ctx=10, dim=8, tau=1.0, sigma=1.0):
    """Pools of words drawn from a population; the truth is 0.

    Word effect tau, contexts sharing their word's effect (context noise sigma); X and Y
    come from the same population.
    """
    base = {k: rng.normal(size=dim) * (1.0 if k in "AB" else 0.0) for k in "XYAB"}
    base["Y"] = base["X"]
    return {k: [c + sigma * rng.normal(size=(n_ctx, dim)) for c in
                base[k] + tau * rng.normal(size=(n_words, dim))] for k in "XYAB"}


def test_word_interval_does_not_shrink_with_draws():
    pools = _population_pools(np.random.default_rng(5), n_words=6, n_ctx=8)
    runs = {n: ceat_from_pools(pools, n_draws=n, seed=3, bootstrap=150) for n in (100, 1000,
                                                                                   10000)}
    width = {n: r.word_ci[1] - r.word_ci[0] for n, r in runs.items()}
    se = {n: r.se for n, r in runs.items()}
    assert se[10000] < se[100] / 5  # the paper's se: a simulation setting
    assert width[10000] > 0.8 * width[100] and width[1000] > 0.8 * width[100]
    assert width[10000] > 10 * (runs[10000].ci[1] - runs[10000].ci[0])
    text = str(runs[10000])
    assert "interval over words and contexts" in text and "secondary" in text
    assert runs[10000].to_dict()["word_ci"] == list(runs[10000].word_ci)
    assert ceat_from_pools(pools, n_draws=50, seed=3, bootstrap=0).word_ci is None


def test_ceat_p_over_words_agrees_with_the_word_interval():
    # the share of two-stage resamples at or below 0: the test of the percentile interval
    rng = np.random.default_rng(8)
    for shift, expect_small in ((2.0, True), (0.0, False)):
        pools = {k: [rng.normal(size=(4, 6)) + (shift if k in "XA" else -shift) * np.eye(6)[0]
                     for _ in range(6)] for k in "XYAB"}
        r = ceat_from_pools(pools, n_draws=200, seed=2, bootstrap=200)
        assert 0.0 <= r.word_p <= 1.0
        assert (r.word_p < 0.05) == expect_small
        # at level 1 - 2 p the interval's lower end sits at 0: above 0 iff p below its tail
        assert (r.word_ci[0] > 0) == (r.word_p < (1 - r.ci_prob) / 2) or \
            abs(r.word_p - (1 - r.ci_prob) / 2) < 0.01
        text = str(r)
        assert "p over words and contexts" in text
        assert text.index("p over words and contexts") < text.index("secondary")
        d = r.to_dict()
        assert d["word_p"] == r.word_p and "two-stage bootstrap" in d["word_p_text"]
    assert ceat_from_pools(pools, n_draws=50, seed=3, bootstrap=0).word_p is None


def test_ceat_p_is_printed_as_a_bound():
    rng = np.random.default_rng(6)
    pools = {k: [rng.normal(size=(4, 6)) + (3.0 if k in "XA" else -3.0) * np.eye(6)[0]
                 for _ in range(5)] for k in "XYAB"}
    r = ceat_from_pools(pools, n_draws=2000, seed=1, bootstrap=0)
    assert r.p_value < 1e-300
    assert "< 1e-300" in str(r) and "= 0 " not in str(r) and "= 0;" not in str(r)


def _ceat_coverage(n_sims, n_draws, bootstrap, seed):
    rng = np.random.default_rng(seed)
    word = re = 0
    for i in range(n_sims):
        r = ceat_from_pools(_population_pools(rng), n_draws=n_draws, seed=i,
                            bootstrap=bootstrap)
        word += r.word_ci[0] <= 0 <= r.word_ci[1]
        re += r.ci[0] <= 0 <= r.ci[1]
    return word / n_sims, re / n_sims


def test_word_interval_covers_where_the_random_effects_one_does_not_quick():
    word, re = _ceat_coverage(25, 50, 80, seed=12)
    assert word >= 0.7 and re <= 0.4, (word, re)


@pytest.mark.slow
def test_word_interval_covers_at_its_nominal_rate():
    """200 data sets with truth 0 (measured: word/context 0.890, random effects 0.100)."""
    word, re = _ceat_coverage(200, 200, 200, seed=11)
    # binomial sd of a share near 0.89 over 200 runs: 0.022
    assert 0.84 <= word <= 0.96, word
    assert re < 0.5, re

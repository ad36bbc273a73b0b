"""Issue 49: borderline verdicts, the short headline, and the Rao-Blackwellised interval ends.

Fast tests on synthetic draws and closed forms; the statistical check against 64x longer
chains is slow-marked at the end.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bayesbias.verdicts import (
    CODES,
    HEADLINE_CHARS,
    PRECISION_MCSE,
    RULE,
    ContrastEvidence,
    _interval,
    class_contrast_clause,
    verdict_from_draws,
    verdict_from_evidence,
)

LABELS = ("associated - none", "associated - human", "associated - different",
          "human - none")
BANNED = ("draw more", "undecided at this precision")


def _draws(rng, means=(-0.1, -0.1, -0.1, -0.05), sd=0.02, n=4000):
    return {lab: rng.normal(m, sd, n) for lab, m in zip(LABELS, means, strict=True)}


def _pin_upper(d, at):
    """Shift draws so that their 89% HDI's upper end is `at`."""
    return d - _interval(d, 0.89, "hdi")[1] + at


def _text(v) -> str:
    return " ".join([v.headline, *v.details, *v.notes, v.label])


def test_an_end_on_its_threshold_is_borderline_with_direction_and_probability():
    rng = np.random.default_rng(0)
    d = _draws(rng)
    d["associated - human"] = _pin_upper(d["associated - human"], 0.0005)
    mcse = {"associated - human": (0.001, 0.001)}
    v = verdict_from_draws("x", d, mcse=mcse)
    ah = v["associated - human"]
    assert ah.status == "borderline" and ah.edge == "upper"
    assert v.code == "borderline vs human" and not v.finding and v.borderline
    # plain words: the direction and its probability, at the edge of the interval
    assert f"with probability {ah.prob_below_zero:.2f}, at the edge of the 89% HDI" in \
        v.headline
    assert 0.9 < ah.prob_below_zero < 0.99
    assert len(v.headline) <= HEADLINE_CHARS
    assert not any(b in _text(v) for b in BANNED)
    # the deciding contrasts are marked
    assert [c.decisive for c in v.contrasts] == [True, True, False, False]
    # far from the threshold in Monte Carlo errors: decided
    far = verdict_from_draws("x", d, mcse={"associated - human": (1e-5, 1e-5)})
    assert far.code == "no closer than human"
    assert far["associated - human"].status == "undecided"


def test_a_lower_end_on_zero_leans_further():
    rng = np.random.default_rng(1)
    d = _draws(rng)
    x = d["associated - none"]
    d["associated - none"] = x - _interval(x, 0.89, "hdi")[0] - 0.0003  # lower end -0.0003
    v = verdict_from_draws("x", d, mcse={"associated - none": (0.001, 0.001)})
    an = v["associated - none"]
    assert an.status == "borderline" and an.edge == "lower"
    assert v.code == "borderline vs neutral"
    assert an.leaning()[0] == "further"
    assert "further than neutral words with probability" in v.headline
    assert [c.decisive for c in v.contrasts] == [True, False, False, False]


def test_borderline_neutral_is_read_first_whatever_human_says():
    rng = np.random.default_rng(2)
    d = _draws(rng)
    d["associated - none"] = _pin_upper(d["associated - none"], 0.0002)
    d["associated - human"] = _pin_upper(d["associated - human"], 0.0002)
    both = {lab: (0.001, 0.001) for lab in LABELS[:2]}
    assert verdict_from_draws("x", d, mcse=both).code == "borderline vs neutral"


def test_qualifying_contrasts_never_change_the_code():
    # `associated - different` and `human - none` borderline: stereotype-specific stays,
    # their borderline is said in words
    rng = np.random.default_rng(3)
    d = _draws(rng)
    for lab in ("associated - different", "human - none"):
        d[lab] = _pin_upper(d[lab], -0.0003)
    near = {lab: (0.001, 0.001) for lab in LABELS[2:]}
    v = verdict_from_draws("x", d, mcse=near)
    assert v.code == "stereotype-specific" and v.finding
    assert v["associated - different"].status == "borderline"
    assert "at the edge of being class-specific" in v.details[0]
    assert any("`human - none` is borderline" in n for n in v.notes)
    assert not any(b in _text(v) for b in BANNED)


def test_a_rope_end_that_cannot_change_the_status_is_not_borderline():
    # with a ROPE, the lower end near -ROPE while the upper end is far above +ROPE: either
    # side it is undecided, so not borderline
    rng = np.random.default_rng(4)
    d = _draws(rng, means=(-0.1, 0.05, -0.1, -0.05), sd=0.05)
    x = d["associated - human"]
    d["associated - human"] = x - _interval(x, 0.89, "hdi")[0] - 0.02  # lower end at -0.02
    v = verdict_from_draws("x", d, rope=0.02, mcse={"associated - human": (0.001, 0.001)})
    assert v["associated - human"].status == "undecided"


def _item(lab, status, lower=-0.2, upper=-0.1, p=0.99, edge=None):
    return ContrastEvidence(contrast=lab, mean=(lower + upper) / 2, lower=lower, upper=upper,
                            prob_below_zero=p, share_in_rope=None, status=status,
                            mcse_lower=1e-4, mcse_upper=1e-4, edge=edge)


STATUS_ENDS = {"below": (-0.2, -0.1, 0.999, None), "above": (0.1, 0.2, 0.001, None),
               "undecided": (-0.1, 0.1, 0.5, None), "equivalent": (-0.01, 0.01, 0.5, None),
               "borderline": (-0.2, 0.0001, 0.946, "upper"),
               "no data": (np.nan, np.nan, np.nan, None)}


def test_every_combination_gives_a_documented_code_and_a_short_headline():
    seen = set()
    for statuses in itertools.product(STATUS_ENDS, repeat=4):
        items = [_item(lab, s, *STATUS_ENDS[s]) for lab, s in zip(LABELS, statuses,
                                                                    strict=True)]
        v = verdict_from_evidence("x", items, 0.89, "hdi", rope=0.05)
        assert v.code in CODES, v.code
        assert len(v.headline) <= HEADLINE_CHARS, (len(v.headline), v.headline)
        assert not any(b in _text(v) for b in BANNED)
        assert any(c.decisive for c in v.contrasts)
        if "borderline" in v.code:
            assert not v.finding
        d = v.to_dict()
        assert d["headline"] == v.headline and d["details"] == v.details
        for c in d["contrasts"]:
            assert {"status", "lower", "upper", "prob_below", "decisive"} <= set(c)
            assert c["status"] in ("below", "above", "equivalent", "undecided",
                                   "borderline", "no data")
        seen.add(v.code)
    assert seen == set(CODES)  # every documented code is reachable
    for code in CODES:
        assert f"'{code}'" in RULE, code


def test_class_contrast_clause_in_the_same_sentence():
    # issue 50: not stereotype-specific, but `associated - different` credible
    items = [_item(LABELS[0], "below"), _item(LABELS[1], "undecided", -0.1, 0.1, 0.6),
             _item(LABELS[2], "below"), _item(LABELS[3], "below")]
    v = verdict_from_evidence("x", items, 0.89, "hdi")
    assert v.code == "no closer than human"
    assert v.headline.count(".") == 1 and v.headline.endswith(".")
    assert "; own-class stereotypes are closer than other classes'." in v.headline
    assert len(v.headline) <= HEADLINE_CHARS
    assert class_contrast_clause("stereotype-specific", items[2]) == ""
    assert class_contrast_clause("no closer than human", items[1]) == ""
    above = _item(LABELS[2], "above", 0.1, 0.2, 0.001)
    assert "further" in class_contrast_clause("not closer than neutral", above)


def test_fit_for_verdict_refits_only_near_the_edge_of_the_borderline_band(monkeypatch):
    import types

    import bayesbias.models
    import bayesbias.models.sampling
    from bayesbias import verdicts

    drawn = []

    def fake_fit(table, model, draws, **kwargs):
        drawn.append(draws)
        return types.SimpleNamespace(draws=draws)

    def contrast(upper, mcse):
        return types.SimpleNamespace(decisive=True, status="below", estimator="mixture",
                                     lower=-0.2, upper=upper, mcse_lower=mcse,
                                     mcse_upper=mcse)

    cases = {"on": contrast(-0.0001, 0.001),  # on the threshold: borderline, no refit
             "edge": contrast(-0.0035, 0.001),  # 3.5 MCSE: unsure, refit
             "far": contrast(-0.02, 0.001)}  # decided, no refit
    which = {}

    def fake_verdict(fit, *args):
        c = cases[which["case"]]
        if fit.draws > 100:  # 4x the draws halve the error
            c = contrast(c.upper, c.mcse_upper / 2)
        return types.SimpleNamespace(rope=None, contrasts=[c])

    monkeypatch.setattr(bayesbias.models, "fit_model", fake_fit)
    monkeypatch.setattr(bayesbias.models.sampling, "warn_checks", lambda f, s=False: f)
    monkeypatch.setattr(verdicts, "verdict_from_fit", fake_verdict)
    for case, want in (("on", [100]), ("edge", [100, 400]), ("far", [100])):
        which["case"] = case
        drawn.clear()
        verdicts.fit_for_verdict("table", "crossed", draws=100)
        assert drawn == want, case


# -- the estimator ------------------------------------------------------------------------

def _fake_fit(family, seed=0, draws=7):
    """Return a Fit on a small unbalanced table with made-up scale draws (no sampling)."""
    import xarray as xr

    from bayesbias.models.cells import cells_from_table
    from bayesbias.models.result import Fit
    from bayesbias.models.spec import load_spec
    from bayesbias.testing import simulate_table

    table, _ = simulate_table("crossed", seed=seed, n_classes=2, words_per_class=3,
                              stereotypes_per_class=3, n_human=4, n_none=5)
    rng = np.random.default_rng(seed)
    table = table.iloc[np.sort(rng.choice(len(table), int(0.8 * len(table)),
                                          replace=False))].reset_index(drop=True)
    spec = load_spec(family)
    cells = cells_from_table(table)
    chains = 2
    post = {"mu_bar": (("chain", "draw", "connection"), rng.normal(1, 0.1, (chains, draws, 4))),
            "tau": (("chain", "draw", "connection"), rng.uniform(0.02, 0.1, (chains, draws, 4))),
            "sigma": (("chain", "draw", "connection"),
                      rng.uniform(0.05, 0.2, (chains, draws, 4)))}
    coords = {"connection": ["associated", "different", "human", "none"]}
    if family == "crossed":
        from bayesbias.models.crossed import _kinds

        _, labels = _kinds(spec, cells)
        post["omega"] = (("chain", "draw", "attribute_kind"),
                         rng.uniform(0.02, 0.1, (chains, draws, len(labels))))
        coords["attribute_kind"] = labels
    from bayesbias.config import CONNECTIONS
    coords["connection"] = list(CONNECTIONS)
    ds = xr.Dataset(post, coords=coords)
    return Fit(xr.DataTree.from_dict({"posterior": ds}), spec, cells)


def _brute_force(fit, c, d):
    """Posterior mean and covariance of mu_bar at one draw, from the rows' full GLS."""
    from bayesbias.models.crossed import _kinds

    cells, post = fit.cells, fit.idata.posterior
    tau = post["tau"].values[c, d]
    sig = post["sigma"].values[c, d]
    nu, nc = cells.n.shape
    na = cells.attributes.size if "omega" in post.data_vars else 0
    dim = nc + nu * nc + na
    rows = cells.y.size
    x = np.zeros((rows, dim))
    cell = cells.unit_idx * nc + cells.conn_idx
    x[np.arange(rows), nc + cell] = 1.0
    if na:
        x[np.arange(rows), nc + nu * nc + cells.attr_idx] = 1.0
    prec = x.T @ (x / sig[cells.conn_idx, None] ** 2)
    lin = x.T @ (cells.y / sig[cells.conn_idx] ** 2)
    # mu[w, c] ~ N(mu_bar[c], tau[c]^2): quadratic in (mu - mu_bar)
    for u in range(nu):
        for j in range(nc):
            a = np.zeros(dim)
            a[nc + u * nc + j], a[j] = 1.0, -1.0
            prec += np.outer(a, a) / tau[j] ** 2
    p = dict(fit.spec.priors["mu_bar"].params)
    prec[np.arange(nc), np.arange(nc)] += 1 / p["sigma"] ** 2
    lin[:nc] += p["mu"] / p["sigma"] ** 2
    if na:
        kind, _ = _kinds(fit.spec, cells)
        om = post["omega"].values[c, d][kind]
        idx = nc + nu * nc + np.arange(na)
        prec[idx, idx] += 1 / om**2
    cov = np.linalg.inv(prec)
    return (cov @ lin)[:nc], cov[:nc, :nc]


@pytest.mark.parametrize("family,low_rank", [("crossed", True), ("crossed", False),
                                             ("hierarchical", None)])
def test_conditional_moments_equal_the_full_gaussian_posterior(family, low_rank):
    # Given the scales the group means are exactly Gaussian: the class-wise precision of
    # contrast_mixture equals the GLS posterior of every row, cell mean and effect
    from bayesbias.models.contrast_mixture import conditional_moments, supports

    fit = _fake_fit(family)
    assert supports(fit)
    mean, cov = conditional_moments(fit, low_rank=low_rank)
    for c, d in ((0, 0), (1, 4), (0, 6)):
        m_ref, c_ref = _brute_force(fit, c, d)
        np.testing.assert_allclose(mean[c, d], m_ref, rtol=0, atol=1e-10)
        np.testing.assert_allclose(cov[c, d], c_ref, rtol=1e-8, atol=1e-14)


def test_mixture_end_mcse_matches_the_spread_over_replications():
    # iid component moments: the delta-method MCSE of the mixture's HDI and ETI ends is
    # within 0.75-1.33x of their sd over 200 replications
    from bayesbias.models.contrast_mixture import mixture_end_mcse
    from bayesbias.models.word_summaries import mixture_interval

    rng = np.random.default_rng(5)
    for kind in ("hdi", "eti"):
        ends, errs = [], []
        for _ in range(200):
            m = rng.normal(-0.05, 0.03, (4, 250))
            s = 0.01 + rng.gamma(2.0, 0.005, (4, 250))
            e = mixture_interval(m.reshape(-1, 1), s.reshape(-1, 1), 0.89, kind)[0]
            ends.append(e)
            errs.append(mixture_end_mcse(m, s, e, 0.89, kind))
        ratio = np.mean(errs, axis=0) / np.std(ends, axis=0, ddof=1)
        assert np.all(ratio > 0.75) and np.all(ratio < 1.33), (kind, ratio)


def test_borderline_uses_the_precision_constant():
    assert PRECISION_MCSE == 3.0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["race", "gender", "religion"])
def test_mixture_interval_ends_agree_with_a_64x_longer_chain(name):
    """Mixture ends of a short fit agree with the sample ends of 64x longer chains.

    The short fit has 200 draws per chain, the long one 4 one-chain fits of 12,800 draws;
    they agree within 3.5 combined Monte Carlo
    standard errors (the long chains' HDI-end MCSE and the mixture's; 8 ends per table),
    and the mixture's MCSE is smaller than the short fit's sample-end MCSE.

    The full-size check (1,000 vs 64,000 draws per chain) is
    ``benchmarks/mixture_vs_long_chain.py``.
    """
    import warnings

    import xarray as xr

    from bayesbias.distances import distance_table
    from bayesbias.embeddings import load_embedding
    from bayesbias.models import fit_model
    from bayesbias.verdicts import VERDICT_CONTRASTS, interval_end_mcse, mixture_evidence
    from bayesbias.wordlists import load_wordlist

    wl = load_wordlist(name)
    table = distance_table(load_embedding("default", list(wl.all_words)), wl)
    draws = 200
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        short = fit_model(table, draws=draws, tune=500, seed=5, checked=False)
        longs = [fit_model(table, draws=64 * draws, tune=500, chains=1, seed=50 + k,
                           checked=False, keep_word_draws=False) for k in range(4)]
    ev, mc = mixture_evidence(short, 0.89, "hdi")
    da_l = xr.concat([f.contrast_draws(VERDICT_CONTRASTS).assign_coords(chain=[k])
                      for k, f in enumerate(longs)], dim="chain")
    da_s = short.contrast_draws(VERDICT_CONTRASTS)
    for i, (a, b) in enumerate(VERDICT_CONTRASTS):
        lab = f"{a} - {b}"
        ls = da_l.sel(contrast=lab).transpose("chain", "draw").values
        e_long = _interval(ls.ravel(), 0.89, "hdi")
        m_long = interval_end_mcse(ls, e_long, 0.89, "hdi")
        ss = da_s.sel(contrast=lab).transpose("chain", "draw").values
        m_short = interval_end_mcse(ss, _interval(ss.ravel(), 0.89, "hdi"), 0.89, "hdi")
        for j, end in enumerate(("lower", "upper")):
            z = (ev[end][i] - e_long[j]) / np.hypot(m_long[j], mc[lab][j])
            assert abs(z) < 3.5, (name, lab, end, ev[end][i], e_long[j], m_long[j], mc[lab][j])
            assert mc[lab][j] < m_short[j], (name, lab, end)

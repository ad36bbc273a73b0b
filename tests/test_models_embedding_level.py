"""The embedding_level family: many embeddings in one model."""

import numpy as np
import pytest

from bayesbias.ensemble import simulate_ensemble_table
from bayesbias.errors import DistanceTableError
from bayesbias.models import cells_from_table, load_spec
from bayesbias.models.base import build_model
from bayesbias.models.embedding_level import has_strength, structure


def _table(kind="bootstrap", **kw):
    kw.setdefault("n_embeddings", 4)
    kw.setdefault("seed", 5)
    return simulate_ensemble_table(kind=kind, words_per_class=2,
                                   stereotypes_per_class=3, n_human=3, n_none=4, **kw)


def test_cells_per_word_and_embedding():
    t, _ = _table()
    c = cells_from_table(t)
    assert c.units.size == 4 * 4 and " @ " in c.units[0]
    assert list(c.embeddings) == sorted(set(t["embedding"]), key=list(t["embedding"]).index)
    assert set(c.embedding_sample) == {f"bootstrap-{i}" for i in range(1, 5)}
    assert (c.unit_base[c.unit_embedding == 0] == c.unit_base[c.unit_embedding == 1]).all()


@pytest.mark.parametrize("kind, levels", [("bootstrap", (True, False, True)),
                                          ("seeds", (False, True, False)),
                                          ("corpora", (True, False, False))])
def test_structure(kind, levels):
    t, _ = _table(kind)
    st = structure(cells_from_table(t))
    assert (st["sample_level"], st["run_level"], st["bootstrap"]) == levels
    # attribute x sample with 2+ samples; word x sample only when a sample has 2+ runs
    assert st["attribute_sample_level"] == levels[0]
    assert not st["word_sample_level"]
    two_runs = structure(cells_from_table(_table(kind, runs_per_sample=2)[0]))
    assert two_runs["word_sample_level"] == (kind != "seeds")


def test_interaction_levels_with_a_factor_sum_to_zero_within_levels():
    """With a factor the attribute and word x sample deviations sum to zero over the samples
    of each level (not over all samples): a level's mean stays its own."""
    import pymc as pm

    from bayesbias.models.embedding_level import cells as el_cells
    from bayesbias.models.embedding_level import (row_attribute, row_level_model,
                                                  strength_stereotypes)

    t, _ = _factor_table(levels=("2000", "1990"), n_embeddings=12)
    c = el_cells(t)
    st = structure(c)
    assert st["attribute_sample_level"] and not st["word_sample_level"]  # one run per sample
    assert [g.size for g in st["sample_groups"]] == [6, 6]
    idx, n = row_attribute(c)
    r = st["samples"].size
    assert n == c.attributes.size * r and np.array_equal(idx // r, c.attr_idx)
    m = row_level_model(load_spec("embedding_level"), c)
    row_effect, v, g = pm.draw([m["attribute_row_effect"], m["attribute_effect"],
                                m["stereotype_strength"]], draws=5, random_seed=3)
    base = row_effect[:, :n].reshape(5, c.attributes.size, r)
    dev = base - v[:, :, None]
    level = st["factor"]["sample_level"]
    for k in (0, 1):
        np.testing.assert_allclose(dev[:, :, level == k].sum(axis=-1), 0.0, atol=1e-10)
    assert np.abs(dev).max() > 1e-3  # the deviations exist
    # a stereotype's associated rows: its effect in that sample plus its strength g, plus
    # the strength's own deviation in that sample (zero-sum over each level's samples)
    stereo = strength_stereotypes(c)
    assert stereo.size == g.shape[1] == 8 and np.abs(g).max() > 1e-4
    ext = row_effect[:, n:].reshape(5, 2, stereo.size, r)  # associated, different
    half = (ext[:, 0] - ext[:, 1]) / 2
    np.testing.assert_allclose((ext[:, 0] + ext[:, 1]) / 2, base[:, stereo, :], atol=1e-12)
    w = half - g[:, :, None] / 2  # the strength's own deviation per sample
    for k in (0, 1):
        np.testing.assert_allclose(w[:, :, level == k].sum(axis=-1), 0.0, atol=1e-10)
    assert np.abs(w).max() > 1e-3
    np.testing.assert_allclose(g.sum(axis=1), 0.0, atol=1e-12)
    idx_s, n_s = row_attribute(c, strength=True)
    moved = c.conn_idx <= 1
    assert n_s == n + 2 * stereo.size * r and np.array_equal(idx_s[~moved], idx[~moved])
    assert (idx_s[moved] >= n).all()
    # two runs per sample: the word x sample level too, zero-sum within levels
    t2, _ = _factor_table(levels=("2000", "1990"), n_embeddings=8, runs_per_sample=2)
    st2 = structure(el_cells(t2))
    assert st2["word_sample_level"] and [g.size for g in st2["sample_groups"]] == [2, 2]
    # a level with a single sample has no deviations of its own
    t3, _ = _factor_table(levels=("1990", "2000", "2010"), n_embeddings=3)
    st3 = structure(el_cells(t3))
    assert st3["sample_groups"] == [] and not st3["attribute_sample_level"]


def test_a_spec_without_gamma_has_no_strength_level(tmp_path):
    """gamma is optional: a spec without it (a fit saved before the level) builds the model
    without stereotype strengths; a spec missing another prior is still refused."""
    from bayesbias.errors import ModelSpecError
    from bayesbias.models.spec import ModelSpec

    spec = load_spec("embedding_level")
    assert has_strength(spec)
    d = spec.to_dict()
    d["priors"].pop("gamma")
    old = ModelSpec.from_dict(d)
    assert not has_strength(old) and old.hash != spec.hash
    c = cells_from_table(_table()[0])
    names = set(build_model(old, c).named_vars)
    assert "stereotype_strength" not in names and "gamma" not in names
    assert {"stereotype_strength", "gamma"} <= set(build_model(spec, c).named_vars)
    d["priors"].pop("psi")
    with pytest.raises(ModelSpecError, match="missing: psi"):
        ModelSpec.from_dict(d)


def test_strengths_centred_when_the_rows_pin_them():
    import pymc as pm

    from bayesbias.models.embedding_level import strength_noncentred

    t = _table("bootstrap", n_embeddings=6)[0]
    assert strength_noncentred(cells_from_table(t))  # no strength planted
    stereo = sorted(t.loc[t["connection"] == "associated", "attribute"].unique())
    shift = dict(zip(stereo, np.linspace(-0.6, 0.6, len(stereo)), strict=True))
    t = t.copy()
    sign = t["connection"].map({"associated": 0.5, "different": -0.5}).fillna(0.0)
    t["cosine_distance"] += sign * t["attribute"].map(shift).fillna(0.0)
    c = cells_from_table(t)
    assert not strength_noncentred(c)
    m = build_model(load_spec("embedding_level"), c)
    assert "stereotype_strength" in [v.name for v in m.free_RVs]
    assert pm.draw(m["stereotype_strength"], random_seed=1).sum() == pytest.approx(0, abs=1e-9)


def test_kernel_sets_centred_from_twice_their_noise():
    # issue 50: the native kernel centres a set when its values' spread beyond their noise is
    # at least CENTRED_RATIO (2) times the noise: var([-a, a]) = 2 a^2, noise 1; the
    # corpus-sample and training-run sets at SAMPLE_CENTRED_RATIO (10)
    from bayesbias.models.embedding_level import (CENTRED_RATIO, SAMPLE_CENTRED_RATIO,
                                                  _ratio_centred)

    assert CENTRED_RATIO == 2.0 and SAMPLE_CENTRED_RATIO == 10.0
    # the corpus-sample and training-run sets keep the crossed family's 10
    assert not _ratio_centred(np.array([-1.5, 1.5]), 1.0, SAMPLE_CENTRED_RATIO)[0]
    assert _ratio_centred(np.array([-1.5, 1.5]), 1.0) == (True, 1.0)  # ratio 3.5
    assert not _ratio_centred(np.array([-1.2, 1.2]), 1.0)[0]  # ratio 1.88
    assert _ratio_centred(np.array([-3.0, 3.0, np.nan]), 1.0)[0]  # NaN left out, ratio 17
    assert _ratio_centred(np.array([1.0]), 1.0) == (False, 1.0)  # one value: nothing to read


@pytest.mark.parametrize("case", ["bootstrap", "factor"])
def test_row_attribute_effects_rebuild_the_models(case):
    """The checks' per-row attribute effects, rebuilt from posterior variables, equal the
    model's own (v + psi u +- (q + phi w) / 2) at the same draws, to 1e-12."""
    import pymc as pm
    import xarray as xr

    from bayesbias.models.embedding_level import cells as el_cells
    from bayesbias.models.embedding_level import row_attribute_effects, row_level_model

    t = _factor_table(levels=("2000", "1990"))[0] if case == "factor" else \
        _table("bootstrap", runs_per_sample=2)[0]
    c = el_cells(t)
    m = row_level_model(load_spec("embedding_level"), c)
    names = [v.name for v in m.free_RVs] + ["attribute_effect", "stereotype_strength",
                                             "attribute_row_effect"]
    draws = pm.draw([m[n] for n in names], draws=3, random_seed=4)
    post = xr.Dataset({n: (("chain", "draw", *[f"{n}_d{i}" for i in range(x.ndim - 1)]),
                           x[None]) for n, x in zip(names, draws, strict=True)})
    idx, got = row_attribute_effects(post, c, np.arange(3))
    assert idx.max() < got.shape[1]
    np.testing.assert_allclose(got, draws[-1], atol=1e-12)


def test_one_embedding_refused():
    t, _ = _table()
    one = t[t["embedding"] == t["embedding"].iloc[0]]
    with pytest.raises(DistanceTableError, match="2 or more embeddings"):
        structure(cells_from_table(one))
    with pytest.raises(DistanceTableError, match="2 or more embeddings"):
        structure(cells_from_table(one.drop(columns=["embedding", "corpus_sample"])))


def test_model_builds_with_the_right_variables():
    spec = load_spec("embedding_level")
    assert "kappa0" in spec.card() and "bootstrap" in spec.card()
    t, _ = _table("bootstrap", runs_per_sample=2)
    m = build_model(spec, cells_from_table(t))
    names = set(m.named_vars)
    assert {"mu", "mu_bar", "M", "sample_effect", "run_effect", "attribute_effect",
            "sample_mean_z"} <= names
    t, _ = _table("seeds")
    names = set(build_model(spec, cells_from_table(t)).named_vars)
    assert "run_effect" in names and "sample_effect" not in names
    # per-cell likelihood: the cell deviations are integrated out, mu drawn from mu_z
    assert {"loglik", "mu_z", "cell_n"} <= names and "distance" not in names


@pytest.mark.slow
def test_mu_bar_extrapolates_only_for_bootstrap():
    """At a fixed point, mu_bar - M has sd kappa sqrt(1 + 1/R) (bootstrap) or kappa/sqrt(R)
    (corpora), from the prior draws of the missing means."""
    import pymc as pm

    spec = load_spec("embedding_level")
    sds = {}
    for kind in ("bootstrap", "corpora"):
        t, _ = _table(kind, n_embeddings=4)
        m = build_model(spec, cells_from_table(t))
        fixed = {"kappa0": 0.0, "kappa": np.array([0.1, 0.1, 0.1]), "tau": np.zeros(4) + 1e-9,
                 "omega": 1e-9, "gamma": 1e-9}
        m2 = pm.do(m, fixed)
        draws = pm.draw(m2["mu_bar"] - m2["M"], draws=4000, random_seed=1)
        sds[kind] = np.asarray(draws).reshape(4000, 4).std(axis=0)
    assert sds["bootstrap"][0] == pytest.approx(0.1 * np.sqrt(1 + 1 / 4), rel=0.08)
    assert sds["corpora"][0] == pytest.approx(0.1 / 2, rel=0.08)
    assert sds["bootstrap"][3] < 1e-6  # the reference connection 'none' has no vs-none part


@pytest.mark.slow
def test_fit_recovers_and_cli(tmp_path):
    from bayesbias.cli import main
    from bayesbias.models import fit_model

    t, truth = simulate_ensemble_table(kind="bootstrap", n_embeddings=6, seed=11,
                                       words_per_class=3, stereotypes_per_class=4, n_human=6,
                                       n_none=8)
    f = fit_model(t, "embedding_level", draws=500, tune=500, chains=2, seed=3)
    g = f.group_means(ci_prob=0.99).set_index("connection")
    for c, v in truth["corpus_mean"].items():  # the observed corpus's means, well inside
        assert g.loc[c, "lower"] < v < g.loc[c, "upper"]
    # drivers pooled across the 6 embeddings: one row per word, covering each word's truth
    from bayesbias.verdicts import word_drivers

    d = word_drivers(f, ci_prob=0.99)
    assert (d["embeddings"] == 6).all() and len(d) == 6 * 4
    truth_c = [truth["word_mean"][w][a] - truth["word_mean"][w][b]
               for w, (a, b) in zip(d["protected_word"], d["contrast"].str.split(" - "),
                                    strict=True)]
    covered = (d["lower"] <= truth_c) & (np.asarray(truth_c) <= d["upper"])
    assert covered.mean() >= 0.9, d.assign(truth=truth_c)
    assert len(word_drivers(f, pooled=False)) == 6 * 6 * 4  # word @ embedding cells
    t.to_csv(tmp_path / "t.csv", index=False)
    assert main(["--quiet", "fit", "--distances", str(tmp_path / "t.csv"), "--model",
                 "embedding_level", "--draws", "300", "--tune", "300", "--chains", "2"]) == 0


@pytest.mark.slow
def test_attribute_and_word_sample_levels_recover_their_scales():
    """Six corpora x 2 runs with an attribute x sample (psi 0.04) and a word x sample (xi
    0.03) deviation shared by each corpus's runs: the 95% intervals of psi, of each xi[c] and
    of each mu_bar[c] cover the truth (one fixed seed: 6 checks at 95%)."""
    from bayesbias.models import fit_model

    t, truth = simulate_ensemble_table(kind="corpora", n_embeddings=12, runs_per_sample=2,
                                       psi=0.04, xi=0.03, kappa=0.005, seed=8,
                                       words_per_class=3, stereotypes_per_class=4, n_human=6,
                                       n_none=8)
    f = fit_model(t, "embedding_level", draws=1000, tune=1000, chains=4, seed=2)
    st = structure(f.cells)
    assert st["attribute_sample_level"] and st["word_sample_level"]
    post = f.posterior

    def covers(x, v):
        lo, hi = np.quantile(np.asarray(x).ravel(), [0.025, 0.975])
        return lo < v < hi

    assert covers(post["psi"], 0.04)
    for c in post["connection"].values:
        assert covers(post["xi"].sel(connection=c), 0.03), c
        assert covers(post["mu_bar"].sel(connection=c), truth["mu_bar"][c]), c


@pytest.mark.slow
def test_compiled_models_are_reused_across_data_not_labels():
    import pymc as pm

    from bayesbias.models.base import model_data, structure_key

    spec = load_spec("embedding_level")
    t, _ = _table()
    c = cells_from_table(t)
    relabelled = cells_from_table(t.assign(corpus_sample="original"))
    # same words, embeddings and design, other distances: one compiled model serves both
    other_table = _table(seed=6)[0]
    other = cells_from_table(other_table)
    key = structure_key(spec, c)
    assert key != structure_key(spec, relabelled)
    assert key == structure_key(spec, other)
    fewer = cells_from_table(_table(n_embeddings=3)[0])
    assert key != structure_key(spec, fewer)
    # an attribute missing from one cell changes the layout's sizes, hence the key
    gap = other_table.drop(index=other_table.index[0])
    assert key != structure_key(spec, cells_from_table(gap))
    m = build_model(spec, c)
    data = model_data(spec, c)
    assert {"cell_n", "cell_mean", "cell_ss", "pair_attr", "attribute_centred"} <= set(data)
    for k, v in data.items():
        np.testing.assert_array_equal(m[k].get_value(), v)
    # the model built on c with other's data has other's log-density, exactly
    fresh = build_model(spec, other)
    point = fresh.initial_point()
    rng = np.random.default_rng(0)
    point = {k: v + rng.normal(0, 0.3, np.shape(v)) for k, v in point.items()}
    pm.set_data(model_data(spec, other), model=m)
    assert m.compile_logp()(point) == pytest.approx(fresh.compile_logp()(point), rel=1e-12)


def test_pooled_word_drivers_from_word_means():
    """A word's pooled contrast: mu_bar + word effect + the words' own mean, per draw."""
    import xarray as xr

    from bayesbias.config import CONNECTIONS
    from bayesbias.models.embedding_level import word_means
    from bayesbias.verdicts import word_drivers

    t, _ = _table()
    cells = cells_from_table(t)
    words = np.unique(cells.unit_base.astype(str))
    rng = np.random.default_rng(0)
    shape = (2, 50)
    eff = rng.normal(0, 0.05, (*shape, 4, words.size))
    eff -= eff.mean(axis=-1, keepdims=True)
    post = xr.Dataset({
        "mu_bar": (("chain", "draw", "connection"), rng.normal(0.8, 0.01, (*shape, 4))),
        "word_effect": (("chain", "draw", "connection", "word"), eff),
        "tau": (("chain", "draw", "connection"), np.abs(rng.normal(0.05, 0.01, (*shape, 4)))),
        "word_mean_z": (("chain", "draw", "connection"), rng.normal(0, 1, (*shape, 4)))},
        coords={"connection": list(CONNECTIONS), "word": words})
    wm = word_means(post)
    expect = (post["mu_bar"] + post["tau"] * post["word_mean_z"] / np.sqrt(words.size))
    np.testing.assert_allclose(wm.mean("word"), expect.transpose("chain", "draw", "connection"),
                               atol=1e-12)
    fit = type("F", (), {"posterior": post, "cells": cells, "unit_dim": "protected_word",
                         "spec": load_spec("embedding_level")})()
    d = word_drivers(fit, ci_prob=0.9, ci_kind="eti")
    assert len(d) == words.size * 4 and (d["embeddings"] == 4).all()
    row = d[(d["contrast"] == "associated - none") & (d["protected_word"] == words[0])].iloc[0]
    diff = (wm.sel(connection="associated") - wm.sel(connection="none")).sel(word=words[0])
    assert row["mean"] == pytest.approx(float(diff.mean()), abs=1e-12)
    assert row["lower"] == pytest.approx(float(np.quantile(diff.values, 0.05)), abs=1e-12)
    assert list(d["contrast"].unique()) == ["associated - none", "associated - human",
                                            "associated - different", "human - none"]


def test_cli_refuses_one_embedding(tmp_path, capsys):
    from bayesbias.cli import main

    t, _ = _table()
    one = t[t["embedding"] == t["embedding"].iloc[0]]
    one.to_csv(tmp_path / "one.csv", index=False)
    assert main(["--quiet", "fit", "--distances", str(tmp_path / "one.csv"), "--model",
                 "embedding_level", "--draws", "10", "--tune", "10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "2 or more embeddings" in err[0]


def _point_fns(m, outs):
    """Compile `outs` (model variables) as a function of a point of the value variables."""
    f = m.compile_fn(m.replace_rvs_by_values(outs), inputs=m.value_vars, mode="FAST_COMPILE",
                     on_unused_input="ignore", point_fn=False)
    return lambda p: f(*[p[v.name] for v in m.value_vars])


def _unbalanced():
    t, _ = _table("bootstrap", n_embeddings=3, runs_per_sample=2)
    # drop a few rows: cells with other attribute sets (groups) and unequal counts
    return t.drop(index=t.index[[0, 7, 40, 41, 90]]).reset_index(drop=True)


# The unbalanced case in the default run, every case in the slow run (PyTensor compiles).
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c != "unbalanced"
                                  else c for c in ["bootstrap", "seeds", "unbalanced",
                                                   "shared_sd", "factor", "run factor"]])
def test_cell_likelihood_is_the_row_marginal(case):
    """The per-cell log-density equals the rows' exact marginal with each cell deviation
    integrated out: per cell a multivariate Normal of the rows minus their attribute
    effects, covariance sigma^2 I + eta^2 11' (scipy), at random points; to 1e-8."""
    from scipy.stats import multivariate_normal

    from bayesbias.models.embedding_level import row_attribute, row_level_model

    from bayesbias.models.embedding_level import cells as el_cells

    kw = {"residual_sd": "single"} if case == "shared_sd" else {}
    spec = load_spec("embedding_level", **kw)
    if case == "factor":
        t = _factor_table(levels=("2000", "1990"), runs_per_sample=2)[0]
    elif case == "run factor":
        t = _run_factor_table()[0]
    else:
        t = _unbalanced() if case == "unbalanced" else \
            _table("seeds" if case == "seeds" else "bootstrap", runs_per_sample=2)[0]
    c = el_cells(t)
    m, r = build_model(spec, c), row_level_model(spec, c)
    loglik = _point_fns(m, [m["loglik"]])
    row_attr = row_attribute(c, has_strength(spec))[0]  # attribute (x sample, own class)
    parts = _point_fns(r, [r["attribute_row_effect"], r["eta"], r["sigma"],
                           r["mu"] - r["eta"][None, :] * r["mu_z"]])
    rng = np.random.default_rng(7)
    start = m.initial_point()  # compiled once, not once per point
    for _ in range(3):
        p = {k: np.asarray(v + rng.normal(0, 0.5, np.shape(v))) for k, v in start.items()}
        v, eta, sigma, centre = parts({k: x.copy() for k, x in p.items()})
        sigma = np.broadcast_to(sigma, (4,))
        ref = 0.0
        for u, j in zip(*c.observed, strict=True):
            rows = np.flatnonzero((c.unit_idx == u) & (c.conn_idx == j))
            cov = sigma[j] ** 2 * np.eye(rows.size) + eta[j] ** 2
            ref += multivariate_normal(np.full(rows.size, centre[u, j]), cov).logpdf(
                c.y[rows] - v[row_attr[rows]])
        got = float(loglik({k: x.copy() for k, x in p.items()})[0])
        assert got == pytest.approx(ref, abs=1e-8, rel=1e-12)


def test_cell_means_are_the_conjugate_conditional():
    """mu = conditional mean + mu_z / sqrt(precision): at mu_z = 0 and 1, against numpy on
    the rows (mean of y - v over the cell's rows; prior centre and eta)."""
    from bayesbias.models.embedding_level import row_attribute, row_level_model

    spec = load_spec("embedding_level")
    c = cells_from_table(_unbalanced())
    m, r = build_model(spec, c), row_level_model(spec, c)
    mu = _point_fns(m, [m["mu"]])
    row_attr = row_attribute(c, has_strength(spec))[0]
    parts = _point_fns(r, [r["attribute_row_effect"], r["eta"], r["sigma"],
                           r["mu"] - r["eta"][None, :] * r["mu_z"]])
    rng = np.random.default_rng(3)
    p = {k: np.asarray(v + rng.normal(0, 0.5, np.shape(v))) for k, v in m.initial_point().items()}
    v, eta, sigma, centre = parts({k: x.copy() for k, x in p.items()})
    for zval in (0.0, 1.0):
        p["mu_z"] = np.full_like(p["mu_z"], zval)
        got = mu({k: x.copy() for k, x in p.items()})[0]
        for u in range(c.units.size):
            for j in range(4):
                rows = np.flatnonzero((c.unit_idx == u) & (c.conn_idx == j))
                rbar = (c.y[rows] - v[row_attr[rows]]).mean() if rows.size else 0.0
                prec = 1 / eta[j] ** 2 + rows.size / sigma[j] ** 2
                mean = (centre[u, j] / eta[j] ** 2 + rows.size * rbar / sigma[j] ** 2) / prec
                assert got[u, j] == pytest.approx(mean + zval / np.sqrt(prec), abs=1e-10)


def test_attribute_groups_share_attribute_sets():
    from bayesbias.models.embedding_level import attribute_groups

    c = cells_from_table(_table()[0])
    lay = attribute_groups(c)
    # balanced: every word of a class meets the same attributes in every embedding of a
    # corpus sample (attribute x sample effects): per sample, one group per class and
    # stereotype connection (2 x 2) plus human and none
    assert lay["group_cells"].size == structure(c)["samples"].size * (2 * 2 + 2)
    assert lay["group_cells"].sum() == lay["ui"].size
    np.testing.assert_allclose(np.bincount(lay["pair_group"], weights=lay["pair_weight"]), 1.0)
    balanced = attribute_groups(cells_from_table(
        _table("bootstrap", n_embeddings=3, runs_per_sample=2)[0]))
    lay2 = attribute_groups(cells_from_table(_unbalanced()))  # the same with rows dropped
    assert lay2["group_cells"].size > balanced["group_cells"].size  # dropped rows: new sets


@pytest.mark.slow
@pytest.mark.parametrize("integrated", [False, True])
def test_per_cell_posterior_matches_the_row_level_model(integrated, monkeypatch):
    """mu_bar, the variance shares, sigma, psi, omega, gamma and two attribute x sample
    deviations agree with the row-level model (cell deviations and attribute x sample
    deviations sampled) within Monte Carlo error: |difference of means| < 4 combined MC se."""
    import pymc as pm
    from arviz_stats.base import array_stats

    from bayesbias.models import fit_model
    from bayesbias.models.embedding_level import row_level_model

    import bayesbias.models.embedding_level as el

    monkeypatch.setattr(el, "ATTRIBUTE_SAMPLE_INTEGRATED", integrated)
    t, _ = simulate_ensemble_table(kind="bootstrap", n_embeddings=4, seed=21, words_per_class=3,
                                   stereotypes_per_class=3, n_human=4, n_none=5)
    new = fit_model(t, "embedding_level", draws=1000, tune=1000, chains=4, seed=5)
    spec = load_spec("embedding_level")
    with row_level_model(spec, cells_from_table(t)):
        ref = pm.sample(draws=1000, tune=1000, chains=4, random_seed=5, nuts_sampler="nutpie",
                        progressbar=False, target_accept=0.95,
                        compute_convergence_checks=False)

    def mean_se(x):  # posterior mean and its Monte Carlo se (chain, draw)
        x = np.asarray(x, dtype=float)
        ess = array_stats.ess(x, chain_axis=0, draw_axis=1, method="mean")
        return x.mean(), x.std() / np.sqrt(float(ess))

    def agree(a, b, what):
        (ma, sa), (mb, sb) = mean_se(a), mean_se(b)
        assert abs(ma - mb) < 4 * np.hypot(sa, sb), (what, ma, mb, sa, sb)

    def share(p, j):  # the embedding share of connection j (bootstrap: no run level)
        tau, eta = p["tau"].values[..., j] ** 2, p["eta"].values[..., j] ** 2
        emb = eta + p["kappa0"].values ** 2 + (p["kappa"].values[..., j] ** 2 if j < 3 else 0)
        return emb / (emb + tau)

    for c in range(4):
        agree(new.posterior["mu_bar"].values[..., c], ref.posterior["mu_bar"].values[..., c],
              f"mu_bar[{c}]")
        agree(share(new.posterior, c), share(ref.posterior, c), f"share[{c}]")
        agree(new.posterior["sigma"].values[..., c], ref.posterior["sigma"].values[..., c],
              f"sigma[{c}]")
    # the attribute x sample level (integrated: out of the kernel, drawn afterwards)
    assert ("attribute x sample" in new.posterior.attrs["kernel"]) == integrated
    for name in ("psi", "omega", "gamma"):
        agree(new.posterior[name].values, ref.posterior[name].values, name)
    for q in (0, 5):  # two attributes' deviations in the first corpus sample
        agree(new.posterior["attribute_sample_z"].values[..., q, 0] * new.posterior["psi"].values,
              ref.posterior["attribute_sample_z"].values[..., q, 0] * ref.posterior["psi"].values,
              f"psi u[{q}, 0]")


@pytest.mark.slow
def test_same_draws_whatever_the_hash_seed_and_cache(tmp_path):
    """Three processes give bitwise equal draws: the first compiles the model into an empty
    PyTensor cache (cold), the other two load it (warm), each with its own PYTHONHASHSEED.

    With numba's fastmath a cold compile and a cached load rounded differently, so the first
    fit after installing gave other draws (sampling compiles without fastmath)."""
    import os
    import subprocess
    import sys

    t, _ = _table("bootstrap")
    t.to_csv(tmp_path / "t.csv", index=False)
    code = ("import sys, numpy as np; from bayesbias.distances import read_distance_table; "
            "from bayesbias.models import fit_model; "
            "f = fit_model(read_distance_table(sys.argv[1]), 'embedding_level', draws=100, "
            "tune=100, chains=2, seed=4); print(repr(float(f.posterior['mu_bar'].values.sum())),"
            " repr(float(f.posterior['mu'].values.sum())))")
    flags = f"base_compiledir={tmp_path / 'pytensor'}"
    outs = []
    for h in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=h, PYTENSOR_FLAGS=flags)
        res = subprocess.run([sys.executable, "-c", code, str(tmp_path / "t.csv")], env=env,
                             capture_output=True, text=True, timeout=1200)
        assert res.returncode == 0, res.stderr[-2000:]
        outs.append(res.stdout.strip().splitlines()[-1])
    assert outs[0] == outs[1] == outs[2], outs


def _factor_table(delta=0.0, seed=5, levels=("1990", "2000"), n_embeddings=8,
                  runs_per_sample=1):
    """One simulated ensemble split into levels; `delta` added to later levels' associated."""
    t, truth = simulate_ensemble_table(kind="bootstrap", n_embeddings=n_embeddings, seed=seed,
                                       words_per_class=3, stereotypes_per_class=4, n_human=6,
                                       n_none=8, runs_per_sample=runs_per_sample)
    samples = sorted(t["corpus_sample"].unique(), key=lambda s: int(s.split("-")[1]))
    per = len(samples) // len(levels)
    level = {s: levels[i // per] for i, s in enumerate(samples)}
    t["factor_decade"] = t["corpus_sample"].map(level)
    shift = t["factor_decade"].map({lv: i * delta for i, lv in enumerate(levels)})
    t.loc[t["connection"] == "associated", "cosine_distance"] += shift
    return t, truth


def test_factor_cells_and_refusals():
    from bayesbias.models.embedding_level import cells as el_cells

    t, _ = _factor_table(levels=("2000", "1990"))
    c = el_cells(t)
    fac = c.sub_cells["factor"]
    assert fac["name"] == "decade" and list(fac["levels"]) == ["1990", "2000"]  # by value
    assert fac["numeric"] and fac["embedding_level"].tolist() == [1] * 4 + [0] * 4
    assert el_cells(t.drop(columns="factor_decade")).sub_cells is None
    # a second factor of one level compares nothing: ignored
    one = el_cells(t.assign(factor_language="en")).sub_cells["factor"]
    assert one["name"] == "decade" and "factors" not in one
    bad = t.copy()
    bad.loc[bad.index[0], "factor_decade"] = "1980"
    with pytest.raises(DistanceTableError, match="factor_decade.*more than one level"):
        el_cells(bad)
    runs = t.assign(corpus_sample="original")  # levels differ within one corpus sample
    fac = el_cells(runs).sub_cells["factor"]
    assert fac["per"] == "run" and fac["name"] == "decade"


def _run_factor_table(delta=0.0, seed=5, n_embeddings=8):
    """Bootstrap samples each trained twice, once per algorithm; `delta` added to cbow's
    associated rows (a factor of the training runs, crossed with the corpus samples)."""
    t, truth = simulate_ensemble_table(kind="bootstrap", n_embeddings=n_embeddings, seed=seed,
                                       words_per_class=3, stereotypes_per_class=4, n_human=6,
                                       n_none=8, runs_per_sample=2)
    t["factor_algorithm"] = np.where(t["embedding"].str.endswith("run1"), "sg", "cbow")
    t.loc[(t["connection"] == "associated") & (t["factor_algorithm"] == "cbow"),
          "cosine_distance"] += delta
    return t, truth


def test_a_factor_of_the_runs_shares_the_corpus_samples():
    from bayesbias.models.embedding_level import cells as el_cells
    from bayesbias.models.embedding_level import factor_groups

    c = el_cells(_run_factor_table()[0])
    fac = c.sub_cells["factor"]
    assert fac["per"] == "run" and fac["levels"].tolist() == ["sg", "cbow"]
    groups, labels = factor_groups(fac)
    assert groups.tolist() == [0, 0] and labels == ["all"]
    st = structure(c)
    assert [g.size for g in st["sample_groups"]] == [4]  # all samples, across algorithms
    assert st["run_level"] and st["factor"]["sample_level"].tolist() == [0, 0, 0, 0]
    # crossed with a factor of the samples: samples grouped by decade, runs by combination
    t, _ = _run_factor_table()
    t["factor_decade"] = t["corpus_sample"].map({"bootstrap-1": "1990", "bootstrap-2": "1990",
                                                 "bootstrap-3": "2000", "bootstrap-4": "2000"})
    fac2 = el_cells(t).sub_cells["factor"]
    assert fac2["per"] == "run" and fac2["name"] == "algorithm x decade"
    groups, labels = factor_groups(fac2)
    assert labels == ["1990", "2000"]
    assert [labels[g] for g in groups] == [lv.split(", ")[1] for lv in fac2["levels"]]
    assert [g.size for g in structure(el_cells(t))["sample_groups"]] == [2, 2]


@pytest.mark.parametrize("table", ["runs", "runs x samples"])
def test_run_factor_model_levels_average_to_mu_bar(table):
    import pymc as pm

    from bayesbias.models.embedding_level import cells as el_cells

    t = _run_factor_table()[0]
    if table == "runs x samples":
        t["factor_decade"] = np.where(t["corpus_sample"].isin(["bootstrap-1", "bootstrap-2"]),
                                      "1990", "2000")
    m = build_model(load_spec("embedding_level"), el_cells(t))
    fm, mb = pm.draw([m["factor_mean"], m["mu_bar"]], draws=200, random_seed=2)
    np.testing.assert_allclose(fm.mean(axis=1), mb, atol=1e-12)


def _crossed_table(complete=True):
    """8 bootstrap samples: decade (1990, 2000) x language (en, de), two samples each."""
    t, _ = _factor_table(levels=("1990", "2000"))
    lang = {f"bootstrap-{i}": "en" if i % 2 else "de" for i in range(1, 9)}
    if not complete:  # no 1990 corpus in German
        lang.update({"bootstrap-2": "en", "bootstrap-4": "en"})
    return t.assign(factor_language=t["corpus_sample"].map(lang))


def test_several_factors_are_crossed_and_survive_save():
    from bayesbias.models.embedding_level import cells as el_cells
    from bayesbias.models.files import _cells_from_groups, _data_groups

    c = el_cells(_crossed_table())
    fac = c.sub_cells["factor"]
    assert fac["name"] == "decade x language" and not fac["numeric"]
    assert fac["levels"].tolist() == ["1990, en", "1990, de", "2000, en", "2000, de"]
    assert [f["name"] for f in fac["factors"]] == ["decade", "language"]
    assert fac["factors"][0]["numeric"] and not fac["factors"][1]["numeric"]
    assert fac["level_codes"].tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    # each embedding's combination is its own decade and language
    samples = c.embedding_sample.astype(str)
    for e, k in enumerate(fac["embedding_level"]):
        i = int(samples[e].split("-")[1])
        assert fac["levels"][k] == f"{'1990' if i <= 4 else '2000'}, {'en' if i % 2 else 'de'}"
    st = structure(c)
    assert [g.size for g in st["sample_groups"]] == [2, 2, 2, 2]
    back = _cells_from_groups(*_data_groups(c), "word").sub_cells["factor"]
    assert back["name"] == fac["name"] and back["levels"].tolist() == fac["levels"].tolist()
    assert back["level_codes"].tolist() == fac["level_codes"].tolist()
    assert [f["levels"].tolist() for f in back["factors"]] == [["1990", "2000"], ["en", "de"]]
    assert back["embedding_level"].tolist() == fac["embedding_level"].tolist()


def test_a_distance_file_keeps_its_factor_columns(tmp_path):
    """`fit --distances` reads factor_* columns of a multi-embedding table (CSV and Parquet);
    an empty level is refused, naming the column and the row."""
    from bayesbias.distances import read_distance_table
    from bayesbias.models.embedding_level import cells as el_cells

    t = _crossed_table()
    t["cosine_similarity"] = 1.0 - t["cosine_distance"]
    t.to_csv(tmp_path / "t.csv", index=False)
    t.to_parquet(tmp_path / "t.parquet")
    for name in ("t.csv", "t.parquet"):
        back = read_distance_table(tmp_path / name)
        assert {"factor_decade", "factor_language"} <= set(back.columns)
        assert el_cells(back).sub_cells["factor"]["name"] == "decade x language"
    t.loc[t.index[5], "factor_language"] = None
    t.to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(DistanceTableError, match=r"bad.csv: column factor_language is empty "
                                                 r"at data row 6"):
        read_distance_table(tmp_path / "bad.csv")


@pytest.mark.parametrize("complete", [True, False])
def test_factor_contrasts_of_crossed_factors(complete):
    """Each factor's levels are the plain mean of its combinations' draws; an incomplete cross
    gives the combinations alone, with a note."""
    from types import SimpleNamespace

    import pymc as pm
    import xarray as xr

    from bayesbias.ensemble import factor_contrasts
    from bayesbias.models.embedding_level import cells as el_cells

    c = el_cells(_crossed_table(complete))
    fac = c.sub_cells["factor"]
    m = build_model(load_spec("embedding_level"), c)
    fm = pm.draw(m["factor_mean"], draws=50, random_seed=1)
    post = xr.Dataset({"factor_mean": (("chain", "draw", "factor_level", "connection"),
                                       fm[None])},
                      coords={"factor_level": fac["levels"].tolist(),
                              "connection": list(m.coords["connection"])})
    fc = factor_contrasts(SimpleNamespace(cells=c, posterior=post), ci_prob=0.9, ci_kind="eti")
    an = fm[:, :, 0] - fm[:, :, 3]  # associated - none, (draws, combinations)
    combos = fc[fc["factor"] == "decade x language"]
    assert combos["level"].tolist()[:len(fac["levels"])] == fac["levels"].tolist()
    if not complete:
        assert set(fc["factor"]) == {"decade x language"}
        assert "3 of the 4 combinations" in fc.attrs["note"]
        return
    assert "note" not in fc.attrs
    rows = fc.set_index(["factor", "quantity", "level", "contrast"])
    dec = {lv: an[:, [k for k, x in enumerate(fac["levels"]) if x.startswith(lv)]].mean(axis=1)
           for lv in ("1990", "2000")}
    for lv in ("1990", "2000"):
        got = rows.loc[("decade", "level", lv, "associated - none"), "mean"]
        np.testing.assert_allclose(got, dec[lv].mean(), rtol=1e-12)
    diff = rows.loc[("decade", "difference from 1990", "2000", "associated - none")]
    np.testing.assert_allclose(diff["mean"], (dec["2000"] - dec["1990"]).mean(), rtol=1e-12)
    de = an[:, [k for k, x in enumerate(fac["levels"]) if x.endswith("de")]].mean(axis=1)
    np.testing.assert_allclose(rows.loc[("language", "level", "de", "associated - none"),
                                        "mean"], de.mean(), rtol=1e-12)
    assert ("decade", "trend") not in {(f, q) for f, q, *_ in rows.index}  # two levels only


def test_factor_model_levels_average_to_mu_bar():
    import pymc as pm

    from bayesbias.models.base import structure_key
    from bayesbias.models.embedding_level import cells as el_cells

    spec = load_spec("embedding_level")
    t, _ = _factor_table()
    c = el_cells(t)
    assert structure_key(spec, c) != structure_key(spec, cells_from_table(t))
    m = build_model(spec, c)
    assert m.named_vars_to_dims["factor_mean"] == ("factor_level", "connection")
    fm, mb = pm.draw([m["factor_mean"], m["mu_bar"]], draws=200, random_seed=2)
    np.testing.assert_allclose(fm.mean(axis=1), mb, atol=1e-12)
    # each level's mean carries its own corpora's missing-mean draw: the levels differ
    assert np.std(fm[:, 1, 0] - fm[:, 0, 0]) > 0.01


def test_train_factor_and_a_folder_of_runs(tmp_path):
    from bayesbias.cli import main
    from bayesbias.corpora import synthetic_wordlist_toml, write_synthetic_corpus
    from bayesbias.ensemble import manifest_path, manifest_table
    from bayesbias.errors import InputDataError

    wl = synthetic_wordlist_toml(tmp_path / "syn.toml") and tmp_path / "syn.toml"
    for dec, seed in (("1990", 1), ("2000", 2)):
        c = write_synthetic_corpus(tmp_path / f"c{dec}.txt.gz", n_docs=200, seed=seed)
        assert main(["--quiet", "train", str(c), "-o", str(tmp_path / "runs" / dec),
                     "--bootstrap", "2", "--vector-size", "8", "--epochs", "1",
                     "--min-count", "1", "--factor", f"decade={dec}"]) == 0
    assert manifest_path(tmp_path / "runs") == tmp_path / "runs"
    t = manifest_table(tmp_path / "runs", wl)
    assert sorted(t["embedding"].unique()) == ["1990/bootstrap1-seed1", "1990/bootstrap2-seed1",
                                               "2000/bootstrap1-seed1", "2000/bootstrap2-seed1"]
    assert t.groupby("corpus_sample")["factor_decade"].nunique().eq(1).all()
    assert set(t["factor_decade"]) == {"1990", "2000"}
    assert set(t["corpus_sample"]) >= {"1990/bootstrap-1", "2000/bootstrap-2"}
    assert main(["--quiet", "train", str(tmp_path / "c1990.txt.gz"), "-o",
                 str(tmp_path / "runs" / "x"), "--factor", "decade"]) == 2
    assert main(["--quiet", "train", str(tmp_path / "c1990.txt.gz"), "-o",
                 str(tmp_path / "runs" / "x"), "--vector-size", "8", "--epochs", "1",
                 "--min-count", "1"]) == 0  # a run without the factor
    with pytest.raises(InputDataError, match="same factors"):
        manifest_table(tmp_path / "runs", wl)


def test_runs_of_one_corpus_share_its_samples(tmp_path):
    """Two algorithms trained on the same bootstrap resamples of one corpus: the table's
    corpus samples are shared (same digests), so the algorithm is a factor of the runs."""
    from bayesbias.cli import main
    from bayesbias.corpora import synthetic_wordlist_toml, write_synthetic_corpus
    from bayesbias.ensemble import manifest_table
    from bayesbias.models.embedding_level import cells as el_cells

    wl = synthetic_wordlist_toml(tmp_path / "syn.toml") and tmp_path / "syn.toml"
    c = write_synthetic_corpus(tmp_path / "c.txt.gz", n_docs=200, seed=1)
    other = write_synthetic_corpus(tmp_path / "d.txt.gz", n_docs=200, seed=2)
    for alg, sg in (("sg", "1"), ("cbow", "0")):
        assert main(["--quiet", "train", str(c), "-o", str(tmp_path / "runs" / alg),
                     "--bootstrap", "2", "--sg", sg, "--vector-size", "8", "--epochs", "1",
                     "--min-count", "1", "--factor", f"algorithm={alg}"]) == 0
    t = manifest_table(tmp_path / "runs", wl)
    pairs = t[["embedding", "corpus_sample"]].drop_duplicates().sort_values("embedding")
    assert pairs["corpus_sample"].tolist() == ["cbow/bootstrap-1", "cbow/bootstrap-2"] * 2
    fac = el_cells(t).sub_cells["factor"]
    assert fac["per"] == "run" and sorted(fac["levels"]) == ["cbow", "sg"]
    # another corpus, or another --bootstrap-seed, gives other samples
    assert main(["--quiet", "train", str(other), "-o", str(tmp_path / "runs" / "x"),
                 "--bootstrap", "2", "--vector-size", "8", "--epochs", "1", "--min-count",
                 "1", "--factor", "algorithm=sg"]) == 0
    assert main(["--quiet", "train", str(c), "-o", str(tmp_path / "runs" / "y"),
                 "--bootstrap", "2", "--bootstrap-seed", "5", "--vector-size", "8",
                 "--epochs", "1", "--min-count", "1", "--factor", "algorithm=sg"]) == 0
    t = manifest_table(tmp_path / "runs", wl)
    assert t.groupby("corpus_sample")["embedding"].nunique().to_dict() == {
        "cbow/bootstrap-1": 2, "cbow/bootstrap-2": 2, "x/bootstrap-1": 1, "x/bootstrap-2": 1,
        "y/bootstrap-1": 1, "y/bootstrap-2": 1}


@pytest.mark.slow
def test_factor_recovers_a_level_difference_and_survives_save(tmp_path):
    from bayesbias.ensemble import factor_contrasts
    from bayesbias.models import fit_model, load_fit

    t, _ = _factor_table(delta=-0.08, seed=7)
    f = fit_model(t, "embedding_level", draws=1000, tune=1000, chains=2, seed=3)
    fc = factor_contrasts(f, ci_prob=0.9, ci_kind="eti").set_index(["quantity", "contrast"])
    diff = fc.loc[("difference from 1990", "associated - none")]
    assert diff["lower"] <= -0.08 <= diff["upper"] and diff["upper"] < 0
    same = fc.loc[("difference from 1990", "human - none")] if ("difference from 1990",
                                                               "human - none") in fc.index \
        else fc.loc[("difference from 1990", "associated - human")]
    assert same["lower"] < -0.08 < same["upper"] or same["upper"] < 0  # moves with associated
    f.save(tmp_path / "f.nc")
    g = load_fit(tmp_path / "f.nc")
    assert g.cells.sub_cells["factor"]["levels"].tolist() == ["1990", "2000"]
    pd_fc = factor_contrasts(g, ci_prob=0.9, ci_kind="eti")
    assert pd_fc["mean"].tolist() == factor_contrasts(f, ci_prob=0.9, ci_kind="eti")[
        "mean"].tolist()


@pytest.mark.slow
def test_crossed_factors_recover_a_decade_difference():
    """decade x language, `associated` moved by -0.08 in 2000: the decade difference averaged
    over languages covers -0.08 and lies below 0; the language difference covers 0."""
    from bayesbias.ensemble import factor_contrasts
    from bayesbias.models import fit_model

    t = _crossed_table()
    t.loc[(t["connection"] == "associated") & (t["factor_decade"] == "2000"),
          "cosine_distance"] -= 0.08
    f = fit_model(t, "embedding_level", draws=1000, tune=1000, chains=2, seed=3)
    fc = factor_contrasts(f, ci_prob=0.9, ci_kind="eti").set_index(
        ["factor", "quantity", "contrast"])
    dec = fc.loc[("decade", "difference from 1990", "associated - none")]
    assert dec["lower"] <= -0.08 <= dec["upper"] and dec["upper"] < 0
    lang = fc.loc[("language", "difference from en", "associated - none")]
    assert lang["lower"] < 0 < lang["upper"]


@pytest.mark.slow
def test_a_run_factor_recovers_a_paired_difference():
    """Each bootstrap sample trained with two algorithms, `associated` moved by -0.08 in the
    second: the difference covers -0.08 and lies below 0."""
    from bayesbias.ensemble import factor_contrasts
    from bayesbias.models import fit_model

    t, _ = _run_factor_table(delta=-0.08, seed=7)
    f = fit_model(t, "embedding_level", draws=1000, tune=1000, chains=2, seed=3)
    fc = factor_contrasts(f, ci_prob=0.9, ci_kind="eti").set_index(["quantity", "contrast"])
    diff = fc.loc[("difference from sg", "associated - none")]
    assert diff["lower"] <= -0.08 <= diff["upper"] and diff["upper"] < 0


def test_rows_in_any_order_give_the_same_cells():
    """A shuffled ensemble table gives the same cells, row by row, as the table itself: the
    rows are sorted canonically, so the same rows in any order give the same draws."""
    from bayesbias.models.embedding_level import attribute_groups, cells

    t, _ = _table("bootstrap")
    a = cells(t)
    b = cells(t.sample(frac=1.0, random_state=3).reset_index(drop=True))
    assert list(a.units) == list(b.units) and list(a.attributes) == list(b.attributes)
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.attr_idx, b.attr_idx)
    np.testing.assert_array_equal(a.mean, b.mean)
    la, lb = attribute_groups(a), attribute_groups(b)
    for key in la:
        np.testing.assert_array_equal(la[key], lb[key], err_msg=key)


def test_an_unordered_table_still_names_its_bad_row():
    """Validation runs on the rows as given, so an error names the user's row number."""
    from bayesbias.models.embedding_level import cells as embedding_level_cells

    t, _ = _table("bootstrap")
    t = t.iloc[::-1].reset_index(drop=True)
    t.loc[5, "cosine_distance"] = np.nan
    with pytest.raises(DistanceTableError, match="first at row 5"):
        embedding_level_cells(t)


# ---- the native kernel (word effects and cell means integrated out) ----------------------

def _effects_and_roles(layout, vals, data, h_n, hyp):
    """Per-row effect sums B and v of the kernel's maps, and (m, tau, eta, sig) per cell."""
    def comb(idx, coef):
        return np.sum(np.where(idx >= 0, vals[np.maximum(idx, 0).astype(int)] * coef, 0.0),
                      axis=-1)

    roles = data[16 + 5 * h_n:16 + 5 * h_n + 16].astype(int)
    return (comb(*layout["bmap"]), comb(*layout["vmap"]),
            tuple(hyp[roles[4 * q:4 * q + 4]] for q in range(4)))


def _sets_reference(data, sets, z, hyp):
    """Return the zero-sum sets' values at `z` and their log prior density (with the shifted
    sets' Jacobian), from the formulas of the kernel's comment."""
    vals = np.zeros_like(z)
    lp = 0.0
    for z0, size, si, cen, anchor in sets:
        z0, size = int(z0), int(size)
        zz = z[z0:z0 + size]
        s = hyp[int(si)]
        if cen >= 2.0:  # shifted: zz are the e of z = a + b (e - ebar) + ebar
            mp = data[int(anchor):int(anchor) + 2 * size].reshape(size, 2)
            if cen == 3.0:  # rotated too: e = Q eta
                q = data[int(anchor) + 2 * size:int(anchor) + 2 * size + size**2]
                q = q.reshape(size, size)
                assert np.allclose(q @ q.T, np.eye(size))
                zz = q @ zz
            den = 1.0 + s**2 * mp[:, 1]
            jac = np.diag(1 / np.sqrt(den)) @ (np.eye(size) - 1 / size) + 1 / size
            zz = s * mp[:, 0] / den + jac @ zz
            lp += np.linalg.slogdet(jac)[1]
        d = zz - zz.mean()
        if cen == 1.0:
            vals[z0:z0 + size] = d
            lp += -(size - 1) * np.log(s) - (d**2).sum() / (2 * s**2) \
                - zz.mean() ** 2 / (2 * anchor**2)
        else:
            vals[z0:z0 + size] = s * d
            lp += -0.5 * (zz**2).sum()
    return vals, lp


def _kernel_reference(spec, cells, data, layout, x):
    """Log-density at `x` by a dense multivariate Normal of the rows (everything Gaussian
    integrated out by hand), plus the sets' and the hyperparameters' priors."""
    from scipy.stats import multivariate_normal

    from bayesbias.models.embedding_level import row_attribute
    from bayesbias.models.priors import logpdf

    h_n = int(data[0])
    rows = data[16:16 + 5 * h_n].reshape(-1, 5)
    hyp = np.where(rows[:, 1] > 0.5, np.exp(x[:h_n]), x[:h_n])
    z = x[h_n:]
    vals, lp = _sets_reference(data, layout["sets"], z, hyp)
    priors = []
    for _name, size, prior in layout["blocks"]:
        priors += [spec.priors[prior]] * size
    for j, p in enumerate(priors):
        lp += float(logpdf(p, hyp[j])) + (x[j] if rows[j, 1] > 0.5 else 0.0)
    B, v_row, (m, tau, eta, sig) = _effects_and_roles(layout, vals, data, h_n, hyp)
    st = structure(cells)
    unit, conn = cells.unit_idx, cells.conn_idx
    e = cells.unit_embedding[unit]
    w = st["word_of"][unit]
    j = row_attribute(cells, layout["stereo"].size > 0)[0]
    mean = m[conn] + B[e, conn] + v_row[j]
    same_c = conn[:, None] == conn[None, :]
    cov = (np.diag(sig[conn] ** 2) + same_c * (unit[:, None] == unit[None, :]) * eta[conn] ** 2
           + same_c * (w[:, None] == w[None, :]) * tau[conn] ** 2)
    if layout.get("uidx") is not None:  # the attribute x sample deviations, integrated out
        r_n = int(data[13])
        psi = hyp[int(data[14])]
        iu = layout["uidx"][j]
        a, r = iu // r_n, iu % r_n
        cov = cov + psi**2 * (a[:, None] == a[None, :]) * ((r[:, None] == r[None, :]) - 1 / r_n)
    return lp + multivariate_normal(mean, cov).logpdf(cells.y)


@pytest.mark.parametrize("kind", ["bootstrap", "seeds", "ragged", "centred", "noncentred",
                                  "integrated", "integrated ragged"])
def test_native_kernel_density_and_gradient(kind, monkeypatch):
    """The kernel's log-density differs from a dense multivariate Normal of the rows (word
    effects, cell deviations integrated out by hand) by a constant, to 1e-8; its gradient
    matches finite differences. ``ragged``: one word's rows dropped at random, so its
    segments stand alone (classes of one segment) beside the other words' classes.
    ``centred`` / ``noncentred``: every zero-sum set in that form (``CENTRED_RATIO``;
    otherwise the attribute x sample deviations are shifted, ``SHIFTED_SETS``).
    ``integrated``: the attribute x sample deviations integrated out too
    (``ATTRIBUTE_SAMPLE_INTEGRATED``; the reference has them in its covariance).
    """
    import ctypes

    import bayesbias.models.embedding_level as el
    from bayesbias.models.embedding_level import _library, marginal_kernel
    from bayesbias.models.embedding_level import cells as el_cells

    if _library() is None:
        pytest.skip("no C compiler")
    if kind in ("centred", "noncentred"):
        for name in ("CENTRED_RATIO", "SAMPLE_CENTRED_RATIO"):
            monkeypatch.setattr(el, name, -np.inf if kind == "centred" else np.inf)
        monkeypatch.setattr(el, "SHIFTED_SETS", ())
    monkeypatch.setattr(el, "ATTRIBUTE_SAMPLE_INTEGRATED", kind.startswith("integrated"))
    t, _ = _table(kind if kind == "seeds" else "bootstrap", n_embeddings=3, seed=3)
    if kind.endswith("ragged"):
        first = t["protected_word"] == t["protected_word"].iloc[0]  # one word's rows
        keep = ~first | (np.random.default_rng(2).random(len(t)) > 0.3)
        t = t[keep].reset_index(drop=True)
    spec = load_spec("embedding_level")
    c = el_cells(t)
    k = marginal_kernel(spec, c)
    assert (k.data[12] > 0) == kind.startswith("integrated")
    if kind.endswith("ragged"):
        from bayesbias.models.embedding_level import pack as _pack

        sizes = _pack(spec, c)[1]["classes"]["size"]
        assert (sizes == 1).any() and (sizes > 1).any()
    if kind.startswith("integrated"):  # attributes sharing their block (el_umarg's kinds)
        from bayesbias.models.embedding_level import pack as _pack

        rep, count, kinds = _pack(spec, c)[1]["kinds"]
        n_kind = rep.size
        assert np.array_equal(np.bincount(kinds, minlength=n_kind), count)
        assert np.array_equal(kinds[rep], np.arange(n_kind))
        end = _pack(spec, c)[1]["shift_at"]  # el_umarg's data ends where the shifts begin
        assert np.array_equal(k.data[end - (c.attributes.size + 2 * n_kind):end],
                              np.r_[rep, count, kinds])
        assert count.sum() == c.attributes.size and (count > 1).any()
        if kind == "integrated ragged":  # a kind of one attribute beside shared ones
            assert (count == 1).any()
        else:  # balanced: one kind per attribute kind (stereotypes, human, neutral)
            assert n_kind < c.attributes.size // 2
    from bayesbias.models.embedding_level import pack

    data, layout = pack(spec, c)
    layout["sets"] = data[16 + 5 * int(data[0]) + 16:][:5 * int(data[2])].reshape(-1, 5)
    assert np.array_equal(data, k.data)
    if kind in ("centred", "noncentred"):
        flags = set(layout["sets"][:, 3])  # strength_sample: always non-centred
        assert flags == {0.0} if kind == "noncentred" else 1.0 in flags
    elif kind != "seeds" and not kind.startswith("integrated"):  # attribute x sample: shifted
        assert set(layout["sets"][:, 3]) >= {2.0} and layout["choices"]["attribute_sample"] \
            == "shifted"
    dim = k.dim
    ptr = ctypes.POINTER(ctypes.c_double)

    def logp(x):
        x = np.ascontiguousarray(x, float)
        g, lp = np.empty(dim), np.zeros(1)
        rc = k.logp.ctypes(dim, x.ctypes.data_as(ptr), g.ctypes.data_as(ptr),
                           lp.ctypes.data_as(ptr), data.ctypes.data_as(ptr))
        assert rc == 0
        return lp[0], g

    rng = np.random.default_rng(0)
    xs = [k.init(rng) + rng.normal(0, 0.3, dim) for _ in range(3)]
    diffs = [logp(x)[0] - _kernel_reference(spec, c, data, layout, x) for x in xs]
    assert np.ptp(diffs) < 1e-8
    x = xs[0]
    _, g = logp(x)
    eps = 1e-6
    num = np.array([(logp(x + eps * np.eye(dim)[i])[0] - logp(x - eps * np.eye(dim)[i])[0])
                    / (2 * eps) for i in range(dim)])
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["balanced", "ragged"])
def test_integrated_attribute_sample_draws_are_their_conditional(kind, monkeypatch):
    """``el_udraw`` draws the integrated attribute x sample deviations from their exact
    conditional: with no noise it gives the conditional mean of a dense Gaussian computation
    (rows given every other effect, word effects and cell deviations integrated out), to
    1e-8; 20,000 draws match its covariance (entries within 5 Monte Carlo sd). ``ragged``:
    some of one word's rows dropped, so some attributes share their block and some do not."""
    import ctypes

    import bayesbias.models.embedding_level as el
    from bayesbias.models.embedding_level import _library, marginal_kernel, row_attribute
    from bayesbias.models.embedding_level import cells as el_cells

    if _library() is None:
        pytest.skip("no C compiler")
    monkeypatch.setattr(el, "ATTRIBUTE_SAMPLE_INTEGRATED", True)
    t, _ = _table("bootstrap", n_embeddings=3, seed=3)
    if kind == "ragged":  # attributes sharing a block beside attributes alone in theirs
        first = t["protected_word"] == t["protected_word"].iloc[0]
        keep = ~first | (np.random.default_rng(2).random(len(t)) > 0.3)
        t = t[keep].reset_index(drop=True)
    spec = load_spec("embedding_level")
    c = el_cells(t)
    k = marginal_kernel(spec, c)
    data = k.data
    _, layout = el.pack(spec, c)
    assert layout["uidx"] is not None
    count = layout["kinds"][1]
    assert (count > 1).any() and ((count == 1).any() if kind == "ragged" else True)
    rng = np.random.default_rng(4)
    x = k.init(rng) + rng.normal(0, 0.3, k.dim)
    x[int(data[14])] = np.log(0.05)  # psi: a visible share of the rows' variance
    h_n = int(data[0])
    rows = data[16:16 + 5 * h_n].reshape(-1, 5)
    hyp = np.where(rows[:, 1] > 0.5, np.exp(x[:h_n]), x[:h_n])
    # the mean and covariance of the rows without the deviations (kernel reference, by hand)
    sets = data[16 + 5 * h_n + 16:][:5 * int(data[2])].reshape(-1, 5)
    vals = _sets_reference(data, sets, x[h_n:], hyp)[0]
    B, v_row, (m, tau, eta, sig) = _effects_and_roles(layout, vals, data, h_n, hyp)
    st = structure(c)
    unit, conn = c.unit_idx, c.conn_idx
    e, w = c.unit_embedding[unit], st["word_of"][unit]
    j = row_attribute(c, layout["stereo"].size > 0)[0]
    mean = m[conn] + B[e, conn] + v_row[j]
    same_c = conn[:, None] == conn[None, :]
    cov0 = (np.diag(sig[conn] ** 2) + same_c * (unit[:, None] == unit[None, :]) * eta[conn] ** 2
            + same_c * (w[:, None] == w[None, :]) * tau[conn] ** 2)
    r_n, n_u, psi = int(data[13]), int(data[12]), hyp[int(data[14])]
    zmat = np.zeros((c.y.size, n_u))
    zmat[np.arange(c.y.size), layout["uidx"][j]] = 1.0
    proj = np.kron(np.eye(n_u // r_n), np.eye(r_n) - 1.0 / r_n)
    prior = psi**2 * proj
    cov_y = cov0 + zmat @ prior @ zmat.T
    gain = prior @ zmat.T @ np.linalg.inv(cov_y)
    want_mean = gain @ (c.y - mean)
    want_cov = prior - gain @ zmat @ prior
    fn = _library().el_udraw
    fn.restype = ctypes.c_int64
    ptr = ctypes.POINTER(ctypes.c_double)
    fn.argtypes = [ctypes.c_uint64, ptr, ptr, ptr, ptr]
    n_noise = n_u + int(data[8]) + int(data[5]) + int(data[6])
    xs = np.ascontiguousarray(x)

    def draw(noise):
        out = np.empty(n_u)
        assert fn(k.dim, xs.ctypes.data_as(ptr), out.ctypes.data_as(ptr),
                  np.ascontiguousarray(noise).ctypes.data_as(ptr),
                  data.ctypes.data_as(ptr)) == 0
        return out

    np.testing.assert_allclose(draw(np.zeros(n_noise)), want_mean, atol=1e-8)
    draws = np.array([draw(z) for z in rng.standard_normal((20_000, n_noise))])
    got = np.cov(draws.T)
    sd = np.sqrt((np.outer(np.diag(want_cov), np.diag(want_cov)) + want_cov**2) / draws.shape[0])
    assert np.all(np.abs(got - want_cov) <= 5 * sd + 1e-12)
    np.testing.assert_allclose(draws.mean(axis=0), want_mean,
                               atol=5 * np.sqrt(np.diag(want_cov).max() / draws.shape[0]))


def test_cell_moments_are_the_conditional_the_cell_means_are_drawn_from():
    """``cell_moments`` rebuilds, from the posterior, the Normal each drawn cell mean came
    from: (mu - mean) / sd is standard Normal over draws and cells (no bias, unit spread;
    tolerances about 5 standard errors at 2 x 400 draws x 64 cells)."""
    from bayesbias.models import fit_model
    from bayesbias.models.embedding_level import cell_moments

    t, _ = _table()
    f = fit_model(t, "embedding_level", draws=400, tune=400, chains=2, seed=3, checked=False)
    mean, sd = cell_moments(f)(None, slice(None))
    mu = f.posterior["mu"].transpose("chain", "draw", ...).values.reshape(mean.shape[0], -1)
    z = (mu - mean) / sd
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03
    assert np.abs(z.mean(axis=0)).max() < 0.3  # per cell: 800 draws, se 0.035


def test_a_fit_without_cell_mean_draws_checks_and_summarises():
    """keep_word_draws=False: no per-cell draws; the model checks, the predictive check and
    the per-word means come from the cell means' conditional moments, and agree with a fit
    that keeps the draws (same seed: the same sampled parameters)."""
    from bayesbias.models import fit_model

    t, _ = _table()
    kw = dict(draws=400, tune=400, chains=2, seed=3)
    full = fit_model(t, "embedding_level", **kw)
    lean = fit_model(t, "embedding_level", keep_word_draws=False, **kw)
    assert full.word_draws and not lean.word_draws
    np.testing.assert_array_equal(full.posterior["tau"].values, lean.posterior["tau"].values)
    assert [c.code for c in lean.checks] == [c.code for c in full.checks]
    a, b = full.word_means(), lean.word_means()
    assert np.isfinite(b[["mean", "sd"]].to_numpy()).all()
    # the same posterior: means within a few Monte Carlo errors, sds within 15%
    assert (np.abs(a["mean"] - b["mean"]) < 0.2 * a["sd"]).all()
    assert np.allclose(a["sd"], b["sd"], rtol=0.15)
    pa, pb = full.ppc(), lean.ppc()
    assert abs(pa["inside_0.89"].iloc[-1] - pb["inside_0.89"].iloc[-1]) < 0.03
    wc = lean.word_contrasts()
    assert len(wc) == len(full.word_contrasts()) and np.isfinite(wc["mean"]).all()


def test_shifted_sets_expand_and_invert():
    """The kernel's expansion of a point (the set values) and ``_unconstrained``'s inverse
    of it give the same values back, to 1e-12, with every set shifted and the stereotype
    set rotated; the rotation is orthogonal, its first column the mean and its second the
    contrast of the two classes' stereotypes."""
    import ctypes

    import bayesbias.models.embedding_level as el

    if el._library() is None:
        pytest.skip("no C compiler")
    t, _ = _table("bootstrap", n_embeddings=3, seed=3)
    spec = load_spec("embedding_level")
    c = el.cells(t)
    k = el.marginal_kernel(spec, c)
    data, lay = k.data, el.pack(spec, c)[1]
    lay["sets"] = data[16 + 5 * int(data[0]) + 16:][:5 * int(data[2])].reshape(-1, 5)
    lay["data"] = data
    assert set(lay["choices"].values()) == {"shifted"} and (lay["sets"][:, 3] == 3.0).sum() == 1
    kinds = np.array(c.attribute_kind)
    idx = np.flatnonzero(kinds == "stereotype")
    q = el.class_rotation(c, idx)
    assert np.allclose(q.T @ q, np.eye(idx.size))
    assert np.allclose(np.abs(q[:, 0]), 1 / np.sqrt(idx.size))
    assert np.unique(np.round(np.abs(q[:, 1]), 12)).size == 1  # +-1/sqrt(n): the contrast
    ptr = ctypes.POINTER(ctypes.c_double)

    def expand(x):
        out = np.empty(k.dim)
        assert k.expand.ctypes(k.dim, k.dim, x.ctypes.data_as(ptr), out.ctypes.data_as(ptr),
                               data.ctypes.data_as(ptr)) == 0
        return out

    rng = np.random.default_rng(1)
    h = sum(b[1] for b in lay["blocks"])
    outs = np.array([expand(k.init(rng) + rng.normal(0, 0.5, k.dim)) for _ in range(3)])
    raw, pos = {}, 0
    for name, size, _ in lay["blocks"]:
        raw[name] = outs[:, pos:pos + size].reshape(1, 3, *((size,) if size > 1 else ()))
        pos += size
    raw["set_values"] = outs[:, h:].reshape(1, 3, -1)
    back = np.array([expand(np.ascontiguousarray(x)) for x in el._unconstrained(lay, raw)])
    np.testing.assert_allclose(back, outs, rtol=0, atol=1e-12)

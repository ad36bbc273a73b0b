"""Group rates (bayesbias.groups, models/group_rates.py, ``bayesbias groups``)."""

import gzip
import hashlib
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayesbias.datasets import DATA_DIR, adult_llama
from bayesbias.errors import InputDataError, InvalidArgumentError
from bayesbias.groups import GroupRates, bin_column
from bayesbias.models.group_rates import Kernel, load_group_spec

POS = "greater than 50K"
SHA = "709fec003fb244111f383b94e11a7bf9f52a43f4f93ceef4f08b90b3b38ea104"


@pytest.fixture(scope="module")
def adult():
    return adult_llama()


def _indep(t, **kw):
    return GroupRates(t["label"], t["pred"], sensitive_features=t[["race", "sex", "age"]],
                      pos_label=POS, bins={"age": [25, 65]}, structure="independent",
                      **{"metrics": ["tpr", "fpr", "error_rate", "selection_rate"], **kw})


def test_fixture_is_the_attributed_file_and_its_cells(adult):
    folder = DATA_DIR / "adult_llama"
    raw = gzip.decompress((folder / "adult_llama.csv.gz").read_bytes())
    assert hashlib.sha256(raw).hexdigest() == SHA
    assert (folder / "ATTRIBUTION.md").is_file() and (folder / "LICENSE-CC-BY").is_file()
    g = _indep(adult, draws=10, chains=1)
    f = g.to_frame()
    err = f[f.metric == "error_rate"]
    assert len(err) == 30 and err.n.sum() == 48842 and err.k.sum() == 8348
    assert err.n.min() == 2 and err.n.max() == 23444 and (err.n >= 40).sum() == 23
    # cell 0 of ATTRIBUTION.md: Amer-Indian-Eskimo / Female / <25, n 41, error 0.0488
    first = err.iloc[0]
    assert (first.race, first.sex, first.age, first.n) == ("Amer-Indian-Eskimo", "Female",
                                                           "<25", 41)
    assert first.raw == pytest.approx(2 / 41)


def test_independent_is_the_exact_beta_posterior_and_fairlearn(adult):
    fairlearn = pytest.importorskip("fairlearn.metrics")
    g = _indep(adult, draws=4000, chains=1, ci_prob=0.9)
    f = g.to_frame()
    for m in g.metrics:
        d = f[f.metric == m]
        a, b = 1 + d.k.to_numpy(), 1 + d.n.to_numpy() - d.k.to_numpy()
        np.testing.assert_allclose(d.lower, stats.beta.ppf(0.05, a, b), rtol=0, atol=1e-12)
        np.testing.assert_allclose(d.upper, stats.beta.ppf(0.95, a, b), rtol=0, atol=1e-12)
        # sampled draws agree with the exact mean within Monte Carlo error (5 SE)
        dr = g.draws(m)
        se = dr.std(axis=0) / np.sqrt(dr.shape[0])
        assert np.all(np.abs(dr.mean(axis=0) - d["mean"].to_numpy()) < 5 * se + 1e-12)
    # mode of Beta(1 + k, 1 + n - k) = k / n = fairlearn's MetricFrame.by_group
    y = adult["label"].str.strip() == POS
    p = adult["pred"].str.strip() == POS
    sf = pd.DataFrame({"race": adult.race, "sex": adult.sex,
                       "age": pd.cut(adult.age, [-np.inf, 25, 65, np.inf], right=False,
                                     labels=["<25", "25-64", ">=65"]).astype(str)})
    mf = fairlearn.MetricFrame(metrics={"tpr": fairlearn.true_positive_rate,
                                        "fpr": fairlearn.false_positive_rate,
                                        "selection_rate": fairlearn.selection_rate,
                                        "error_rate": lambda a, b: float(np.mean(a != b))},
                               y_true=y, y_pred=p, sensitive_features=sf)
    ours = g.by_group
    for m in ("tpr", "fpr", "selection_rate", "error_rate"):
        theirs = mf.by_group[m].reindex(ours.index)
        mode = ours[(m, "mode")]
        keep = ours[(m, "n")] > 0
        if m == "tpr":  # fairlearn gives 0 (with a warning) where a cell has no positives
            keep &= ours[(m, "n")] > 0
        np.testing.assert_allclose(mode[keep], theirs[keep], rtol=0, atol=1e-12)


def test_kernel_gradient_matches_finite_differences(adult):
    g = _indep(adult, draws=5, chains=1, metrics=["error_rate", "tpr"])
    kern = Kernel(g.k, g.n, g.shape, load_group_spec(structure="full"))
    # every coordinate's parametrisation in use: non-centred, centred and partly centred
    kern.top_weight[:] = np.resize([0.0, 1.0, 0.3, 0.97], kern.top_weight.shape)
    kern.low_weight[:] = np.resize([1.0, 0.0, 0.6], kern.low_weight.shape)
    x = np.random.default_rng(0).normal(size=kern.ndim) * 0.3
    lp, grad = kern.logp(x)
    eps = 1e-6
    num = np.array([(kern.logp(x + eps * e)[0] - kern.logp(x - eps * e)[0]) / (2 * eps)
                    for e in np.eye(kern.ndim)])
    np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-4)


@pytest.mark.slow
def test_kernel_density_equals_the_pymc_model(adult):
    """The kernel's density equals the PyMC model's up to a constant, at random points.

    ZeroSumNormal lower orders, a Normal per cell for the top order.
    """
    g = _indep(adult, draws=5, chains=1, metrics=["error_rate"])
    spec = load_group_spec(structure="full")
    kern = Kernel(g.k, g.n, g.shape, spec)
    kern.top_weight[:] = 0.0  # the PyMC model is non-centred throughout
    kern.low_weight[:] = 0.0
    from bayesbias.models.group_rates import build_model

    model = build_model(g.k, g.n, g.shape, spec)
    logp = model.compile_logp()
    import pytensor.tensor as pt

    rng = np.random.default_rng(1)
    diffs = []
    for _ in range(3):
        x = rng.normal(size=kern.ndim) * 0.3
        mu, logsd, z = kern.split(x)
        point = {"intercept": mu}
        for j, o in enumerate(kern.orders):
            point[f"sd_{o}_log__"] = logsd[:, j]
        parts = zip(kern.lower, kern.bases, kern.t_coord, strict=True)
        for j, (t, basis, start) in enumerate(parts):
            coords = z[:, start:start + basis.shape[1]]
            sub = tuple(g.shape[a] for a in t.attributes)
            table = (coords @ basis.T).reshape(1, *sub)  # the zero-sum effect table
            rv = model[f"z_{j}"]
            value = model.rvs_to_values[rv]
            point[value.name] = model.rvs_to_transforms[rv].forward(pt.as_tensor(table)).eval()
        point["z_cell"] = z[:, kern.D_low:]
        diffs.append(kern.logp(x)[0] - logp(point))
    assert np.ptp(diffs) < 1e-8


def test_bins_labels_and_missing():
    codes, labels = bin_column([17, 24, 25, 64, 65, 90], [25, 65], "age")
    assert labels == ["<25", "25-64", ">=65"] and codes.tolist() == [0, 0, 1, 1, 2, 2]
    _, labels = bin_column([0.1, 0.5], [0.25], "x")
    assert labels == ["<0.25", ">=0.25"]


def _toy(rows=200, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"y": rng.integers(0, 2, rows), "p": rng.integers(0, 2, rows),
                         "s": rng.uniform(0, 1, rows), "g": rng.choice(["a", "b"], rows),
                         "h": rng.choice(["x", "y", "z"], rows)})


def test_bad_input_is_refused_with_rows():
    t = _toy()
    with pytest.raises(InputDataError, match="0/1"):
        GroupRates(t.y + 1, t.p, sensitive_features=t.g, structure="independent")
    with pytest.raises(InputDataError, match="two classes"):
        GroupRates(["a", "b", "c"] * 3, ["a"] * 9, sensitive_features=["g"] * 9, pos_label="a",
                   structure="independent")
    bad = t.copy()
    bad.loc[[3, 7], "g"] = np.nan
    with pytest.raises(InputDataError, match=r"rows 3, 7"):
        GroupRates(bad.y, bad.p, sensitive_features=bad[["g"]], structure="independent")
    ok = GroupRates(bad.y, bad.p, sensitive_features=bad[["g"]], structure="independent",
                    missing="level", draws=10, chains=1)
    assert ok.levels[0] == ["a", "b", "missing"]
    s = t.s.copy()
    s.iloc[5] = 1.5
    with pytest.raises(InputDataError, match=r"\[0, 1\].*rows 5"):
        GroupRates(t.y, y_score=s, sensitive_features=t.g, structure="independent")
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        GroupRates(t.y, t.p, y_score=t.s, sensitive_features=t.g)
    with pytest.raises(InvalidArgumentError, match="unknown metric"):
        GroupRates(t.y, t.p, sensitive_features=t.g, metrics=["auc"])


def test_no_positives_and_single_group_say_so():
    t = _toy()
    y = t.y.copy()
    y[t.g == "a"] = 0  # group a has no positives: its TPR is the prior's
    g = GroupRates(y, t.p, sensitive_features=t.g, metrics=["tpr", "fpr"],
                   structure="independent", draws=200, chains=1)
    row = g.to_frame().query("metric == 'tpr' and g == 'a'").iloc[0]
    assert row.n == 0 and row.prior_driven and row["mean"] == pytest.approx(0.5)
    assert any("no rows with y_true = 1" in n and "prior" in n for n in g.notes)
    assert g.difference().query("metric == 'tpr'").verdict.iloc[0] == "no comparison"
    one = GroupRates(t.y, t.p, sensitive_features=["only"] * len(t), structure="independent",
                     draws=50, chains=1)
    assert any("one group only" in n for n in one.notes)
    assert one.difference().verdict.iloc[0] == "no comparison"
    assert str(one)


def test_scores_and_fairlearn_names():
    t = _toy()
    g = GroupRates(t.y, y_score=t.s, threshold=0.3, sensitive_features=t[["g", "h"]],
                   metrics=["true_positive_rate", "selection_rate"], structure="independent",
                   draws=100, chains=1)
    assert g.metrics == ["tpr", "selection_rate"]
    sel = g.to_frame().query("metric == 'selection_rate'")
    assert sel.k.sum() == (t.s >= 0.3).sum()
    assert g.by_group.index.names == ["g", "h"]
    dp = g.demographic_parity(delta=0.1)
    assert dp.quantity.iloc[0] == "demographic_parity_difference"
    assert {"mean", "lower", "upper", "p_above_delta", "verdict"} <= set(dp.columns)


@pytest.mark.slow
def test_full_fit_small_and_derived_quantities(adult):
    """A short pooled fit of the fixture: every output has its interval and n beside it."""
    g = GroupRates(adult["label"], adult["pred"], sensitive_features=adult[["race", "sex", "age"]],
                   pos_label=POS, bins={"age": [25, 65]}, metrics=["tpr", "fpr", "error_rate"],
                   draws=150, tune=150, chains=1, seed=3)
    f = g.to_frame()
    assert f.lower.le(f["mean"]).all() and f["mean"].le(f.upper).all()
    eo = g.equalized_odds(delta=0.05)
    assert eo.quantity.iloc[0] == "equalized_odds_difference"
    assert eo.lower.iloc[0] <= eo["mean"].iloc[0] <= eo.upper.iloc[0]
    share = g.interaction_share()
    assert share[["lower", "upper"]].notna().all().all()
    assert ((share.lower >= 0) & (share.upper <= 1)).all()
    assert (share.floor == 0.05).all() and share.p_above_floor.between(0, 1).all()
    expect = np.where(share.p_above_floor > 0.95, "intersectional",
                      np.where(share.p_above_floor < 0.05, "additive", "not enough evidence"))
    assert (share.verdict == expect).all()
    eps = g.differential_fairness()
    assert (eps.lower > 0).all()
    marg = g.marginal("sex")
    assert set(marg.sex) == {"Female", "Male"}
    # the overall rate post-stratified by observed sizes is close to the raw rate
    ov = g.overall
    assert abs(ov.loc["error_rate", "mean"] - 8348 / 48842) < 0.005
    plan = g.labelling_plan(0.1)
    assert (plan.n_needed.dropna() > 0).all()
    json.dumps(g.to_dict(), default=float)


def test_cli_example_json_and_bad_column(capsys, tmp_path):
    from bayesbias.cli import main

    rc = main(["groups", "--example", "adult_llama", "--metric", "tpr,fpr",
               "--structure", "independent", "--json", "--quiet", "--draws", "200",
               "--chains", "1", "-o", str(tmp_path / "cells.csv")])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["structure"] == "independent" and len(out["cells"]) == 60
    jsonschema = pytest.importorskip("jsonschema")
    from bayesbias.schemas import schema

    jsonschema.validate(out, schema("group_rates"))
    assert any(c["quantity"] == "equalized_odds_difference" for c in out["comparisons"])
    assert (tmp_path / "cells.csv").is_file()
    t = _toy()
    t.to_csv(tmp_path / "t.csv", index=False)
    rc = main(["groups", str(tmp_path / "t.csv"), "--sensitive", "g,nope", "--label", "y",
               "--pred", "p", "--quiet"])
    assert rc == 2
    assert "nope" in capsys.readouterr().err
    rc = main(["groups", str(tmp_path / "t.csv"), "--sensitive", "g", "--label", "y",
               "--pred", "p", "--bins", "age", "--quiet"])
    assert rc == 2


def test_cli_report(tmp_path):
    from bayesbias.cli import main

    rc = main(["groups", "--example", "adult_llama", "--metric", "selection_rate",
               "--structure", "independent", "--quiet", "--draws", "100", "--chains", "1",
               "--report", str(tmp_path / "rep")])
    assert rc == 0
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "demographic_parity_difference" in html
    assert (tmp_path / "rep" / "figures" / "cells.png").is_file()


@pytest.mark.slow
def test_numba_kernel_equals_numpy_kernel(adult):
    from bayesbias.models.group_rates import _numba_logp

    g = _indep(adult, draws=5, chains=1, metrics=["error_rate", "tpr"])
    kern = Kernel(g.k, g.n, g.shape, load_group_spec(structure="full"))
    kern.top_weight[:] = np.resize([0.0, 1.0, 0.3, 0.97], kern.top_weight.shape)
    kern.low_weight[:] = np.resize([1.0, 0.0, 0.6], kern.low_weight.shape)
    fast = _numba_logp()
    for seed in range(3):
        x = np.random.default_rng(seed).normal(size=kern.ndim) * 0.3
        lp, grad = kern.logp(x)
        out = np.empty(kern.ndim)
        lp2 = fast(x, *kern.numba_args(), out)
        assert lp2 == pytest.approx(lp, rel=1e-12)
        np.testing.assert_allclose(out, grad, rtol=1e-10, atol=1e-8)


@pytest.mark.slow
def test_pooled_fit_agrees_with_a_row_level_pymc_model(adult):
    """An independent reference: plain PyMC on the rows (Bernoulli), same model and priors."""
    import pymc as pm

    rng = np.random.default_rng(5)
    sub = adult.iloc[rng.choice(len(adult), 3000, replace=False)].reset_index(drop=True)
    g = GroupRates(sub["label"], sub["pred"], sensitive_features=sub[["sex", "age"]],
                   pos_label=POS, bins={"age": [25, 65]}, metrics=["error_rate"],
                   draws=1000, tune=1000, chains=2, seed=2)
    cell, _, _ = __import__("bayesbias.groups", fromlist=["x"]).prepare_groups(
        sub[["sex", "age"]], len(sub), {"age": [25, 65]})
    err = (sub["label"] != sub["pred"]).to_numpy().astype(int)
    with pm.Model():
        mu = pm.Normal("mu", 0, 2)
        s1 = pm.HalfNormal("s1", 1)
        s2 = pm.HalfNormal("s2", 1)
        a = pm.ZeroSumNormal("a", sigma=1, shape=2)
        b = pm.ZeroSumNormal("b", sigma=1, shape=3)
        ab = pm.Normal("ab", 0, 1, shape=(2, 3))  # the top order: one effect per cell
        eta = (mu + s1 * a[:, None] + s1 * b[None, :] + s2 * ab).reshape((6,))
        pm.Deterministic("p", pm.math.invlogit(eta))
        pm.Bernoulli("y", logit_p=eta[cell], observed=err)
        trace = pm.sample(1000, tune=1000, chains=2, random_seed=3, progressbar=False,
                          target_accept=0.95)
    ref = trace.posterior["p"].values.reshape(-1, 6)
    ours = g.draws("error_rate")
    se = np.sqrt(ours.var(0) / 500 + ref.var(0) / 500)  # ESS >= 500 of 2000 draws assumed
    assert np.all(np.abs(ours.mean(0) - ref.mean(0)) < 4 * se), (ours.mean(0), ref.mean(0))
    assert np.all(np.abs(ours.std(0) - ref.std(0)) < 0.25 * ref.std(0))


@pytest.mark.slow
def test_sbc_full_structure_is_uniform():
    """Simulation-based calibration of ``full`` on a 2 x 2 x 2 grid, 30 rows per cell."""
    from bayesbias.models.group_rates import fit_counts

    shape, reps, draws = (2, 2, 2), 60, 199
    spec = load_group_spec(structure="full")
    dummy = np.ones((1, 8), dtype=int)
    kern = Kernel(dummy, dummy, shape, spec)
    rng = np.random.default_rng(11)
    ranks = {"intercept": [], "p0": [], "p7": []}
    for rep in range(reps):
        _, eta = kern.prior_draw(rng)
        eta = eta[0]
        p = 1 / (1 + np.exp(-eta))
        n = np.full((1, 8), 30)
        k = rng.binomial(n, p)
        fit = fit_counts(k, n, shape, spec, draws=draws, tune=300, chains=1, seed=rep)
        dr = fit["p"].reshape(-1, 8)
        thin = dr[::1]
        ranks["p0"].append(int((thin[:, 0] < p[0]).sum()))
        ranks["p7"].append(int((thin[:, 7] < p[7]).sum()))
        logit_mean = np.log(thin / (1 - thin)).mean(1)  # the cells' mean logit
        ranks["intercept"].append(int((logit_mean < eta.mean()).sum()))
    for name, r in ranks.items():
        counts = np.bincount(np.asarray(r) * 5 // (draws + 1), minlength=5)
        assert stats.chisquare(counts).pvalue > 0.001, (name, counts)


# --------------------------------------------------------------------------------------
# terms nested in the groups

def _term_table(seed=0, groups=3, terms=4, rows=40, sd_term=0.8):
    """Rows of `groups` groups x `terms` terms each; term logits around their group's."""
    rng = np.random.default_rng(seed)
    g_logit = np.linspace(-1.0, 0.5, groups)
    dev = rng.normal(0, sd_term, (groups, terms))
    g = np.repeat(np.arange(groups), terms * rows)
    t = np.repeat(np.arange(groups * terms), rows)
    p = 1 / (1 + np.exp(-(g_logit[g] + dev.ravel()[t])))
    y = np.ones(t.size, dtype=int)  # every row a positive: tpr = selection rate
    pred = (rng.random(t.size) < p).astype(int)
    return pd.DataFrame({"group": [f"g{i}" for i in g], "term": [f"t{i:02d}" for i in t],
                         "y": y, "p": pred}), 1 / (1 + np.exp(-(g_logit[:, None] + dev)))


def test_terms_independent_are_exact_betas_and_cells_their_weighted_mean():
    t, _ = _term_table()
    t = t.iloc[np.random.default_rng(1).permutation(len(t))[:400]].reset_index(drop=True)
    g = GroupRates(t["y"], t["p"], sensitive_features=t[["group"]], term=t["term"],
                   metrics=["tpr"], structure="independent", draws=4000, chains=1, seed=3)
    tf = g.term_frame()
    a, b = 1 + tf["k"].to_numpy(), 1 + tf["n"].to_numpy() - tf["k"].to_numpy()
    np.testing.assert_allclose(tf["lower"], stats.beta.ppf(0.05, a, b), rtol=0, atol=1e-12)
    np.testing.assert_allclose(tf["upper"], stats.beta.ppf(0.95, a, b), rtol=0, atol=1e-12)
    np.testing.assert_allclose(tf["mean"], a / (a + b), rtol=0, atol=1e-12)
    # a cell's rate: its terms' posterior means weighted by their observed sizes
    cells = g.to_frame()
    for c, row in cells.iterrows():
        sel = tf["group"] == row["group"]
        w = tf.loc[sel, "n"].to_numpy()
        assert row["mean"] == pytest.approx(np.sum(w * tf.loc[sel, "mean"]) / w.sum(),
                                            abs=1e-12)
        np.testing.assert_allclose(tf.loc[sel, "weight"], w / w.sum(), atol=1e-12)
        # the draws agree with the exact mean within Monte Carlo error (4000 draws)
        dr = g.draws("tpr")[:, c]
        assert abs(dr.mean() - row["mean"]) < 4 * dr.std() / np.sqrt(dr.size)
    # n and k of a cell are its terms' sums
    assert list(cells["n"]) == list(tf.groupby("group", sort=True)["n"].sum())
    # user weights: one term carries its cell
    first = {grp: tf.loc[tf.group == grp, "term"].iloc[0] for grp in tf.group.unique()}
    w = {term: float(term in first.values()) for term in g.terms}
    g2 = GroupRates(t["y"], t["p"], sensitive_features=t[["group"]], term=t["term"],
                    metrics=["tpr"], structure="independent", draws=10, chains=1,
                    term_weights=w)
    got = g2.to_frame().set_index("group")["mean"]
    for grp, term in first.items():
        assert got[grp] == pytest.approx(tf.set_index("term").loc[term, "mean"], abs=1e-12)
    assert g2.term_weighting == "user weights"
    with pytest.raises(InvalidArgumentError, match="no weight"):
        GroupRates(t["y"], t["p"], sensitive_features=t[["group"]], term=t["term"],
                   structure="independent", draws=10, chains=1, term_weights={"t00": 1.0})


def test_terms_bad_input_names_rows_terms_and_groups():
    t, _ = _term_table()
    bad = t.copy()
    bad.loc[[3, 17], "term"] = np.nan
    with pytest.raises(InputDataError, match=r"term: missing or empty terms in rows 3, 17"):
        GroupRates(bad["y"], bad["p"], sensitive_features=bad[["group"]], term=bad["term"],
                   structure="independent", draws=10, chains=1)
    shared = t.copy()
    shared.loc[shared.group == "g2", "term"] = "t00"  # t00 of g0 also in g2
    with pytest.raises(InputDataError, match=r"'t00' in 'g0', 'g2'"):
        GroupRates(shared["y"], shared["p"], sensitive_features=shared[["group"]],
                   term=shared["term"], structure="independent", draws=10, chains=1)
    g = GroupRates(shared["y"], shared["p"], sensitive_features=shared[["group"]],
                   term=shared["term"], structure="independent", draws=10, chains=1,
                   shared_terms="split")
    assert "t00 [g0]" in g.terms and "t00 [g2]" in g.terms and "t01" in g.terms
    assert len(g.terms) == 9  # 4 + 4 + 1
    with pytest.raises(InvalidArgumentError, match="shared_terms"):
        GroupRates(t["y"], t["p"], sensitive_features=t[["group"]], term=t["term"],
                   structure="independent", draws=10, chains=1, shared_terms="merge")
    with pytest.raises(InvalidArgumentError, match="term_weights needs term"):
        GroupRates(t["y"], t["p"], sensitive_features=t[["group"]], term_weights=[1.0],
                   structure="independent", draws=10, chains=1)


def test_terms_kernel_gradient_numba_and_pymc_density():
    """With terms: NumPy gradient = finite differences, numba = NumPy, PyMC density equal."""
    from bayesbias.models.group_rates import _numba_logp, build_model

    t, _ = _term_table(groups=3, terms=3, rows=20)
    t["sex"] = np.where(np.arange(len(t)) % 2, "a", "b")
    g = GroupRates(t["y"], t["p"], sensitive_features=t[["group", "sex"]], term=t["term"],
                   shared_terms="split", metrics=["tpr"], structure="independent", draws=5,
                   chains=1)
    spec = load_group_spec(structure="full")
    terms = (g.term_cell, g.term_k, g.term_n)
    kern = Kernel(g.k, g.n, g.shape, spec, terms=terms)
    assert kern.NT == 18 and kern.ndim == 1 + 2 + kern.D + 1 + 18
    rng = np.random.default_rng(0)
    x = rng.normal(size=kern.ndim) * 0.4
    lp, grad = kern.logp(x)
    eps = 1e-6
    num = np.array([(kern.logp(x + eps * e)[0] - kern.logp(x - eps * e)[0]) / (2 * eps)
                    for e in np.eye(kern.ndim)])
    np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-5)
    out = np.empty(kern.ndim)
    assert _numba_logp()(x, *kern.numba_args(), out) == pytest.approx(lp, rel=1e-12)
    np.testing.assert_allclose(out, grad, rtol=1e-10, atol=1e-10)
    # the PyMC model with terms: same density up to a constant
    import pytensor.tensor as pt

    model = build_model(g.k, g.n, g.shape, spec, terms=terms)
    logp = model.compile_logp()
    diffs = []
    for _ in range(3):
        x = rng.normal(size=kern.ndim) * 0.3
        mu, logsd, z = kern.split(x)
        lst, u = kern.split_terms(x)
        point = {"intercept": mu, "z_cell": z[:, kern.D_low:], "sd_term_log__": lst,
                 "z_term": u}
        for j, o in enumerate(kern.orders):
            point[f"sd_{o}_log__"] = logsd[:, j]
        for j, (tm, basis, start) in enumerate(zip(kern.lower, kern.bases, kern.t_coord,
                                                   strict=True)):
            sub = tuple(g.shape[a] for a in tm.attributes)
            table = (z[:, start:start + basis.shape[1]] @ basis.T).reshape(1, *sub)
            rv = model[f"z_{j}"]
            point[model.rvs_to_values[rv].name] = model.rvs_to_transforms[rv].forward(
                pt.as_tensor(table)).eval()
        diffs.append(kern.logp(x)[0] - logp(point))
    assert np.ptp(diffs) < 1e-8


def test_terms_cli_json_report_and_errors(capsys, tmp_path):
    from bayesbias.cli import main

    t, _ = _term_table(groups=2, terms=3, rows=30)
    t.to_csv(tmp_path / "t.csv", index=False)
    args = ["groups", str(tmp_path / "t.csv"), "--sensitive", "group", "--term", "term",
            "--label", "y", "--pred", "p", "--metric", "tpr", "--quiet", "--draws", "200",
            "--tune", "300", "--chains", "2", "--seed", "4"]
    rc = main([*args, "--json", "--report", str(tmp_path / "rep")])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    jsonschema = pytest.importorskip("jsonschema")
    from bayesbias.schemas import schema

    jsonschema.validate(out, schema("group_rates"))
    assert out["term_column"] == "term" and len(out["terms"]) == 6
    assert out["term_weighting"] == "observed term sizes"
    assert [r["group"] for r in out["term_gaps"]] == ["g0", "g1"]
    assert {r["term"] for r in out["terms"]} == {f"t{i:02d}" for i in range(6)}
    sd = out["term_sd"][0]
    assert 0 < sd["lower"] < sd["mean"] < sd["upper"]
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "Terms" in html and "sd_term" in html
    # text output has the term table
    rc = main(args)
    assert rc == 0 and "terms (term;" in capsys.readouterr().out
    t.loc[t.group == "g1", "term"] = "t00"
    t.to_csv(tmp_path / "shared.csv", index=False)
    rc = main(["groups", str(tmp_path / "shared.csv"), "--sensitive", "group", "--term",
               "term", "--label", "y", "--pred", "p", "--metric", "tpr", "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "'t00' in 'g0', 'g1'" in err and "--shared-terms split" in err
    rc = main(["groups", str(tmp_path / "t.csv"), "--sensitive", "group", "--term", "nope",
               "--label", "y", "--pred", "p", "--quiet"])
    assert rc == 2 and "--term column 'nope'" in capsys.readouterr().err


def test_madlibs_terms_real_table_end_to_end():
    """The shipped madlibs: 51 identity terms nested in 6 groups, FPR of TOXICITY@1."""
    from bayesbias.classifier.data import madlibs_terms

    t = madlibs_terms()
    assert len(t) == 3366 and t["term"].nunique() == 51 and t["category"].nunique() == 6
    assert (t.groupby("term")["category"].nunique() == 1).all()
    g = GroupRates(t["toxicity"], y_score=t["TOXICITY@1"], threshold=0.5, pos_label="toxic",
                   sensitive_features=t[["category"]], term=t["term"], metrics=["fpr"],
                   draws=300, tune=500, chains=2, seed=1)
    tf = g.term_frame().set_index("term")
    assert (tf["n"] == 33).all()
    # pooled term rates: between the raw rate and the group's, inside the interval
    assert tf.loc["gay", "raw"] == 1.0 and 0.9 < tf.loc["gay", "mean"] < 1.0
    assert tf.loc["straight", "upper"] < tf.loc["gay", "lower"]
    # equal term sizes: a group's rate is its terms' plain mean, draw by draw
    dr = g._p_term[:, 0]
    rel = g.term_cell == g.levels[0].index("religion")
    np.testing.assert_allclose(g.draws("fpr")[:, g.levels[0].index("religion")],
                               dr[:, rel].mean(axis=1), atol=1e-12)
    assert g.term_sd()["lower"].iloc[0] > 1.0  # terms differ far more than their groups
    gaps = g.term_gaps(delta=0.05).set_index("group")
    assert len(gaps) == 6 and (gaps["terms"] == [8, 3, 17, 6, 8, 9]).all()
    so = gaps.loc["sexual orientation"]
    assert so["verdict"] == "gap larger than 0.05"
    assert "high: gay" in so["drivers"] or "high: homosexual" in so["drivers"]


@pytest.mark.slow
def test_terms_simulation_recovers_sd_term_and_covers_term_rates():
    """Known truth (4 groups x 6 terms, sd_term 0.6, 20-80 rows per term), 40 replications.

    Expected: 90% intervals cover the true term rates in about 90% of the 960 term cases
    (correlated within a replication, so the band is wide: 0.85-0.95), the true sd_term in
    about 90% of replications (>= 0.75: 3 binomial sds below 0.9 at 40), and the posterior
    means of sd_term average within 0.15 of 0.6 (their sd over replications is about 0.1).
    Run with more replications by ``benchmarks/groups_terms_sim.py``.
    """
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "groups_terms_sim.py"
    spec = importlib.util.spec_from_file_location("groups_terms_sim", path)
    sim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sim)
    rows = [sim.replicate(r, 4242, 0.6, 400, 400, 2) for r in range(40)]
    s = sim.summarise(rows, 0.6)
    assert 0.85 <= s["term_coverage"] <= 0.95, s
    assert s["sd_term_interval_coverage"] >= 0.75, s
    assert abs(s["sd_term_posterior_mean_average"] - 0.6) < 0.15, s
    assert 0.8 <= s["group_coverage"] <= 1.0, s


def test_kronecker_two_way_tables_equal_the_dense_product():
    """Factored two-way tables: the same density and gradient as the dense bases.

    10 x 6 x 2 levels: the numba kernel factors the 10 x 6 table (and not 6 x 2); its
    density and gradient equal the NumPy kernel's (dense bases) to rounding; the C function
    equals the njit one bitwise; ``KRONECKER = False`` factors nothing.
    """
    from bayesbias.models.group_rates import _numba_logp, _numba_native

    rng = np.random.default_rng(3)
    shape = (10, 6, 2)
    n = rng.integers(0, 200, (2, 120))
    k = rng.binomial(n, 0.3)
    spec = load_group_spec(structure="full")
    kern = Kernel(k, n, shape, spec)
    assert kern.t_fac[:, 0].tolist() == [0, 0, 0, 1, 0, 0]  # a, b, c, ab, ac, bc
    f = _numba_logp()
    c_logp = _numba_native()[0]
    import ctypes

    ptr = ctypes.POINTER(ctypes.c_double)
    data = kern.native_data()
    for _ in range(3):
        x = rng.normal(size=kern.ndim) * 0.5
        lp, grad = kern.logp(x)
        out = np.empty(kern.ndim)
        assert f(x, *kern.numba_args(), out) == pytest.approx(lp, rel=1e-13)
        np.testing.assert_allclose(out, grad, rtol=1e-10, atol=1e-9)
        out2, lp2 = np.empty(kern.ndim), np.zeros(1)
        assert c_logp.ctypes(kern.ndim, x.ctypes.data_as(ptr), out2.ctypes.data_as(ptr),
                             lp2.ctypes.data_as(ptr), data.ctypes.data_as(ptr)) == 0
        assert lp2[0] == f(x, *kern.numba_args(), out) and np.array_equal(out2, out)
    Kernel.KRONECKER = False
    try:
        dense = Kernel(k, n, shape, spec)
    finally:
        Kernel.KRONECKER = True
    assert not dense.t_fac[:, 0].any()

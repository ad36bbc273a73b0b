"""Design studies, the exact marginal posterior and the seeded task engine."""

import json

import numpy as np
import pytest

from bayesbias.datasets import published_table
from bayesbias.errors import InputDataError, InvalidArgumentError, ModelSpecError
from bayesbias.models import load_spec
from bayesbias.parallel import chunks, run_tasks
from bayesbias.studies.design import Design, Pilot, designs_grid, run_design
from bayesbias.studies.exact_posterior import marginal_posterior


@pytest.fixture(scope="module")
def pilot():
    return Pilot.from_table(published_table("religion", "reddit"), "hierarchical", draws=2000,
                            seed=3)


def _brute_force_mu_bar(n, ybar, ss, spec):
    """Posterior mean and sd of mu_bar by a 3-d grid over (mu_bar, tau, sigma).

    The densities are written out (Normal(1, 0.3), Exponential(mean 0.5) twice, the cell
    means' Normal and the within-cell sum of squares), independently of the library.
    """
    p = spec.priors
    assert p["mu_bar"].dist == "Normal"
    mb = np.linspace(0.4, 1.4, 301)
    tau = np.linspace(1e-4, 1.2, 160)
    sig = np.linspace(0.05, 0.8, 120)
    M, T, S = mb[:, None, None], tau[None, :, None], sig[None, None, :]
    lp2 = -T / 0.5 - S / 0.5  # priors of tau and sigma, up to constants
    lp = -0.5 * ((M - 1.0) / 0.3) ** 2 + lp2
    for k in range(n.size):
        v = T**2 + S**2 / n[k]
        lp2 = -0.5 * np.log(v) - (n[k] - 1) * np.log(S) - ss[k] / (2 * S**2)
        lp = lp - 0.5 * (ybar[k] - M) ** 2 / v + lp2
    w = np.exp(lp - lp.max())
    w /= w.sum()
    m = (w.sum((1, 2)) * mb).sum()
    return m, np.sqrt((w.sum((1, 2)) * (mb - m) ** 2).sum())


def test_marginal_matches_brute_force_integration():
    spec = load_spec("hierarchical")
    rng = np.random.default_rng(0)
    n = np.array([3.0, 5.0, 4.0, 6.0])
    y = [0.9 + 0.1 * rng.standard_normal() + 0.2 * rng.standard_normal(int(k)) for k in n]
    ybar = np.array([v.mean() for v in y])
    ss = np.array([((v - v.mean()) ** 2).sum() for v in y])
    m_ref, sd_ref = _brute_force_mu_bar(n, ybar, ss, spec)
    cells = np.zeros((4, 4))
    post = marginal_posterior(np.c_[n, cells[:, 1:]], np.c_[ybar, cells[:, 1:]],
                              np.c_[ss, cells[:, 1:]], spec)
    d = post.draw(np.random.default_rng(1), 200_000)["mu_bar"][0, :, 0]
    # 200k independent draws: MC se of the mean ~ sd / 450; grids add < 1% of sd
    assert abs(d.mean() - m_ref) < 0.02 * sd_ref
    assert abs(d.std() - sd_ref) < 0.02 * sd_ref


def test_marginal_refuses_specs_without_exact_form():
    with pytest.raises(ModelSpecError, match="nuts"):
        marginal_posterior(np.ones((2, 4)), np.ones((2, 4)), np.zeros((2, 4)),
                           load_spec("hierarchical_single_sd"))


def test_designs_grid_sorted_and_validated():
    g = designs_grid(3, [10, 5], [4], [40], [100, 50])
    assert [d.total_words for d in g] == sorted(d.total_words for d in g)
    with pytest.raises(InvalidArgumentError, match="words"):
        Design(1, 4, 40, 100)


def test_pilot_reads_the_published_layout(pilot):
    assert pilot.design.classes == 3 and pilot.design.words == 5
    assert pilot.mu_bar.shape == (2000, 4)
    d = pilot.to_dict()["contrast_means"]
    assert d["associated - none"] < d["associated - human"] < 0


def test_design_study_is_reproducible_and_sane(pilot):
    designs = designs_grid(3, [5, 10], [4], [20], [40])
    a = run_design(pilot, designs, reps=20, chunk_size=10, seed=5, n_draws=500)
    b = run_design(pilot, designs, reps=20, chunk_size=10, seed=5, n_draws=500)
    for v in a.raw.data_vars:
        np.testing.assert_array_equal(a.raw[v].values, b.raw[v].values)
    f = a.to_frame()
    # more words, higher assurance (common truths across designs; 20 reps each)
    assert f["associated - none"].iloc[1] >= f["associated - none"].iloc[0] - 0.1
    s = a.smallest(0.0, "associated - none")
    assert s["design"]["words"] == 5
    assert "assurance" in str(a)
    with pytest.raises(InvalidArgumentError, match="unknown verdict"):
        a.smallest(0.8, "nonsense")


def test_null_sets_the_contrast_to_zero_in_every_truth(pilot):
    """``null=`` reaches every simulated truth; the tests' p-values are probabilities.

    (Their rejection rates under the null are the slow check below.)
    """
    r = run_design(pilot, [Design(5, 4, 20, 40)], reps=20, chunk_size=10, seed=9,
                   null="associated - different", n_draws=100)
    truth = r.raw["true_contrast"].isel(design=0)
    assert (truth.sel(verdict="associated - different") == 0).all()
    assert (truth.sel(verdict="associated - none") != 0).all()
    for name in ("weat_p", "mac_p"):
        p = r.raw[name].values
        assert np.isfinite(p).all() and ((p > 0) & (p <= 1)).all()


@pytest.mark.slow
def test_null_rates_of_weat_and_mac_are_alpha(pilot):
    """With associated - different set to 0, WEAT's and MAC's rejection rates are <= alpha.

    WEAT's exact permutation test with 5 + 5 words rejects with probability
    floor(0.05 * 252) / 252 = 0.048 under exchangeability; MAC's t-test is exact for Normal
    data (0.05). Tolerance: 3 Monte Carlo se at 600 replications (~0.027).
    """
    r = run_design(pilot, [Design(5, 4, 20, 40)], reps=600, chunk_size=100, seed=9,
                   null="associated - different", n_draws=400)
    s = r.summary().isel(design=0)
    se = 3 * np.sqrt(0.05 * 0.95 / 600)
    assert abs(float(s["power"].sel(quantity="WEAT (per pair)")) - 12 / 252) < se
    assert abs(float(s["power"].sel(quantity="MAC t-test")) - 0.05) < se


def test_parallel_engine_independent_of_threads_and_order():
    def fn(k, rng):
        return rng.standard_normal(3) + k

    tasks = [((i,), (i,)) for i in range(6)]
    seq = run_tasks(fn, tasks, seed=1)
    thr = run_tasks(fn, tasks, seed=1, workers=2, processes=False)
    rev = run_tasks(fn, tasks[::-1], seed=1)
    assert seq.complete and thr.complete
    for k in seq.keys:
        np.testing.assert_array_equal(seq.results[k], thr.results[k])
        np.testing.assert_array_equal(seq.results[k], rev.results[k])
    assert chunks(5, 2) == [(0, 2), (2, 2), (4, 1)]
    with pytest.raises(InputDataError):
        run_tasks(fn, [((0,), (0,)), ((0,), (1,))], seed=1)
    # microsecond tasks on a cluster that took a second to start: the run says so
    assert seq.speedup is None and seq.task_time_s > 0 and seq.startup_s == 0
    assert thr.workers == 2 and thr.startup_s > 0 and thr.speedup < 1


def test_a_cluster_that_does_not_help_is_named(caplog):
    def fn(k, rng):
        return k

    with caplog.at_level("WARNING", logger="bayesbias.parallel"):
        res = run_tasks(fn, [((i,), (i,)) for i in range(3)], seed=1, workers=1,
                        processes=False, label="tiny study")
    assert res.complete
    assert any("tiny study: 1 Dask worker(s) did not help" in r.getMessage()
               and "without --workers" in r.getMessage() for r in caplog.records)
    with caplog.at_level("WARNING", logger="bayesbias.parallel"):
        caplog.clear()
        run_tasks(fn, [((i,), (i,)) for i in range(3)], seed=1)
    assert not caplog.records  # in this process: nothing to say


def test_partial_results_kept_on_interrupt():
    def fn(k, rng):
        if k == 3:
            raise KeyboardInterrupt
        return k

    res = run_tasks(fn, [((i,), (i,)) for i in range(6)], seed=1)
    assert not res.complete and res.done == [(0,), (1,), (2,)]


def test_cli_design_json(tmp_path, capsys):
    from bayesbias.cli import main

    out = tmp_path / "d.json"
    code = main(["--quiet", "design", "--distances", "published:religion:reddit", "--words",
                 "5,10", "--stereotypes", "4", "--human", "20", "--none", "40", "--reps", "10",
                 "-o", str(out),
                 "--plot", str(tmp_path / "d.png"), "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["designs"]) == 2 and data["smallest"]["verdict"] == "associated - human"
    assert json.loads(out.read_text())["settings"]["reps"] == 10
    assert (tmp_path / "d.png").stat().st_size > 1000


def test_cli_design_bad_input(capsys):
    from bayesbias.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["design", "--distances", "published:religion:reddit", "--words", "5,x"])
    assert exc.value.code == 2 and "--words" in capsys.readouterr().err
    assert main(["design", "--distances", "published:religion:reddit", "--words", "5",
                 "--null", "bogus - none"]) == 2
    assert "bogus" in capsys.readouterr().err


@pytest.mark.slow
def test_process_workers_give_identical_numbers(pilot):
    """Sequential == 1 worker == 2 process workers, exactly."""
    designs = designs_grid(3, [5, 10], [4], [20], [40])
    kw = dict(reps=30, chunk_size=10, seed=2, n_draws=300)
    seq = run_design(pilot, designs, **kw)
    one = run_design(pilot, designs, workers=1, **kw)
    two = run_design(pilot, designs, workers=2, **kw)
    for v in seq.raw.data_vars:
        np.testing.assert_array_equal(seq.raw[v].values, one.raw[v].values)
        np.testing.assert_array_equal(seq.raw[v].values, two.raw[v].values)


@pytest.mark.slow
def test_exact_path_agrees_with_nuts():
    """Exact marginal posterior vs full NUTS fits: on the religion table, and per study.

    On the same simulated studies (under a null, associated - human = 0), the HDI upper
    bounds of the verdict contrasts agree within Monte Carlo error. The MC se of an 89% HDI
    bound from 2 x 1000 NUTS draws (bulk ESS ~500 for these contrasts) is about 0.09
    posterior sd; over 72 bounds the largest difference stays below 0.4 sd (~4 se) and the
    mean below 0.15 sd. (A fixed 0.01 was too tight: small designs have sds up to 0.08;
    measured max 0.012.) Verdicts may differ only where a bound is within that of 0.
    """
    import warnings

    from bayesbias.models import fit_model

    table = published_table("religion", "reddit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_model(table, "hierarchical", draws=1000, chains=4, seed=4)
    ex = Pilot.from_table(table, "hierarchical", draws=20_000, seed=4)
    nu = Pilot.from_fit(fit)
    for name in ("mu_bar", "tau", "sigma"):
        a, b = getattr(ex, name), getattr(nu, name)
        # NUTS MC se of a mean ~ sd / sqrt(ESS ~ 1000)
        np.testing.assert_array_less(np.abs(a.mean(0) - b.mean(0)), 0.15 * b.std(0))
        np.testing.assert_array_less(np.abs(a.std(0) / b.std(0) - 1), 0.12)
    designs = [Design(5, 4, 20, 40), Design(10, 4, 20, 40)]
    kw = dict(reps=12, chunk_size=6, seed=8, null="associated - human")
    e = run_design(ex, designs, n_draws=4000, **kw)
    n = run_design(ex, designs, method="nuts", fit_kwargs=dict(draws=1000, tune=1000,
                                                               chains=2), **kw)
    sd = (e.raw["upper"] - e.raw["lower"]) / (2 * 1.598)   # Normal approx. of the 89% HDI
    z = np.abs(e.raw["upper"] - n.raw["upper"]) / sd
    assert float(z.max()) < 0.4 and float(z.mean()) < 0.15
    close = np.abs(n.raw["upper"]) < 0.4 * sd
    agree = ((e.raw["upper"] < 0) == (n.raw["upper"] < 0)) | close
    assert bool(agree.all())


def test_attribute_effects_are_shared_by_the_words_of_a_study():
    from bayesbias.studies.design import Design, simulate_study

    d = Design(words=20, stereotypes=3, human=30, none=40, classes=2)
    R = 4
    base = {"mu_bar": np.tile([0.9] * 4, (R, 1)), "tau": np.tile([1e-6] * 4, (R, 1)),
            "sigma": np.tile([0.01] * 4, (R, 1))}
    flat = simulate_study(base, d, np.random.default_rng(0))
    shifted = simulate_study({**base, "omega": np.full(R, 0.2)}, d, np.random.default_rng(0))
    # each attribute's column moves together for every word: sd of attribute means ~ omega
    col = shifted.mean(axis=1)
    assert 0.12 < col.std(axis=1).mean() < 0.28
    assert flat.mean(axis=1).std(axis=1).mean() < 0.01


def test_attribute_effects_per_kind_in_studies_and_their_estimates():
    """An sd per attribute kind (stereotype, human, none): simulated studies move each kind's
    columns by its own sd, and the plug-in's moment estimates recover each (or, shared, their
    average weighted by attribute counts)."""
    from bayesbias.studies.design import Design, attribute_variances, simulate_study

    d = Design(words=30, stereotypes=60, human=60, none=60, classes=2)
    R = 6
    truth = {"mu_bar": np.tile([0.9] * 4, (R, 1)), "tau": np.tile([1e-6] * 4, (R, 1)),
             "sigma": np.tile([0.05] * 4, (R, 1)), "omega": np.tile([0.3, 0.1, 0.0], (R, 1))}
    y = simulate_study(truth, d, np.random.default_rng(0))
    _, ac, _ = d.layout()
    kind = np.where(ac < d.classes, 0, np.where(ac == d.classes, 1, 2))
    vhat = y.mean(axis=1) - y.mean(axis=(1, 2))[:, None]
    o2 = attribute_variances(vhat, kind, 0.05**2, 30, per_kind=True)
    np.testing.assert_allclose(np.sqrt(o2.mean(axis=0)), [0.3, 0.1, 0.0], atol=0.03)
    shared = attribute_variances(vhat, kind, 0.05**2, 30, per_kind=False)
    sizes = np.array([120, 60, 60])
    np.testing.assert_allclose(shared[:, 0], (o2 * sizes).sum(axis=1) / sizes.sum())


def test_per_kind_group_effects_carry_the_uncertainty_of_their_sd():
    """With one sd per kind estimated from n words, a group's mean effect is t-distributed
    (n - 1 dof): wider tails than the plug-in Normal, the same scale."""
    from bayesbias.studies.design import subtract_group_effects

    mb = np.zeros((200_000, 4))
    plug = subtract_group_effects(mb, [0.04, 0.04, 0.04], (5, 5, 5), np.random.default_rng(1))
    t = subtract_group_effects(mb, [0.04, 0.04, 0.04], (5, 5, 5), np.random.default_rng(1),
                               per_kind=True)
    sd = np.sqrt(0.04 / 5)
    assert np.std(plug[:, 0]) == pytest.approx(sd, rel=0.01)
    # Student t with 4 dof scaled by sd: sd * sqrt(4 / 2)
    assert np.std(t[:, 0]) == pytest.approx(sd * np.sqrt(2), rel=0.05)
    assert np.quantile(np.abs(t[:, 0]), 0.99) > 1.3 * np.quantile(np.abs(plug[:, 0]), 0.99)


@pytest.mark.slow
def test_crossed_plugin_analysis_matches_nuts_fits():
    """The design study's plug-in crossed posterior against NUTS fits of the crossed model
    on the same simulated studies: interval widths within 6%, upper ends within 0.02."""
    from bayesbias.models import load_spec
    from bayesbias.studies.design import (Design, _bayes_crossed_plugin, _bayes_nuts,
                                          simulate_study)

    spec = load_spec("crossed")
    d = Design(words=5, stereotypes=4, human=30, none=40, classes=3)
    R = 8
    truth = {"mu_bar": np.tile([0.85, 0.9, 0.9, 0.95], (R, 1)),
             "tau": np.tile([0.1, 0.08, 0.05, 0.04], (R, 1)),
             "sigma": np.tile([0.11] * 4, (R, 1)), "omega": np.full(R, 0.13)}
    y = simulate_study(truth, d, np.random.default_rng(1))
    ci_p, _ = _bayes_crossed_plugin(spec, y, d, 0.89, 4000, np.random.default_rng(2))
    ci_n, _ = _bayes_nuts(spec, y, d, 0.89, {"draws": 1000, "tune": 1000, "chains": 4},
                          np.random.default_rng(3))
    wp, wn = ci_p[..., 1] - ci_p[..., 0], ci_n[..., 1] - ci_n[..., 0]
    assert np.all(np.abs(wp.mean(axis=0) / wn.mean(axis=0) - 1) < 0.06)
    assert np.all(np.abs(ci_p[..., 1] - ci_n[..., 1]).mean(axis=0) < 0.02)


def test_plot_axis_is_the_varied_design_variable():
    import pandas as pd

    from bayesbias.studies.design import design_axis

    frame = pd.DataFrame({"words": [5, 10, 20], "stereotypes": 4, "human": 85, "none": 226,
                          "classes": 3, "total_words": [338, 353, 383]})
    assert design_axis(frame) == ("words", "protected words per class")
    frame["human"] = [10, 20, 30]
    assert design_axis(frame)[0] == "total_words"  # two vary: the total


def test_cell_sums_over_distinct_counts_equal_the_sums_over_cells():
    """The exact posterior's sums per distinct row count equal the per-cell sums (1e-12).

    Members with one count, with one count per class, with every count distinct, with
    empty cells and with no cells at all; grids of (tau, sigma) and of draws.
    """
    from bayesbias.studies.exact_posterior import _cell_sums

    rng = np.random.default_rng(3)
    n = np.array([[4, 4, 4, 4, 4, 4], [4, 4, 3, 3, 3, 4], [1, 2, 3, 4, 5, 6],
                  [0, 4, 0, 7, 7, 4], [0, 0, 0, 0, 0, 0]], dtype=float)
    has = n > 0
    y = np.where(has, rng.normal(size=n.shape), 0.0)
    for tau2, sig2 in ((rng.uniform(0.01, 1, (5, 3, 1, 1)), rng.uniform(0.01, 1, (5, 1, 4, 1))),
                       (rng.uniform(0.01, 1, (5, 7, 1)), rng.uniform(0.01, 1, (5, 7, 1)))):
        got = _cell_sums(tau2, sig2, n, has, y)
        grow = (slice(None),) + (None,) * (tau2.ndim - 2) + (slice(None),)
        v = tau2 + sig2 / np.where(has, n, 1.0)[grow]
        w = has.astype(float)[grow]
        want = ((np.log(v) * w).sum(-1), (w / v).sum(-1), (w * y[grow] / v).sum(-1),
                (w * y[grow] ** 2 / v).sum(-1))
        for g, x in zip(got, want, strict=True):
            np.testing.assert_allclose(g, x, rtol=1e-12, atol=1e-14)
        assert np.all(got[1][-1] == 0)  # a member with no cells sums to 0

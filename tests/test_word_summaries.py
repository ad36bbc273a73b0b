"""Per-word summaries without per-word draws (bayesbias.models.word_summaries, issue 26)."""

import warnings

import numpy as np
import pytest
from scipy import stats

from bayesbias.models import word_summaries as ws


# -- the Normal mixture: closed forms and a fine-grid reference -----------------------------
def _grid_reference(mean, sd, prob):
    """ETI and HDI of one mixture (1-D component arrays) on a grid of 200,001 points."""
    x = np.linspace((mean - 9 * sd).min(), (mean + 9 * sd).max(), 200_001)
    from scipy.special import ndtr

    # in place, one (points, components) array: the numbers of
    # exp(-0.5 z^2) / sd and ndtr(z) with temporaries, at a third of the time
    z = x[:, None] - mean
    z /= sd
    cdf = ndtr(z).mean(axis=1)
    z *= z
    z *= -0.5
    np.exp(z, out=z)
    z /= sd
    pdf = z.mean(axis=1) / np.sqrt(2 * np.pi)
    a = (1 - prob) / 2
    eti = np.interp([a, 1 - a], cdf, x)
    # HDI: the density level whose super-level set holds `prob`
    order = np.argsort(pdf)[::-1]
    mass = np.cumsum(pdf[order]) * (x[1] - x[0])
    inside = order[:np.searchsorted(mass, prob) + 1]
    return eti, np.array([x[inside].min(), x[inside].max()])


@pytest.mark.parametrize("m", [1, 2, 3, 16, 17, 33, 75])
def test_blocked_evaluations_equal_whole_ones(monkeypatch, m):
    """Mixture CDF, density and intervals in blocks of elements: the numbers of one block."""
    rng = np.random.default_rng(m)
    mean = rng.normal(size=(400, m)) + np.linspace(0, 1, m)
    sd = np.broadcast_to(rng.uniform(0.5, 1.5, size=(400, 1)), mean.shape)
    x = mean.mean(axis=0)
    whole = ws._cdf_pdf_block(x, mean, sd)
    for kind in ("hdi", "eti"):
        monkeypatch.setattr(ws, "EVAL_ELEMENTS", 10**12)
        ref = ws.mixture_interval(mean, sd, 0.89, kind)
        monkeypatch.setattr(ws, "EVAL_ELEMENTS", 400 * 2)  # blocks of 2 (a last one of 3)
        assert all(np.array_equal(a, b) for a, b in zip(ws._cdf_pdf(x, mean, sd), whole,
                                                         strict=True))
        assert np.array_equal(ws.mixture_interval(mean, sd, 0.89, kind), ref)
    assert all(b.stop - b.start >= 2 for b in ws._blocks(400, m)) or m == 1


def test_single_normal_is_exact():
    mean, sd = np.array([[0.3, -1.0]]), np.array([[0.2, 2.0]])
    z = stats.norm.ppf(0.945)
    for kind in ("eti", "hdi"):
        iv = ws.mixture_interval(mean, sd, 0.89, kind)
        np.testing.assert_allclose(iv[:, 0], mean[0] - z * sd[0], rtol=0, atol=1e-9)
        np.testing.assert_allclose(iv[:, 1], mean[0] + z * sd[0], rtol=0, atol=1e-9)
    mu, s = ws.mixture_moments(mean, sd)
    np.testing.assert_allclose(mu, mean[0]) and np.testing.assert_allclose(s, sd[0])


def test_skewed_mixture_matches_a_fine_grid():
    rng = np.random.default_rng(3)
    # 100 components, like hyper-parameter draws: a right-skewed, unimodal mixture
    mean = rng.gamma(2.0, 0.05, (100, 3)) + np.array([0.0, 1.0, -2.0])
    sd = rng.uniform(0.02, 0.08, (100, 3)) * np.array([1.0, 3.0, 2.0])
    mu, s = ws.mixture_moments(mean, sd)
    np.testing.assert_allclose(mu, mean.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(s**2, (sd**2).mean(axis=0) + mean.var(axis=0), rtol=1e-12)
    eti = ws.mixture_interval(mean, sd, 0.89, "eti")
    hdi = ws.mixture_interval(mean, sd, 0.89, "hdi")
    for j in range(3):
        ref_eti, ref_hdi = _grid_reference(mean[:, j], sd[:, j], 0.89)
        step = (sd[:, j].max() * 18 + np.ptp(mean[:, j])) / 200_000
        np.testing.assert_allclose(eti[j], ref_eti, atol=3 * step)
        np.testing.assert_allclose(hdi[j], ref_hdi, atol=3 * step)
        assert hdi[j, 1] - hdi[j, 0] <= eti[j, 1] - eti[j, 0] + 1e-12  # shortest
    # the ETI ends are the mixture quantiles
    np.testing.assert_allclose(ws.mixture_cdf(eti[:, 0], mean, sd), 0.055, atol=1e-9)
    np.testing.assert_allclose(ws.mixture_cdf(eti[:, 1], mean, sd), 0.945, atol=1e-9)


def test_bimodal_mixture_falls_back_to_the_density_grid():
    """Two far-apart modes: the Newton solution is refused, the grid gives the HDI.

    The fallback gives the level set's outer ends, as the grid reference.
    """
    mean = np.array([[-3.0], [3.0], [3.2]])
    sd = np.array([[0.5], [0.5], [0.7]])
    iv = ws.mixture_interval(mean, sd, 0.89, "hdi")
    _, ref = _grid_reference(mean[:, 0], sd[:, 0], 0.89)
    np.testing.assert_allclose(iv[0], ref, atol=2e-3)


@pytest.mark.slow
def test_grouped_summaries_interpolate_the_direct_ones():
    """Grouped cells: the interpolated summaries equal the direct per-cell ones.

    Cells sharing (connection, n): the intervals, P(< 0) and ROPE share on a grid of the
    cell mean(s), interpolated, equal the direct per-cell values: interval ends to 1e-6 of
    the sd (measured 2e-9 on 1-D grids, 1e-7 on 2-D ones), probabilities to 1e-4 (measured
    5e-5 on 2-D grids; their Monte Carlo error from draws is about 1e-2).
    """
    rng = np.random.default_rng(1)
    k = 200
    m = rng.normal([0.8, 0.85, 0.9, 0.95], 0.01, (k, 4))
    t = np.abs(rng.normal(0.05, 0.01, (k, 4)))
    s = np.abs(rng.normal(0.1, 0.005, (k, 4)))
    # groups above the grid sizes (129 cells for 1-D grids, 41 x 41 for 2-D ones) and one
    # below (n = 3, every 17th cell); the 1-D case needs only 300 cells for that
    for pairs, rows in ((None, 300), ([(0, 3), (2, 3)], 1800)):
        n = np.tile([10, 10, 20, 20], (rows, 1))
        n[::17, 0] = 3
        ybar = rng.normal(0.85, 0.06, n.shape)
        for kind in ("eti", "hdi"):
            a = ws.cell_summaries(m, t, s, n, ybar, 0.89, kind, pairs, rope=0.02)
            b = ws.cell_summaries(m, t, s, n, ybar, 0.89, kind, pairs, rope=0.02, grid=False)
            np.testing.assert_allclose(a["mean"], b["mean"], rtol=1e-12)
            np.testing.assert_allclose(a["sd"], b["sd"], rtol=1e-12)
            sd = b["sd"][:, None]
            assert np.max(np.abs(a["ci"] - b["ci"]) / sd) < 1e-6
            for key in ("prob_below_zero", "share_in_rope"):
                assert np.max(np.abs(a[key] - b[key])) < 1e-4


@pytest.mark.slow  # 9 s: a two-mode mixture's own HDI is a density grid of 20,001 points
def test_interpolation_is_checked_and_refused_where_intervals_jump(monkeypatch):
    """Interval ends that no polynomial on the grid follows are caught and drawn instead.

    A group whose mixture has two modes for some data means: its interval ends bend sharply
    with ybar (here 0.01 sd off the interpolation; 0.1-1 sd on other such groups; the checked
    tolerance is 1e-6 sd). The check points catch it and the group's intervals are computed
    element by element, from draws.
    """
    rng = np.random.default_rng(3)
    k = 200
    beta = np.where(np.arange(k) % 2 == 0, 0.1, 1.0)[:, None]  # two kinds of draws
    alpha = rng.normal(0.0, 0.002, k)
    sd = np.full(k, 0.02)
    y = np.linspace(-0.3, 0.3, 140)[:, None]
    got = ws.linear_summary(alpha, beta, sd, y, 0.89, "hdi", rope=0.02)
    y0 = y.mean(axis=0)
    want = ws._at_points(alpha + beta @ y0, beta, sd, y - y0, ws.thinned(k, 500), 0.89, "hdi",
                         0.02, parts=("intervals",), drawn_seed=[
                             20240106, y.shape[0], *np.frombuffer(y0.tobytes(), np.uint32)])
    np.testing.assert_array_equal(got["ci"], want["ci"])
    some = slice(None, None, 14)  # each element's own mixture: seconds each with two modes
    exact = ws.linear_summary(alpha, beta, sd, y[some], 0.89, "hdi", rope=0.02, grid=False)
    for key in ("prob_below_zero", "share_in_rope"):  # the splines of the probabilities
        np.testing.assert_allclose(got[key][some], exact[key], atol=1e-4)
    monkeypatch.setattr(ws, "GRID_TOLERANCE", np.inf)  # the unchecked interpolation
    blind = ws.linear_summary(alpha, beta, sd, y, 0.89, "hdi", rope=0.02)
    assert np.max(np.abs(blind["ci"][some] - exact["ci"]) / exact["sd"][:, None]) > 1e-3


def test_threshold_and_memory_guard_count_the_mode():
    from bayesbias.models.fit import MAX_FIT_BYTES, fit_memory

    assert ws.keep_word_draws(1000, 4, 4 * 1000)  # 1,000 words: 128 MB, kept
    assert not ws.keep_word_draws(1000, 4, 4 * 10_000)  # 10,000 words: 1.28 GB, summaries
    # 100,000 words: refused with draws, allowed with summaries
    assert fit_memory(1000, 4, 400_000) > MAX_FIT_BYTES
    assert fit_memory(1000, 4, 400_000, word_draws=False) < MAX_FIT_BYTES / 2
    assert fit_memory(1000, 4, 60, word_draws=False) < fit_memory(1000, 4, 60)


# -- a real fit: the published religion table, with and without per-word draws --------------
@pytest.fixture(scope="module")
def pair():
    from bayesbias.datasets import published_table
    from bayesbias.models import fit_model

    table = published_table("religion", "reddit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kept = fit_model(table, "hierarchical", seed=5)
        summ = fit_model(table, "hierarchical", seed=5, keep_word_draws=False)
    return kept, summ


def test_default_keeps_draws_below_the_threshold(pair):
    kept, summ = pair
    assert kept.word_draws and "mu" in kept.posterior
    assert not summ.word_draws and "mu" not in summ.posterior
    # the hyper-parameters are the same draws (same seed): only mu is left out
    np.testing.assert_array_equal(kept.posterior["tau"].values, summ.posterior["tau"].values)
    # convergence judged on the sampled parameters only
    assert not any(p.startswith("mu[") for p in summ.diagnostics().table["parameter"])


def test_summaries_equal_the_draws_within_monte_carlo_error(pair):
    """Summaries without draws equal those of the draws within Monte Carlo error.

    4,000 draws: the draw-based mean has Monte Carlo se about 0.016 sd, its sd about 1.1%,
    its interval ends about 0.03-0.06 sd; tolerances are about 5 se.
    """
    kept, summ = pair
    for ci_kind, tol_iv in (("eti", 0.2), ("hdi", 0.3)):
        a, b = kept.word_means(ci_kind=ci_kind), summ.word_means(ci_kind=ci_kind)
        assert list(a.columns) == list(b.columns) and len(a) == len(b) == 60
        assert (a["protected_word"] == b["protected_word"]).all()
        sd = a["sd"].to_numpy()
        assert np.max(np.abs(a["mean"] - b["mean"]) / sd) < 0.1
        assert np.abs(a["sd"] / b["sd"] - 1).max() < 0.06
        for c in ("lower", "upper"):
            assert np.max(np.abs(a[c] - b[c]) / sd) < tol_iv, (ci_kind, c)
    a, b = kept.word_contrasts(), summ.word_contrasts()
    assert list(a.columns) == list(b.columns)
    assert (a["contrast"] == b["contrast"]).all()
    assert np.max(np.abs(a["mean"] - b["mean"]) / a["sd"]) < 0.1
    assert np.max(np.abs(a["lower"] - b["lower"]) / a["sd"]) < 0.3
    assert (a["excludes_zero"] == b["excludes_zero"]).mean() > 0.9


def test_summary_mean_is_the_mean_of_the_conditional_means(pair):
    """Closed form given the hyper-parameter draws: (M/T^2 + n ybar/S^2) / (1/T^2 + n/S^2)."""
    _, summ = pair
    post = summ.posterior
    m = post["mu_bar"].values.reshape(-1, 4)
    t = post["tau"].values.reshape(-1, 4)
    s = post["sigma"].values.reshape(-1, 4)
    n, ybar = summ.cells.n.astype(float), np.nan_to_num(summ.cells.mean)
    prec = 1 / t[:, None] ** 2 + n / s[:, None] ** 2
    cm = (m[:, None] / t[:, None] ** 2 + n * ybar / s[:, None] ** 2) / prec
    ds = summ.word_means(as_xarray=True)
    np.testing.assert_allclose(ds["mean"].values, cm.mean(axis=0), rtol=1e-10)
    var = (1 / prec).mean(axis=0) + cm.var(axis=0)
    np.testing.assert_allclose(ds["sd"].values, np.sqrt(var), rtol=1e-8)


def test_same_seed_same_numbers_and_save_load(pair, tmp_path):
    from bayesbias.datasets import published_table
    from bayesbias.models import fit_model, load_fit

    _, summ = pair
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = fit_model(published_table("religion", "reddit"), "hierarchical", seed=5,
                          keep_word_draws=False)
    a, b = summ.word_means(), again.word_means()
    assert a.equals(b)
    assert summ.checks[0].value == again.checks[0].value
    path = summ.save(tmp_path / "s.nc")
    back = load_fit(path)
    assert not back.word_draws
    assert back.word_means().equals(a)
    assert back.contrasts().equals(summ.contrasts())


def test_what_needs_draws_refuses_with_the_flag(pair):
    from bayesbias.models.compare import compare_fits

    kept, summ = pair
    for call in (summ.word_mean_draws, summ.log_likelihood,
                 lambda: compare_fits(summ, kept), lambda: compare_fits(kept, summ)):
        with pytest.raises(ws.WordDrawsError, match="--keep-word-draws"):
            call()


def test_verdict_drivers_forest_and_text_work_without_draws(pair, tmp_path):
    from bayesbias.verdicts import verdict_from_fit, word_drivers

    kept, summ = pair
    assert verdict_from_fit(kept, "x").label == verdict_from_fit(summ, "x").label
    a, b = word_drivers(kept, rope=0.02), word_drivers(summ, rope=0.02)
    assert list(a.columns) == list(b.columns) and len(a) == len(b)
    key = ["contrast", "protected_word"]
    m = a.merge(b, on=key, suffixes=("_a", "_b"))
    assert np.abs(m["prob_below_zero_a"] - m["prob_below_zero_b"]).max() < 0.05
    assert np.abs(m["share_in_rope_a"] - m["share_in_rope_b"]).max() < 0.05
    assert "contrasts" in str(summ) and "per-protected word means" in summ._repr_html_()
    summ.plot_forest(tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 1000
    ppc_a, ppc_b = kept.ppc(), summ.ppc()
    assert np.abs(ppc_a["inside_0.89"] - ppc_b["inside_0.89"]).max() < 0.05


def test_forced_summaries_need_a_family_that_has_them():
    from bayesbias.datasets import published_table
    from bayesbias.errors import ModelSpecError
    from bayesbias.models import fit_model

    # (crossed has them since issue 26's second part: tests/test_crossed_scale.py)
    with pytest.raises(ModelSpecError, match="per-word summaries"):
        fit_model(published_table("religion", "reddit"), "additive", draws=10, tune=10,
                  keep_word_draws=False)


def test_grouped_kernel_is_the_sum_over_cells():
    """The density on groups of cells sharing (connection, n) equals the per-cell one."""
    import ctypes

    from bayesbias.datasets import published_table
    from bayesbias.models import load_spec
    from bayesbias.models.cells import cells_from_table
    from bayesbias.models.marginal import _blocks_kernel

    cells = cells_from_table(published_table("religion", "reddit"), "word")
    spec = load_spec("hierarchical")
    per_cell, grouped = _blocks_kernel(spec, cells), _blocks_kernel(spec, cells, grouped=True)
    assert grouped.data.size < per_cell.data.size
    ptr = ctypes.POINTER(ctypes.c_double)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = per_cell.init(rng) + rng.normal(0, 0.3, 12)
        got = []
        for k in (per_cell, grouped):
            g, lp = np.zeros_like(x), np.zeros(1)
            assert k.logp.ctypes(x.size, x.ctypes.data_as(ptr), g.ctypes.data_as(ptr),
                                 lp.ctypes.data_as(ptr), k.data.ctypes.data_as(ptr)) == 0
            got.append((lp[0], g))
        assert got[1][0] == pytest.approx(got[0][0], rel=1e-12, abs=1e-9)
        np.testing.assert_allclose(got[1][1], got[0][1], rtol=1e-10, atol=1e-9)


def test_cli_keep_word_draws(monkeypatch, tmp_path, capsys, quick_verdicts):
    """CLI: summaries above the threshold (lowered here), draws with --keep-word-draws.

    --loo without draws is a clean error naming the flag.
    """
    from hostile import run_main

    from bayesbias.models import load_fit

    monkeypatch.setattr(ws, "WORD_DRAWS_BYTES", 0)
    base = ["fit", "--distances", "published:religion:reddit", "--model", "hierarchical",
            "--draws", "100", "--tune", "100", "--chains", "2", "--quiet"]
    code, _, err = run_main(capsys, base + ["-o", tmp_path / "s.nc"])
    assert code == 0, err
    assert not load_fit(tmp_path / "s.nc").word_draws
    code, _, err = run_main(capsys, base + ["--keep-word-draws", "-o", tmp_path / "k.nc"])
    assert code == 0, err
    assert load_fit(tmp_path / "k.nc").word_draws
    code, _, err = run_main(capsys, base + ["--loo"])
    assert code == 2 and "--keep-word-draws" in err and "Traceback" not in err


@pytest.mark.slow
def test_report_without_word_draws(monkeypatch, tmp_path, capsys):
    """The whole report on a fit without per-word draws: tables, forest figure, saved fit."""
    from hostile import run_main

    from bayesbias.models import load_fit

    monkeypatch.setattr(ws, "WORD_DRAWS_BYTES", 0)
    out = tmp_path / "rep"
    code, _, err = run_main(capsys, ["report", "--distances", "published:religion:reddit",
                                     "--model", "hierarchical", "-o", out, "--quiet"])
    assert code == 0, err
    assert not load_fit(out / "fits" / "religion_reddit.nc").word_draws
    assert (out / "tables" / "religion_reddit_word_contrasts.csv").stat().st_size > 1000
    assert (out / "figures" / "religion_reddit_forest.png").stat().st_size > 10_000


def test_interval_grids_nest_and_refine_only_where_the_coarse_one_fails(monkeypatch):
    """The coarse grid's nodes are every other fine node; a failed check refines, reusing them."""
    for d, (coarse, fine) in ws.GRID_POINTS.items():
        assert fine - 1 == 2 * (coarse - 1), d
        np.testing.assert_array_equal(ws._chebyshev_nodes(-0.3, 0.2, fine)[::2],
                                      ws._chebyshev_nodes(-0.3, 0.2, coarse))
    rng = np.random.default_rng(4)
    k = 400
    alpha, beta = rng.normal(0.0, 0.02, k), rng.normal(0.5, 0.05, (k, 1))
    sd = np.abs(rng.normal(0.05, 0.005, k))
    y = rng.normal(0.0, 0.05, (300, 1))
    computed = []
    at_points = ws._at_points

    def spy(alpha, beta, sd, points, *args, **kw):
        computed.append(points.shape[0])
        return at_points(alpha, beta, sd, points, *args, **kw)

    monkeypatch.setattr(ws, "_at_points", spy)
    one = {}
    for grids in ((17,), (33,)):  # each grid alone
        monkeypatch.setitem(ws.GRID_POINTS, 1, grids)
        one[grids[0]] = ws.linear_summary(alpha, beta, sd, y, 0.89, "hdi")["ci"]
    monkeypatch.setitem(ws.GRID_POINTS, 1, (17, 33))
    computed.clear()
    got = ws.linear_summary(alpha, beta, sd, y, 0.89, "hdi")["ci"]
    assert computed[1:] == [17 + ws.CHECK_POINTS[1]]  # the coarse grid passed its check
    np.testing.assert_array_equal(got, one[17])
    interpolate = ws._interpolate
    first = [True]

    def fail_first_check(nodes, values, x):  # the coarse grid's check fails once
        out = interpolate(nodes, values, x)
        if first[0] and len(x) == ws.CHECK_POINTS[1]:
            first[0] = False
            out = {key: v + 1.0 for key, v in out.items()}
        return out

    monkeypatch.setattr(ws, "_interpolate", fail_first_check)
    computed.clear()
    got = ws.linear_summary(alpha, beta, sd, y, 0.89, "hdi")["ci"]
    # the fine grid computes only its new nodes (and its check points), then passes
    assert computed[1:] == [17 + ws.CHECK_POINTS[1], 16 + ws.CHECK_POINTS[1]]
    sdev = ws.linear_summary(alpha, beta, sd, y, 0.89, "hdi")["sd"][:, None]
    np.testing.assert_allclose(got / sdev, one[33] / sdev, rtol=0, atol=1e-12)

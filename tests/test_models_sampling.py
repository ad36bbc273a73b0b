"""Sampling: reproducible seeds, the additive model's clean diagnostics, marginal = full model."""

import warnings

import numpy as np
import pytest

from bayesbias.models import fit_model
from bayesbias.testing import simulate_table


def assert_same_posterior(pairs, z_max=4.5, sd_tol=0.15):
    """Assert that two samplers' draws agree within Monte Carlo error.

    `pairs` maps a name to two DataArrays with ``chain`` and ``draw`` dims: their posterior
    means must differ by less than `z_max` Monte Carlo standard errors of the difference
    (ArviZ's MCSE of each side), and their sds by less than a fraction `sd_tol`.
    """
    import arviz as az

    for v, (a, b) in pairs.items():
        se = np.sqrt(az.mcse(a.to_dataset(name="x"))["x"] ** 2
                     + az.mcse(b.to_dataset(name="x"))["x"] ** 2)
        z = np.abs(a.mean(("chain", "draw")) - b.mean(("chain", "draw"))) / se
        assert float(z.max()) < z_max, (v, float(z.max()))
        sd_ratio = a.std(("chain", "draw")) / b.std(("chain", "draw"))
        assert float(np.abs(sd_ratio - 1).max()) < sd_tol, (v, sd_ratio.values)


# The additive model samples only its residual sd (m and co integrated out, the compiled C
# kernel): two short fits cost about a second.
@pytest.fixture(scope="module")
def additive_pair():
    table, truth = simulate_table("additive", seed=4, words_per_class=3, n_human=20,
                                  n_none=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = [fit_model(table, "additive", draws=300, tune=300, chains=2, seed=s)
                for s in (7, 7)]
    return fits, truth


def test_same_seed_gives_the_same_draws(additive_pair):
    (a, b), _ = additive_pair
    for v in ("sigma", "m", "co", "mu"):
        assert np.array_equal(a.posterior[v].values, b.posterior[v].values), v
    assert a.idata.attrs["seed"] == 7 and a.idata.attrs["marginal"] == 1


def test_additive_samples_cleanly_and_recovers_contrasts(additive_pair):
    (fit, _), truth = additive_pair
    diag = fit.diagnostics()
    # m and co sit on a ridge; integrated out, the sampler sees only sigma.
    co = diag.table[diag.table["parameter"].str.startswith(("co[", "m[", "sigma"))]
    assert co["rhat"].max() < 1.03
    assert co["ess_bulk"].min() > 200
    assert diag.divergences == 0
    c = fit.contrasts().set_index("contrast")
    err = (c["mean"] - truth["contrasts"].to_series().reindex(c.index)).abs()
    # within 3 posterior sds of the truth
    assert (err < 3 * c["sd"]).all(), err


@pytest.mark.slow
@pytest.mark.parametrize("residual_sd", ["single", "per_connection"])
def test_additive_marginal_matches_the_pytensor_rotation(residual_sd):
    """Same posterior as the PyTensor model on the exact rotation (marginal=False).

    Within MC error: posterior means differ by < 4.5 Monte Carlo standard errors of the
    difference and sds by < 15%, for co, m, sigma, the contrasts and the cell means (4 chains x
    1000 draws).
    """
    table, _ = simulate_table("additive", seed=9, words_per_class=4, n_human=20, n_none=40,
                              residual_sd=residual_sd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = fit_model(table, "additive", seed=3, residual_sd=residual_sd)
        full = fit_model(table, "additive", seed=3, residual_sd=residual_sd, marginal=False)
    assert fast.idata.attrs["marginal"] == 1 and full.idata.attrs["marginal"] == 0
    pairs = {v: (fast.posterior[v], full.posterior[v]) for v in ("co", "m", "sigma", "mu")}
    pairs["contrast"] = (fast.contrast_draws(), full.contrast_draws())
    assert_same_posterior(pairs)


_FRESH = """
import sys, numpy as np, warnings
warnings.simplefilter("ignore")
from bayesbias.datasets import published_table
from bayesbias.models import fit_model
from bayesbias.testing import simulate_table
fit = fit_model(published_table("religion", "reddit"), "hierarchical", draws=200, tune=200,
                chains=2, seed=5)
add = fit_model(simulate_table("additive", seed=4, words_per_class=3)[0], "additive", draws=200,
                tune=200, chains=2, seed=5)
np.save(sys.argv[1], np.concatenate([fit.posterior[v].values.ravel()
                                     for v in ("mu_bar", "tau", "sigma", "mu")]
                                    + [add.posterior[v].values.ravel()
                                       for v in ("sigma", "co", "m", "mu")]))
"""


def test_same_seed_same_draws_in_one_process(religion_fit):
    """The conftest fit again, in the same process (the kernel is already loaded)."""
    from bayesbias.datasets import published_table

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = fit_model(published_table("religion", "reddit"), "hierarchical", draws=300,
                          tune=300, chains=2, seed=11)
    for v in ("mu_bar", "tau", "sigma", "mu"):
        assert np.array_equal(religion_fit.posterior[v].values, again.posterior[v].values), v


@pytest.mark.slow
def test_fresh_processes_with_empty_compile_caches_give_identical_draws(tmp_path):
    """Issue 10 §2: two new processes, each with its own empty compile caches.

    Numba, PyTensor and C kernel caches; hierarchical and additive fits.
    """
    import os
    import subprocess
    import sys

    out = []
    for k in range(2):
        env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / f"numba{k}"),
                   PYTENSOR_FLAGS=f"compiledir={tmp_path / f'pt{k}'}",
                   BAYESBIAS_CACHE=str(tmp_path / f"bb{k}"))
        path = tmp_path / f"draws{k}.npy"
        subprocess.run([sys.executable, "-c", _FRESH, str(path)], env=env, check=True)
        out.append(np.load(path))
    # the C kernels were built and cached (without a C compiler: the PyMC model, numba's cache)
    assert any((tmp_path / "bb0").rglob("*.so")) or any((tmp_path / "numba0").rglob("*.nbi"))
    assert np.array_equal(out[0], out[1])


def test_direct_nutpie_core_gives_what_nutpie_sample_gives():
    """Driving nutpie's core directly gives what ``nutpie.sample`` gives.

    The sampler skips `import nutpie` (ArviZ, matplotlib, numba): same posterior and
    sample_stats on the same model, seed and settings (diagonal and low-rank adaptation).
    """
    import dataclasses

    import nutpie
    import xarray as xr
    from nutpie import _lib
    from nutpie.sample import CompiledModel

    from bayesbias.config import CONNECTIONS
    from bayesbias.models import cells_from_table, load_spec
    from bayesbias.models.additive import marginal_kernel
    from bayesbias.models.marginal import _blocks_kernel, _run_nutpie

    table, _ = simulate_table("additive", seed=4, words_per_class=3, n_human=20, n_none=40)
    cells = cells_from_table(table)
    for kernel in (_blocks_kernel(load_spec("hierarchical_authors"), cells),
                   marginal_kernel(load_spec("additive", residual_sd="per_connection"), cells)):
        def init(s, kernel=kernel):
            return kernel.init(np.random.default_rng([3, s]))

        @dataclasses.dataclass(frozen=True)
        class Model(CompiledModel):
            kernel: object = None

            def _make_sampler(self, settings, init_mean, cores, progress_type, callback, rate,
                              store):
                k, data = self.kernel, self.kernel.data
                n = int(data[0])
                model = _lib.PyMcModel(
                    _lib.LogpFunc(k.logp.address, data.ctypes.data, data),
                    _lib.ExpandFunc(n, n, k.expand.address, data.ctypes.data, data),
                    _lib.PyVariable.new_variables(k.names, ["float64"] * len(k.names),
                                                  k.shapes, {"connection": 4}, k.dims),
                    n, {"connection": 4}, {"connection": list(CONNECTIONS)}, init, None)
                return _lib.PySampler.from_pymc(settings, cores, model, progress_type,
                                                callback, rate, store)

            @property
            def n_dim(self):
                return int(self.kernel.data[0])

            @property
            def shapes(self):
                return dict(zip(self.kernel.names, self.kernel.shapes, strict=True))

            @property
            def coords(self):
                return {"connection": list(CONNECTIONS)}

        ref = nutpie.sample(Model(dims=kernel.dims, kernel=kernel), draws=150, tune=100,
                            chains=2, cores=2, seed=3, progress_bar=False, save_warmup=False,
                            target_accept=0.85, adaptation=kernel.adaptation)
        post, stats = _run_nutpie(kernel, init, "test", 150, 100, 2, 2, 3, 0.85)
        xr.testing.assert_equal(ref.posterior.to_dataset(), post)
        want = ref.sample_stats.to_dataset()
        assert set(want.data_vars) == set(stats.data_vars)
        plain = [v for v in want.data_vars if want[v].dtype != object]
        xr.testing.assert_equal(want[plain], stats[plain])


@pytest.mark.slow
def test_integrated_sampler_matches_the_full_model():
    """Same posterior as sampling every per-word mean (today's nutpie model), within MC error.

    4 chains x 1000 draws each; posterior means differ by < 4.5 Monte Carlo standard errors of
    the difference and sds by < 15% (group means, tau, sigma, per-word means).
    """
    from bayesbias.datasets import published_table

    table = published_table("religion", "reddit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = fit_model(table, "hierarchical", seed=3)
        full = fit_model(table, "hierarchical", seed=3, marginal=False)
    assert fast.idata.attrs["marginal"] == 1 and full.idata.attrs["marginal"] == 0
    assert_same_posterior({v: (fast.posterior[v], full.posterior[v])
                           for v in ("mu_bar", "tau", "sigma", "mu")})


def test_no_module_of_the_package_imports_numba():
    """No module of the package imports numba, but the group-rates density.

    numba comes with nutpie's PyMC extra and is used there (compiling a PyMC model); the
    distance families' kernels are C (models/_native.py). The one exception is the Binomial
    density of `bayesbias groups` (models/_group_rates_numba.py, which models/group_rates.py
    imports on first use), compiled with numba and cached on disk, and checked against its
    NumPy twin and PyMC's model in test_groups.
    """
    import ast
    from pathlib import Path

    import bayesbias

    found = []
    for path in Path(bayesbias.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "numba"
                      and path.name != "_group_rates_numba.py"]
    assert not found


def test_without_a_c_compiler_the_cell_marginal_sampler_is_refused(monkeypatch):
    """Without compiled kernels the cell-marginal sampler is refused, before any sampling.

    ``BAYESBIAS_KERNEL=pymc`` acts as a missing C compiler: no family supports it then.
    """
    from bayesbias.errors import ModelSpecError
    from bayesbias.models import load_spec
    from bayesbias.models.marginal import supports

    monkeypatch.setenv("BAYESBIAS_KERNEL", "pymc")
    assert not any(supports(load_spec(m)) for m in ("hierarchical", "additive", "crossed"))
    table, _ = simulate_table(seed=4, words_per_class=2, n_human=6, n_none=8)
    with pytest.raises(ModelSpecError, match="C compiler"):
        fit_model(table, "hierarchical", draws=100, tune=100, chains=2, marginal=True)


@pytest.mark.slow
def test_without_a_c_compiler_the_pymc_model_is_sampled(monkeypatch):
    """Without compiled kernels the PyMC model is sampled through nutpie's public API.

    Slow: compiling the PyMC model for nutpie takes about 40 s (the rest of the no-compiler
    path, the refusal above, stays in the default run).
    """
    monkeypatch.setenv("BAYESBIAS_KERNEL", "pymc")
    table, _ = simulate_table(seed=4, words_per_class=2, n_human=6, n_none=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_model(table, "hierarchical", draws=100, tune=100, chains=2, seed=2)
    assert fit.idata.attrs["marginal"] == 0 and fit.idata.attrs["sampler"] == "nutpie"
    assert np.isfinite(fit.posterior["mu"].values).all()


@pytest.mark.slow
def test_without_a_c_compiler_the_posterior_is_the_same(monkeypatch):
    """The no-compiler fallback gives the compiled kernels' posterior.

    The PyMC model (every cell mean sampled) against the C kernels: posterior means within 4.5
    Monte Carlo standard errors, sds within 15%, for both kinds of kernel (hierarchical,
    additive).
    """
    from bayesbias.models import _native

    if _native.library() is None:
        pytest.skip("no working C compiler")
    table, _ = simulate_table("additive", seed=4, words_per_class=3, n_human=20, n_none=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = [fit_model(table, m, draws=1000, tune=1000, chains=4, seed=2)
                for m in ("hierarchical", "additive")]
        monkeypatch.setenv("BAYESBIAS_KERNEL", "pymc")
        again = [fit_model(table, m, draws=1000, tune=1000, chains=4, seed=2)
                 for m in ("hierarchical", "additive")]
    for a, b in zip(fits, again, strict=True):
        assert a.idata.attrs["marginal"] == 1 and b.idata.attrs["marginal"] == 0
        assert_same_posterior({v: (a.posterior[v], b.posterior[v])
                               for v in ("sigma", "mu")})


def _kernels():
    from bayesbias.models import cells_from_table, load_spec
    from bayesbias.models.additive import marginal_kernel
    from bayesbias.models.crossed import marginal_kernel as crossed_kernel
    from bayesbias.models.marginal import _blocks_kernel

    table, _ = simulate_table("crossed", seed=4, words_per_class=3, n_human=12, n_none=20)
    cells = cells_from_table(table)
    return [_blocks_kernel(load_spec("hierarchical_authors"), cells),  # low-rank adaptation
            marginal_kernel(load_spec("additive", residual_sd="per_connection"), cells),
            crossed_kernel(load_spec("crossed"), cells)]  # expands to more values than it samples


def test_public_nutpie_api_gives_the_core_drivers_draws(monkeypatch):
    """Forcing nutpie's public API (``BAYESBIAS_NUTPIE=public``) changes no draw or statistic."""
    import xarray as xr

    from bayesbias.models import _native, _nutpie

    if _native.library() is None:
        pytest.skip("no working C compiler")
    for kernel in _kernels():
        def init(s, kernel=kernel):
            return kernel.init(np.random.default_rng([3, s]))

        monkeypatch.delenv("BAYESBIAS_NUTPIE", raising=False)
        assert _nutpie.core_usable()
        post, stats = _nutpie.run(kernel, init, "test", 100, 100, 2, 2, 3, 0.85)
        monkeypatch.setenv("BAYESBIAS_NUTPIE", "public")
        assert not _nutpie.core_usable()
        post2, stats2 = _nutpie.run(kernel, init, "test", 100, 100, 2, 2, 3, 0.85)
        xr.testing.assert_equal(post, post2)
        plain = [v for v in stats.data_vars if stats[v].dtype != object]
        assert set(stats.data_vars) == set(stats2.data_vars)
        xr.testing.assert_equal(stats[plain], stats2[plain])


def test_a_changed_nutpie_core_falls_back_to_the_public_api(monkeypatch):
    """A core without a name the driver calls, or whose calls fail, is not used."""
    from bayesbias.models import _native, _nutpie

    if _native.library() is None:
        pytest.skip("no working C compiler")
    kernel = _kernels()[1]
    used = []
    real = _nutpie._run_public
    monkeypatch.setattr(_nutpie, "_run_public", lambda *a: used.append(1) or real(*a))

    def init(s):
        return kernel.init(np.random.default_rng([3, s]))

    monkeypatch.setattr(_nutpie, "_CORE_NAMES", _nutpie._CORE_NAMES + ("NoSuchName",))
    assert not _nutpie.core_usable()
    post, _ = _nutpie.run(kernel, init, "test", 50, 50, 1, 1, 3, 0.8)
    monkeypatch.undo()
    monkeypatch.setattr(_nutpie, "_run_public", lambda *a: used.append(2) or real(*a))

    def changed(*a, **k):
        raise TypeError("PyMcModel() takes 7 positional arguments but 8 were given")

    monkeypatch.setattr(_nutpie, "_core_sampler", changed)
    post2, _ = _nutpie.run(kernel, init, "test", 50, 50, 1, 1, 3, 0.8)
    assert used == [1, 2] and np.array_equal(post["sigma"].values, post2["sigma"].values)


def test_the_crossed_sampler_tunes_for_its_own_steps_unless_told():
    """The family's ``TUNE`` (500) when no tune is given; a given tune wins."""
    table, _ = simulate_table("crossed", seed=4, words_per_class=3, n_human=10, n_none=10)
    fit = fit_model(table, "crossed", draws=50, chains=1, seed=1, checked=False)
    assert fit.idata.attrs["tune"] == 500
    assert fit.idata["sample_stats"].sizes["draw"] == 50
    fit = fit_model(table, "crossed", draws=50, tune=60, chains=1, seed=1, checked=False)
    assert fit.idata.attrs["tune"] == 60

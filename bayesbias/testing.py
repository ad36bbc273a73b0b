"""Seeded synthetic distance tables drawn from the models, with the true parameters.

Used by the tests, benchmarks and notebooks; nothing is downloaded.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._xarray import xr
from .config import CONNECTIONS, defaults

__all__ = ["simulate_table", "design", "coverage_study", "REALISTIC", "RELIGION_DESIGN"]

#: Parameter values close to the published religion/Reddit fit (cosine distances).
REALISTIC = {
    "mu_bar": (0.83, 0.88, 0.91, 0.95),
    "tau": (0.10, 0.07, 0.05, 0.04),
    "sigma": (0.22, 0.20, 0.17, 0.18),
    "co": (-0.16, -0.11, -0.09, -0.04),
    "m_mean": 1.0,
    "m_sd": 0.05,
    # crossed family: sd of the attribute-word effects (the shipped Reddit tables: 0.11-0.14)
    "omega": 0.13,
}

#: The religion/Reddit word list's layout: 15 protected words in 3 classes, 11 stereotypes
#: (4/4/3), 85 human and 226 neutral attributes; every word meets every attribute (4,830 rows).
RELIGION_DESIGN = dict(n_classes=3, words_per_class=5, stereotypes_per_class=(4, 4, 3),
                       n_human=85, n_none=226)


def design(n_classes: int = 3, words_per_class: int = 5,
           stereotypes_per_class: int | tuple[int, ...] = 5,
           n_human: int = 40, n_none: int = 100) -> pd.DataFrame:
    """Every (protected word, attribute) pair of a synthetic word list, without distances.

    Each class has `stereotypes_per_class` attributes (one number for all classes, or one per
    class); every word meets every attribute, so a stereotype is an ``associated`` row for
    the words of its class and a ``different`` row for the others. Columns are categorical
    (cheap at millions of rows).
    """
    per = np.broadcast_to(np.asarray(stereotypes_per_class, dtype=int), (n_classes,))
    classes = [f"class{k}" for k in range(n_classes)]
    words = [f"word{k}_{i}" for k in range(n_classes) for i in range(words_per_class)]
    word_class = np.repeat(np.arange(n_classes), words_per_class)
    attr_class = np.r_[np.repeat(np.arange(n_classes), per),
                       np.full(n_human, n_classes), np.full(n_none, n_classes + 1)]
    attrs = [f"attr{j}" for j in range(attr_class.size)]
    n_w, n_a = len(words), attr_class.size
    wi = np.repeat(np.arange(n_w), n_a)
    ai = np.tile(np.arange(n_a), n_w)
    pc, ac = word_class[wi], attr_class[ai]
    conn = np.where(ac == n_classes, 2, np.where(ac == n_classes + 1, 3,
                                                 np.where(ac == pc, 0, 1)))
    cat = pd.Categorical.from_codes
    return pd.DataFrame({
        "protected_word": cat(wi, words),
        "protected_class": cat(pc, classes),
        "attribute": cat(ai, attrs),
        "attribute_class": cat(ac, classes + ["human", "none"]),
        "connection": cat(conn, list(CONNECTIONS)),
    })


def _draw(prior, rng, size=None):
    return np.asarray(prior.draw(rng, size), dtype=float)


def simulate_table(model="hierarchical", *, params="realistic", seed: int | None = None,
                   n_classes: int = 3, words_per_class: int = 5,
                   stereotypes_per_class: int | tuple[int, ...] = 5,
                   n_human: int = 40, n_none: int = 100, **spec_overrides):
    """Simulate a distance table from a model spec with known parameters.

    Parameters
    ----------
    model : str, path-like or ModelSpec
        Spec name or file (see :func:`bayesbias.models.load_spec`).
    params : {"realistic", "prior"} or dict
        ``"realistic"``: values near the published fits (:data:`REALISTIC`; cell means are
        drawn from them); ``"prior"``: every parameter drawn from the spec's priors (for
        calibration checks); a dict overrides named parameters of ``"realistic"`` (e.g.
        ``{"mu_bar": ..., "tau": ..., "sigma": ..., "omega": ...}``; a scalar ``sigma`` is
        one residual sd for every connection).
    seed : int, optional
        Default ``bayesbias.config.defaults.seed``.
    n_classes, words_per_class, stereotypes_per_class, n_human, n_none : int
        The synthetic word list (see :func:`design`).

    Returns
    -------
    table : pandas.DataFrame
        A distance table (:data:`bayesbias.distances.COLUMNS`).
    truth : xarray.Dataset
        The true parameters (``mu`` with dims ``(unit, connection)``, and per family
        ``mu_bar``, ``tau``, ``m``, ``co``, ``sigma``; crossed: ``omega`` and
        ``attribute_effect`` with dim ``attribute``), plus ``group_mean`` and ``contrasts``
        (dim ``contrast``) defined as in :class:`bayesbias.models.Fit`.

    Notes
    -----
    Crossed family: every attribute word gets one effect ``v[a] ~ Normal(0, omega)`` (one
    ``omega``, or one per attribute kind stereotype/human/none with ``attribute_sd =
    "per_kind"``), shared by all the protected words that meet it: a stereotype shifts its
    ``associated`` rows and its ``different`` rows alike. ``group_mean`` is ``mu_bar``, the
    mean over the *population* of attributes, not over the listed ones.
    """
    from .models.cells import UNIT_DIMS
    from .models.families import family_module
    from .models.fit import CONTRASTS
    from .models.spec import load_spec

    spec = load_spec(model, **spec_overrides)
    rng = np.random.default_rng(defaults.seed if seed is None else seed)
    table = design(n_classes, words_per_class, stereotypes_per_class, n_human, n_none)
    unit_col = UNIT_DIMS[spec.level]
    units = list(table[unit_col].cat.categories)
    n_u, n_c = len(units), len(CONNECTIONS)
    p = spec.priors
    prior = params == "prior"
    given = dict(REALISTIC, **(params if isinstance(params, dict) else {}))
    fam = family_module(spec.family)
    if hasattr(fam, "simulate_cell_means"):
        mu, truth = fam.simulate_cell_means(spec, rng, n_u, unit_col, None if prior else given)
    else:  # independent cell means
        truth = {}
        if prior:
            mu = _draw(p["mu"], rng, (n_u, n_c))
        else:
            mu = (np.asarray(given["mu_bar"], float)
                  + np.asarray(given["tau"], float) * rng.standard_normal((n_u, n_c)))
    if spec.residual_sd == "per_connection":
        sigma = _draw(p["sigma"], rng, n_c) if prior else np.broadcast_to(
            np.asarray(given["sigma"], float), (n_c,)).copy()
        truth["sigma"] = (("connection",), sigma)
        sig_c = sigma
    else:
        sigma = float(_draw(p["sigma"], rng)) if prior else float(np.mean(given["sigma"]))
        truth["sigma"] = ((), sigma)
        sig_c = np.full(n_c, sigma)
    ui = table[unit_col].cat.codes.to_numpy()
    ci = table["connection"].cat.codes.to_numpy()
    y = mu[ui, ci] + sig_c[ci] * rng.standard_normal(len(table))
    attr_coords = {}
    if hasattr(fam, "simulate_row_effects"):
        effect, extra, attr_coords = fam.simulate_row_effects(spec, rng, table,
                                                              None if prior else given)
        truth.update(extra)
        y = y + effect
    table["cosine_distance"] = y
    table["cosine_similarity"] = 1.0 - y
    table.attrs.update(source=f"simulated from {spec.name} (seed {seed})", simulated=True)

    truth["mu"] = ((unit_col, "connection"), mu)
    coords = {unit_col: units, "connection": list(CONNECTIONS)}
    ds = xr.Dataset(truth, coords={**coords, **attr_coords})
    n = np.zeros((n_u, n_c), dtype=int)
    np.add.at(n, (ui, ci), 1)
    has = xr.DataArray(n > 0, dims=(unit_col, "connection"), coords=coords)
    if fam.GROUP_MEAN is not None and fam.GROUP_MEAN in ds:
        group = ds[fam.GROUP_MEAN]
    else:
        group = ds["mu"].where(has).sum(unit_col) / has.sum(unit_col)
    ds["group_mean"] = group
    ds["contrasts"] = xr.concat(
        [group.sel(connection=a, drop=True) - group.sel(connection=b, drop=True)
         for a, b in CONTRASTS], dim="contrast").assign_coords(
        contrast=[f"{a} - {b}" for a, b in CONTRASTS])
    ds.attrs.update(model=spec.name, spec_hash=spec.hash, params=str(params),
                    seed=-1 if seed is None else seed)
    return table, ds


def coverage_study(model="hierarchical", n_sims: int = 50, *, ci_prob: float | None = None,
                   ci_kind: str | None = None, params="prior", draws: int = 300,
                   tune: int = 300, chains: int = 2, seed: int = 0, **design_kwargs):
    """How often the credible intervals contain the true value, over repeated simulations.

    Each simulation draws a table with :func:`simulate_table` (parameters from the prior by
    default, so that the nominal rate is exact for a correct sampler) and fits the same spec.

    Returns
    -------
    pandas.DataFrame
        One row per quantity (group-level means, contrasts, residual sds): ``quantity``,
        ``covered`` (share of simulations whose interval contains the truth), ``n_sims``;
        ``attrs`` hold the overall rate, ``ci_prob``, ``ci_kind`` and the divergent fits.
    """
    import warnings

    from .models import fit_model
    from .models.summaries import resolve_ci, summarise, to_frame

    ci_prob, ci_kind = resolve_ci(ci_prob, ci_kind)
    hits: dict[str, list[bool]] = {}
    divergent = 0
    for i in range(n_sims):
        table, truth = simulate_table(model, params=params, seed=seed + i, **design_kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_model(table, model, draws=draws, tune=tune, chains=chains,
                            seed=seed + 10_000 + i)
        divergent += fit.diagnostics().divergences > 0
        checks = {
            "group_mean": (fit.group_mean_draws(), truth["group_mean"], "connection"),
            "contrast": (fit.contrast_draws(), truth["contrasts"], "contrast"),
        }
        if truth["sigma"].ndim:
            checks["sigma"] = (fit.posterior["sigma"], truth["sigma"], "connection")
        for name, (draws_, true, dim) in checks.items():
            f = to_frame(summarise(draws_, ci_prob, ci_kind)).set_index(dim)
            for label in f.index:
                t = float(true.sel({dim: label}))
                hits.setdefault(f"{name}[{label}]", []).append(
                    bool(f.loc[label, "lower"] <= t <= f.loc[label, "upper"]))
    out = pd.DataFrame({"quantity": list(hits), "covered": [np.mean(v) for v in hits.values()],
                        "n_sims": n_sims})
    out.attrs.update(overall=float(np.mean([x for v in hits.values() for x in v])),
                     ci_prob=ci_prob, ci_kind=ci_kind, model=str(model), params=str(params),
                     fits_with_divergences=int(divergent))
    return out

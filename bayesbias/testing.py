"""Seeded synthetic distance tables drawn from the models, with the true parameters.

Used by the tests, benchmarks and notebooks; nothing is downloaded.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._xarray import xr
from .config import CONNECTIONS, defaults
from .models import fit_model
from .models.cells import UNIT_DIMS
from .models.families import family
from .models.fit import CONTRASTS
from .models.spec import load_spec
from .models.summaries import resolve_ci, summarise, to_frame

__all__ = ["simulate_table", "simulate_ensemble_table", "design", "coverage_study", "REALISTIC",
           "RELIGION_DESIGN"]

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
    spec = load_spec(model, **spec_overrides)
    rng = np.random.default_rng(defaults.seed if seed is None else seed)
    table = design(n_classes, words_per_class, stereotypes_per_class, n_human, n_none)
    unit_col = UNIT_DIMS[spec.level]
    units = list(table[unit_col].cat.categories)
    n_u, n_c = len(units), len(CONNECTIONS)
    p = spec.priors
    prior = params == "prior"
    given = dict(REALISTIC, **(params if isinstance(params, dict) else {}))
    fam = family(spec.family)
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


def simulate_ensemble_table(*, n_embeddings: int = 8, kind: str = "bootstrap",
                            runs_per_sample: int = 1, mu_bar=(0.80, 0.86, 0.85, 0.86),
                            tau=0.04, sigma=0.08, omega=0.04, eta=0.02, kappa0=0.02,
                            kappa=0.015, lambda0=0.01, lam=0.01, psi=0.0, xi=0.0,
                            n_classes: int = 2,
                            words_per_class: int = 4, stereotypes_per_class: int = 5,
                            n_human: int = 8, n_none: int = 12, seed: int = 0):
    """Draw a multi-embedding distance table from the embedding-level model, with the truth.

    ``kind``: ``"bootstrap"`` (the observed corpus is one draw around the language and the
    embeddings are resamples around the corpus), ``"seeds"`` (runs of one corpus: the
    target is that corpus's mean over runs) or ``"corpora"`` (independent corpora). The
    truth ``mu_bar`` is the population mean per connection (over words, attributes and, for
    bootstrap and corpora, corpora). Returns ``(table, truth)``; ``truth`` also holds the
    observed corpus's own means (``corpus_mean``) and each word's population mean per
    connection (``word_mean``). ``psi`` and ``xi`` give each attribute and each (word,
    connection) a deviation per corpus sample, shared by its runs (for bootstrap also one
    of the observed corpus, left out of ``corpus_mean``); 0 draws nothing.
    """
    rng = np.random.default_rng(seed)
    base = design(n_classes, words_per_class, stereotypes_per_class, n_human, n_none)
    nc = len(CONNECTIONS)
    mu_bar = np.asarray(mu_bar, dtype=float)
    k = np.broadcast_to(np.asarray(kappa, float), (nc - 1,))
    lm = np.broadcast_to(np.asarray(lam, float), (nc - 1,))

    def level_effect(scale0, scale):  # shared + vs-none deviations, as in the model
        return scale0 * rng.standard_normal() + np.r_[scale * rng.standard_normal(nc - 1), 0.0]

    words = base["protected_word"].cat.categories
    attrs = base["attribute"].cat.categories
    wi = base["protected_word"].cat.codes.to_numpy()
    ai = base["attribute"].cat.codes.to_numpy()
    ci = base["connection"].cat.codes.to_numpy()
    word = mu_bar[None, :] + np.broadcast_to(np.asarray(tau, float), (nc,)) \
        * rng.standard_normal((words.size, nc))
    v = omega * rng.standard_normal(attrs.size)
    if kind == "seeds":
        n_samples, corpus = 1, np.zeros(nc)
    elif kind == "bootstrap":
        n_samples, corpus = n_embeddings // runs_per_sample, level_effect(kappa0, k)
    elif kind == "corpora":
        n_samples, corpus = n_embeddings // runs_per_sample, np.zeros(nc)
    else:
        raise ValueError(f"kind must be bootstrap, seeds or corpora, got {kind!r}")
    per = n_embeddings if kind == "seeds" else runs_per_sample
    parts = []
    n_w, n_a = words.size, attrs.size

    def sample_deviations():  # an attribute's and a word's deviation in one corpus sample
        u = psi * rng.standard_normal(n_a) if psi else 0.0
        x = np.broadcast_to(np.asarray(xi, float), (nc,)) * rng.standard_normal((n_w, nc)) \
            if np.any(np.asarray(xi) > 0) else 0.0
        return u, x

    own_u, own_x = sample_deviations() if kind == "bootstrap" else (0.0, 0.0)
    for r in range(n_samples):
        label = {"bootstrap": f"bootstrap-{r + 1}", "corpora": f"corpus-{r + 1}",
                 "seeds": "original"}[kind]
        b = corpus + (level_effect(kappa0, k) if kind != "seeds" else 0.0)
        u, x = sample_deviations() if kind != "seeds" else (0.0, 0.0)
        u, x = own_u + u, own_x + x
        for j in range(per):
            s = level_effect(lambda0, lm) if per > 1 else 0.0
            cell = word + x + b + s + eta * rng.standard_normal(word.shape)
            y = cell[wi, ci] + (v + u)[ai] + sigma * rng.standard_normal(wi.size)
            t = base.copy()
            t["cosine_distance"] = y
            t["cosine_similarity"] = 1.0 - y
            t.insert(0, "corpus_sample", label)
            t.insert(0, "embedding", f"{label}-run{j + 1}")
            parts.append(t)
    table = pd.concat(parts, ignore_index=True)
    for col in ("protected_word", "protected_class", "attribute", "attribute_class"):
        table[col] = table[col].astype(str)
    truth = {"mu_bar": dict(zip(CONNECTIONS, mu_bar.tolist(), strict=True)),
             "corpus_mean": dict(zip(CONNECTIONS, (mu_bar + corpus).tolist(), strict=True)),
             "word_mean": {str(w): dict(zip(CONNECTIONS, word[i].tolist(), strict=True))
                           for i, w in enumerate(words)},
             "kind": kind}
    return table, truth

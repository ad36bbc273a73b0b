"""The embedding-level family: one model of many embeddings (seeds, bootstraps, corpora).

The table holds the distances of one word list in E >= 2 embeddings (an ``embedding`` column,
:mod:`bayesbias.ensemble`); a unit is a protected word in one embedding. With ``w`` the word,
``e`` the embedding, ``r`` its corpus sample (``corpus_sample`` column) and ``a`` the
attribute::

    distance_i ~ Normal(mu[w@e, c] + v[a], sigma[c])
    mu[w@e, c] = word[w, c] + b[r, c] + s[e, c] + eta[c] z[w@e, c]     (z ~ Normal(0, 1))
    word[w, c] ~ Normal(m[c], tau[c])              word effects shared across embeddings
    b[r, c]    = kappa0 g[r] + kappa[c] h[r, c]     corpus-sample deviations (R >= 2 samples)
    s[e, c]    = lambda0 g'[e] + lambda[c] h'[e, c] training-run deviations (a sample with
                                                    two or more embeddings)
    v[a]       ~ Normal(0, omega)                   attribute effects (as in ``crossed``)

``g, h, g', h'`` are standard Normal; the ``0`` scales give every connection of a sample
(run) the same shift, which cancels in contrasts; the per-connection scales do not.

What the group-level mean ``mu_bar`` describes depends on the corpus samples:

- seeds of one corpus (all ``original``): ``mu_bar = m``, the mean over runs of *this
  corpus*; run-to-run noise averages out (its uncertainty shrinks like 1/sqrt(E)).
- independent corpora (sample labels other than ``bootstrap-*``): ``mu_bar = m``, the mean of
  the population of corpora the samples stand for (uncertainty ~ kappa / sqrt(R)).
- bootstrap resamples of one corpus (labels ``bootstrap-*``): the resamples scatter around
  the observed corpus as the corpus scatters around the language (the bootstrap principle),
  so the observed corpus is one more draw: ``mu_bar = m - (kappa0 d0 + kappa[c] d[c])`` with
  ``d ~ Normal(0, 1)``. Its uncertainty does not shrink with more resamples: averaging B
  resamples of one corpus does not make the corpus bigger.

Sampled by nutpie (or PyMC) on the row-level PyMC model, all effects non-centred.
"""

from __future__ import annotations

import numpy as np

from ..config import CONNECTIONS
from ..errors import DistanceTableError
from .cells import Cells
from .spec import ModelSpec

__all__ = ["cell_means", "row_effects", "card_lines", "structure", "BOOTSTRAP_PREFIX"]

PRIORS = ("mu_bar", "tau", "sigma", "omega", "eta", "kappa0", "kappa", "lambda0", "lambda")
SCALES = ("tau", "sigma", "omega", "eta", "kappa0", "kappa", "lambda0", "lambda")
PARAMETERS = ("mu_bar", "M", "tau", "sigma", "omega", "eta", "kappa0", "kappa", "lambda0",
              "lambda")
GROUP_MEAN = "mu_bar"
#: Corpus-sample labels starting with this are bootstrap resamples of one corpus.
BOOTSTRAP_PREFIX = "bootstrap"
#: A model of many embeddings: other families refuse a table of two or more.
EMBEDDINGS = True
#: Data-to-prior information ratio below which the cell means are sampled non-centred.
AUTO_RATIO = 10.0
_NC = len(CONNECTIONS)


def structure(cells: Cells) -> dict:
    """Embeddings, corpus samples and which levels the model has.

    Returns ``embeddings`` (E), ``samples`` (R labels), ``sample_of`` (each embedding's
    sample index), ``words`` and ``word_of`` (each unit's word index), ``sample_level``
    (R >= 2), ``run_level`` (a sample with two or more embeddings), ``bootstrap``.
    """
    if cells.embeddings is None or cells.embeddings.size < 2:
        n = 0 if cells.embeddings is None else 1
        raise DistanceTableError(
            f"the embedding_level model needs a table of 2 or more embeddings (an 'embedding' "
            f"column), got {n}: with one embedding the variation between training runs and "
            "corpus samples cannot be estimated; use --model crossed for one embedding")
    samples, sample_of = np.unique(cells.embedding_sample.astype(str), return_inverse=True)
    words, word_of = np.unique(cells.unit_base.astype(str), return_inverse=True)
    counts = np.bincount(sample_of, minlength=samples.size)
    boot = np.char.startswith(samples.astype(str), BOOTSTRAP_PREFIX)
    return {"embeddings": cells.embeddings.astype(str), "samples": samples,
            "sample_of": sample_of, "words": words, "word_of": word_of,
            "sample_level": samples.size >= 2, "run_level": bool((counts >= 2).any()),
            "bootstrap": bool(boot.any())}


def card_lines(spec: ModelSpec, unit: str, s: str) -> list[str]:
    """Return the model card's equations."""
    p = spec.priors
    return [f"  distance_i ~ Normal(mu[{unit}@e, c] + v[a], {s})",
            "  e: the row's embedding; r: its corpus sample; a: its attribute word",
            f"  mu[{unit}@e, c] = word[{unit}, c] + b[r, c] + s[e, c] + eta[c] z",
            f"  word[{unit}, c] ~ Normal(m[c], tau[c])",
            "  b[r, c] = kappa0 g[r] + kappa[c] h[r, c]      (corpus samples, if 2 or more)",
            "  s[e, c] = lambda0 g'[e] + lambda[c] h'[e, c]  (training runs within a sample)",
            "  v[a] ~ Normal(0, omega)",
            "  mu_bar[c] = m[c] (seeds or corpora), or m[c] - kappa0 d0 - kappa[c] d[c] "
            "(bootstrap resamples: the corpus is one more draw)",
            f"  m[c] ~ {p['mu_bar']}",
            f"  tau[c] ~ {p['tau']};  eta[c] ~ {p['eta']};  omega ~ {p['omega']}",
            f"  kappa0 ~ {p['kappa0']};  kappa[c] ~ {p['kappa']}",
            f"  lambda0 ~ {p['lambda0']};  lambda[c] ~ {p['lambda']}",
            "  (the scales of a level the ensemble lacks keep their prior)"]


def _kind_of_connection() -> np.ndarray:
    """Return the attribute kind feeding each connection.

    Stereotype (0) for associated and different, human (1), none (2).
    """
    return np.array([0, 0, 1, 2])


def cell_means(spec: ModelSpec, cells: Cells):
    """Add the per-(word, embedding) cell means ``mu`` and the group-level ``mu_bar``.

    Every effect is sum-to-zero over its units (``pm.ZeroSumNormal``), so the observed
    grand mean ``M[c]`` is one coordinate and no effect trades with it along a ridge. The
    mean an i.i.d. effect would have had is added back to ``mu_bar`` as its own standard
    Normal draw times ``sd / sqrt(n)`` (for i.i.d. Normals the mean is independent of the
    deviations from it, so this is the same model): these draws carry the uncertainty of
    which words, attributes, runs and corpus samples were observed.
    """
    import pymc as pm
    import pytensor.tensor as pt

    st = structure(cells)
    if cells.attr_idx is None:
        raise DistanceTableError("the embedding_level model needs the column attribute in "
                                 "every row")
    model = pm.modelcontext(None)
    model.add_coord("word", st["words"].tolist())
    model.add_coord("embedding", st["embeddings"].tolist())
    model.add_coord("corpus_sample", st["samples"].tolist())
    model.add_coord("connection_vs_none", list(CONNECTIONS[:3]))
    pr = spec.priors
    big_m = pr["mu_bar"].create("M", dims="connection")
    tau = pr["tau"].create("tau", dims="connection")
    eta = pr["eta"].create("eta", dims="connection")
    word = pm.Deterministic("word_effect", tau[:, None] * pm.ZeroSumNormal(
        "word_effect_z", sigma=1.0, dims=("connection", "word")), dims=("connection", "word"))
    n_w = st["words"].size
    shift = tau * pm.Normal("word_mean_z", 0.0, 1.0, dims="connection") / np.sqrt(n_w)
    kappa0 = pr["kappa0"].create("kappa0")
    kappa = pr["kappa"].create("kappa", dims="connection_vs_none")
    lambda0 = pr["lambda0"].create("lambda0")
    lam = pr["lambda"].create("lambda", dims="connection_vs_none")
    zeros = pt.zeros((1,))

    def level(name, scale0, scale, dim, size, factor):
        # shared shift (all connections) + deviation of associated/different/human from none
        g = scale0 * pm.ZeroSumNormal(f"{name}_shared_z", sigma=1.0, dims=dim)
        h = scale[:, None] * pm.ZeroSumNormal(f"{name}_vs_none_z", sigma=1.0,
                                              dims=("connection_vs_none", dim))
        eff = g[None, :] + pt.concatenate([h, pt.zeros((1, size))], axis=0)
        eff = pm.Deterministic(f"{name}_effect", eff, dims=("connection", dim))
        x0 = pm.Normal(f"{name}_mean_shared_z", 0.0, 1.0)
        x = pm.Normal(f"{name}_mean_z", 0.0, 1.0, dims="connection_vs_none")
        miss = (scale0 * x0 + pt.concatenate([scale * x, zeros])) * factor
        return eff, miss

    emb = 0.0
    if st["sample_level"]:
        r = st["samples"].size
        factor = np.sqrt(1.0 / r + (1.0 if st["bootstrap"] else 0.0))
        b, miss = level("sample", kappa0, kappa, "corpus_sample", r, factor)
        emb = b[:, st["sample_of"]]
        shift = shift + miss
    if st["run_level"]:
        e = st["embeddings"].size
        s_eff, miss = level("run", lambda0, lam, "embedding", e, np.sqrt(1.0 / e))
        emb = emb + s_eff
        shift = shift + miss
    # attribute effects: sum-to-zero within each kind (stereotype, human, none)
    from .cells import ATTRIBUTE_KINDS

    omega = pr["omega"].create("omega")
    model.add_coord("attribute", cells.attributes.tolist())
    kinds = np.array([ATTRIBUTE_KINDS.index(k) for k in cells.attribute_kind])
    v = pt.zeros(cells.attributes.size)
    kind_shift = []
    for k, label in enumerate(ATTRIBUTE_KINDS):
        idx = np.flatnonzero(kinds == k)
        if idx.size == 0:
            kind_shift.append(pt.zeros(()))
            continue
        if idx.size > 1:
            vk = pm.ZeroSumNormal(f"attribute_{label}", sigma=omega, shape=idx.size)
            v = pt.set_subtensor(v[idx], vk)
        kind_shift.append(omega * pm.Normal(f"attribute_mean_{label}_z", 0.0, 1.0)
                          / np.sqrt(idx.size))
    pm.Deterministic("attribute_effect", v, dims="attribute")
    model.embedding_attribute_index = kinds
    shift = shift + pt.stack(kind_shift)[_kind_of_connection()]
    pm.Deterministic("mu_bar", big_m - shift, dims="connection")
    centre = word[:, st["word_of"]]
    if not isinstance(emb, float):
        centre = centre + emb[:, cells.unit_embedding]
    centre = big_m[:, None] + centre
    if cells_noncentred(cells):
        z = pm.Normal("mu_z", 0.0, 1.0, dims=(cells.unit_dim, "connection"))
        return pm.Deterministic("mu", centre.T + eta[None, :] * z,
                                dims=(cells.unit_dim, "connection"))
    return pm.Normal("mu", centre.T, eta[None, :], dims=(cells.unit_dim, "connection"))


def cells_noncentred(cells: Cells) -> bool:
    """Whether to sample the (word, embedding) cell means non-centred.

    Moment estimates per connection: s2 the pooled within-cell variance, n the median rows
    per cell, e2 the variance of the cell means left after removing word and embedding
    means (less s2 / n). Non-centred when the data say less about a cell than the spread
    between cells does in some connection: ``n * e2 / s2 < AUTO_RATIO``.
    """
    st = structure(cells)
    w, e = st["word_of"], cells.unit_embedding
    for j in range(len(CONNECTIONS)):
        n = cells.n[:, j]
        if not (n > 0).all():
            continue
        s2 = max(cells.ss[:, j].sum() / max(n.sum() - n.size, 1), 1e-12)
        y = np.full((st["words"].size, st["embeddings"].size), np.nan)
        y[w, e] = cells.mean[:, j]
        if np.isnan(y).any() or min(y.shape) < 2:
            continue
        r = y - y.mean(axis=0) - y.mean(axis=1)[:, None] + y.mean()
        e2 = r.var() * y.size / ((y.shape[0] - 1) * (y.shape[1] - 1)) - s2 / np.median(n)
        if np.median(n) * max(e2, 1e-12) / s2 < AUTO_RATIO:
            return True
    return False


def row_effects(spec: ModelSpec, cells: Cells):
    """Return each row's attribute effect (added to the model by :func:`cell_means`)."""
    model = __import__("pymc").modelcontext(None)
    return model["attribute_effect"][cells.attr_idx]


def validate(spec: ModelSpec, source: str) -> None:
    """Nothing beyond the shared checks."""
    return None


def derived(values: dict, m) -> dict:
    """Return no derived variables."""
    return {}

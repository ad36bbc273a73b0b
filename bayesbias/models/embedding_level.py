"""The embedding-level family: one model of many embeddings (seeds, bootstraps, corpora).

The table holds the distances of one word list in E >= 2 embeddings (an ``embedding`` column,
:mod:`bayesbias.ensemble`); a unit is a protected word in one embedding. With ``w`` the word,
``e`` the embedding, ``r`` its corpus sample (``corpus_sample`` column) and ``a`` the
attribute::

    distance_i ~ Normal(mu[w@e, c] + v[a] (+- q[a] / 2) + psi u[a, r], sigma[c])
    mu[w@e, c] = word[w, c] + xi[c] x[w, r, c] + b[r, c] + s[e, c] + eta[c] z[w@e, c]
    word[w, c] ~ Normal(m[c], tau[c])              word effects shared across embeddings
    b[r, c]    = kappa0 g[r] + kappa[c] h[r, c]     corpus-sample deviations (R >= 2 samples)
    s[e, c]    = lambda0 g'[e] + lambda[c] h'[e, c] training-run deviations (a sample with
                                                    two or more embeddings)
    v[a]       ~ Normal(0, omega)                   attribute effects (as in ``crossed``)
    q[a]       ~ Normal(0, gamma)                   a stereotype's own-class strength: +q/2
                                                    on its ``associated`` rows, -q/2 on its
                                                    ``different`` rows
    psi u[a, r], xi[c] x[w, r, c]                   an attribute's and a word's deviation in
                                                    one corpus sample, shared by its runs
    phi w[a, r]                                     a stereotype's strength deviation there

``g, h, g', h', u, x, z`` are standard Normal; the ``0`` scales give every connection of a
sample (run) the same shift, which cancels in contrasts; the per-connection scales do not.
``u`` and ``x`` sum to zero over samples (their mean is the attribute's or word's own effect)
but not over attributes or words: a corpus sample that moves a few attributes or words is not
also read as a shift of the whole sample (``kappa``), which in the bootstrap case would count
the corpus's own attribute and word deviations twice (once in ``omega``/``tau``, once in the
corpus's extra draw). ``x`` exists when a sample has two or more runs; otherwise the cell
deviation ``eta z`` is the word x sample level. With a factor column both sum to zero
over the samples of each level (a level's mean is its own, ``beta``); a factor of the
training runs (the algorithm) shares the samples between its levels (:func:`factor_groups`).

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

By default sampled by nutpie on a native kernel (:func:`marginal_kernel`, ``el_logp``): the
cell deviations and the word effects integrated out per class of (word, connection) segments
(:func:`segment_classes`), so a gradient's cost does not grow with the words. Tables the
kernel does not cover (:func:`native_supported`), or without a C compiler, are
sampled by nutpie (or PyMC) on a PyMC model whose likelihood is per cell: each (word@embedding,
connection) deviation ``eta z`` is integrated out given the other effects
(:func:`likelihood`, cost O(cells + attributes)), and ``mu`` is drawn from its exact Normal
conditional (:func:`cell_means`). The row-level form (:func:`row_level_model`) is kept as the
tests' reference. The native kernel samples its zero-sum sets shifted (:data:`SHIFTED_SETS`:
non-centred around each value's data, the stereotype set rotated by :func:`class_rotation`);
the PyMC model's embedding-level effects are non-centred, its attribute effects as in
``crossed``. Default target acceptance 0.8 (:data:`TARGET_ACCEPT`) and 1,000 draws per chain
(:data:`DRAWS`). The attribute x sample deviations can be integrated out as well
(:data:`ATTRIBUTE_SAMPLE_INTEGRATED`, off).
"""

from __future__ import annotations

import numpy as np

from ..config import CONNECTIONS, FACTOR_PREFIX
from ..errors import DistanceTableError
from . import _native
from ._native import CFunc
from .cells import ATTRIBUTE_KINDS, Cells, cell_mean_conditional, cells_from_table
from .crossed import AUTO_RATIO, _moments, _residual_moments, attribute_noncentred
from .priors import kernel_row
from .spec import ModelSpec

__all__ = ["cell_means", "likelihood", "attribute_groups", "card_lines", "structure",
           "factor_groups",
           "model_data", "word_means", "BOOTSTRAP_PREFIX"]

PRIORS = ("mu_bar", "tau", "sigma", "omega", "gamma", "eta", "kappa0", "kappa", "lambda0",
          "lambda", "psi", "phi", "xi", "factor")
SCALES = ("tau", "sigma", "omega", "gamma", "eta", "kappa0", "kappa", "lambda0", "lambda",
          "psi", "phi", "xi")
PARAMETERS = ("mu_bar", "M", "tau", "sigma", "omega", "gamma", "eta", "kappa0", "kappa",
              "lambda0", "lambda", "psi", "phi", "xi")
#: A spec without ``gamma`` has no stereotype-strength level, without ``phi`` none of its
#: deviations per corpus sample (fits saved before them).
OPTIONAL_PRIORS = ("gamma", "phi")
GROUP_MEAN = "mu_bar"
#: Corpus-sample labels starting with this are bootstrap resamples of one corpus.
BOOTSTRAP_PREFIX = "bootstrap"
#: A model of many embeddings: other families refuse a table of two or more.
EMBEDDINGS = True
#: NUTS target acceptance rate when the caller gives none. 0.95 until the zero-sum sets were
#: shifted (:data:`SHIFTED_SETS`): on the docs' ensemble 0.8 and 0.9 had left 0-3
#: divergences in 4 x 1000 draws at the tails of the scales (issue 27). Shifted, 0.8 gave
#: no divergence on the README's, planted, null, 6 x 2,352 and 32 x 1,000 tables
#: (docs/embedding-level.md) at 15 leapfrog steps per draw instead of 31.
TARGET_ACCEPT = 0.8
#: ... for tables the native kernel does not cover (a factor column, a word x sample level):
#: their PyMC model keeps 0.95 (at 0.8 its slow tests gave r-hat up to 1.024 and
#: divergences).
PYMC_TARGET_ACCEPT = 0.95
#: Posterior draws per chain when the caller gives none (the other families' 1,000). 2,000
#: while ``psi`` and ``kappa0`` mixed slowly (issue 50); shifted, 1,000 give bulk ESS above
#: 400 on every table tried (docs/embedding-level.md).
DRAWS = 1000
#: The native kernel can leave out the draws of the (word@embedding, connection) cell means
#: (``word_draws=False``): the corpus-level and per-word results need only ``mu_bar`` and
#: the word effects.
WORD_DRAWS_OPTIONAL = True
#: The native kernel samples a zero-sum set of attribute or stereotype-strength effects
#: centred when the moment estimate of its values' spread is at least this many times their
#: error variance (:func:`_ratio_centred`), else non-centred. The textbook crossover is 1 (the
#: data as informative as the prior); the crossed family uses 10. Issue 50: at 10 the README's
#: 6-bootstrap table missed r-hat <= 1.01 / bulk ESS >= 400 at 2 of 6 seeds, at 2 at 1 of 6
#: (with :data:`SAMPLE_CENTRED_RATIO` at 10; docs/embedding-level.md).
CENTRED_RATIO = 2.0
#: The same for the corpus-sample and training-run sets (R or E values, a handful): centred at
#: 2 they gave divergences in 3 of 6 fits of the README's table and 21 of 60 SBC fits (their
#: scales near 0: a centred funnel), so they keep the crossed family's 10.
SAMPLE_CENTRED_RATIO = 10.0
#: Set, the native kernel integrates the attribute x corpus-sample deviations ``psi u[a, r]``
#: out of the density (``el_umarg``) and draws them afterwards from their exact Normal
#: conditional, instead of sampling them. Off by default (issue 50): it lifts ``psi``'s bulk
#: ESS (6 x 2,352-row table: 286 to 1,777), but a gradient costs 2.5 (that table) to 3 times
#: (the README's) the sampled kernel's even with the blocks shared per kind of attribute, the
#: trajectories are no shorter, and at 1,000 draws the 6 x 2,352 table still misses r-hat
#: 1.01 at ``kappa0`` at 4 of 5 seeds. Per CPU-s it gives more bulk ESS of the worst
#: parameter on that table, less on the README's; the sampled form, shifted
#: (:data:`SHIFTED_SETS`), passes the checks at 1,000 draws (docs/embedding-level.md).
ATTRIBUTE_SAMPLE_INTEGRATED = False
#: ... when their gradient's extra work, about ``attributes x samples^3`` multiply-adds
#: (:func:`integrate_attribute_sample`), is at most this: 6 samples x 168 attributes is
#: 36,288 (the issue's table: 2.5 times the sampled kernel's cost per gradient); 32 samples
#: x 30 attributes (983,040) cost 0.88 ms per gradient against 0.065 ms sampled (13.5 times,
#: the blocks of 32 columns), so those are sampled.
INTEGRATED_MAX_WORK = 250_000
#: Zero-sum sets sampled *shifted*: non-centred, ``z = a(s) + b(s) (e - ebar) + ebar`` with
#: ``e`` sampled and ``a``, ``b`` the conditional mean and sd of ``z`` given the scale ``s``
#: if each value's data (its residual mean ``m``, precision ``p``, :func:`_moments_el`) stood
#: alone: ``a = s m p / (1 + s^2 p)``, ``b = (1 + s^2 p)^(-1/2)``. The mean of ``e``, which
#: the data do not see, stays unscaled (scaled by ``b`` it is a funnel in ``s``). The
#: posterior is the same (a change of variables, its Jacobian in the density); the ridge
#: between a scale and its values' projection on the data, which a diagonal mass matrix
#: cannot follow, is straightened, whether the data pin the values (``p s^2`` large: close
#: to centred) or not (close to non-centred). Issue 50: ``psi``, at 0.003 against a
#: per-value noise sd of 0.02, had r-hat 1.0102 / 1.0134 (6 x 2,352 seed 4; 32 x 1,000),
#: its draws correlated 0.93 with that projection (docs/embedding-level.md). Sets not
#: named here are centred or non-centred by :data:`CENTRED_RATIO`.
SHIFTED_SETS = ("attribute_sample", "strength_sample", "sample_shared", "sample_vs_none",
                "run_shared", "run_vs_none", "attribute", "strength")
#: nutpie's mass-matrix adaptation of the native kernel ("diag" or "low_rank").
ADAPTATION = "diag"
_NC = len(CONNECTIONS)
_LOG_2PI = float(np.log(2.0 * np.pi))


def structure(cells: Cells) -> dict:
    """Embeddings, corpus samples and which levels the model has.

    Returns ``embeddings`` (E), ``samples`` (R labels), ``sample_of`` (each embedding's
    sample index), ``words`` and ``word_of`` (each unit's word index), ``sample_level``
    (R >= 2), ``run_level`` (a sample with two or more embeddings), ``sample_groups`` (the
    samples compared with each other: all, or each factor group's, when two or more),
    ``attribute_sample_level`` and ``word_sample_level`` (the interaction levels exist),
    ``bootstrap``, ``sample_boot`` and ``factor``.
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
    boot = np.array([str(r).rsplit("/", 1)[-1].startswith(BOOTSTRAP_PREFIX) for r in samples])
    factor = None
    # corpus samples that are compared with each other: all, or those of one factor level
    groups = [np.arange(samples.size)]
    if cells.sub_cells and cells.sub_cells.get("factor"):
        f = cells.sub_cells["factor"]
        level_group, group_labels = factor_groups(f)
        group_of_sample = np.zeros(samples.size, dtype=np.int64)
        group_of_sample[sample_of] = level_group[f["embedding_level"]]
        factor = {"name": f["name"], "levels": np.asarray(f["levels"], dtype=object),
                  "per": f.get("per", "sample"), "embedding_level": f["embedding_level"],
                  "sample_level": group_of_sample, "level_group": level_group,
                  "group_labels": group_labels}
        groups = [np.flatnonzero(group_of_sample == k) for k in range(len(group_labels))]
    groups = [g for g in groups if g.size >= 2]
    return {"embeddings": cells.embeddings.astype(str), "samples": samples,
            "sample_of": sample_of, "words": words, "word_of": word_of,
            "sample_level": samples.size >= 2, "run_level": bool((counts >= 2).any()),
            "sample_groups": groups, "attribute_sample_level": bool(groups),
            "word_sample_level": bool(groups) and bool((counts >= 2).any()),
            "bootstrap": bool(boot.any()), "sample_boot": boot, "factor": factor}


def cells(table, level: str = "word") -> Cells:
    """Return the cells of :func:`~bayesbias.models.cells.cells_from_table` and a factor.

    A column ``factor_<name>`` gives each embedding's level of a factor, constant within an
    embedding: a factor of the corpus samples when it is constant within each sample (a
    decade, a corpus source, a language: ``per="sample"``), else of the training runs (the
    algorithm, trained on the same samples: ``per="run"``). Numeric levels are ordered by
    value, others by first appearance; a factor of one level is ignored. Several such
    columns are crossed: the model's levels are the combinations observed (labels ``"1990,
    en"``), and ``factors``/``level_codes`` in the factor give each combination's level of
    every factor (for contrasts of one factor averaged over the others,
    :func:`bayesbias.ensemble.factor_contrasts`).

    The rows are first put in one canonical order (:func:`canonical_order`), so the same
    rows in any order (``distances.csv``, or the table built from the embeddings) give the
    same cells and, with the same seed, the same draws.
    """
    import dataclasses

    order = canonical_order(table)
    if order is None:
        out = cells_from_table(table, level)
    else:
        ordered = table.take(order)
        try:
            out = cells_from_table(ordered, level)
        except DistanceTableError:
            cells_from_table(table, level)  # raises again, naming the row as the user gave it
            raise
        table = ordered
    cols = [c for c in table.columns if str(c).startswith(FACTOR_PREFIX)]
    if not cols or out.embeddings is None:
        return out
    parts = [_factor_column(table, col, out) for col in cols]
    parts = [f for f in parts if f["levels"].size >= 2]  # one level: nothing to compare
    if not parts:
        return out
    if len(parts) == 1:
        return dataclasses.replace(out, sub_cells={"factor": parts[0]})
    # several factors: one level per combination observed, ordered factor by factor
    codes = np.stack([f["embedding_level"] for f in parts], axis=1)
    combos, combo_of = np.unique(codes, axis=0, return_inverse=True)
    factor = {"name": " x ".join(f["name"] for f in parts),
              "levels": np.asarray([", ".join(str(f["levels"][k]) for f, k in
                                              zip(parts, row, strict=True)) for row in combos],
                                   dtype=object),
              "embedding_level": np.asarray(combo_of, dtype=np.int64).reshape(-1),
              "numeric": False,
              "per": "run" if any(f["per"] == "run" for f in parts) else "sample",
              "factors": [{k: f[k] for k in ("name", "levels", "numeric", "per")}
                          for f in parts],
              "level_codes": combos.astype(np.int64)}
    return dataclasses.replace(out, sub_cells={"factor": factor})


def factor_groups(factor: dict) -> tuple[np.ndarray, list[str]]:
    """Return each factor level's group of corpus samples, and the groups' labels.

    A factor of the corpus samples (decade) groups the samples by level; a factor of the
    training runs (algorithm) shares the samples between its levels (one group, ``"all"``);
    crossed factors group the samples by the levels of the factors of the samples.
    """
    n = len(factor["levels"])
    if factor.get("per", "sample") == "sample":
        return np.arange(n), [str(x) for x in factor["levels"]]
    parts = factor.get("factors") or []
    cols = [j for j, f in enumerate(parts) if f.get("per", "sample") == "sample"]
    if not cols:
        return np.zeros(n, dtype=np.int64), ["all"]
    groups, group_of = np.unique(np.asarray(factor["level_codes"])[:, cols], axis=0,
                                 return_inverse=True)
    labels = [", ".join(str(parts[j]["levels"][k]) for j, k in zip(cols, row, strict=True))
              for row in groups]
    return np.asarray(group_of, dtype=np.int64).reshape(-1), labels


def _factor_column(table, col: str, out: Cells) -> dict:
    """Return one ``factor_*`` column's levels and each embedding's level (see :func:`cells`)."""
    import pandas as pd

    emb = table["embedding"].astype(str)
    value = table[col].astype(str)
    per = value.groupby(emb, sort=False).nunique()
    if (per > 1).any():
        raise DistanceTableError(f"column {col}: embedding {per.index[per > 1][0]!r} has more "
                                 "than one level")
    first = value.groupby(emb, sort=False).first()
    level_of = first.reindex(out.embeddings.astype(str)).to_numpy()
    samples = pd.Series(out.embedding_sample.astype(str))
    # a factor of the corpus samples (decade) or of the training runs (algorithm)
    per = "run" if (pd.Series(level_of).groupby(samples).nunique() > 1).any() else "sample"
    levels = list(dict.fromkeys(level_of))
    numeric = pd.to_numeric(pd.Series(levels), errors="coerce")
    if numeric.notna().all():
        levels = [levels[i] for i in np.argsort(numeric.to_numpy(), kind="stable")]
    index = {lv: i for i, lv in enumerate(levels)}
    return {"name": col[len(FACTOR_PREFIX):], "levels": np.asarray(levels, dtype=object),
            "embedding_level": np.array([index[lv] for lv in level_of], dtype=np.int64),
            "numeric": bool(numeric.notna().all()), "per": per}


#: Columns whose values order an ensemble table's rows, in this priority.
ORDER_COLUMNS = ("embedding", "protected_word", "connection", "attribute", "cosine_distance")


def canonical_order(table) -> np.ndarray | None:
    """Return the row order sorting `table` by :data:`ORDER_COLUMNS`, or None if it is sorted.

    Labels compare as text; ties keep their order.
    """
    import pandas as pd

    keys = []
    for col in reversed([c for c in ORDER_COLUMNS if c in table.columns]):
        x = table[col]
        keys.append(pd.factorize(x.astype(str), sort=True)[0] if col != "cosine_distance"
                    else pd.to_numeric(x, errors="coerce").to_numpy(dtype=np.float64))
    order = np.lexsort(keys)
    if (order == np.arange(order.size)).all():
        return None
    return order


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
            *([f"  +- q[a] / 2 in a stereotype's associated / different rows (its own-class "
               f"strength): q ~ Normal(0, gamma), gamma ~ {p['gamma']}"] if "gamma" in p
              else []),
            *([f"  +- phi w[a, r] / 2 there (its strength's deviation in one corpus sample, "
               f"zero-sum over samples): phi ~ {p['phi']}"] if "gamma" in p and "phi" in p
              else []),
            "  + psi u[a, r] (attribute x corpus sample), + xi[c] x[{0}, r, c] in mu ({0} x "
            "sample, a sample with 2+ runs); u, x zero-sum over samples (of each factor "
            "level)".format(unit),
            "  mu_bar[c] = m[c] (seeds or corpora), or m[c] - kappa0 d0 - kappa[c] d[c] "
            "(bootstrap resamples: the corpus is one more draw)",
            f"  m[c] ~ {p['mu_bar']}",
            f"  tau[c] ~ {p['tau']};  eta[c] ~ {p['eta']};  omega ~ {p['omega']}",
            f"  kappa0 ~ {p['kappa0']};  kappa[c] ~ {p['kappa']}",
            f"  lambda0 ~ {p['lambda0']};  lambda[c] ~ {p['lambda']}",
            f"  psi ~ {p['psi']};  xi[c] ~ {p['xi']}",
            "  (the scales of a level the ensemble lacks keep their prior)",
            f"  with a factor (column factor_*, levels l of the corpus samples or of the "
            f"runs; several columns: l their combinations): connection means M[c] + "
            f"beta[l, c], beta[first, c] = 0, beta ~ {p['factor']}; runs sum to zero within "
            "each level, samples within each level of the samples' factors (a factor of the "
            "runs shares them), mu_bar = the levels' average"]


def _kind_of_connection() -> np.ndarray:
    """Return the attribute kind feeding each connection.

    Stereotype (0) for associated and different, human (1), none (2).
    """
    return np.array([0, 0, 1, 2])


def attributes_per_connection(cells: Cells) -> dict[str, int]:
    """Return how many attribute words each connection draws on (at least 1).

    Stereotypes for associated and different, human attributes, neutral words.
    """
    kinds = _kind_of_connection()
    return {c: max(int((cells.attribute_kind == ATTRIBUTE_KINDS[kinds[j]]).sum()), 1)
            for j, c in enumerate(CONNECTIONS)}


def has_strength(spec: ModelSpec) -> bool:
    """Whether the spec has the stereotype-strength level (a ``gamma`` prior)."""
    return "gamma" in spec.priors


def row_attribute(cells: Cells, strength: bool = False) -> tuple[np.ndarray, int]:
    """Return each row's attribute-effect index and how many there are.

    The attribute index itself, or, with an attribute x corpus-sample level (two or more
    samples compared, :func:`structure`), ``attribute * R + sample``: the same attribute in
    another corpus sample has its own effect ``v[a] + psi u[a, r]``. With `strength` the
    ``associated`` and the ``different`` rows of each stereotype ``j``
    (:func:`strength_stereotypes`) get indices of their own after those, ``n + j * R +
    sample`` and ``n + (S + j) * R + sample``: their effects add and subtract half the
    stereotype's own-class strength ``q[j]``.
    """
    st = structure(cells)
    n_a = cells.attributes.size
    idx, n, r = cells.attr_idx, n_a, 1
    sample_of_row = 0
    if st["attribute_sample_level"]:
        r = st["samples"].size
        sample_of_row = st["sample_of"][cells.unit_embedding[cells.unit_idx]]
        idx, n = cells.attr_idx.astype(np.int64) * r + sample_of_row, n_a * r
    if not strength:
        return idx, n
    stereotypes = strength_stereotypes(cells)
    if stereotypes.size == 0:
        return idx, n
    j = np.full(n_a, -1, dtype=np.int64)
    j[stereotypes] = np.arange(stereotypes.size)
    jr = j[cells.attr_idx]
    own = (cells.conn_idx == CONNECTIONS.index("associated")) & (jr >= 0)
    other = (cells.conn_idx == CONNECTIONS.index("different")) & (jr >= 0)
    out = np.where(own, n + jr * r + sample_of_row, idx)
    out = np.where(other, n + (stereotypes.size + jr) * r + sample_of_row, out)
    return out.astype(np.int64), n + 2 * stereotypes.size * r


def strength_noncentred(cells: Cells) -> bool:
    """Whether to sample the stereotype strengths non-centred (little information on each).

    Moment estimates, as :func:`~bayesbias.models.crossed.attribute_noncentred`: each
    stereotype's mean residual (around its cells' means) on its associated rows minus that
    on its different rows, their variance across stereotypes (``gamma^2`` plus noise) and
    the noise ``s2 (1/n_a + 1/n_d)``; non-centred when ``gamma^2 / noise`` is below
    :data:`~bayesbias.models.crossed.AUTO_RATIO`.
    """
    stereo = strength_stereotypes(cells)
    if stereo.size < 2:
        return True
    res = np.asarray(cells.y, dtype=float) - cells.mean[cells.unit_idx, cells.conn_idx]
    s2 = float(np.sum(res**2) / max(res.size - np.count_nonzero(cells.n), 1))
    key = cells.attr_idx.astype(np.int64) * _NC + cells.conn_idx  # one pass over the rows
    size = cells.attributes.size * _NC
    sums = np.bincount(key, weights=res, minlength=size).reshape(-1, _NC)[stereo]
    counts = np.bincount(key, minlength=size).reshape(-1, _NC)[stereo]
    own, other = CONNECTIONS.index("associated"), CONNECTIONS.index("different")
    d = sums[:, own] / counts[:, own] - sums[:, other] / counts[:, other]
    noise = float(np.mean(s2 * (1.0 / counts[:, own] + 1.0 / counts[:, other])))
    gamma2 = max(float(np.var(d, ddof=1)) - noise, 1e-12)
    return gamma2 / noise < AUTO_RATIO


def strength_stereotypes(cells: Cells) -> np.ndarray:
    """Return the attributes (indices) with both ``associated`` and ``different`` rows.

    Each has an own-class strength ``q`` in the model: how much closer it sits to its own
    class's words than to other classes' beyond its effect ``v`` on every row.
    """
    conn = np.asarray(cells.conn_idx)
    has = [np.zeros(cells.attributes.size, dtype=bool) for _ in range(2)]
    for k, c in enumerate(("associated", "different")):
        has[k][np.unique(cells.attr_idx[conn == CONNECTIONS.index(c)])] = True
    return np.flatnonzero(has[0] & has[1])


def attribute_groups(cells: Cells, strength: bool = False) -> dict:
    """Per-cell sufficient statistics with the attribute effects kept symbolic.

    A non-empty cell ``k`` (a word in one embedding, one connection) holds rows ``y_i`` with
    attributes ``a_i``. Given the attribute effects ``v`` its residuals ``y_i - v[a_i]`` have
    mean ``ybar_k - vbar_k`` and within-cell sum of squares

        ss_k - 2 sum_i (y_i - ybar_k) v[a_i] + sum_i (v[a_i] - vbar_k)^2.

    Cells whose rows have the same multiset of attributes (in practice every word of a class
    in every embedding) share ``vbar`` and the last term: they form one *group*. Summed over
    the cells of a connection, the middle term is ``sum_a v[a] C[a, c]`` with ``C`` the
    within-cell centred row sums per attribute. So the log-density costs O(cells + groups x
    attributes per group + attributes), not O(rows).

    Returns ``ui, ci`` (the non-empty cells), ``n, ybar, ss`` (their statistics),
    ``group`` (each cell's group), ``group_conn``, ``group_cells`` (cells per group),
    ``pair_group, pair_attr, pair_weight`` (each group's attributes with their share
    ``count / n``) and ``centred`` (attributes x connections, the ``C`` above).
    Attributes are those of :func:`row_attribute` (per corpus sample when the model has
    that level; with `strength`, a stereotype's ``associated`` rows apart).
    """
    attr_idx, n_attr = row_attribute(cells, strength)
    ui, ci = cells.observed
    number = -np.ones(cells.n.shape, dtype=np.int64)
    number[ui, ci] = np.arange(ui.size)
    row_cell = number[cells.unit_idx, cells.conn_idx]
    order = np.lexsort((attr_idx, row_cell))
    bounds = np.zeros(ui.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_cell, minlength=ui.size), out=bounds[1:])
    sorted_attr = attr_idx[order]
    keys: dict = {}
    group = np.empty(ui.size, dtype=np.int64)
    for k in range(ui.size):  # deterministic: first-seen order of the attribute multisets
        sig = (int(ci[k]), sorted_attr[bounds[k]:bounds[k + 1]].tobytes())
        group[k] = keys.setdefault(sig, len(keys))
    n_g = len(keys)
    first = np.full(n_g, ui.size, dtype=np.int64)
    np.minimum.at(first, group, np.arange(ui.size))
    pg, pa, pw = [], [], []
    for g in range(n_g):
        k = first[g]
        attrs, counts = np.unique(sorted_attr[bounds[k]:bounds[k + 1]], return_counts=True)
        pg.append(np.full(attrs.size, g))
        pa.append(attrs)
        pw.append(counts / counts.sum())
    n = cells.n[ui, ci].astype(np.float64)
    ybar = cells.mean[ui, ci].astype(np.float64)
    dev = np.asarray(cells.y, dtype=np.float64) - ybar[row_cell]
    centred = np.zeros((n_attr, _NC))
    np.add.at(centred, (attr_idx, cells.conn_idx), dev)
    return {"ui": ui, "ci": ci, "n": n, "ybar": ybar, "ss": cells.ss[ui, ci].astype(np.float64),
            "group": group, "group_conn": ci[first], "group_cells":
            np.bincount(group, minlength=n_g).astype(np.float64),
            "pair_group": np.concatenate(pg), "pair_attr": np.concatenate(pa),
            "pair_weight": np.concatenate(pw), "centred": centred}


def _factor_effects(st, pr, big_m, shift, kappa0, kappa, lambda0, lam):
    """Per-level means of a factor (``factor_*`` columns).

    Level ``l`` of the factor has its own connection means ``M + beta[l]`` (``beta`` of the
    first level 0; prior ``factor``). Training runs are sum-to-zero within each level, and
    corpus samples within each group of samples (:func:`factor_groups`): a factor of the
    samples (decade) gives each level its own samples, a factor of the runs (algorithm)
    shares them, so its levels' difference is paired. Each level (group) gets its own draw
    of its runs' (samples') missing mean, as the model without a factor does for all of
    them, so a level's mean carries the uncertainty of its own few corpora. Returns the
    embedding effects (connection x embedding) and the shift of each level's mean (levels x
    connections).
    """
    import pymc as pm
    import pytensor.tensor as pt

    fac = st["factor"]
    n_levels = fac["levels"].size
    level_group, n_groups = fac["level_group"], len(fac["group_labels"])
    model = pm.modelcontext(None)
    model.add_coord("factor_level", fac["levels"].tolist())
    model.add_coord("factor_contrast", fac["levels"][1:].tolist())
    by_level = fac["per"] == "sample"  # the samples' groups are the levels themselves
    if not by_level:
        model.add_coord("factor_sample_group", fac["group_labels"])
    beta = pt.concatenate([pt.zeros((1, _NC)), pr["factor"].create(
        "factor_effect", dims=("factor_contrast", "connection"))], axis=0)

    def level(name, scale0, scale, dim, group_of, n_grp, grp_dim, boot):
        size = group_of.size
        g, h = pt.zeros(size), pt.zeros((_NC - 1, size))
        members = np.bincount(group_of, minlength=n_grp)
        for k in range(n_grp):
            idx = np.flatnonzero(group_of == k)
            if idx.size >= 2:
                g = pt.set_subtensor(g[idx], pm.ZeroSumNormal(
                    f"{name}_shared_z_{k}", sigma=1.0, shape=idx.size))
                h = pt.set_subtensor(h[:, idx], pm.ZeroSumNormal(
                    f"{name}_vs_none_z_{k}", sigma=1.0, shape=(_NC - 1, idx.size)))
        eff = scale0 * g[None, :] + pt.concatenate([scale[:, None] * h, pt.zeros((1, size))],
                                                  axis=0)
        eff = pm.Deterministic(f"{name}_effect", eff, dims=("connection", dim))
        x0 = pm.Normal(f"{name}_mean_shared_z", 0.0, 1.0, dims=grp_dim)
        x = pm.Normal(f"{name}_mean_z", 0.0, 1.0, dims=(grp_dim, "connection_vs_none"))
        factor = np.sqrt(1.0 / np.maximum(members, 1) + boot)
        miss = (scale0 * x0[:, None] + pt.concatenate([scale[None, :] * x,
                                                       pt.zeros((n_grp, 1))], axis=1))
        return eff, miss * factor[:, None]

    level_of_embedding = fac["embedding_level"]
    if st["sample_level"]:
        group_of_sample = fac["sample_level"]
        boot = np.array([st["sample_boot"][group_of_sample == k].any()
                         for k in range(n_groups)], dtype=float)
        b, miss_r = level("sample", kappa0, kappa, "corpus_sample", group_of_sample, n_groups,
                          "factor_level" if by_level else "factor_sample_group", boot)
        emb = b[:, st["sample_of"]] + beta.T[:, level_of_embedding]
        shift = shift[None, :] + (miss_r if by_level else miss_r[level_group]) - beta
    else:  # one corpus: the levels share it
        emb = beta.T[:, level_of_embedding]
        shift = shift[None, :] - beta
    if st["run_level"]:
        s_eff, miss_e = level("run", lambda0, lam, "embedding", level_of_embedding, n_levels,
                              "factor_level", np.zeros(n_levels))
        emb, shift = emb + s_eff, shift + miss_e
    return emb, shift


def _sample_deviations(name: str, dims: tuple, st: dict):
    """Add standard Normal deviations per corpus sample, zero-sum over each group's samples.

    Without a factor the group is every sample; with one, the samples of a level (a level
    of one sample gets none: its own mean is the level's). Returns ``dims + (corpus_sample,)``.
    """
    import pymc as pm
    import pytensor.tensor as pt

    groups = st["sample_groups"]
    if st["factor"] is None:
        return pm.ZeroSumNormal(name, sigma=1.0, dims=(*dims, "corpus_sample"))
    model = pm.modelcontext(None)
    shape = tuple(len(model.coords[d]) for d in dims)
    out = pt.zeros((*shape, st["samples"].size))
    for k, idx in enumerate(groups):
        z = pm.ZeroSumNormal(f"{name}_{k}", sigma=1.0, shape=(*shape, idx.size))
        out = pt.set_subtensor(out[..., idx], z)
    return out


def _strength(spec: ModelSpec, cells: Cells, shift):
    """Add the stereotypes' own-class strengths ``q``; return ``q`` and the new `shift`.

    A stereotype sits closer to its own class's words than to other classes' by an amount
    of its own: ``q[j] / 2`` is added to its ``associated`` rows and subtracted from its
    ``different`` rows (``v[a]`` is their midpoint, so the two are independent: a frequent
    word moves both, a strong stereotype moves them apart), ``q ~ Normal(0, gamma)``
    sum-to-zero over the stereotypes, and the mean of an i.i.d. ``q`` comes back in
    ``mu_bar`` as ``+-gamma z / (2 sqrt(S))``: which stereotypes were listed, and how strongly
    each is a stereotype, is uncertain too. None without the level (no ``gamma`` prior, or
    no stereotype with both kinds of rows).
    """
    import pymc as pm
    import pytensor.tensor as pt

    stereotypes = strength_stereotypes(cells)
    if not has_strength(spec) or stereotypes.size == 0:
        return None
    model = pm.modelcontext(None)
    model.add_coord("stereotype", cells.attributes[stereotypes].tolist())
    gamma = spec.priors["gamma"].create("gamma")
    if stereotypes.size < 2:
        g = pm.Deterministic("stereotype_strength", pt.zeros(1), dims="stereotype")
    elif strength_noncentred(cells):
        z = pm.ZeroSumNormal("stereotype_strength_z", sigma=1.0, dims="stereotype")
        g = pm.Deterministic("stereotype_strength", gamma * z, dims="stereotype")
    else:  # the rows pin each strength: centred mixes better
        g = pm.ZeroSumNormal("stereotype_strength", sigma=gamma, dims="stereotype")
    mean = gamma * pm.Normal("stereotype_strength_mean_z", 0.0, 1.0) / np.sqrt(stereotypes.size)
    return g, shift + pt.concatenate([pt.stack([mean / 2, -mean / 2]), pt.zeros(_NC - 2)])


def _effects(spec: ModelSpec, cells: Cells) -> dict:
    """Add every effect but the (word@embedding, connection) deviations to the current model.

    Returns the tensors the likelihood needs: ``centre`` (units x connections, the cell
    means' prior mean), ``eta`` (connections), ``sigma`` (connections) and ``v``
    (per :func:`row_attribute`).

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

    fac = st["factor"]
    if fac is None:
        emb = None
        if st["sample_level"]:
            r = st["samples"].size
            factor = np.sqrt(1.0 / r + (1.0 if st["bootstrap"] else 0.0))
            b, miss = level("sample", kappa0, kappa, "corpus_sample", r, factor)
            emb = b[:, st["sample_of"]]
            shift = shift + miss
        if st["run_level"]:
            e = st["embeddings"].size
            s_eff, miss = level("run", lambda0, lam, "embedding", e, np.sqrt(1.0 / e))
            emb = s_eff if emb is None else emb + s_eff
            shift = shift + miss
    else:
        emb, shift = _factor_effects(st, pr, big_m, shift, kappa0, kappa, lambda0, lam)
    # attribute effects: sum-to-zero within each kind (stereotype, human, none)
    omega = pr["omega"].create("omega")
    # non-centred when the rows say less about an attribute than omega does (as crossed)
    noncentred = attribute_noncentred(cells)
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
            if noncentred:
                vk = omega * pm.ZeroSumNormal(f"attribute_{label}_z", sigma=1.0, shape=idx.size)
            else:
                vk = pm.ZeroSumNormal(f"attribute_{label}", sigma=omega, shape=idx.size)
            v = pt.set_subtensor(v[idx], vk)
        kind_shift.append(omega * pm.Normal(f"attribute_mean_{label}_z", 0.0, 1.0)
                          / np.sqrt(idx.size))
    v = pm.Deterministic("attribute_effect", v, dims="attribute")
    shift = shift + pt.stack(kind_shift)[_kind_of_connection()]
    strength = _strength(spec, cells, shift)
    if strength is not None:
        g, shift = strength
    # interactions with the corpus sample, shared by the sample's training runs; zero-sum
    # over samples (their mean over samples is the word's or attribute's own effect), free
    # over words and attributes: what a sample shifts through its words and attributes is
    # not counted again as a shift of the whole sample (kappa)
    psi = pr["psi"].create("psi")  # the prior alone when the ensemble lacks the level
    xi = pr["xi"].create("xi", dims="connection")
    if st["attribute_sample_level"]:
        u = _sample_deviations("attribute_sample_z", ("attribute",), st)
        v_row = (v[:, None] + psi * u).reshape((-1,))
    else:
        v_row = v
    if strength is not None:  # a stereotype's rows: v (+ psi u) +- (q + phi w) / 2
        r = st["samples"].size if st["attribute_sample_level"] else 1
        base = (strength_stereotypes(cells)[:, None] * r + np.arange(r)[None, :]).reshape(-1)
        half = pt.repeat(g, r) / 2
        if st["attribute_sample_level"] and "phi" in pr:
            # its strength's deviation in one corpus sample (zero-sum over samples, as u)
            phi = pr["phi"].create("phi")
            w = _sample_deviations("stereotype_strength_sample_z", ("stereotype",), st)
            half = half + phi * w.reshape((-1,)) / 2
        v_row = pt.concatenate([v_row, v_row[base] + half, v_row[base] - half])
    if fac is None:
        pm.Deterministic("mu_bar", big_m - shift, dims="connection")
    else:  # shift: (levels, connections); mu_bar: the levels' average
        means = pm.Deterministic("factor_mean", big_m[None, :] - shift,
                                 dims=("factor_level", "connection"))
        pm.Deterministic("mu_bar", means.mean(axis=0), dims="connection")
    centre = word[:, st["word_of"]]
    if st["word_sample_level"]:
        ws = xi[:, None, None] * _sample_deviations("word_sample_z", ("connection", "word"), st)
        centre = centre + ws[:, st["word_of"], st["sample_of"][cells.unit_embedding]]
    if emb is not None:
        centre = centre + emb[:, cells.unit_embedding]
    centre = (big_m[:, None] + centre).T
    if spec.residual_sd == "per_connection":
        sigma = pr["sigma"].create("sigma", dims="connection")
    else:
        sigma = pr["sigma"].create("sigma") * pt.ones(_NC)
    return {"centre": centre, "eta": eta, "sigma": sigma, "v": v_row}


def _layout_data(cells: Cells, layout: dict) -> dict:
    """Return the attribute layout's arrays that a compiled model takes as ``pm.Data``."""
    n_g = np.zeros(layout["group_cells"].size)
    n_g[layout["group"]] = layout["n"]
    return {"cell_group": layout["group"], "group_conn": layout["group_conn"],
            "group_cells": layout["group_cells"], "group_n": n_g,
            "pair_group": layout["pair_group"], "pair_attr": layout["pair_attr"],
            "pair_weight": layout["pair_weight"], "attribute_centred": layout["centred"],
            "cell_n_grid": cells.n.astype(np.float64)}


def model_data(spec: ModelSpec, cells: Cells) -> dict:
    """Values of the attribute layout's ``pm.Data`` (the cell statistics come from the base)."""
    return _layout_data(cells, attribute_groups(cells, has_strength(spec)))


def cell_means(spec: ModelSpec, cells: Cells):
    """Add the model and the per-(word, embedding) cell means ``mu``; return ``mu``.

    The cell deviations ``eta[c] z`` are integrated out of the likelihood
    (:func:`likelihood`). ``mu`` is their exact Normal conditional given everything else:
    precision ``1/eta^2 + n/sigma^2`` and mean ``(centre/eta^2 + n rbar/sigma^2) /
    precision`` (``rbar``: the cell's rows minus their attribute effects, averaged), drawn
    as that mean plus ``mu_z / sqrt(precision)`` with ``mu_z`` a standard Normal that
    enters no likelihood term. The joint draws are those of the row-level model.
    """
    import pymc as pm
    import pytensor.tensor as pt

    eff = _effects(spec, cells)
    layout = attribute_groups(cells, has_strength(spec))
    model = pm.modelcontext(None)
    ui, ci = layout["ui"], layout["ci"]
    data = _layout_data(cells, layout)
    d = {name: pm.Data(name, value) for name, value in data.items()}
    n = pm.Data("cell_n", layout["n"])
    ybar = pm.Data("cell_mean", layout["ybar"])
    ss = pm.Data("cell_ss", layout["ss"])
    v = eff["v"]
    ng = layout["group_cells"].size
    vbar_g = pt.inc_subtensor(pt.zeros(ng)[d["pair_group"]], v[d["pair_attr"]] * d["pair_weight"])
    rbar = ybar - vbar_g[d["cell_group"]]
    model.embedding_level = {"eff": eff, "data": d, "ng": ng, "n": n, "rbar": rbar, "ss": ss,
                             "vbar_g": vbar_g, "ui": ui, "ci": ci}
    shape = cells.n.shape
    rbar_grid = pt.set_subtensor(pt.zeros(shape)[ui, ci], rbar)
    eta, sigma = eff["eta"][None, :], eff["sigma"][None, :]
    mean, prec = cell_mean_conditional(eff["centre"], eta, sigma, d["cell_n_grid"], rbar_grid)
    z = pm.Normal("mu_z", 0.0, 1.0, dims=(cells.unit_dim, "connection"))
    return pm.Deterministic("mu", mean + z / pt.sqrt(prec), dims=(cells.unit_dim, "connection"))


def likelihood(spec: ModelSpec, cells: Cells, mu) -> None:
    """Add the rows' log-density with the cell deviations integrated out (``loglik``).

    Per non-empty cell with n rows, residual mean ``rbar`` and within-cell sum of squares
    ``W`` (both after the attribute effects, :func:`attribute_groups`)::

        -n/2 log(2 pi) - (n - 1) log sigma - W / (2 sigma^2) - 1/2 log n
          - 1/2 log V - (rbar - centre)^2 / (2 V),      V = eta^2 + sigma^2 / n

    the exact marginal of the rows given the other effects (the cell mean is
    ``Normal(centre, sqrt(V))``; W depends on sigma alone). `mu` is not used: it is drawn
    from its conditional (:func:`cell_means`).
    """
    import pymc as pm
    import pytensor.tensor as pt

    model = pm.modelcontext(None)
    st = model.embedding_level
    eff, d, ng = st["eff"], st["data"], st["ng"]
    ci, ui = st["ci"], st["ui"]
    n, rbar, v = st["n"], st["rbar"], eff["v"]
    sig = eff["sigma"][ci]
    var = eff["eta"][ci] ** 2 + sig**2 / n
    centre = eff["centre"][ui, ci]
    marginal = pt.sum(-0.5 * n * _LOG_2PI - (n - 1.0) * pt.log(sig) - 0.5 * pt.log(n)
                      - 0.5 * pt.log(var) - (rbar - centre) ** 2 / (2.0 * var))
    # within-cell sums of squares of the residuals, per connection
    dev = v[d["pair_attr"]] - st["vbar_g"][d["pair_group"]]
    quad_g = pt.inc_subtensor(pt.zeros(ng)[d["pair_group"]], d["pair_weight"] * dev**2)
    quad_c = pt.inc_subtensor(pt.zeros(_NC)[d["group_conn"]],
                              d["group_cells"] * d["group_n"] * quad_g)
    ss_c = pt.inc_subtensor(pt.zeros(_NC)[ci], st["ss"])
    within = ss_c - 2.0 * pt.dot(v, d["attribute_centred"]) + quad_c
    pm.Potential("loglik", marginal - pt.sum(within / (2.0 * eff["sigma"] ** 2)))


def row_level_model(spec: ModelSpec, cells: Cells):
    """Build the same model with the cell deviations sampled and one Normal per row.

    For checks only (``tests/test_models_embedding_level.py``): ``mu = centre + eta mu_z``
    and ``distance_i ~ Normal(mu[u_i, c_i] + v[a_i], sigma[c_i])``, the parametrisation
    fitted before the per-cell form (the reference); same priors, same variable names.
    """
    import pymc as pm

    coords = {cells.unit_dim: cells.units.tolist(), "connection": list(CONNECTIONS)}
    with pm.Model(coords=coords) as model:
        eff = _effects(spec, cells)
        z = pm.Normal("mu_z", 0.0, 1.0, dims=(cells.unit_dim, "connection"))
        mu = pm.Deterministic("mu", eff["centre"] + eff["eta"][None, :] * z,
                              dims=(cells.unit_dim, "connection"))
        v = pm.Deterministic("attribute_row_effect", eff["v"])  # per row_attribute
        pm.Normal("distance", mu[cells.unit_idx, cells.conn_idx]
                  + v[row_attribute(cells, has_strength(spec))[0]],
                  eff["sigma"][cells.conn_idx], observed=cells.y)
    return model


def structure_key(spec: ModelSpec, cells: Cells) -> tuple:
    """Return what a compiled model holds as constants: labels, attribute kinds, sizes.

    The rows' statistics and the attribute layout are ``pm.Data`` (:func:`model_data`), so
    ensembles of the same words, embeddings and shapes (a simulation study's replications)
    reuse one compiled model.
    """
    import hashlib

    h = hashlib.sha256()
    for labels in (cells.units, cells.attributes, cells.embeddings, cells.embedding_sample,
                   cells.attribute_kind):
        h.update("\x00".join(map(str, labels)).encode() + b"\x01")
    h.update(np.ascontiguousarray(cells.unit_embedding).tobytes())
    fac = (cells.sub_cells or {}).get("factor")
    if fac:
        h.update("\x00".join([fac["name"], *map(str, fac["levels"])]).encode())
        h.update(np.ascontiguousarray(fac["embedding_level"]).tobytes())
    lay = attribute_groups(cells, has_strength(spec))
    return (h.hexdigest(), lay["group_cells"].size, lay["pair_group"].size,
            bool(attribute_noncentred(cells)),
            bool(has_strength(spec) and strength_noncentred(cells)))


def word_means(posterior):
    """Draws of each protected word's corpus-level mean per connection (dims ``connection, word``).

    The word's own effect on top of the group-level mean, without the deviations of single
    embeddings: ``mu_bar[c] + word_effect[c, w] + tau[c] word_mean_z[c] / sqrt(W)``
    (``word_effect`` sums to zero over the W words; the last term restores the words' own
    mean, as :func:`_effects` takes it out of ``mu_bar``). The mean of these over words is
    ``mu_bar`` plus that term, so a word's contrast is read on the same scale as the
    corpus-level verdict.
    """
    from .._xarray import xr

    n_w = posterior.sizes["word"]
    own = posterior["tau"] * posterior["word_mean_z"] / np.sqrt(n_w)
    out = posterior["mu_bar"] + posterior["word_effect"] + own
    return xr.DataArray(out).transpose("chain", "draw", "connection", "word")


def row_attribute_effects(posterior, cells: Cells, keep: np.ndarray) -> tuple[np.ndarray,
                                                                               np.ndarray]:
    """Return each row's attribute-effect index and the effects at the flat draws `keep`.

    The effects of :func:`row_attribute` (``v[a]``, plus ``psi u[a, r]`` per corpus sample,
    plus ``+-(q[a] + phi w[a, r]) / 2`` on a stereotype's associated / different rows), as
    (draws, effects), rebuilt from the posterior: what the model checks add to a row's
    cell mean.
    """
    strength = "stereotype_strength" in posterior
    return row_attribute(cells, strength)[0], attribute_effect_draws(posterior, cells, keep)


def attribute_effect_draws(posterior, cells: Cells, keep: np.ndarray,
                           st: dict | None = None) -> np.ndarray:
    """Return the effects of :func:`row_attribute_effects` at the flat draws `keep`."""
    def flat(name):
        x = posterior[name].transpose("chain", "draw", ...).values
        return x.reshape(-1, *x.shape[2:])[keep]

    st = structure(cells) if st is None else st
    strength = "stereotype_strength" in posterior
    v = flat("attribute_effect")
    r = st["samples"].size if st["attribute_sample_level"] else 1

    def per_sample(name, size):  # zero-sum deviations per corpus sample (draws, size, R)
        if name in posterior:
            return flat(name)
        out = np.zeros((keep.size, size, r))
        for k, group in enumerate(st["sample_groups"]):
            out[:, :, group] = flat(f"{name}_{k}")
        return out

    if st["attribute_sample_level"]:
        u = per_sample("attribute_sample_z", v.shape[1])
        rows = (v[:, :, None] + flat("psi")[:, None, None] * u).reshape(keep.size, -1)
    else:
        rows = v
    if strength:
        stereo = strength_stereotypes(cells)
        base = rows.reshape(keep.size, -1, r)[:, stereo, :]
        half = np.repeat(flat("stereotype_strength")[:, :, None], r, axis=2) / 2
        if st["attribute_sample_level"] and "phi" in posterior:
            w = per_sample("stereotype_strength_sample_z", stereo.size)
            half = half + flat("phi")[:, None, None] * w / 2
        rows = np.concatenate([rows, (base + half).reshape(keep.size, -1),
                               (base - half).reshape(keep.size, -1)], axis=1)
    return rows


def row_sd(posterior):
    """Sd of a row around its cell mean plus attribute effect: ``sigma`` (as by default)."""
    return posterior["sigma"]


def validate(spec: ModelSpec, source: str) -> None:
    """Nothing beyond the shared checks."""
    return None


def derived(values: dict, m) -> dict:
    """Return no derived variables."""
    return {}


# ---- the native kernel: word effects integrated out, sampled on per-cell statistics ----

#: The compiled kernel's C source (its own library beside :mod:`._native`'s: the single-
#: embedding kernels' source, and so their cached build, stay as they are).
_KERNEL_C = r"""
#include <string.h>
/* ---- the embedding-level family on per-cell statistics (embedding_level.pack) ----
 * x = (hyper[H], z[Z]). hyper j is exp(x[j]) when its prior row says positive. The z are
 * grouped in sets (zero-sum deviations): value_i = s (z_i - zbar) non-centred, or
 * z_i - zbar centred with density s^-(n-1) exp(-|d|^2 / 2 s^2) and zbar ~ Normal(0, h),
 * or shifted (centred flag 2): non-centred with z_i = a_i(s) + b_i(s) (e_i - ebar) + ebar,
 * a_i = s m_i / (1 + s^2 p_i), b_i = (1 + s^2 p_i)^(-1/2) (m_i p_i, p_i at data[h + 2i],
 * data[h + 2i + 1], h in the set's last column): z's conditional mean and sd given s when
 * the data pin value i at m_i with precision p_i, so z's ridge with s is sampled straight.
 * Embedding effects B[e, c] and row-attribute effects v[j] are sums of up to 4 coef x value.
 * Per non-empty cell k (word w, embedding e, connection c, n rows, mean ybar, group g):
 * r_k = ybar - vbar_g - M_c - B[e, c], V_k = eta_c^2 + sigma_c^2 / n. The word effects
 * word[w, c] ~ Normal(0, tau_c) (around M_c) are integrated out per (w, c) segment of cells:
 * log N(r; 0, diag(V) + tau^2 11'). Within-cell sums of squares per connection as in
 * embedding_level.likelihood. */
/* a shifted set's z (el_core's comment) from its e at scale sc; with zb given, also b_i,
 * dz_i/dsc at fixed e and d log b_i / dsc (zb: 3 n values); returns log |dz/de| */
static double el_shift(int64_t n, double sc, const double *mp, const double *e, double *z,
                       double *zb) {
    int64_t i;
    double s2 = sc * sc, t = 0.0, ebar = 0.0, ib = 0.0;
    for (i = 0; i < n; i++) ebar += e[i];
    ebar /= (double)n;
    for (i = 0; i < n; i++) {
        double p = mp[2 * i + 1], den = 1.0 + s2 * p, b = 1.0 / sqrt(den);
        z[i] = sc * mp[2 * i] / den + b * (e[i] - ebar) + ebar;
        t += -0.5 * log(den);
        ib += sqrt(den);
        if (zb != NULL) {
            zb[3 * i] = b;
            zb[3 * i + 2] = -sc * p / den;
            zb[3 * i + 1] = mp[2 * i] * (1.0 - s2 * p) / (den * den)
                            + b * zb[3 * i + 2] * (e[i] - ebar);
        }
    }
    return t + log(ib / (double)n);
}

/* y = Q x (t 0) or Q' x (t 1), Q n x n row-major; returns y */
static double *el_rotate(int64_t n, const double *Q, const double *x, double *y, int t) {
    int64_t i, j;
    for (i = 0; i < n; i++) {
        double a = 0.0;
        for (j = 0; j < n; j++) a += (t ? Q[j * n + i] : Q[i * n + j]) * x[j];
        y[i] = a;
    }
    return y;
}

static int64_t el_core(uint64_t dim, const double *x, double *out, double *logp_,
                       const double *data, const double *delta, double *gdelta,
                       double *vkeep, int vreuse) {
    int64_t H = (int64_t)data[0], Z = (int64_t)data[1], nset = (int64_t)data[2];
    int64_t E = (int64_t)data[3], nra = (int64_t)data[4], npos = (int64_t)data[5];
    int64_t ncls = (int64_t)data[6], ng = (int64_t)data[7], npair = (int64_t)data[8];
    int64_t ncen = (int64_t)data[9], nG = (int64_t)data[10], maxm = (int64_t)data[11];
    const double *priors = data + 16;             /* H x 5 */
    const double *roles = priors + 5 * H;         /* M[4], tau[4], eta[4], sigma[4] indices */
    const double *sets = roles + 16;              /* nset x 5: zstart, size, scale, centred, h */
    const double *bmap = sets + 5 * nset;         /* E*4 x 4 idx, then E*4 x 4 coef */
    const double *bcoef = bmap + 16 * E;
    const double *vmap = bcoef + 16 * E;          /* nra x 4 idx, nra x 4 coef */
    const double *vcoef = vmap + 4 * nra;
    /* classes of segments: conn, N segments, first position, start of G */
    const double *kconn = vcoef + 4 * nra, *kN = kconn + ncls, *kpos = kN + ncls;
    const double *kG = kpos + ncls + 1;
    /* positions: embedding, group, n, mean over the class's segments */
    const double *pemb = kG + ncls, *pgrp = pemb + npos, *pn = pgrp + npos;
    const double *pmean = pn + npos, *Gall = pmean + npos;  /* centred cross-products */
    const double *gconn = Gall + nG, *gmult = gconn + ng;  /* group: conn, cells x n */
    const double *pg = gmult + ng, *pa = pg + npair, *pw = pa + npair;
    const double *cen_j = pw + npair, *cen_c = cen_j + ncen, *cen_v = cen_c + ncen;
    const double *ssc = cen_v + ncen, *nm1 = ssc + 4;   /* per conn: sum ss, sum (n - 1) */
    const double *uidx = nm1 + 4;   /* integrated attribute x sample deviations (el_logp) */
    double *h, *gh, *val, *gval, *B, *gB, *v, *gv, *vb, *gvb, *quad, *work, *zs, *zb, *er;
    double lshift = 0.0;
    double M[4], tau[4], eta[4], sig[4], gM[4] = {0, 0, 0, 0}, gtau[4] = {0, 0, 0, 0};
    double geta[4] = {0, 0, 0, 0}, gsig[4] = {0, 0, 0, 0}, within[4], lp = 0.0;
    int64_t i, j, k, c, s, q;
    int64_t rc = 0;
    if ((int64_t)dim != H + Z) return -1;
    double *uu, *bb, *Gu;
    work = (double *)malloc(sizeof(double) * (size_t)(2 * H + 7 * Z + 8 * E + 2 * nra + 3 * ng
                                                       + 3 * maxm + 2 * 64));
    if (work == NULL) return -2;
    h = work; gh = h + H; val = gh + H; gval = val + Z; B = gval + Z; gB = B + 4 * E;
    v = gB + 4 * E; gv = v + nra; vb = gv + nra; gvb = vb + ng; quad = gvb + ng;
    uu = quad + ng; bb = uu + maxm; Gu = bb + maxm; zs = Gu + maxm; zb = zs + Z; er = zb + 3 * Z;
    for (j = 0; j < H; j++) {
        h[j] = priors[5 * j + 1] > 0.5 ? exp(x[j]) : x[j];
        gh[j] = 0.0;
    }
    for (c = 0; c < 4; c++) {
        M[c] = h[(int64_t)roles[c]];
        tau[c] = h[(int64_t)roles[4 + c]];
        eta[c] = h[(int64_t)roles[8 + c]];
        sig[c] = h[(int64_t)roles[12 + c]];
    }
    /* set values (zs: the z of each set, shifted or as sampled) */
    for (s = 0; s < nset; s++) {
        int64_t z0 = (int64_t)sets[5 * s], n = (int64_t)sets[5 * s + 1];
        double sc = h[(int64_t)sets[5 * s + 2]], zbar = 0.0;
        int mode = (int)(sets[5 * s + 3] + 0.5);
        if (mode >= 2)
            lshift += el_shift(n, sc, data + (int64_t)sets[5 * s + 4],
                               mode == 3 ? el_rotate(n, data + (int64_t)sets[5 * s + 4] + 2 * n,
                                                     x + H + z0, er + z0, 0) : x + H + z0,
                               zs + z0, zb + 3 * z0);
        else
            for (i = 0; i < n; i++) zs[z0 + i] = x[H + z0 + i];
        for (i = 0; i < n; i++) zbar += zs[z0 + i];
        zbar /= (double)n;
        for (i = 0; i < n; i++) {
            double d = zs[z0 + i] - zbar;
            val[z0 + i] = mode == 1 ? d : sc * d;
            gval[z0 + i] = 0.0;
        }
    }
    for (k = 0; k < 4 * E; k++) {
        double t = 0.0;
        for (i = 0; i < 4; i++) {
            int64_t id = (int64_t)bmap[4 * k + i];
            if (id >= 0) t += bcoef[4 * k + i] * val[id];
        }
        B[k] = t;
        gB[k] = 0.0;
    }
    /* vkeep (el_umarg): the effects without the deviations, kept by its first pass
     * (vreuse 0) and reused by its second (vreuse 1) */
    for (j = 0; j < nra; j++) {
        double t = 0.0;
        if (vkeep != NULL && vreuse) {
            t = vkeep[j];
        } else {
            for (i = 0; i < 4; i++) {
                int64_t id = (int64_t)vmap[4 * j + i];
                if (id >= 0) t += vcoef[4 * j + i] * val[id];
            }
            if (vkeep != NULL) vkeep[j] = t;
        }
        if (delta != NULL && uidx[j] >= 0) t += delta[(int64_t)uidx[j]];
        v[j] = t;
        gv[j] = 0.0;
    }
    for (q = 0; q < ng; q++) { vb[q] = 0.0; gvb[q] = 0.0; quad[q] = 0.0; }
    /* the pairs come group by group: sums per run of one group, kept in registers */
    for (i = 0; i < npair;) {
        int64_t g = (int64_t)pg[i], i0 = i;
        double t = 0.0, t2 = 0.0;
        for (; i < npair && (int64_t)pg[i] == g; i++) t += pw[i] * v[(int64_t)pa[i]];
        for (i = i0; i < npair && (int64_t)pg[i] == g; i++) {
            double d = v[(int64_t)pa[i]] - t;
            t2 += pw[i] * d * d;
        }
        vb[g] += t;
        quad[g] += t2;
    }
    for (c = 0; c < 4; c++) within[c] = ssc[c];
    for (q = 0; q < ng; q++) within[(int64_t)gconn[q]] += gmult[q] * quad[q];
    for (i = 0; i < ncen;) {  /* per run of one connection, in a register (same sums) */
        int64_t c0 = (int64_t)cen_c[i];
        double t = within[c0];
        for (; i < ncen && (int64_t)cen_c[i] == c0; i++) t -= 2.0 * cen_v[i] * v[(int64_t)cen_j[i]];
        within[c0] = t;
    }
    for (c = 0; c < 4; c++) {
        double s2 = sig[c] * sig[c];
        lp += -nm1[c] * log(sig[c]) - within[c] / (2.0 * s2);
        gsig[c] += -nm1[c] / sig[c] + within[c] / (s2 * sig[c]);
    }
    /* d/dv of the within terms */
    {
        double s2c[4];
        for (c = 0; c < 4; c++) s2c[c] = sig[c] * sig[c];
        for (i = 0; i < ncen; i++) gv[(int64_t)cen_j[i]] += cen_v[i] / s2c[(int64_t)cen_c[i]];
    }
    for (i = 0; i < npair;) {
        int64_t g = (int64_t)pg[i];
        double s2 = sig[(int64_t)gconn[g]] * sig[(int64_t)gconn[g]], gm = gmult[g], b = vb[g];
        for (; i < npair && (int64_t)pg[i] == g; i++)
            gv[(int64_t)pa[i]] -= gm * pw[i] * (v[(int64_t)pa[i]] - b) / s2;
    }
    /* classes of (word, connection) segments, each segment's word effect integrated out:
     * log N(r_s; 0, diag(V) + tau^2 11') summed over the N segments of a class, which share
     * connection and (embedding, group, n) at each position j; r_sj = b_j + d_sj with
     * b_j = mean_j - vbar_g - M_c - B[e, c] and d the segments' centred means (G = d'd) */
    for (s = 0; s < ncls; s++) {
        int64_t p0 = (int64_t)kpos[s], m = (int64_t)kpos[s + 1] - p0;
        const double *G = Gall + (int64_t)kG[s];
        double N = kN[s], S = 0.0, Bu = 0.0, uGu = 0.0, sumQ = 0.0, t2, D, P2, lv = 0.0;
        int full = N > 1.5;
        c = (int64_t)kconn[s];
        t2 = tau[c] * tau[c];
        for (j = 0; j < m; j++) {
            int64_t kk = p0 + j, e = (int64_t)pemb[kk], g = (int64_t)pgrp[kk];
            double V = eta[c] * eta[c] + sig[c] * sig[c] / pn[kk];
            uu[j] = 1.0 / V;
            bb[j] = pmean[kk] - vb[g] - M[c] - B[4 * e + c];
            S += uu[j];
            Bu += uu[j] * bb[j];
            lv += log(V);
        }
        for (j = 0; j < m; j++) {
            double t = 0.0;
            if (full) {
                const double *row = G + j * m;
                for (i = 0; i < m; i++) t += row[i] * uu[i];
            }
            Gu[j] = t;
            uGu += uu[j] * t;
            sumQ += uu[j] * ((full ? G[j * m + j] : 0.0) + N * bb[j] * bb[j]);
        }
        D = 1.0 + t2 * S;
        P2 = uGu + N * Bu * Bu;
        lp += -0.5 * N * lv - 0.5 * N * log(D) - 0.5 * sumQ + 0.5 * t2 * P2 / D;
        gtau[c] += tau[c] * (P2 / (D * D) - N * S / D);
        for (j = 0; j < m; j++) {
            int64_t kk = p0 + j, e = (int64_t)pemb[kk], g = (int64_t)pgrp[kk];
            double u = uu[j], ga = u * N * (bb[j] - t2 * Bu / D);
            double gu = 0.5 * N / u - 0.5 * N * t2 / D
                        - 0.5 * ((full ? G[j * m + j] : 0.0) + N * bb[j] * bb[j])
                        - 0.5 * t2 * t2 * P2 / (D * D) + t2 / D * (Gu[j] + N * bb[j] * Bu);
            double gV = -u * u * gu;
            gvb[g] += ga;
            gM[c] += ga;
            gB[4 * e + c] += ga;
            geta[c] += gV * 2.0 * eta[c];
            gsig[c] += gV * 2.0 * sig[c] / pn[kk];
        }
    }
    for (i = 0; i < npair; i++) gv[(int64_t)pa[i]] += gvb[(int64_t)pg[i]] * pw[i];
    if (gdelta != NULL) {
        int64_t nU = (int64_t)data[12];
        for (i = 0; i < nU; i++) gdelta[i] = 0.0;
        for (j = 0; j < nra; j++)
            if (uidx[j] >= 0) gdelta[(int64_t)uidx[j]] += gv[j];
        if (out == NULL) goto done;  /* el_umarg's first pass: only the deviations' gradient */
    }
    /* back to the set values */
    for (k = 0; k < 4 * E; k++)
        for (i = 0; i < 4; i++) {
            int64_t id = (int64_t)bmap[4 * k + i];
            if (id >= 0) gval[id] += bcoef[4 * k + i] * gB[k];
        }
    for (j = 0; j < nra; j++)
        for (i = 0; i < 4; i++) {
            int64_t id = (int64_t)vmap[4 * j + i];
            if (id >= 0) gval[id] += vcoef[4 * j + i] * gv[j];
        }
    for (c = 0; c < 4; c++) {
        gh[(int64_t)roles[c]] += gM[c];
        gh[(int64_t)roles[4 + c]] += gtau[c];
        gh[(int64_t)roles[8 + c]] += geta[c];
        gh[(int64_t)roles[12 + c]] += gsig[c];
    }
    /* sets: priors and the chain rule to z and the scales */
    for (s = 0; s < nset; s++) {
        int64_t z0 = (int64_t)sets[5 * s], n = (int64_t)sets[5 * s + 1];
        int64_t si = (int64_t)sets[5 * s + 2];
        double sc = h[si], zbar = 0.0, gbar = 0.0;
        int mode = (int)(sets[5 * s + 3] + 0.5);
        for (i = 0; i < n; i++) {
            zbar += zs[z0 + i];
            gbar += gval[z0 + i];
        }
        zbar /= (double)n;
        gbar /= (double)n;
        if (mode >= 2) {  /* dz_i/de_j = b_i (d_ij - 1/n) + 1/n; d/dsc: dz/dsc at fixed e
                           * and the log-Jacobian's sum log b + log mean(1/b) */
            double gs = 0.0, sgz = 0.0, sbgz = 0.0, slb = 0.0, sib = 0.0;
            for (i = 0; i < n; i++) {
                double z = zs[z0 + i], gz = sc * (gval[z0 + i] - gbar) - z;
                const double *w = zb + 3 * (z0 + i);
                lp += -0.5 * z * z;
                gs += gval[z0 + i] * (z - zbar) + gz * w[1] + w[2];
                sgz += gz;
                sbgz += w[0] * gz;
                slb += w[2] / w[0];
                sib += 1.0 / w[0];
                out[H + z0 + i] = w[0] * gz;
            }
            for (i = 0; i < n; i++) out[H + z0 + i] += (sgz - sbgz) / (double)n;
            if (mode == 3) {  /* d/deta = Q' d/de */
                for (i = 0; i < n; i++) er[z0 + i] = out[H + z0 + i];
                el_rotate(n, data + (int64_t)sets[5 * s + 4] + 2 * n, er + z0, out + H + z0, 1);
            }
            gh[si] += gs - slb / sib;
        } else if (mode == 1) {
            double an = sets[5 * s + 4], ss = 0.0;
            for (i = 0; i < n; i++) {
                double d = x[H + z0 + i] - zbar;
                ss += d * d;
                out[H + z0 + i] = gval[z0 + i] - gbar - d / (sc * sc)
                                  - zbar / ((double)n * an * an);
            }
            lp += -((double)n - 1.0) * log(sc) - ss / (2.0 * sc * sc)
                  - 0.5 * zbar * zbar / (an * an);
            gh[si] += -((double)n - 1.0) / sc + ss / (sc * sc * sc);
        } else {
            double gs = 0.0;
            for (i = 0; i < n; i++) {
                double z = x[H + z0 + i], d = z - zbar;
                lp += -0.5 * z * z;
                gs += gval[z0 + i] * d;
                out[H + z0 + i] = sc * (gval[z0 + i] - gbar) - z;
            }
            gh[si] += gs;
        }
    }
    lp += lshift;
    for (j = 0; j < H; j++) {
        double pgr, pl = prior((int)priors[5 * j], priors[5 * j + 2], priors[5 * j + 3],
                               priors[5 * j + 4], h[j], &pgr);
        double gg = gh[j] + pgr;
        lp += pl;
        if (priors[5 * j + 1] > 0.5) {
            lp += x[j];
            out[j] = gg * h[j] + 1.0;
        } else {
            out[j] = gg;
        }
    }
    for (j = 0; j < H + Z; j++)
        if (!isfinite(out[j])) { rc = 3; goto done; }
    logp_[0] = lp;
    if (!isfinite(lp)) rc = 4;
done:
    free(work);
    return rc;
}

/* ---- the attribute x corpus-sample deviations integrated out (el_logp) ----
 * delta[a, r] = psi u[a, r] (zero-sum over r per attribute) enters the row-attribute effect
 * v[j] at uidx[j]. Given everything else the log-density of el_core is quadratic in delta:
 * l(delta) = l0 + g'delta - delta'Q delta / 2 with Q = diag(d) + U Cu U' (U: the groups'
 * attribute weights, merged where two groups have the same; Cu: -gmult/sigma^2 on each
 * group, N Prec between the positions of each class). With H = Q + I / psi^2 on the
 * zero-sum subspace, the marginal is l(dhat) - |dhat|^2 / (2 psi^2) - A (R - 1) log psi
 * - log det H / 2 (dhat = H^-1 g), evaluated by Woodbury around the per-attribute blocks;
 * its gradient is el_core's at dhat (the envelope) plus the traces of H^-1 dH. */
static double el_lu(int64_t n, double *a, int64_t *piv, int *ok) {
    int64_t i, j, k;
    double ld = 0.0;
    int sign = 1;
    *ok = 1;
    for (k = 0; k < n; k++) {
        int64_t p = k;
        double best = fabs(a[k * n + k]), d;
        for (i = k + 1; i < n; i++)
            if (fabs(a[i * n + k]) > best) { best = fabs(a[i * n + k]); p = i; }
        piv[k] = p;
        if (!(best > 0.0) || !isfinite(best)) { *ok = 0; return 0.0; }
        if (p != k) {
            for (j = 0; j < n; j++) {
                double t = a[k * n + j];
                a[k * n + j] = a[p * n + j];
                a[p * n + j] = t;
            }
            sign = -sign;
        }
        d = a[k * n + k];
        if (d < 0.0) sign = -sign;
        ld += log(fabs(d));
        for (i = k + 1; i < n; i++) {
            double f = a[i * n + k] / d;
            a[i * n + k] = f;
            if (f != 0.0)
                for (j = k + 1; j < n; j++) a[i * n + j] -= f * a[k * n + j];
        }
    }
    if (sign < 0) *ok = 0;
    return ld;
}

static void el_lu_solve(int64_t n, const double *a, const int64_t *piv, double *b, int64_t m) {
    int64_t i, j, k;
    for (k = 0; k < n; k++)
        if (piv[k] != k)
            for (j = 0; j < m; j++) {
                double t = b[k * m + j];
                b[k * m + j] = b[piv[k] * m + j];
                b[piv[k] * m + j] = t;
            }
    for (i = 0; i < n; i++)
        for (k = 0; k < i; k++) {
            double f = a[i * n + k];
            if (f != 0.0)
                for (j = 0; j < m; j++) b[i * m + j] -= f * b[k * m + j];
        }
    for (i = n - 1; i >= 0; i--) {
        for (k = i + 1; k < n; k++) {
            double f = a[i * n + k];
            if (f != 0.0)
                for (j = 0; j < m; j++) b[i * m + j] -= f * b[k * m + j];
        }
        for (j = 0; j < m; j++) b[i * m + j] /= a[i * n + i];
    }
}

/* a class's per-position weights uu[j] = 1 / (eta^2 + sigma^2 / n_j) and D = 1 + tau^2 sum uu:
 * its positions' precision is diag(uu) - tau^2 uu uu' / D */
static double el_class_weights(int64_t m, double eta, double s2, double t2, const double *pn,
                               double *uu) {
    double S = 0.0;
    int64_t j;
    for (j = 0; j < m; j++) {
        uu[j] = 1.0 / (eta * eta + s2 / pn[j]);
        S += uu[j];
    }
    return 1.0 + t2 * S;
}

static __thread double *el_buf = NULL;
static __thread size_t el_buf_size = 0;

static int64_t el_umarg(uint64_t dim, const double *x, double *out, double *logp_,
                        const double *data, const double *noise, double *draw) {
    int64_t H = (int64_t)data[0], nset = (int64_t)data[2];
    int64_t E = (int64_t)data[3], nra = (int64_t)data[4], npos = (int64_t)data[5];
    int64_t ncls = (int64_t)data[6], ng = (int64_t)data[7], npair = (int64_t)data[8];
    int64_t ncen = (int64_t)data[9], nG = (int64_t)data[10], maxm = (int64_t)data[11];
    int64_t nU = (int64_t)data[12], R = (int64_t)data[13], ipsi = (int64_t)data[14];
    int64_t nu = (int64_t)data[15], A = nU / R;
    const double *priors = data + 16, *roles = priors + 5 * H, *sets = roles + 16;
    const double *bmap = sets + 5 * nset, *bcoef = bmap + 16 * E, *vmap = bcoef + 16 * E;
    const double *vcoef = vmap + 4 * nra;
    const double *kconn = vcoef + 4 * nra, *kN = kconn + ncls, *kpos = kN + ncls;
    const double *kG = kpos + ncls + 1;
    const double *pemb = kG + ncls, *pgrp = pemb + npos, *pn = pgrp + npos;
    const double *pmean = pn + npos, *Gall = pmean + npos;
    const double *gconn = Gall + nG, *gmult = gconn + ng;
    const double *pg = gmult + ng, *pa = pg + npair, *pw = pa + npair;
    const double *cen_j = pw + npair, *cen_c = cen_j + ncen, *cen_v = cen_c + ncen;
    const double *ssc = cen_v + ncen, *nm1 = ssc + 4, *uidx = nm1 + 4;
    const double *gmap = uidx + nra;
    int64_t nup = (int64_t)gmap[ng];
    const double *upc = gmap + ng + 1, *upi = upc + nup, *upw = upi + nup;
    const double *aptr = upw + nup, *alist = aptr + A + 1;
    int64_t nb = (int64_t)alist[(int64_t)aptr[A]], b;
    const double *bptr = alist + (int64_t)aptr[A] + 1;
    /* kinds of attributes with the same block: representative, count, each attribute's kind */
    int64_t nkind = (int64_t)bptr[nb + 1];
    const double *krep = bptr + nb + 2, *kcnt = krep + nkind, *akind = kcnt + nkind;
    double sig[4], eta[4], tau[4], s2[4], psi, psi2, lp0 = 0.0, lp1 = 0.0;
    double gsig[4] = {0, 0, 0, 0}, geta[4] = {0, 0, 0, 0}, gtau[4] = {0, 0, 0, 0};
    double logdetB = 0.0, logdetT, dd = 0.0, trS = 0.0, gpsi;
    double *w, *g0, *dvec, *Ainv, *S1, *y, *dhat, *diagS, *AU, *Cg, *Cu, *M, *T, *K, *MK;
    double *Cgg, *vec, *vec2, *Prec, *Y, *Zm, *uu, *tmpout, *vkeep;
    int64_t *piv, i, j, k, c, s, q, u, r;
    int64_t rc = 0;
    int ok;
    size_t nw = (size_t)(7 * nU + A + nu * nU + ng * ng + 7 * nu * nu + 2 * nu + 3 * maxm * maxm
                         + maxm + dim + 8 + nra);
    /* one work buffer per thread, kept between calls (a fresh calloc this size is a fresh
     * mapping, its pages faulted in at every gradient) */
    if (nw + (size_t)nu + 1 > el_buf_size) {
        free(el_buf);
        el_buf_size = nw + (size_t)nu + 1;
        el_buf = (double *)malloc(sizeof(double) * el_buf_size);
        if (el_buf == NULL) { el_buf_size = 0; return -2; }
    }
    w = el_buf;
    piv = (int64_t *)(w + nw);
    g0 = w; dvec = g0 + nU; Ainv = dvec + nU; S1 = Ainv + nU; y = S1 + A; dhat = y + nU;
    diagS = dhat + nU; Cg = diagS + nU; Cu = Cg + ng * ng; M = Cu + nu * nu;
    T = M + nu * nu; K = T + nu * nu; MK = K + nu * nu; Cgg = MK + nu * nu;
    vec = Cgg + nu * nu; vec2 = vec + nu; Prec = vec2 + nu; Y = Prec + maxm * maxm;
    Zm = Y + maxm * maxm; uu = Zm + maxm * maxm; tmpout = uu + maxm;
    AU = tmpout + dim + nU;  /* between them the draw's perturbation, eps = tmpout + dim */
    vkeep = AU + nu * nU;
    memset(dvec, 0, sizeof(double) * (size_t)nU);
    memset(dhat, 0, sizeof(double) * (size_t)nU);
    memset(Cg, 0, sizeof(double) * (size_t)(ng * ng + 2 * nu * nu));  /* Cg, Cu, M */
    for (c = 0; c < 4; c++) {
        int64_t js = (int64_t)roles[12 + c], je = (int64_t)roles[8 + c], jt = (int64_t)roles[4 + c];
        sig[c] = priors[5 * js + 1] > 0.5 ? exp(x[js]) : x[js];
        eta[c] = priors[5 * je + 1] > 0.5 ? exp(x[je]) : x[je];
        tau[c] = priors[5 * jt + 1] > 0.5 ? exp(x[jt]) : x[jt];
        s2[c] = sig[c] * sig[c];
    }
    psi = priors[5 * ipsi + 1] > 0.5 ? exp(x[ipsi]) : x[ipsi];
    psi2 = psi * psi;
    /* g = d l / d delta at delta = 0 (dhat is zero here) */
    rc = el_core(dim, x, NULL, &lp0, data, NULL, g0, vkeep, 0);  /* g0 only */
    if (rc != 0) goto done;
    /* Q = diag(d) + U Cu U' */
    for (i = 0; i < npair;) {  /* the pairs come group by group */
        int64_t g = (int64_t)pg[i];
        double kk = gmult[g] / s2[(int64_t)gconn[g]];
        for (; i < npair && (int64_t)pg[i] == g; i++)
            dvec[(int64_t)uidx[(int64_t)pa[i]]] += kk * pw[i];
    }
    for (q = 0; q < ng; q++) Cg[q * ng + q] -= gmult[q] / s2[(int64_t)gconn[q]];
    for (s = 0; s < ncls; s++) {
        int64_t p0 = (int64_t)kpos[s], m = (int64_t)kpos[s + 1] - p0;
        double N = kN[s], t2, D;
        c = (int64_t)kconn[s];
        t2 = tau[c] * tau[c];
        D = el_class_weights(m, eta[c], s2[c], t2, pn + p0, uu);
        for (j = 0; j < m; j++)
            for (k = 0; k < m; k++)
                Cg[(int64_t)pgrp[p0 + j] * ng + (int64_t)pgrp[p0 + k]] +=
                    N * ((j == k ? uu[j] : 0.0) - t2 * uu[j] * uu[k] / D);
    }
    for (q = 0; q < ng; q++)
        for (k = 0; k < ng; k++)
            Cu[(int64_t)gmap[q] * nu + (int64_t)gmap[k]] += Cg[q * ng + k];
    /* the per-attribute blocks B = diag(d) + I / psi^2 on the zero-sum subspace, once per
     * kind (its representative's rows), copied to the kind's other attributes */
    for (b = 0; b < nkind; b++) {
        double t = 0.0, ld = 0.0;
        k = (int64_t)krep[b];
        for (r = 0; r < R; r++) {
            i = k * R + r;
            Ainv[i] = 1.0 / (dvec[i] + 1.0 / psi2);
            t += Ainv[i];
            ld -= log(Ainv[i]);
        }
        S1[k] = t;
        logdetB += kcnt[b] * (ld + log(t / (double)R));
    }
    for (k = 0; k < A; k++) {
        int64_t k0 = (int64_t)krep[(int64_t)akind[k]];
        if (k0 == k) continue;
        for (r = 0; r < R; r++) Ainv[k * R + r] = Ainv[k0 * R + r];
        S1[k] = S1[k0];
    }
    /* AU = B^+ U (columns u, rows delta; the representatives' rows only), M = U' B^+ U (each
     * representative's part times its kind's count) */
    for (q = 0; q < nup; q++) {
        int64_t i0 = (int64_t)upi[q], a = i0 / R, r0 = i0 % R;
        double *col = AU + (int64_t)upc[q] * nU + a * R;
        if ((int64_t)krep[(int64_t)akind[a]] != a) continue;
        for (r = 0; r < R; r++)  /* one entry per (column, attribute): set, not added */
            col[r] = upw[q] * ((r == r0 ? Ainv[a * R + r] : 0.0)
                               - Ainv[a * R + r] * Ainv[i0] / S1[a]);
    }
    for (q = 0; q < nup; q++) {
        int64_t i0 = (int64_t)upi[q], a = i0 / R;
        double cnt;
        if ((int64_t)krep[(int64_t)akind[a]] != a) continue;
        cnt = kcnt[(int64_t)akind[a]];
        for (k = (int64_t)aptr[a]; k < (int64_t)aptr[a + 1]; k++) {
            u = (int64_t)alist[k];
            M[(int64_t)upc[q] * nu + u] += cnt * upw[q] * AU[u * nU + i0];
        }
    }
    /* K = Cu (I + M Cu)^-1 = (I + Cu M)^-1 Cu, block by block (M, Cu block-diagonal) */
    logdetT = 0.0;
    for (b = 0; b < nb; b++) {
        int64_t o = (int64_t)bptr[b], n = (int64_t)bptr[b + 1] - o;
        for (i = 0; i < n; i++)
            for (j = 0; j < n; j++) {
                double t = (i == j) ? 1.0 : 0.0;
                for (k = 0; k < n; k++) t += Cu[(o + i) * nu + o + k] * M[(o + k) * nu + o + j];
                T[i * n + j] = t;
                MK[i * n + j] = Cu[(o + i) * nu + o + j];
            }
        logdetT += el_lu(n, T, piv, &ok);
        if (!ok) { rc = 5; goto done; }
        el_lu_solve(n, T, piv, MK, n);
        for (i = 0; i < n; i++)
            for (j = 0; j < n; j++) K[(o + i) * nu + o + j] = MK[i * n + j];
    }
    if (draw != NULL) { /* g + a perturbation with covariance H */
        double *eps = tmpout + dim;
        const double *zp = noise, *zw = noise + nU, *z1 = zw + npair, *z2 = z1 + npos;
        for (i = 0; i < nU; i++) eps[i] = g0[i] + zp[i] / psi;
        for (i = 0; i < npair;) {
            int64_t g = (int64_t)pg[i], i1 = i;
            double kk = sqrt(gmult[g] / s2[(int64_t)gconn[g]]), sum = 0.0;
            while (i1 < npair && (int64_t)pg[i1] == g) { sum += sqrt(pw[i1]) * zw[i1]; i1++; }
            for (; i < i1; i++)
                eps[(int64_t)uidx[(int64_t)pa[i]]] += kk * (sqrt(pw[i]) * zw[i] - pw[i] * sum);
        }
        for (s = 0; s < ncls; s++) {
            int64_t p0 = (int64_t)kpos[s], m = (int64_t)kpos[s + 1] - p0;
            double N = kN[s], S = 0.0, t2, D, uv = 0.0;
            c = (int64_t)kconn[s];
            t2 = tau[c] * tau[c];
            for (j = 0; j < m; j++) {
                double V = eta[c] * eta[c] + s2[c] / pn[p0 + j];
                uu[j] = 1.0 / V;
                S += uu[j];
                Y[j] = sqrt(V) * z1[p0 + j] + tau[c] * z2[s];  /* covariance diag(V) + t2 11' */
                uv += uu[j] * Y[j];
            }
            D = 1.0 + t2 * S;
            for (j = 0; j < m; j++) {
                double eta_j = sqrt(N) * uu[j] * (Y[j] - t2 * uv / D);  /* sqrt(N) Prec Y */
                int64_t g = (int64_t)pgrp[p0 + j];
                for (i = 0; i < npair; i++)
                    if ((int64_t)pg[i] == g) eps[(int64_t)uidx[(int64_t)pa[i]]] += eta_j * pw[i];
            }
        }
        for (i = 0; i < nU; i++) g0[i] = eps[i];
    }
    /* dhat = B^+ g - AU K U' B^+ g */
    for (k = 0; k < A; k++) {
        double t = 0.0;
        for (r = 0; r < R; r++) t += Ainv[k * R + r] * g0[k * R + r];
        for (r = 0; r < R; r++) y[k * R + r] = Ainv[k * R + r] * (g0[k * R + r] - t / S1[k]);
    }
    for (u = 0; u < nu; u++) vec[u] = 0.0;
    for (q = 0; q < nup; q++) vec[(int64_t)upc[q]] += upw[q] * y[(int64_t)upi[q]];
    for (b = 0; b < nb; b++) {
        int64_t o = (int64_t)bptr[b], n = (int64_t)bptr[b + 1] - o;
        for (u = o; u < o + n; u++) {
            double t = 0.0;
            for (k = o; k < o + n; k++) t += K[u * nu + k] * vec[k];
            vec2[u] = t;
        }
    }
    for (k = 0; k < A; k++) {
        int64_t k0 = (int64_t)krep[(int64_t)akind[k]];  /* its rows of AU */
        double *dh = dhat + k * R;
        for (r = 0; r < R; r++) dh[r] = y[k * R + r];
        for (q = (int64_t)aptr[k]; q < (int64_t)aptr[k + 1]; q++) {
            const double *au;
            double v2;
            u = (int64_t)alist[q];
            au = AU + u * nU + k0 * R;
            v2 = vec2[u];
            for (r = 0; r < R; r++) dh[r] -= au[r] * v2;
        }
    }
    if (draw != NULL) {
        for (i = 0; i < nU; i++) draw[i] = dhat[i];
        goto done;
    }
    rc = el_core(dim, x, out, &lp1, data, dhat, NULL, vkeep, 1);
    if (rc != 0) goto done;
    for (i = 0; i < nU; i++) dd += dhat[i] * dhat[i];
    /* diag of Sigma = B^+ - AU K AU' and Cgg = U' Sigma U = M - M K M */
    for (b = 0; b < nkind; b++) {
        int64_t q0, q1;
        k = (int64_t)krep[b];
        q0 = (int64_t)aptr[k];
        q1 = (int64_t)aptr[k + 1];
        for (r = 0; r < R; r++) {
            i = k * R + r;
            double t = Ainv[i] - Ainv[i] * Ainv[i] / S1[k];
            for (q = q0; q < q1; q++) {
                int64_t u1 = (int64_t)alist[q];
                double a1 = AU[u1 * nU + i], acc = 0.0;
                for (j = q0; j < q1; j++) {
                    int64_t u2 = (int64_t)alist[j];
                    acc += K[u1 * nu + u2] * AU[u2 * nU + i];
                }
                t -= a1 * acc;
            }
            diagS[i] = t;
            trS += kcnt[b] * t;
        }
    }
    for (k = 0; k < A; k++) {
        int64_t k0 = (int64_t)krep[(int64_t)akind[k]];
        if (k0 != k)
            for (r = 0; r < R; r++) diagS[k * R + r] = diagS[k0 * R + r];
    }
    for (b = 0; b < nb; b++) {
        int64_t o = (int64_t)bptr[b], n = (int64_t)bptr[b + 1] - o;
        for (i = o; i < o + n; i++)
            for (j = o; j < o + n; j++) {
                double t = 0.0;
                for (k = o; k < o + n; k++) t += M[i * nu + k] * K[k * nu + j];
                MK[i * nu + j] = t;
            }
        for (i = o; i < o + n; i++)
            for (j = o; j < o + n; j++) {
                double t = M[i * nu + j];
                for (k = o; k < o + n; k++) t -= MK[i * nu + k] * M[k * nu + j];
                Cgg[i * nu + j] = t;
            }
    }
    /* within-cell parts: k_g (diag(pw) - pw pw') per group */
    for (i = 0; i < npair;) {
        int64_t g = (int64_t)pg[i], gu = (int64_t)gmap[g];
        double kk = gmult[g] / s2[(int64_t)gconn[g]], t = -Cgg[gu * nu + gu];
        while (i < npair && (int64_t)pg[i] == g) {
            t += pw[i] * diagS[(int64_t)uidx[(int64_t)pa[i]]];
            i++;
        }
        gsig[(int64_t)gconn[g]] += kk * t / sig[(int64_t)gconn[g]];
    }
    /* classes: N Prec between positions; Z = Prec Y Prec */
    for (s = 0; s < ncls; s++) {
        int64_t p0 = (int64_t)kpos[s], m = (int64_t)kpos[s + 1] - p0;
        double N = kN[s], t2, D, sumZ = 0.0, trZ = 0.0, trZn = 0.0;
        c = (int64_t)kconn[s];
        t2 = tau[c] * tau[c];
        D = el_class_weights(m, eta[c], s2[c], t2, pn + p0, uu);
        for (j = 0; j < m; j++)
            for (k = 0; k < m; k++) {
                Prec[j * m + k] = (j == k ? uu[j] : 0.0) - t2 * uu[j] * uu[k] / D;
                Y[j * m + k] = Cgg[(int64_t)gmap[(int64_t)pgrp[p0 + j]] * nu
                                   + (int64_t)gmap[(int64_t)pgrp[p0 + k]]];
            }
        for (j = 0; j < m; j++)  /* Zm = Y Prec */
            for (k = 0; k < m; k++) {
                double t = 0.0;
                for (i = 0; i < m; i++) t += Y[j * m + i] * Prec[i * m + k];
                Zm[j * m + k] = t;
            }
        for (j = 0; j < m; j++)  /* Prec Zm */
            for (k = 0; k < m; k++) {
                double t = 0.0;
                for (i = 0; i < m; i++) t += Prec[j * m + i] * Zm[i * m + k];
                sumZ += t;
                if (j == k) { trZ += t; trZn += t / pn[p0 + j]; }
            }
        gtau[c] += N * tau[c] * sumZ;
        geta[c] += N * eta[c] * trZ;
        gsig[c] += N * sig[c] * trZn;
    }
    gpsi = dd / (psi2 * psi) - (double)(A * (R - 1)) / psi + trS / (psi2 * psi);
    for (c = 0; c < 4; c++) {
        int64_t js = (int64_t)roles[12 + c], je = (int64_t)roles[8 + c], jt = (int64_t)roles[4 + c];
        out[js] += gsig[c] * (priors[5 * js + 1] > 0.5 ? sig[c] : 1.0);
        out[je] += geta[c] * (priors[5 * je + 1] > 0.5 ? eta[c] : 1.0);
        out[jt] += gtau[c] * (priors[5 * jt + 1] > 0.5 ? tau[c] : 1.0);
    }
    out[ipsi] += gpsi * (priors[5 * ipsi + 1] > 0.5 ? psi : 1.0);
    lp1 += -dd / (2.0 * psi2) - (double)(A * (R - 1)) * log(psi) - 0.5 * (logdetB + logdetT);
    logp_[0] = lp1;
    for (j = 0; j < (int64_t)dim; j++)
        if (!isfinite(out[j])) { rc = 3; goto done; }
    if (!isfinite(lp1)) rc = 4;
done:
    return rc;
}

int64_t el_logp(uint64_t dim, const double *x, double *out, double *logp_, const double *data) {
    if ((int64_t)data[12] > 0) return el_umarg(dim, x, out, logp_, data, NULL, NULL);
    return el_core(dim, x, out, logp_, data, NULL, NULL, NULL, 0);
}

/* one draw of the integrated deviations delta given x (noise: nU + npair + npos + ncls
 * standard Normals) */
int64_t el_udraw(uint64_t dim, const double *x, double *draw, const double *noise,
                 const double *data) {
    double lp = 0.0;
    if ((int64_t)data[12] <= 0) return -1;
    return el_umarg(dim, x, NULL, &lp, data, noise, draw);
}

/* expanded: the hyperparameters on their natural scale, then the set values */
int64_t el_expand(uint64_t dim, uint64_t expanded, const double *x, double *out,
                  const double *data) {
    int64_t H = (int64_t)data[0], Z = (int64_t)data[1], nset = (int64_t)data[2], i, j, s;
    const double *priors = data + 16, *sets = priors + 5 * H + 16;
    double *x_e = (double *)malloc(sizeof(double) * (size_t)(Z > 0 ? Z : 1));
    if ((int64_t)dim != H + Z || (int64_t)expanded != H + Z || x_e == NULL) {
        free(x_e);
        return -1;
    }
    for (j = 0; j < H; j++) out[j] = priors[5 * j + 1] > 0.5 ? exp(x[j]) : x[j];
    for (s = 0; s < nset; s++) {
        int64_t z0 = (int64_t)sets[5 * s], n = (int64_t)sets[5 * s + 1];
        double sc = out[(int64_t)sets[5 * s + 2]], zbar = 0.0;
        int mode = (int)(sets[5 * s + 3] + 0.5);
        double *z = out + H + z0;
        if (mode == 3) {  /* e = Q eta in z's place, then z from e */
            el_rotate(n, data + (int64_t)sets[5 * s + 4] + 2 * n, x + H + z0, z, 0);
            for (i = 0; i < n; i++) x_e[z0 + i] = z[i];
            el_shift(n, sc, data + (int64_t)sets[5 * s + 4], x_e + z0, z, NULL);
        } else if (mode == 2)
            el_shift(n, sc, data + (int64_t)sets[5 * s + 4], x + H + z0, z, NULL);
        else
            for (i = 0; i < n; i++) z[i] = x[H + z0 + i];
        for (i = 0; i < n; i++) zbar += z[i];
        zbar /= (double)n;
        for (i = 0; i < n; i++) z[i] = mode == 1 ? z[i] - zbar : sc * (z[i] - zbar);
    }
    free(x_e);
    return 0;
}
"""


def native_supported(cells: Cells) -> bool:
    """Whether the native kernel covers this table's structure.

    Every structure but a factor column and the word x corpus-sample level (a sample with two
    or more training runs among two or more samples), given a C compiler: those keep the
    PyMC model.
    """
    st = structure(cells)
    return st["factor"] is None and not st["word_sample_level"] and _library() is not None


def _library():
    """Return the compiled embedding-level kernel (``ctypes.CDLL``), or None.

    Built and cached by the shared loader (:func:`._native.library`) with this family's
    source after the shared kernels'.
    """
    return _native.library(_KERNEL_C)


def _hyper(spec: ModelSpec, cells: Cells):
    """Return the sampled hyperparameters: names, sizes and prior rows, and the roles map."""
    pr = spec.priors
    per = spec.residual_sd == "per_connection"
    strength = has_strength(spec) and strength_stereotypes(cells).size > 0
    blocks = [("M", _NC, "mu_bar"), ("tau", _NC, "tau"), ("eta", _NC, "eta"),
              ("sigma", _NC if per else 1, "sigma"), ("omega", 1, "omega")]
    if strength:
        blocks.append(("gamma", 1, "gamma"))
    blocks += [("kappa0", 1, "kappa0"), ("kappa", _NC - 1, "kappa"), ("lambda0", 1, "lambda0"),
               ("lambda", _NC - 1, "lambda"), ("psi", 1, "psi")]
    if strength and "phi" in pr:
        blocks.append(("phi", 1, "phi"))
    blocks.append(("xi", _NC, "xi"))
    rows, start, k = [], {}, 0
    for name, size, prior in blocks:
        start[name] = k
        rows += [kernel_row(pr[prior])] * size
        k += size
    roles = np.concatenate([start["M"] + np.arange(_NC), start["tau"] + np.arange(_NC),
                            start["eta"] + np.arange(_NC),
                            start["sigma"] + (np.arange(_NC) if per else np.zeros(_NC))])
    return blocks, start, np.asarray(rows, dtype=float), roles.astype(float)


def _ratio_centred(means: np.ndarray, noise: float,
                   ratio: float | None = None) -> tuple[bool, float]:
    """Centred when the spread of `means` beyond `noise` (their error variance) dominates it.

    Moment estimate ``s^2 = var(means) - noise``; centred when ``s^2 / noise`` is at least
    `ratio` (default :data:`CENTRED_RATIO`: the data pin each value better than the prior
    spreads them). Returns the choice and the anchor sd of a centred set's mean.
    """
    means = np.asarray(means, float)
    means = means[np.isfinite(means)]
    if means.size < 2 or not np.isfinite(noise) or noise <= 0:
        return False, 1.0
    s2 = float(np.var(means, ddof=1)) - noise
    ratio = CENTRED_RATIO if ratio is None else ratio
    return bool(s2 / noise >= ratio), float(np.sqrt(noise))


def _layout_sets(spec: ModelSpec, cells: Cells):
    """Return the zero-sum sets of the kernel and what each effect adds up from.

    Returns ``sets`` (rows zstart, size, scale index, centred, anchor sd), ``parts`` (name ->
    (start in the values, shape)), the embedding-effect map (E*4 x 4 index, coef), the
    row-attribute map (:func:`row_attribute` x 4 index, coef) and the choices made
    (name -> centred).
    """
    st = structure(cells)
    blocks, start, _, _ = _hyper(spec, cells)
    names = {b[0] for b in blocks}
    r_n, e_n, a_n = st["samples"].size, st["embeddings"].size, cells.attributes.size
    stereo = strength_stereotypes(cells) if "gamma" in names else np.zeros(0, dtype=np.int64)
    sets, parts, choices = [], {}, {}
    z = 0
    mom = _moments_el(cells)

    shifts = {}

    rotations = {}

    def add(name, shape, scale_idx, centred, anchor, shift=None, rotation=None):
        nonlocal z
        size = int(np.prod(shape))
        parts[name] = (z, shape)
        n_set = shape[-1]
        cen = np.broadcast_to(np.asarray(centred, bool), (size // n_set,)).astype(float)
        sc = np.broadcast_to(np.asarray(scale_idx, float), (size // n_set,))
        if shift is not None:  # shifted (flag 2); pack puts the data's offset in the anchor
            shifts[z] = np.asarray(shift, float).reshape(size, 2)
            cen = np.full(size // n_set, 2.0)
            if rotation is not None:  # one set, e = Q eta (flag 3)
                rotations[z] = np.asarray(rotation, float)
                cen = np.full(1, 3.0)
        for i in range(size // n_set):
            sets.append([z + i * n_set, n_set, sc[i], cen[i],
                         2.0 * (z + i * n_set) if shift is not None else anchor])
        z += size

    def shift_of(pairs, weight=1.0):  # (values, noise) per set -> (m p, p) per value
        out = []
        for means, noise in pairs:
            means = np.nan_to_num(np.asarray(means, float))
            prec = np.broadcast_to(np.asarray(weight, float) / noise, means.shape)
            out.append(np.stack([(means - means.mean()) * prec, prec], axis=1))
        return np.concatenate(out)

    def add_set(name, shape, scale_idx, pairs, ratio, weight=1.0, key=None, rotation=None):
        key = name if key is None else key
        if key in SHIFTED_SETS:
            add(name, shape, scale_idx, False, 1.0, shift=shift_of(pairs, weight),
                rotation=rotation)
            choices[name] = "shifted"
            return
        cen = [_ratio_centred(*m, ratio)[0] for m in pairs]
        h = _ratio_centred(*pairs[0], ratio)[1]
        add(name, shape, scale_idx, cen, h)
        choices[name] = cen if len(cen) > 1 else cen[0]

    if st["sample_level"]:
        per = np.bincount(st["sample_of"], minlength=r_n)  # embeddings per sample
        add_set("sample_shared", (r_n,), start["kappa0"], [mom["sample_shared"]],
                SAMPLE_CENTRED_RATIO, per)
        add_set("sample_vs_none", (_NC - 1, r_n), start["kappa"] + np.arange(_NC - 1),
                mom["sample_vs_none"], SAMPLE_CENTRED_RATIO, per)
    if st["run_level"]:
        add_set("run_shared", (e_n,), start["lambda0"], [mom["run_shared"]],
                SAMPLE_CENTRED_RATIO)
        add_set("run_vs_none", (_NC - 1, e_n), start["lambda"] + np.arange(_NC - 1),
                mom["run_vs_none"], SAMPLE_CENTRED_RATIO)
    kinds = np.array([ATTRIBUTE_KINDS.index(k) for k in cells.attribute_kind])
    for k, label in enumerate(ATTRIBUTE_KINDS):
        idx = np.flatnonzero(kinds == k)
        if idx.size:
            add_set(f"attribute_{label}", (idx.size,), start["omega"],
                    [(mom["attribute"][0][idx], mom["attribute"][1])], CENTRED_RATIO,
                    key="attribute", rotation=class_rotation(cells, idx))
    if stereo.size:
        add_set("strength", (stereo.size,), start["gamma"], [mom["strength"]], CENTRED_RATIO)
    if st["attribute_sample_level"]:
        if integrate_attribute_sample(cells):  # not sampled: integrated out by el_logp
            choices["attribute_sample"] = "integrated"
        elif "attribute_sample" in SHIFTED_SETS:
            add("attribute_sample", (a_n, r_n), start["psi"], False, 1.0,
                shift=mom["attribute_sample_data"])
            choices["attribute_sample"] = "shifted"
        else:
            cen, h = _ratio_centred(*mom["attribute_sample"])
            add("attribute_sample", (a_n, r_n), start["psi"], cen, h)
            choices["attribute_sample"] = cen
        if stereo.size and "phi" in names:
            if "strength_sample" in SHIFTED_SETS:
                add("strength_sample", (stereo.size, r_n), start["phi"], False, 1.0,
                    shift=mom["strength_sample_data"])
                choices["strength_sample"] = "shifted"
            else:
                add("strength_sample", (stereo.size, r_n), start["phi"], False, 1.0)
                choices["strength_sample"] = False
    # the embedding effects B[e, c]
    bidx, bcoef = -np.ones((e_n, _NC, 4)), np.zeros((e_n, _NC, 4))
    for e in range(e_n):
        r = st["sample_of"][e]
        for c in range(_NC):
            slots = []
            if st["sample_level"]:
                slots.append(parts["sample_shared"][0] + r)
                if c < _NC - 1:
                    slots.append(parts["sample_vs_none"][0] + c * r_n + r)
            if st["run_level"]:
                slots.append(parts["run_shared"][0] + e)
                if c < _NC - 1:
                    slots.append(parts["run_vs_none"][0] + c * e_n + e)
            bidx[e, c, :len(slots)] = slots
            bcoef[e, c, :len(slots)] = 1.0
    # the row-attribute effects (row_attribute's indices)
    _, n_ra = row_attribute(cells, bool(stereo.size))
    vidx, vcoef = -np.ones((n_ra, 4)), np.zeros((n_ra, 4))
    pos_in_kind = np.zeros(a_n, dtype=np.int64)
    for k, label in enumerate(ATTRIBUTE_KINDS):
        idx = np.flatnonzero(kinds == k)
        pos_in_kind[idx] = parts[f"attribute_{label}"][0] + np.arange(idx.size) if idx.size \
            else 0
    rr = r_n if st["attribute_sample_level"] else 1
    for a in range(a_n):
        for r in range(rr):
            j = a * rr + r if st["attribute_sample_level"] else a
            vidx[j, 0], vcoef[j, 0] = pos_in_kind[a], 1.0
            if "attribute_sample" in parts:
                vidx[j, 1], vcoef[j, 1] = parts["attribute_sample"][0] + a * r_n + r, 1.0
    base_n = a_n * rr
    for s, a in enumerate(stereo):
        for r in range(rr):
            for side, sign in ((0, 0.5), (1, -0.5)):
                j = base_n + (side * stereo.size + s) * rr + r
                vidx[j], vcoef[j] = vidx[a * rr + r], vcoef[a * rr + r]
                vidx[j, 2], vcoef[j, 2] = parts["strength"][0] + s, sign
                if "strength_sample" in parts:
                    vidx[j, 3], vcoef[j, 3] = parts["strength_sample"][0] + s * r_n + r, sign
    shift = np.zeros((z, 2))
    for z0, arr in shifts.items():
        shift[z0:z0 + arr.shape[0]] = arr
    return (np.asarray(sets, float).reshape(-1, 5), parts, (bidx, bcoef), (vidx, vcoef),
            choices, z, (shift, rotations) if shifts else None)


def class_rotation(cells: Cells, idx: np.ndarray) -> np.ndarray | None:
    """Return the rotation of a shifted attribute set whose attributes have classes, or None.

    A stereotype's class is that of the words its ``associated`` rows hold. The mean effect of
    one class's stereotypes against another's trades off against the classes' word effects
    (it moves every ``associated`` and ``different`` cell of a class's words), so the data
    pin it far less than each stereotype's own deviation: sampled as one of the set's
    coordinates it gets its own scale in a diagonal mass matrix (issue 50: 32 x 1,000, its
    bulk ESS 315 against ~7,000 within the classes). Columns of the orthogonal ``Q`` (``e =
    Q eta``): the mean, the class contrasts, then the rest. None when fewer than 2 classes.
    """
    own = CONNECTIONS.index("associated")
    rows = cells.conn_idx == own
    cls = np.full(cells.attributes.size, "", dtype=object)
    cls[cells.attr_idx[rows]] = cells.unit_class[cells.unit_idx[rows]].astype(str)
    labels, of = np.unique(cls[idx].astype(str), return_inverse=True)
    n = idx.size
    if labels.size < 2 or "" in labels:
        return None
    ind = np.eye(labels.size)[of.reshape(-1)]
    contrasts = ind[:, 1:] / ind[:, 1:].sum(axis=0) - ind[:, :1] / ind[:, 0].sum()
    q, _ = np.linalg.qr(np.c_[np.ones(n), contrasts, np.eye(n)])
    return q[:, :n]


def integrate_attribute_sample(cells: Cells) -> bool:
    """Whether the native kernel integrates the attribute x sample deviations out.

    When the table has that level, :data:`ATTRIBUTE_SAMPLE_INTEGRATED` is set and the extra
    work per gradient (attributes x samples^3) is at most :data:`INTEGRATED_MAX_WORK`.
    """
    st = structure(cells)
    if not (ATTRIBUTE_SAMPLE_INTEGRATED and st["attribute_sample_level"]):
        return False
    return cells.attributes.size * st["samples"].size ** 3 <= INTEGRATED_MAX_WORK


def _moments_el(cells: Cells) -> dict:
    """Moment estimates for the centred / non-centred choice of each set (data and noise).

    Per set: the values' rough estimates (means of residuals) and their error variance.
    """
    st = structure(cells)
    out = {}
    means, s2, n = _residual_moments(cells)
    out["attribute"] = (means, s2 / max(n, 1.0))
    # per (embedding, connection): mean of the cell means; noise of that mean
    has = cells.n > 0
    mean = np.where(has, np.nan_to_num(cells.mean), 0.0)
    e_of = cells.unit_embedding
    e_n = st["embeddings"].size
    sums = np.zeros((e_n, _NC))
    cnt = np.zeros((e_n, _NC))
    np.add.at(sums, e_of, mean)
    np.add.at(cnt, e_of, has)
    em = sums / np.maximum(cnt, 1)
    # noise of one embedding's mean: the cells' spread around word + embedding (two-way
    # residual; the word effects are common to every embedding and cancel)
    w_of = st["word_of"]
    w_n = st["words"].size
    ws = np.zeros((w_n, _NC))
    wc = np.zeros((w_n, _NC))
    np.add.at(ws, w_of, np.where(has, mean - em[e_of], 0.0))
    np.add.at(wc, w_of, has)
    wm = ws / np.maximum(wc, 1)
    within = np.where(has, mean - em[e_of] - wm[w_of], 0.0)
    dof = max(has.sum() - e_n * _NC - w_n * _NC, 1)
    w_var = float((within**2).sum() / dof)
    noise_e = w_var / max(float(cnt.mean()), 1.0)
    samples = st["sample_of"]
    r_n = st["samples"].size
    sm = np.stack([em[samples == r].mean(axis=0) for r in range(r_n)])
    out["sample_shared"] = (sm[:, -1], noise_e)
    out["sample_vs_none"] = [(sm[:, c] - sm[:, -1], 2 * noise_e) for c in range(_NC - 1)]
    out["run_shared"] = (em[:, -1] - sm[samples, -1], noise_e)
    out["run_vs_none"] = [(em[:, c] - em[:, -1] - (sm[samples, c] - sm[samples, -1]),
                           2 * noise_e) for c in range(_NC - 1)]
    # a stereotype's own-class strength (associated minus different residual)
    stereo = strength_stereotypes(cells)
    res = np.asarray(cells.y, float) - cells.mean[cells.unit_idx, cells.conn_idx]
    key = cells.attr_idx.astype(np.int64) * _NC + cells.conn_idx
    size = cells.attributes.size * _NC
    sums_a = np.bincount(key, weights=res, minlength=size).reshape(-1, _NC)
    cnt_a = np.bincount(key, minlength=size).reshape(-1, _NC)
    if stereo.size:
        own, oth = CONNECTIONS.index("associated"), CONNECTIONS.index("different")
        d = sums_a[stereo, own] / cnt_a[stereo, own] - sums_a[stereo, oth] / cnt_a[stereo, oth]
        noise = float(np.mean(s2 * (1.0 / cnt_a[stereo, own] + 1.0 / cnt_a[stereo, oth])))
        out["strength"] = (d, noise)
    # an attribute's deviation in one corpus sample around its own mean
    r_row = samples[e_of[cells.unit_idx]]
    key = cells.attr_idx.astype(np.int64) * r_n + r_row
    na = cells.attributes.size
    s_ar = np.bincount(key, weights=res, minlength=na * r_n).reshape(na, r_n)
    c_ar = np.bincount(key, minlength=na * r_n).reshape(na, r_n)
    m_ar = s_ar / np.maximum(c_ar, 1)
    dev = (m_ar - m_ar.mean(axis=1, keepdims=True)).ravel()
    out["attribute_sample"] = (dev, s2 / max(float(np.median(c_ar)), 1.0))
    # for the shifted form: each deviation's data (its residual mean) and that mean's
    # precision, rows over the residual variance without the attribute effects
    sig2 = _moments(cells)[1]
    prec = c_ar.ravel() / sig2
    out["attribute_sample_data"] = np.stack([dev * prec, prec], axis=1)
    if stereo.size:  # a stereotype's own-minus-other residual per sample, around its mean
        key = (cells.attr_idx.astype(np.int64) * _NC + cells.conn_idx) * r_n + r_row
        s3 = np.bincount(key, weights=res, minlength=na * _NC * r_n).reshape(na, _NC, r_n)
        c3 = np.bincount(key, minlength=na * _NC * r_n).reshape(na, _NC, r_n)
        c_own, c_oth = c3[stereo, own], c3[stereo, oth]
        d = s3[stereo, own] / np.maximum(c_own, 1) - s3[stereo, oth] / np.maximum(c_oth, 1)
        has = (c_own > 0) & (c_oth > 0)
        d = np.where(has, d - (d * has).sum(1, keepdims=True)
                     / np.maximum(has.sum(1, keepdims=True), 1), 0.0)
        prec = np.where(has, 1.0 / (sig2 * (1.0 / np.maximum(c_own, 1)
                                            + 1.0 / np.maximum(c_oth, 1))), 0.0)
        out["strength_sample_data"] = np.stack([(d * prec).ravel(), prec.ravel()], axis=1)
    return out


def segment_classes(ci, emb, group, n, ybar, segs) -> dict:
    """Group the (word, connection) segments of cells into classes of equal structure.

    A segment is one word's cells in one connection (one per embedding), sorted by
    embedding; segments with the same connection and the same (embedding, attribute group,
    row count) at every position form a class (in practice: every word of a protected class
    in one connection). Given the parameters the segments of a class differ only in their
    cells' means, so the class's log-density needs only the means per position and the
    centred cross-products ``G = d'd`` (positions x positions) of the segments' means: its
    cost grows with the classes and their positions, not with the words.

    Returns ``conn``, ``size`` (segments per class), ``pos`` (first position of each class,
    and the end), ``g_start``, ``emb``, ``group``, ``n``, ``mean`` (per position), ``G``
    (flat), ``members`` (each class's segment indices) and ``dev`` (each class's centred
    means, segments x positions).
    """
    keys: dict = {}
    member: list = []
    for k in range(segs.size - 1):
        lo, hi = segs[k], segs[k + 1]
        sig = (int(ci[lo]), emb[lo:hi].tobytes(), group[lo:hi].tobytes(), n[lo:hi].tobytes())
        j = keys.setdefault(sig, len(keys))
        if j == len(member):
            member.append([])
        member[j].append(k)
    conn, size, pos, gst, pe, pgp, pn, pm, G, devs, members = [], [], [0], [], [], [], [], [],\
        [], [], []
    g0 = 0
    for idx in member:
        idx = np.asarray(idx, dtype=np.int64)
        lo = segs[idx[0]]
        m = segs[idx[0] + 1] - lo
        Y = ybar[segs[idx][:, None] + np.arange(m)[None, :]]  # segments x positions
        mean = Y.mean(axis=0)
        d = Y - mean
        conn.append(ci[lo])
        size.append(idx.size)
        pos.append(pos[-1] + m)
        gst.append(g0)
        pe.append(emb[lo:lo + m])
        pgp.append(group[lo:lo + m])
        pn.append(n[lo:lo + m])
        pm.append(mean)
        gm = d.T @ d if idx.size > 1 else np.zeros((0,))
        G.append(gm.ravel())
        g0 += gm.size
        devs.append(d)
        members.append(idx)
    def cat(x):
        return np.concatenate(x) if x else np.zeros(0)

    return {"conn": np.asarray(conn, float), "size": np.asarray(size, float),
            "pos": np.asarray(pos, float), "g_start": np.asarray(gst, float),
            "emb": cat(pe), "group": cat(pgp), "n": cat(pn), "mean": cat(pm), "G": cat(G),
            "members": members, "dev": devs}


def pack(spec: ModelSpec, cells: Cells) -> tuple[np.ndarray, dict]:
    """One flat float64 array: what ``el_logp`` reads, and the layout for the draws."""
    st = structure(cells)
    blocks, start, rows, roles = _hyper(spec, cells)
    sets, parts, (bidx, bcoef), (vidx, vcoef), choices, n_z, shift = _layout_sets(spec, cells)
    strength = "gamma" in start
    lay = attribute_groups(cells, strength)
    ui, ci = lay["ui"], lay["ci"]
    word = st["word_of"][ui]
    emb = cells.unit_embedding[ui].astype(np.int64)
    order = np.lexsort((emb, ci, word))
    seg_key = word[order] * _NC + ci[order]
    seg_start = np.flatnonzero(np.r_[True, seg_key[1:] != seg_key[:-1]])
    segs = np.r_[seg_start, order.size].astype(np.int64)
    cls = segment_classes(ci[order], emb[order], lay["group"][order],
                          lay["n"][order].astype(float), lay["ybar"][order], segs)
    n_g = np.zeros(lay["group_cells"].size)
    n_g[lay["group"]] = lay["n"]
    gmult = lay["group_cells"] * n_g
    cj, cc = np.nonzero(lay["centred"])
    cv = lay["centred"][cj, cc]
    ssc = np.bincount(ci, weights=lay["ss"], minlength=_NC)
    nm1 = np.bincount(ci, weights=lay["n"] - 1.0, minlength=_NC)
    e_n = st["embeddings"].size
    h = rows.shape[0]
    head = np.zeros(16)
    n_cls = cls["size"].size
    maxm = int(np.diff(cls["pos"]).max()) if n_cls else 1
    head[:12] = [h, n_z, sets.shape[0], e_n, vidx.shape[0], cls["emb"].size, n_cls,
                 gmult.size, lay["pair_group"].size, cj.size, cls["G"].size, maxm]
    integrated = st["attribute_sample_level"] and "attribute_sample" not in parts
    ublock, uidx = [], None
    if integrated:
        r_n = st["samples"].size
        uidx, ublock, n_u = _integrated_layout(cells, lay, vidx.shape[0], r_n, strength,
                                                   cls)
        head[12:16] = [cells.attributes.size * r_n, r_n, start["psi"], n_u]
    data = np.ascontiguousarray(np.concatenate([
        head, rows.ravel(), roles, sets.ravel(), bidx.reshape(-1), bcoef.reshape(-1),
        vidx.ravel(), vcoef.ravel(), cls["conn"], cls["size"], cls["pos"], cls["g_start"],
        cls["emb"], cls["group"], cls["n"], cls["mean"], cls["G"], lay["group_conn"], gmult,
        lay["pair_group"], lay["pair_attr"], lay["pair_weight"], cj, cc, cv, ssc, nm1,
        *ublock]).astype(np.float64))
    if shift is not None:  # the shifted sets' (m p, p) per value, their offsets in the sets
        shift, rotations = shift
        base = data.size
        blocks_r = [shift.ravel()]
        rows_at = 16 + rows.size + roles.size
        anchors = sets[:, 4].copy()
        anchors[sets[:, 3] == 2.0] += base
        at = base + shift.size
        for k in np.flatnonzero(sets[:, 3] == 3.0):  # a rotated set: its (m p, p), then Q
            z0, n = int(sets[k, 0]), int(sets[k, 1])
            blocks_r.append(np.r_[shift[z0:z0 + n].ravel(), rotations[z0].ravel()])
            anchors[k] = at
            at += blocks_r[-1].size
        data = np.ascontiguousarray(np.concatenate([data, *blocks_r]))
        data[rows_at + 4:rows_at + sets.size:5] = anchors
    shift_at = base if shift is not None else data.size
    layout = {"blocks": blocks, "start": start, "parts": parts, "choices": choices,
              "n_z": n_z, "lay": lay, "order": order, "segs": segs, "classes": cls,
              "word": word, "emb": emb, "stereo": strength_stereotypes(cells) if strength
              else np.zeros(0, dtype=np.int64), "bmap": (bidx, bcoef), "vmap": (vidx, vcoef),
              "shift_at": shift_at, "uidx": uidx,
              "kinds": tuple(b.astype(np.int64) for b in ublock[-3:]) if integrated else None}
    return data, layout


def _integrated_layout(cells: Cells, lay: dict, n_ra: int, r_n: int, strength: bool,
                       cls: dict):
    """Where the integrated attribute x sample deviations enter (``el_umarg``'s data).

    Returns each row-attribute effect's deviation ``a * R + r`` (:func:`row_attribute`'s
    order; a stereotype's associated and different rows share its own), the data block
    (that index, each group's merged column, the merged columns' entries, and per
    attribute the columns holding it) and the number of merged columns. Groups whose
    attribute weights are the same (a stereotype set read as ``associated`` by one class and
    ``different`` by another) share one column of U.
    """
    a_n = cells.attributes.size
    uidx = np.tile(np.arange(a_n * r_n), 1)
    if strength:
        stereo = strength_stereotypes(cells)
        extra = (stereo[:, None] * r_n + np.arange(r_n)[None, :]).reshape(-1)
        uidx = np.concatenate([uidx, extra, extra])
    assert uidx.size == n_ra
    pg, pa, pw = lay["pair_group"], lay["pair_attr"], lay["pair_weight"]
    ng = lay["group_cells"].size
    keys: dict = {}
    gmap = np.empty(ng, dtype=np.int64)
    cols = []
    for g in range(ng):
        sel = pg == g
        iu, inv = np.unique(uidx[pa[sel]], return_inverse=True)
        ww = np.bincount(inv.reshape(-1), weights=pw[sel])
        key = (iu.tobytes(), ww.tobytes())
        if key not in keys:
            keys[key] = len(keys)
            cols.append((iu, ww))
        gmap[g] = keys[key]
    # independent blocks: columns sharing an attribute, or the positions of one class
    n_c = len(cols)
    parent = np.arange(n_c)

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def join(members):
        first = root(int(members[0]))
        for m in members[1:]:
            parent[root(int(m))] = first

    col_of = np.concatenate([np.full(c[0].size, k) for k, c in enumerate(cols)])
    owner = np.concatenate([c[0] for c in cols]) // r_n
    for a in np.unique(owner):
        join(np.unique(col_of[owner == a]))
    for q in range(cls["size"].size):
        p0, p1 = int(cls["pos"][q]), int(cls["pos"][q + 1])
        join(np.unique(gmap[cls["group"][p0:p1].astype(np.int64)]))
    comp = np.array([root(i) for i in range(n_c)])
    order = np.argsort(comp, kind="stable")  # columns block by block
    new_of = np.empty(n_c, dtype=np.int64)
    new_of[order] = np.arange(n_c)
    gmap = new_of[gmap]
    cols = [cols[i] for i in order]
    bptr = np.r_[0, np.flatnonzero(np.diff(comp[order]) != 0) + 1, n_c]
    upc = np.concatenate([np.full(c[0].size, k) for k, c in enumerate(cols)])
    upi = np.concatenate([c[0] for c in cols])
    upw = np.concatenate([c[1] for c in cols])
    pairs = np.unique(np.stack([upi // r_n, upc], axis=1), axis=0)
    aptr = np.r_[0, np.cumsum(np.bincount(pairs[:, 0], minlength=a_n))]
    rep, count, kind = block_kinds(a_n, r_n, uidx[pa], pg, pw, upc, upi, upw)
    block = [uidx, gmap, [upc.size], upc, upi, upw, aptr, pairs[:, 1], [bptr.size - 1], bptr,
             [rep.size], rep, count, kind]
    return uidx, [np.asarray(b, dtype=np.float64) for b in block], n_c


def block_kinds(a_n: int, r_n: int, pair_dev, pg, pw, upc, upi, upw):
    """Group the attributes whose per-attribute blocks in ``el_umarg`` are the same.

    The same whatever the hyperparameters: attribute ``a``'s block (its deviations'
    precision ``diag(d) + I / psi^2`` on the zero-sum subspace, and its rows of ``B^+ U``)
    depends only on the (group, weight) pairs of each of its deviations ``a * R + r`` and on
    its entries (column, r, weight) in U. Attributes alike in both (in a balanced table,
    every attribute of a kind) share one. Returns each kind's first attribute (its
    representative), the kind's number of attributes, and each attribute's kind.
    """
    a_of, r_of = pair_dev // r_n, pair_dev % r_n
    keys: dict = {}
    kind = np.empty(a_n, dtype=np.int64)
    by_a = np.argsort(a_of, kind="stable")
    p_ptr = np.searchsorted(a_of[by_a], np.arange(a_n + 1))
    u_a = upi // r_n
    by_u = np.argsort(u_a, kind="stable")
    u_ptr = np.searchsorted(u_a[by_u], np.arange(a_n + 1))
    for a in range(a_n):
        sel = by_a[p_ptr[a]:p_ptr[a + 1]]
        pk = np.stack([r_of[sel], pg[sel], pw[sel]], axis=1)
        pk = pk[np.lexsort(pk.T[::-1])]
        su = by_u[u_ptr[a]:u_ptr[a + 1]]
        uk = np.stack([upc[su], upi[su] % r_n, upw[su]], axis=1)
        uk = uk[np.lexsort(uk.T[::-1])]
        key = (pk.astype(np.float64).tobytes(), uk.astype(np.float64).tobytes())
        kind[a] = keys.setdefault(key, len(keys))
    rep = np.array([np.flatnonzero(kind == t)[0] for t in range(len(keys))], dtype=np.int64)
    return rep, np.bincount(kind, minlength=len(keys)), kind


def _initial(spec: ModelSpec, cells: Cells, layout: dict, rng) -> np.ndarray:
    """Return a start near the data (connection means, sds from moments), jittered."""
    start, blocks = layout["start"], layout["blocks"]
    h = sum(b[1] for b in blocks)
    x = np.zeros(h + layout["n_z"])
    n = cells.n.sum(axis=0)
    tot = np.where(cells.n > 0, cells.n * np.nan_to_num(cells.mean), 0.0).sum(axis=0)
    mean = tot / np.maximum(n, 1)
    between = np.array([np.std(cells.mean[cells.n[:, j] > 0, j])
                        if (cells.n[:, j] > 0).sum() > 1 else 0.1 for j in range(_NC)])
    between = np.clip(np.nan_to_num(between, nan=0.1), 0.01, None)

    o2, s2, _ = _moments(cells)
    guess = {"M": mean, "tau": np.log(between), "eta": np.log(np.full(_NC, 0.02)),
             "sigma": np.log(np.full(_NC, np.sqrt(s2))), "omega": np.log(max(np.sqrt(o2), 0.01))}
    for name, size, _ in blocks:
        k = start[name]
        x[k:k + size] = guess.get(name, np.log(0.05))
    x[:h] += rng.uniform(-0.1, 0.1, h)
    jitter = rng.uniform(-0.1, 0.1, layout["n_z"])
    # a centred set's values are on the scale of its sd: start them small
    sets = layout["sets"]
    for z0, size, _, cen, _ in sets:
        if cen == 1.0:
            jitter[int(z0):int(z0 + size)] *= 0.01
    x[h:] = jitter
    return x


def _split(raw: np.ndarray, layout: dict, name: str) -> np.ndarray:
    z0, shape = layout["parts"][name]
    size = int(np.prod(shape))
    return raw[..., z0:z0 + size].reshape(raw.shape[:-1] + tuple(shape))


def marginal_kernel(spec: ModelSpec, cells: Cells, word_draws: bool = True):
    """Return the sampler's :class:`~bayesbias.models.marginal.Kernel`, or None.

    None without a C compiler or for a structure the kernel does not cover
    (:func:`native_supported`): the PyMC model is then sampled. The word effects and the
    (word@embedding, connection) cell means are integrated out of the density and drawn
    afterwards from their exact conditionals; the means of the zero-sum effects, which only
    ``mu_bar`` sees, are drawn from their (prior) Normal.
    """
    from .marginal import Kernel

    if not native_supported(cells):
        return None
    lib = _library()
    if lib is None:
        return None
    data, layout = pack(spec, cells)
    layout["sets"] = data[16 + 5 * int(data[0]) + 16:][:5 * int(data[2])].reshape(-1, 5)
    layout["data"] = data
    st = structure(cells)
    blocks = layout["blocks"]
    h = sum(b[1] for b in blocks)
    names = [b[0] for b in blocks] + ["set_values"]
    per = spec.residual_sd == "per_connection"
    dims = {"M": ("connection",), "tau": ("connection",), "eta": ("connection",),
            "kappa": ("connection_vs_none",), "lambda": ("connection_vs_none",),
            "xi": ("connection",)}
    if per:
        dims["sigma"] = ("connection",)
    shapes = [(b[1],) if b[1] > 1 else () for b in blocks] + [(layout["n_z"],)]
    coords = {"word": st["words"].tolist(), "embedding": st["embeddings"].tolist(),
              "corpus_sample": st["samples"].tolist(),
              "connection_vs_none": list(CONNECTIONS[:3]),
              "attribute": cells.attributes.tolist(),
              "set_value": list(range(layout["n_z"]))}
    if layout["stereo"].size:
        coords["stereotype"] = cells.attributes[layout["stereo"]].tolist()

    def complete(raw, rng):
        return _complete(spec, cells, layout, raw, rng, word_draws)

    return Kernel(names=names, shapes=shapes, dims=dims, data=data,
                  logp=CFunc(lib, "el_logp", 1), expand=CFunc(lib, "el_expand", 2),
                  init=lambda rng: _initial(spec, cells, layout, rng), complete=complete,
                  coords={k: v for k, v in coords.items() if k != "set_value"},
                  attrs={"centred_sets": _json_choices(layout["choices"]),
                         "kernel": "native (word effects, cell means" + (
                             " and attribute x sample deviations" if layout.get("uidx")
                             is not None else "") + " integrated out)"},
                  dim=h + layout["n_z"], expanded_dim=h + layout["n_z"],
                  adaptation=ADAPTATION)


def _json_choices(choices: dict) -> str:
    import json

    return json.dumps({k: (list(map(bool, v)) if isinstance(v, list)
                           else v if isinstance(v, str) else bool(v))
                       for k, v in choices.items()})


def _complete(spec, cells, layout, raw, rng, word_draws):
    """Posterior variables from the kernel's draws (see :func:`marginal_kernel`)."""
    st = structure(cells)
    lead = raw["M"].shape[:2]
    vals = raw["set_values"]
    r_n, e_n, a_n = st["samples"].size, st["embeddings"].size, cells.attributes.size
    w_n = st["words"].size
    D = ("chain", "draw")
    out = {}
    sig = raw["sigma"] if raw["sigma"].ndim == 3 else np.repeat(raw["sigma"][..., None], _NC, -1)
    # the embedding effects and the attribute effects per row_attribute
    bidx, bcoef = layout["bmap"]
    vidx, vcoef = layout["vmap"]

    flat_vals = vals.reshape(-1, vals.shape[-1])

    def terms_of(idx, coef):
        # the terms vals[idx[..., t]] * coef[..., t] with idx >= 0, in t's order (an unused
        # term would add an exact 0)
        out = []
        for t in range(idx.shape[-1]):
            i = idx[..., t].astype(np.int64)
            ok = i >= 0
            if ok.any():
                out.append((np.where(ok, i, 0), np.where(ok, coef[..., t], 0.0)))
        return out

    def combine(terms, shape, lo, hi):
        # their sum at the flat draws lo:hi, term by term (as a masked loop adds them)
        acc = np.zeros((hi - lo,) + shape)
        for i, c in terms:
            acc += flat_vals[lo:hi, i] * c
        return acc

    def combined(idx, coef):  # at every draw, in blocks of draws (cache-sized temporaries)
        terms, shape = terms_of(idx, coef), idx.shape[:-1]
        step = max(1, (1 << 16) // max(int(np.prod(shape)), 1))
        nd_all = flat_vals.shape[0]
        return np.concatenate([combine(terms, shape, lo, min(lo + step, nd_all))
                               for lo in range(0, nd_all, step)]).reshape(lead + shape)

    B = combined(bidx, bcoef)           # (chain, draw, E, 4)
    # the row-attribute effects (draws, n_ra): summed per block of draws where they are used
    v_terms, n_ra = terms_of(vidx, vcoef), vidx.shape[0]
    delta = None
    if layout.get("uidx") is not None:  # integrated out: drawn from their conditional
        delta = _draw_integrated(layout, raw, rng)
        flat_delta = delta.reshape(-1, delta.shape[-1])
    kinds = np.array([ATTRIBUTE_KINDS.index(k) for k in cells.attribute_kind])
    v = np.zeros(lead + (a_n,))
    shift = np.zeros(lead + (_NC,))
    kind_conn = _kind_of_connection()
    for k, label in enumerate(ATTRIBUTE_KINDS):
        idx = np.flatnonzero(kinds == k)
        if idx.size:
            v[..., idx] = _split(vals, layout, f"attribute_{label}")
            z = rng.standard_normal(lead)
            shift[..., kind_conn == k] += (raw["omega"] * z / np.sqrt(idx.size))[..., None]
    # the word effects' posterior, then the cell means (chunks of draws)
    lay = layout["lay"]
    order, segs = layout["order"], layout["segs"]
    grp = lay["group"][order]
    ci = lay["ci"][order]
    n = lay["n"][order]
    ybar = lay["ybar"][order]
    word = layout["word"][order]
    cls = layout["classes"]
    seg_word, seg_conn = word[segs[:-1]], ci[segs[:-1]]
    pg, pa, pw = lay["pair_group"], lay["pair_attr"], lay["pair_weight"]
    ng = lay["group_cells"].size
    # np.add.at(vb.T, pg, ...) as whole columns: the j-th pair of every group at once, so
    # each group's sum takes its pairs in the same order
    rank = np.empty(pg.size, dtype=np.int64)
    by = np.argsort(pg, kind="stable")
    first = np.searchsorted(pg[by], pg[by])
    rank[by] = np.arange(pg.size) - first
    ranks = [np.flatnonzero(rank == j) for j in range(int(rank.max(initial=-1)) + 1)]
    flat_B = B.reshape(-1, e_n, _NC)
    M = raw["M"].reshape(-1, _NC)
    tau, eta, sg = (raw["tau"].reshape(-1, _NC), raw["eta"].reshape(-1, _NC),
                    sig.reshape(-1, _NC))
    nd = M.shape[0]
    omega_w = np.empty((nd, _NC, w_n))
    units = cells.units.size
    unit_of = lay["ui"][order]
    mu = np.empty((nd, units, _NC)) if word_draws else None
    chunk = max(1, int(2_000_000 // max(order.size if word_draws else w_n * _NC, 1)))
    for lo in range(0, nd, chunk):
        sl = slice(lo, min(nd, lo + chunk))
        k = sl.stop - sl.start
        vb = np.zeros((k, ng))
        sub = max(64, (1 << 16) // max(n_ra, 1))
        for a in range(sl.start, sl.stop, sub):  # blocks of draws: cache-sized temporaries
            b = min(a + sub, sl.stop)
            v_row = combine(v_terms, (n_ra,), a, b)
            if delta is not None:
                v_row = v_row + flat_delta[a:b][:, layout["uidx"]]
            terms = v_row[:, pa] * pw
            part = vb[a - sl.start:b - sl.start]
            for at in ranks:
                part[:, pg[at]] += terms[:, at]
        # per class of segments (segment_classes): precision and data of each word effect
        S = np.empty((k, segs.size - 1))
        P = np.empty((k, segs.size - 1))
        for q, members in enumerate(cls["members"]):
            p0, p1 = int(cls["pos"][q]), int(cls["pos"][q + 1])
            c = int(cls["conn"][q])
            pe, pgp = cls["emb"][p0:p1].astype(np.int64), cls["group"][p0:p1].astype(np.int64)
            u = 1.0 / (eta[sl][:, c, None] ** 2
                       + sg[sl][:, c, None] ** 2 / cls["n"][None, p0:p1])
            b = (cls["mean"][None, p0:p1] - vb[:, pgp] - M[sl][:, c, None]
                 - flat_B[sl][:, pe, c])
            S[:, members] = u.sum(axis=1)[:, None]
            P[:, members] = (u * b).sum(axis=1)[:, None] + u @ cls["dev"][q].T
        t2 = tau[sl][:, seg_conn] ** 2
        prec = 1.0 / t2 + S
        draw = P / prec + rng.standard_normal(prec.shape) / np.sqrt(prec)
        om = tau[sl][:, :, None] * rng.standard_normal((k, _NC, w_n))  # words without cells
        om[:, seg_conn, seg_word] = draw
        omega_w[sl] = om
        if word_draws:
            e_u = cells.unit_embedding.astype(np.int64)
            w_u = st["word_of"]
            centre = (M[sl][:, None, :] + flat_B[sl][:, e_u, :]
                      + np.transpose(om, (0, 2, 1))[:, w_u, :])
            m_all = centre + eta[sl][:, None, :] * rng.standard_normal(centre.shape)
            rbar = ybar[None, :] - vb[:, grp]
            cen = centre[:, unit_of, ci]
            e2, s2 = eta[sl][:, ci] ** 2, sg[sl][:, ci] ** 2
            p2 = 1.0 / e2 + n[None, :] / s2
            mean = (cen / e2 + n[None, :] * rbar / s2) / p2
            m_all[:, unit_of, ci] = mean + rng.standard_normal(mean.shape) / np.sqrt(p2)
            mu[sl] = m_all
    omega_w = omega_w.reshape(lead + (_NC, w_n))
    wmean = omega_w.mean(axis=-1)
    word_effect = omega_w - wmean[..., None]
    word_mean_z = np.sqrt(w_n) * wmean / raw["tau"]
    m_pymc = raw["M"] + wmean
    # the means of the zero-sum effects: only mu_bar sees them (their prior Normal)
    vs = np.r_[np.ones(_NC - 1), 0.0]
    if st["sample_level"]:
        f = np.sqrt(1.0 / r_n + (1.0 if st["bootstrap"] else 0.0))
        x0, x = rng.standard_normal(lead), rng.standard_normal(lead + (_NC - 1,))
        shift += f * (raw["kappa0"][..., None] * x0[..., None]
                      + np.concatenate([raw["kappa"] * x, np.zeros(lead + (1,))], -1))
    if st["run_level"]:
        f = np.sqrt(1.0 / e_n)
        x0, x = rng.standard_normal(lead), rng.standard_normal(lead + (_NC - 1,))
        shift += f * (raw["lambda0"][..., None] * x0[..., None]
                      + np.concatenate([raw["lambda"] * x, np.zeros(lead + (1,))], -1))
    del vs
    stereo = layout["stereo"]
    if stereo.size:
        mz = raw["gamma"] * rng.standard_normal(lead) / np.sqrt(stereo.size)
        shift[..., 0] += mz / 2
        shift[..., 1] -= mz / 2
    mu_bar = raw["M"] - shift
    out["mu_bar"] = (D + ("connection",), mu_bar)
    out["M"] = (D + ("connection",), m_pymc)
    for name, size, _ in layout["blocks"]:
        if name == "M":
            continue
        d = {"kappa": ("connection_vs_none",), "lambda": ("connection_vs_none",)}.get(
            name, ("connection",) if size == _NC else ())
        out[name] = (D + d, raw[name])
    out["word_effect"] = (D + ("connection", "word"), word_effect)
    out["word_mean_z"] = (D + ("connection",), word_mean_z)
    if st["sample_level"]:
        out["sample_effect"] = (D + ("connection", "corpus_sample"),
                                _level_effect(layout, vals, "sample", lead))
    if st["run_level"]:
        out["run_effect"] = (D + ("connection", "embedding"),
                             _level_effect(layout, vals, "run", lead))
    out["attribute_effect"] = (D + ("attribute",), v)
    if stereo.size:
        out["stereotype_strength"] = (D + ("stereotype",), _split(vals, layout, "strength"))
    if st["attribute_sample_level"]:
        u = (delta.reshape(lead + (a_n, r_n)) if delta is not None
             else _split(vals, layout, "attribute_sample"))
        out["attribute_sample_z"] = (D + ("attribute", "corpus_sample"),
                                     u / raw["psi"][..., None, None])
        if "strength_sample" in layout["parts"]:
            w = _split(vals, layout, "strength_sample")
            out["stereotype_strength_sample_z"] = (D + ("stereotype", "corpus_sample"),
                                                   w / raw["phi"][..., None, None])
    if word_draws:
        out["mu"] = (D + (cells.unit_dim, "connection"), mu.reshape(lead + (units, _NC)))
    return out


def _unconstrained(layout: dict, raw: dict) -> np.ndarray:
    """Return the kernel's unconstrained point of each draw (draws x dim) from its values.

    Hyperparameters back through ``log`` where positive; a set's values divided by its
    scale (non-centred) or as they are (centred): their mean is 0, so the kernel gives them
    back unchanged. What only the sets' priors see (their means) is lost, which no
    likelihood term reads.
    """
    data = layout["data"]
    h = int(data[0])
    rows = data[16:16 + 5 * h].reshape(-1, 5)
    lead = raw["M"].shape[:2]
    nd = int(np.prod(lead))
    hyp = np.concatenate([np.asarray(raw[name], float).reshape(nd, -1)
                          for name, _, _ in layout["blocks"]], axis=1)
    vals = np.asarray(raw["set_values"], float).reshape(nd, -1).copy()
    for z0, size, si, cen, off in layout["sets"]:
        z0, size = int(z0), int(size)
        if cen != 1.0:
            vals[:, z0:z0 + size] /= hyp[:, int(si), None]
        if cen >= 2.0:  # shifted: z - a = b (e - ebar) + ebar solved for e
            mp = data[int(off):int(off) + 2 * size].reshape(size, 2)
            sc = hyp[:, int(si), None]
            den = 1.0 + sc**2 * mp[None, :, 1]
            y = vals[:, z0:z0 + size] - sc * mp[None, :, 0] / den
            ib = np.sqrt(den)
            t = (y * ib).mean(axis=1, keepdims=True) / ib.mean(axis=1, keepdims=True)
            vals[:, z0:z0 + size] = t + (y - t) * ib
        if cen == 3.0:  # and rotated: eta = Q' e
            q = data[int(off) + 2 * size:int(off) + 2 * size + size * size].reshape(size, size)
            vals[:, z0:z0 + size] = vals[:, z0:z0 + size] @ q
    with np.errstate(invalid="ignore", divide="ignore"):  # log only where positive
        hyp = np.where(rows[None, :, 1] > 0.5, np.log(hyp), hyp)
    return np.ascontiguousarray(np.concatenate([hyp, vals], axis=1))


def _draw_integrated(layout: dict, raw: dict, rng) -> np.ndarray:
    """Draw the integrated attribute x sample deviations ``psi u`` given each draw.

    Exact: their conditional is Normal with precision ``Q + I / psi^2`` on the zero-sum
    subspace; ``el_udraw`` solves it for the conditional mean plus a perturbation of that
    covariance (the data part and the prior part each drawn). Returns (chain, draw, A * R).
    """
    import ctypes

    data = layout["data"]
    x = _unconstrained(layout, raw)
    nd, dim = x.shape
    n_u = int(data[12])
    n_noise = n_u + int(data[8]) + int(data[5]) + int(data[6])
    noise = rng.standard_normal((nd, n_noise))
    out = np.empty((nd, n_u))
    fn = _library().el_udraw
    fn.restype = ctypes.c_int64
    ptr = ctypes.POINTER(ctypes.c_double)
    fn.argtypes = [ctypes.c_uint64, ptr, ptr, ptr, ptr]
    dptr = data.ctypes.data_as(ptr)
    for i in range(nd):
        rc = fn(dim, x[i].ctypes.data_as(ptr), out[i].ctypes.data_as(ptr),
                noise[i].ctypes.data_as(ptr), dptr)
        if rc != 0:
            raise RuntimeError(f"el_udraw failed (code {rc}) at draw {i}")
    return out.reshape(raw["M"].shape[:2] + (n_u,))


def _level_effect(layout, vals, name, lead):
    g = _split(vals, layout, f"{name}_shared")
    h = _split(vals, layout, f"{name}_vs_none")
    size = g.shape[-1]
    return g[..., None, :] + np.concatenate([h, np.zeros(lead + (1, size))], axis=-2)


def cell_moments(fit):
    """Return ``moments(keep, sl, cells)`` of a fit without per-cell draws (cached on the fit).

    Given a draw of the parameters, the word effects, the embedding effects (corpus sample,
    training run) and the attribute effects, each (word@embedding, connection) cell mean is
    Normal, independently of the others, as :func:`_complete` draws it: precision ``1/eta^2
    + n/sigma^2``, mean ``(centre/eta^2 + n (ybar - vbar)/sigma^2) / precision`` with
    ``centre = M + B[e] + omega[w]`` and ``vbar`` the mean attribute effect of the cell's
    rows; an empty cell is ``Normal(centre, eta)``. ``moments`` returns these conditional
    means and sds, (draws, cells), for the flat (unit, connection) cells ``cells`` (or the
    slice `sl` of all) at the flat draws `keep` (None: all), rebuilt from the posterior.
    """
    import scipy.sparse as sp

    cache = fit.__dict__.setdefault("_cache", {})
    if "cell_moments" in cache:
        return cache["cell_moments"]
    cells = fit.cells
    post = fit.posterior
    st = structure(cells)
    lay = attribute_groups(cells, "stereotype_strength" in post)
    units = cells.units.size
    n = cells.n.reshape(-1).astype(float)
    ybar = np.nan_to_num(cells.mean).reshape(-1)
    group = -np.ones(units * _NC, dtype=np.int64)
    group[lay["ui"].astype(np.int64) * _NC + lay["ci"]] = lay["group"]
    emb_u = cells.unit_embedding.astype(np.int64)
    word_u = st["word_of"].astype(np.int64)
    ng = lay["group_cells"].size
    n_ra = row_attribute(cells, "stereotype_strength" in post)[1]
    share = sp.csr_matrix((lay["pair_weight"], (lay["pair_group"], lay["pair_attr"])),
                          shape=(max(ng, 1), n_ra))

    def flat(name):
        x = post[name].transpose("chain", "draw", ...).values
        return x.reshape(-1, *x.shape[2:])

    big_m, omega, eta = flat("M"), flat("word_effect"), flat("eta")  # M + word_effect: raw
    sig = fit._cell_sigma().reshape(-1, _NC)
    emb_eff = np.zeros((big_m.shape[0], st["embeddings"].size, _NC))
    if "sample_effect" in post:  # (draws, connection, sample) -> each embedding's
        emb_eff += np.transpose(flat("sample_effect")[:, :, st["sample_of"]], (0, 2, 1))
    if "run_effect" in post:
        emb_eff += np.transpose(flat("run_effect"), (0, 2, 1))

    def moments(keep, sl, idx=None):
        idx = np.arange(n.size)[sl] if idx is None else np.asarray(idx, dtype=np.int64)
        k = np.arange(big_m.shape[0]) if keep is None else np.asarray(keep)
        u, c = idx // _NC, idx % _NC
        centre = big_m[k][:, c] + emb_eff[k][:, emb_u[u], c] + omega[k][:, c, word_u[u]]
        e = eta[k][:, c]
        g = group[idx]
        has = g >= 0
        if not has.any():
            return centre, e
        rows = attribute_effect_draws(post, cells, k, st)
        vbar = np.asarray(share @ rows.T).T  # (draws, groups)
        e2, s2 = e * e, sig[k][:, c] ** 2
        prec = 1.0 / e2 + n[idx] / s2
        rbar = ybar[idx] - vbar[:, np.where(has, g, 0)]
        mean = np.where(has, (centre / e2 + n[idx] * rbar / s2) / prec, centre)
        return mean, np.where(has, 1.0 / np.sqrt(prec), e)

    cache["cell_moments"] = moments
    return moments

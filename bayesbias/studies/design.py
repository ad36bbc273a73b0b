"""How many words a claim needs: Bayesian assurance of the verdicts for candidate designs.

A *pilot* (a distance table, or a saved hierarchical fit) gives a posterior over the
group-level means, between-word sds and residual sds per connection. For each candidate
*design* (protected words per class, stereotypes per class, human and neutral controls) and
each replication, a truth is drawn from the pilot's posterior, new protected words are drawn
from the fitted hierarchy (``mu[w, c] ~ Normal(mu_bar[c], tau[c])``), every (word, attribute)
distance is drawn as ``Normal(mu[w, c], sigma[c])``, and the study is analysed three ways:

- the Bayesian verdicts (a contrast's HDI lies below zero), for ``associated - none``,
  ``associated - human`` and ``associated - different``;
- WEAT's permutation test (one-sided, X closer to its own stereotypes) for every class pair;
- MAC's paired t-test of S(t, own class) vs the mean S(t, other classes) over targets
  (one-sided, own closer), the statistic of :mod:`bayesbias.comparators.null`.

The share of replications reaching a verdict is its *assurance* (power averaged over the
pilot's uncertainty). Method ``"exact"`` analyses each simulated study with the exact
marginal posterior (:mod:`bayesbias.studies.exact_posterior`, no MCMC); ``"nuts"`` fits the spec
with :func:`bayesbias.models.fit_model` (slow; used to check the exact method).

**Attribute words are resampled too** when the pilot is a ``crossed`` model (the default):
every study draws new attribute effects ``v[a] ~ Normal(0, omega)`` shared by the protected
words that meet the attribute, and is analysed with the crossed model's population contrasts.
Method ``"exact"`` does that with a plug-in form of the crossed posterior (validated against
NUTS fits of the crossed model in ``tests/test_design.py``): the attribute deviations are
estimated (two-way ANOVA) and removed, the exact hierarchical posterior of the adjusted cell
statistics gives the means of the listed attributes, and the mean effect of each attribute group
(``Normal(0, omega / sqrt(n_group))``, omega estimated per study) is subtracted, so a claim needs
enough attribute words as well as enough protected words.
"""

from __future__ import annotations

import itertools
import json
import logging
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from .._atomic import atomic_path
from .._xarray import xr
from ..comparators.mac import class_scores
from ..comparators.weat import association, permutation_test
from ..config import CONNECTIONS, DEFAULT_MODEL, defaults
from ..errors import DistanceTableError, InputDataError, InvalidArgumentError, ModelSpecError
from ..inputs.distances import check_pilot
from ..models import cells_from_table, fit_model, load_spec
from ..models.cells import ATTRIBUTE_KINDS
from ..models.families import family
from ..models.plots import new_figure
from ..models.summaries import resolve_ci
from ..parallel import chunks, run_tasks, task_rng
from ..verdicts import contrast_evidence
from .exact_posterior import marginal_posterior, supports

__all__ = ["Design", "Pilot", "DesignResult", "run_design", "designs_grid", "simulate_study",
           "VERDICTS", "METHODS", "verdict_holds"]

log = logging.getLogger(__name__)

#: The verdict contrasts whose assurance is estimated (``bayesbias.verdicts``): each holds
#: when its HDI lies below 0.
VERDICTS = ("associated - none", "associated - human", "associated - different")
METHODS = ("exact", "nuts")
_C = {c: i for i, c in enumerate(CONNECTIONS)}


def verdict_holds(upper) -> np.ndarray:
    """Apply the verdict rule: the contrast's interval lies entirely below zero.

    This is status ``"below"`` of :func:`bayesbias.verdicts.contrast_evidence` without a
    region of practical equivalence (the intervals themselves come from that function).
    """
    return upper < 0


def _contrast_index(label: str) -> tuple[int, int]:
    try:
        a, b = (s.strip() for s in label.split(" - "))
        return _C[a], _C[b]
    except (ValueError, KeyError):
        raise InputDataError(f"contrast {label!r}: write 'CONNECTION - CONNECTION' with "
                             f"connections {', '.join(CONNECTIONS)}") from None


@dataclass(frozen=True, order=True)
class Design:
    """A candidate word list: sizes only.

    Parameters
    ----------
    words : int
        Protected words per class.
    stereotypes : int
        Stereotype attributes per class.
    human, none : int
        Human-attribute and neutral control words.
    classes : int
        Protected classes (at least 2).
    """

    words: int
    stereotypes: int
    human: int
    none: int
    classes: int = 3

    def __post_init__(self):
        for k in ("words", "stereotypes", "human", "none"):
            if int(getattr(self, k)) < 1:
                raise InvalidArgumentError(f"design: {k} must be >= 1, got {getattr(self, k)}")
        if self.words < 2:
            raise InvalidArgumentError("design: need at least 2 protected words per class")
        if self.classes < 2:
            raise InvalidArgumentError("design: need at least 2 protected classes")

    @property
    def total_words(self) -> int:
        """Protected words plus attribute words: what a study has to compile."""
        return self.classes * (self.words + self.stereotypes) + self.human + self.none

    @property
    def label(self) -> str:
        """Short text label."""
        return (f"{self.classes}x{self.words} words, {self.stereotypes} stereotypes/class, "
                f"{self.human} human, {self.none} none")

    def layout(self):
        """Word class, attribute class (K = human, K+1 = none) and connection codes (W, A)."""
        K = self.classes
        wc = np.repeat(np.arange(K), self.words)
        ac = np.r_[np.repeat(np.arange(K), self.stereotypes), np.full(self.human, K),
                   np.full(self.none, K + 1)]
        conn = np.where(ac[None, :] == K, _C["human"],
                        np.where(ac[None, :] == K + 1, _C["none"],
                                 np.where(ac[None, :] == wc[:, None], _C["associated"],
                                          _C["different"])))
        return wc, ac, conn


def designs_grid(classes: int, words, stereotypes, human, none) -> list[Design]:
    """Every combination of the given sizes, smallest total first."""
    out = [Design(int(w), int(s), int(h), int(n), int(classes))
           for w, s, h, n in itertools.product(words, stereotypes, human, none)]
    return sorted(set(out), key=lambda d: (d.total_words, d.words, d.stereotypes))


# --------------------------------------------------------------------------------------
# Pilot
# --------------------------------------------------------------------------------------
@dataclass
class Pilot:
    """Posterior draws of the hierarchy (``mu_bar``, ``tau``, ``sigma``; shape (draws, 4)).

    Build with :meth:`from_table` or :meth:`from_fit`.
    """

    mu_bar: np.ndarray
    tau: np.ndarray
    sigma: np.ndarray
    design: Design
    spec: object
    source: str = ""
    method: str = "exact"
    #: Draws of the attribute-word sd: (draws,) for one sd, (draws, 3) for one per attribute
    #: kind (stereotype, human, none); zeros for a model without attribute effects.
    omega: np.ndarray | None = None

    def __post_init__(self):
        if self.omega is None:
            self.omega = np.zeros(self.mu_bar.shape[0])

    @staticmethod
    def _layout(cells) -> Design:
        classes = list(dict.fromkeys(cells.unit_class.tolist()))
        words = int(np.median([np.sum(cells.unit_class == k) for k in classes]))
        n = cells.n
        # every word meets every attribute: per-word counts give the attribute numbers
        med = np.median(n, axis=0).astype(int)
        return Design(words=max(words, 2), stereotypes=max(int(round(med[0])), 1),
                      human=max(int(med[2]), 1), none=max(int(med[3]), 1),
                      classes=max(len(classes), 2))

    @classmethod
    def from_table(cls, table: pd.DataFrame, model=None, *, method: str = "exact",
                   draws: int = 4000, seed: int | None = None, **fit_kwargs) -> Pilot:
        """Return the posterior of `model` on a pilot distance table.

        `model`: default crossed; hierarchical or crossed with per-connection sds. A crossed
        pilot is always fitted with NUTS.
        """
        spec = load_spec(DEFAULT_MODEL if model is None else model)
        _check_spec(spec)
        seed = defaults.seed if seed is None else int(seed)
        src = str(table.attrs.get("source", "distance table"))
        check_pilot(table, f"pilot {src}")  # the prior alone would answer otherwise
        if method == "exact" and family(spec.family).EXACT_MARGINAL:
            cells = cells_from_table(table, spec.level)
            post = marginal_posterior(cells.n, cells.mean, cells.ss, spec).draw(
                np.random.default_rng(seed), draws)
            return cls(post["mu_bar"][0], post["tau"][0], post["sigma"][0], cls._layout(cells),
                       spec, src, "exact")
        if method not in METHODS:
            raise InvalidArgumentError(
                f"method must be one of {', '.join(METHODS)}, got {method!r}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_model(table, spec, seed=seed, **fit_kwargs)
        return cls.from_fit(fit)

    @classmethod
    def from_fit(cls, fit) -> Pilot:
        """Posterior draws of a hierarchical fit (:class:`bayesbias.models.Fit`)."""
        _check_spec(fit.spec)
        n = np.asarray(fit.cells.n)
        empty = [c for c, k in zip(CONNECTIONS, n.sum(axis=0), strict=True) if k == 0]
        if empty:
            raise DistanceTableError(f"pilot fit: no {', '.join(map(repr, empty))} rows; the "
                                     "contrasts with it would come from the prior alone")
        classes, counts = np.unique(np.asarray(fit.cells.unit_class), return_counts=True)
        if (counts < 2).any():
            raise DistanceTableError(f"pilot fit: class(es) {list(classes[counts < 2])} have "
                                     "a single protected word")
        post = fit.posterior

        def flat(v):
            return post[v].transpose("chain", "draw", "connection").values.reshape(
                -1, len(CONNECTIONS))

        omega = None
        if "omega" in post:
            om = post["omega"].transpose("chain", "draw", ...).values
            om = om.reshape(om.shape[0] * om.shape[1], -1)
            omega = om[:, 0] if om.shape[1] == 1 else om  # (draws,) or (draws, kinds)
        return cls(flat("mu_bar"), flat("tau"), flat("sigma"), cls._layout(fit.cells),
                   fit.spec, str(json.loads(fit.idata.attrs.get("table_attrs", "{}")).get(
                       "source", "saved fit")), "nuts", omega)

    def to_dict(self) -> dict:
        """Summary for JSON: the pilot's own design and posterior means of the contrasts."""
        mb = self.mu_bar
        return {"source": self.source, "model": self.spec.name, "method": self.method,
                "draws": int(mb.shape[0]), "design": asdict(self.design),
                "attribute_sd_mean": _omega_means(self.omega),
                "contrast_means": {v: float(np.mean(mb[:, _contrast_index(v)[0]]
                                                    - mb[:, _contrast_index(v)[1]]))
                                   for v in VERDICTS}}


def _check_spec(spec) -> None:
    if not (family(spec.family).EXACT_MARGINAL
            or family(spec.family).ATTRIBUTE_EFFECTS) or spec.level != "word":
        raise ModelSpecError(f"model {spec.name!r}: design studies draw new protected words "
                             "from a fitted hierarchy; use a hierarchical or crossed spec at "
                             "level 'word'")
    if spec.residual_sd != "per_connection":
        raise ModelSpecError(f"model {spec.name!r}: design studies need residual_sd = "
                             "per_connection")


# --------------------------------------------------------------------------------------
# One chunk of replications
# --------------------------------------------------------------------------------------
def _omega_means(omega: np.ndarray):
    """Posterior mean attribute-word sd: a float, or one per attribute kind."""
    omega = np.asarray(omega, float)
    if omega.ndim == 1:
        return float(np.mean(omega))
    return dict(zip(ATTRIBUTE_KINDS, np.mean(omega, axis=0).tolist(), strict=True))


def _attribute_kinds(ac: np.ndarray, classes: int) -> np.ndarray:
    """Kind of each attribute (0 stereotype, 1 human, 2 none) from its class index."""
    return np.where(ac < classes, 0, np.where(ac == classes, 1, 2))


def simulate_study(truth: dict, design: Design, rng) -> np.ndarray:
    """Distances (R, words, attributes) of R studies of `design` under `truth`.

    `truth` holds ``mu_bar``, ``tau``, ``sigma`` of shape (R, 4) and optionally ``omega``
    ((R,), or (R, 3) with one sd per attribute kind stereotype/human/none): new word means
    are drawn from the hierarchy, new attribute effects ``Normal(0, omega)`` (shared by every
    word that meets the attribute), then every (word, attribute) distance around them.
    """
    _, ac, conn = design.layout()
    mu_bar, tau, sigma = (np.asarray(truth[k], float) for k in ("mu_bar", "tau", "sigma"))
    R, W = mu_bar.shape[0], design.classes * design.words
    mu = mu_bar[:, None, :] + tau[:, None, :] * rng.standard_normal((R, W, len(CONNECTIONS)))
    m = np.take_along_axis(mu, np.broadcast_to(conn, (R,) + conn.shape), axis=2)
    y = m + sigma[:, conn] * rng.standard_normal((R,) + conn.shape)
    omega = np.asarray(truth.get("omega", np.zeros(R)), float)
    if np.any(omega > 0):
        scale = (omega[:, _attribute_kinds(ac, design.classes)] if omega.ndim == 2
                 else omega[:, None])
        y = y + (scale * rng.standard_normal((R, conn.shape[1])))[:, None, :]
    return y


def study_cells(y: np.ndarray, conn: np.ndarray):
    """Cell counts, means and within-cell sums of squares (R, W, 4) of simulated studies."""
    R, W, _ = y.shape
    n = np.zeros((R, W, len(CONNECTIONS)))
    mean = np.full_like(n, np.nan)
    ss = np.zeros_like(n)
    for c in range(len(CONNECTIONS)):
        m = conn == c
        k = m.sum(-1)
        if not k.any():
            continue
        s = np.where(m, y, 0.0).sum(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mc = s / k
        n[..., c] = k
        mean[..., c] = np.where(k > 0, mc, np.nan)
        ss[..., c] = np.where(m, (y - np.nan_to_num(mc)[..., None]) ** 2, 0.0).sum(-1)
    return n, mean, ss


def study_table(y: np.ndarray, design: Design) -> pd.DataFrame:
    """Return the long distance table of one simulated study (for full NUTS fits)."""
    wc, ac, conn = design.layout()
    K = design.classes
    W, A = conn.shape
    words = [f"c{wc[i]}_w{i}" for i in range(W)]
    aclass = [f"c{k}" if k < K else ("human" if k == K else "none") for k in ac]
    return pd.DataFrame({
        "protected_word": np.repeat(words, A),
        "protected_class": np.repeat([f"c{k}" for k in wc], A),
        "attribute": np.tile([f"a{j}" for j in range(A)], W),
        "attribute_class": np.tile(aclass, W),
        "connection": np.asarray(CONNECTIONS, dtype=object)[conn.ravel()],
        "cosine_distance": y.ravel(),
    })


def _evidence(diffs: np.ndarray, ci_prob: float):
    """HDI (..., 2) and P(< 0) of contrast draws (last axis), by :mod:`bayesbias.verdicts`."""
    ev = contrast_evidence(diffs, ci_prob, "hdi")
    return np.stack([ev["lower"], ev["upper"]], axis=-1), ev["prob_below_zero"]


def _bayes_exact(spec, n, mean, ss, ci_prob, n_draws, rng):
    post = marginal_posterior(n, mean, ss, spec).draw(rng, n_draws)
    mb = post["mu_bar"]                                       # (R, D, 4)
    diffs = np.stack([mb[..., _contrast_index(v)[0]] - mb[..., _contrast_index(v)[1]]
                      for v in VERDICTS], axis=1)             # (R, V, D)
    return _evidence(diffs, ci_prob)


def _hierarchical_part(spec):
    """Return the hierarchical spec with the crossed spec's priors (for the plug-in analysis)."""
    return load_spec("hierarchical", priors={k: spec.priors[k]
                                             for k in ("mu_bar", "tau", "sigma")})


def _bayes_crossed_plugin(spec, y, design, ci_prob, n_draws, rng):
    """Return the population contrasts of the crossed model for each study, in plug-in form.

    The attribute deviations (each attribute's mean residual from its cells) are removed,
    the exact hierarchical posterior of the adjusted statistics gives the group means of the
    listed attributes (the within-cell sum of squares is rescaled for the degrees of freedom
    the deviations used), and the mean effect of each attribute group, drawn as
    ``Normal(0, omega / sqrt(n_group))`` with omega estimated from the study (one per attribute
    kind when the spec's ``attribute_sd`` is ``"per_kind"``), is subtracted.
    """
    wc, ac, conn = design.layout()
    R, W, A = y.shape
    n, mean, ss = study_cells(y, conn)
    cm = np.take_along_axis(np.nan_to_num(mean), np.broadcast_to(conn, (R, W, A)), axis=2)
    vhat = (y - cm).mean(axis=1)                              # (R, A)
    adj = y - vhat[:, None, :]
    n2, mean2, ss2 = study_cells(adj, conn)
    df = W * A - int((n[0] > 0).sum())
    ss2 = ss2 * (df / max(df - A, 1))
    s2 = ss2.sum(axis=(1, 2)) / max(df, 1)                    # (R,)
    group = _attribute_kinds(ac, design.classes)
    o2 = attribute_variances(vhat, group, s2, W, per_kind=spec.attribute_sd == "per_kind")
    post = marginal_posterior(n2, mean2, ss2, _hierarchical_part(spec)).draw(rng, n_draws)
    sizes = [(group == g).sum() for g in range(3)]
    mb = subtract_group_effects(post["mu_bar"], o2, sizes, rng,  # (R, D, 4)
                                per_kind=spec.attribute_sd == "per_kind")
    diffs = np.stack([mb[..., _contrast_index(v)[0]] - mb[..., _contrast_index(v)[1]]
                      for v in VERDICTS], axis=1)             # (R, V, D)
    return _evidence(diffs, ci_prob)


def attribute_variances(vhat: np.ndarray, kind: np.ndarray, s2, per_attribute: float,
                        per_kind: bool) -> np.ndarray:
    """Moment estimates of the attribute-effect variance, (..., 3): one per attribute kind.

    `vhat` (..., attributes) are the attributes' mean residuals from their cells, `kind` the
    kind of each attribute (0 stereotype, 1 human, 2 none), `s2` the residual variance and
    `per_attribute` the rows per attribute: ``var(vhat) - s2 / per_attribute`` (at least 0)
    within each kind, or their average weighted by attribute counts (one shared sd) repeated
    for every kind.
    """
    vhat = np.asarray(vhat, float)
    s2 = np.asarray(s2, float)
    out = np.zeros(vhat.shape[:-1] + (3,))
    sizes = np.array([(kind == g).sum() for g in range(3)], float)
    for g in range(3):
        m = kind == g
        if m.sum() > 1:
            out[..., g] = np.maximum(vhat[..., m].var(axis=-1, ddof=1) - s2 / per_attribute,
                                     0.0)
    if per_kind:
        return out
    shared = (out * np.where(sizes > 1, sizes, 0)).sum(axis=-1) / max(sizes.sum(), 1)
    return np.repeat(shared[..., None], 3, axis=-1)


def subtract_group_effects(mu_bar: np.ndarray, omega2, sizes, rng,
                           per_kind: bool = False, common: bool = False) -> np.ndarray:
    """``mu_bar`` (..., draws, 4) minus each attribute group's mean effect.

    The group means of the listed attributes, ``mu_bar``, become population means: the mean
    effect of a group of n attribute words is drawn as ``Normal(0, omega / sqrt(n))`` (groups:
    stereotypes for associated and different, human, none). `omega2` holds the variance of
    each group's attribute effects: it broadcasts to the leading shape of `mu_bar` without its
    last two axes, plus a last axis of the 3 groups. With `per_kind` each group's variance was
    estimated from its own n words: every draw then takes it from its scaled inverse
    chi-square distribution (n - 1 degrees of freedom), so a group mean effect is t- rather
    than Normal-distributed, as in the model where its sd is uncertain. With `common`, every
    leading index (refit) uses the same random numbers per draw (common random numbers).
    """
    mb = np.array(mu_bar, dtype=float, copy=True)
    n = np.maximum(np.asarray(sizes, float), 1)
    shape = mb.shape[:-1] + (3,)
    var = np.broadcast_to(np.asarray(omega2, float)[..., None, :], shape)
    draw_shape = shape[-2:] if common else shape  # (draws, 3): broadcast over the refits
    if per_kind:
        dof = np.maximum(n - 1, 1)
        var = var * dof / rng.chisquare(dof, size=draw_shape)
    b = np.sqrt(var / n) * rng.standard_normal(draw_shape)
    for c, g in ((0, 0), (1, 0), (2, 1), (3, 2)):
        mb[..., c] -= b[..., g]
    return mb


def _bayes_nuts(spec, y, design, ci_prob, fit_kwargs, rng):
    cis, ps = [], []
    for r in range(y.shape[0]):
        table = study_table(y[r], design)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_model(table, spec, seed=int(rng.integers(2**31)), **fit_kwargs)
        g = fit.group_mean_draws().transpose("chain", "draw", "connection").values
        g = g.reshape(-1, len(CONNECTIONS))
        diffs = np.stack([g[:, _contrast_index(v)[0]] - g[:, _contrast_index(v)[1]]
                          for v in VERDICTS])                # (V, D)
        ci, p = _evidence(diffs, ci_prob)
        cis.append(ci)
        ps.append(p)
    return np.stack(cis), np.stack(ps)


def frequentist_tests(y: np.ndarray, design: Design, *, n_permutations: int = 2000,
                      exact_limit: int = 20_000, rng=None) -> dict[str, np.ndarray]:
    """WEAT permutation p per class pair (R, pairs) and MAC paired t-test p (R,).

    Both one-sided in the direction of stereotype association; WEAT on similarities
    ``1 - distance`` with X, Y the protected words and A, B the stereotypes of two classes.
    """
    from scipy import stats

    wc, ac, _ = design.layout()
    K = design.classes
    sim = 1.0 - y
    pairs = list(itertools.combinations(range(K), 2))
    weat_p = np.empty((y.shape[0], len(pairs)))
    for j, (a, b) in enumerate(pairs):
        X, Y = wc == a, wc == b
        A, B = ac == a, ac == b
        s_x = association(sim[:, X][:, :, A], sim[:, X][:, :, B])
        s_y = association(sim[:, Y][:, :, A], sim[:, Y][:, :, B])
        weat_p[:, j] = permutation_test(s_x, s_y, alternative="greater",
                                        n_permutations=n_permutations,
                                        exact_limit=exact_limit, seed=rng).p_value
    st = ac < K
    S = class_scores(y[..., st], ac[st], K)                   # (R, W, K)
    own = np.take_along_axis(S, np.broadcast_to(wc[None, :, None], S.shape[:2] + (1,)),
                             axis=2)[..., 0]
    other = (S.sum(-1) - own) / (K - 1)
    mac_p = stats.ttest_rel(own, other, axis=-1, alternative="less").pvalue
    return {"weat_p": weat_p, "mac_p": mac_p}


def _truth(pilot_draws: dict, R: int, null: str | None, rng) -> dict:
    D = pilot_draws["mu_bar"].shape[0]
    idx = rng.integers(0, D, size=R)
    out = {k: np.array(v[idx], dtype=float) for k, v in pilot_draws.items()}
    if null:
        a, b = _contrast_index(null)
        out["mu_bar"][:, a] = out["mu_bar"][:, b]
    return out


def _run_chunk(pilot_draws, spec, design, seed, chunk, n_reps, settings, rng):
    """One chunk of replications of one design (a task of :func:`run_tasks`).

    The truth depends on (seed, chunk) only, so all designs share the same truths (common
    random numbers make the power curves smooth).
    """
    truth = _truth(pilot_draws, n_reps, settings["null"], task_rng(seed, (2**20, chunk)))
    y = simulate_study(truth, design, rng)
    if settings["method"] == "exact" and family(spec.family).ATTRIBUTE_EFFECTS:
        ci, p_below = _bayes_crossed_plugin(spec, y, design, settings["ci_prob"],
                                            settings["n_draws"], rng)
    elif settings["method"] == "exact":
        n, mean, ss = study_cells(y, design.layout()[2])
        ci, p_below = _bayes_exact(spec, n, mean, ss, settings["ci_prob"],
                                   settings["n_draws"], rng)
    else:
        ci, p_below = _bayes_nuts(spec, y, design, settings["ci_prob"],
                                  settings["fit_kwargs"], rng)
    out = frequentist_tests(y, design, n_permutations=settings["n_permutations"], rng=rng)
    out.update(lower=ci[..., 0], upper=ci[..., 1], prob_below_zero=p_below,
               true_contrast=np.stack([truth["mu_bar"][:, _contrast_index(v)[0]]
                                       - truth["mu_bar"][:, _contrast_index(v)[1]]
                                       for v in VERDICTS], axis=1))
    return out


# --------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------
@dataclass
class DesignResult:
    """Per-replication outcomes (``raw``, dims design x replication) and their summary.

    Attributes
    ----------
    raw : xarray.Dataset
        ``lower``, ``upper``, ``prob_below_zero``, ``true_contrast`` (design, replication, verdict),
        ``weat_p`` (design, replication, class_pair), ``mac_p`` (design, replication).
    designs : list of Design
    pilot : Pilot
    settings : dict
    complete : bool
        False when interrupted (the finished replications are kept).
    """

    raw: xr.Dataset
    designs: list
    pilot: Pilot
    settings: dict = field(default_factory=dict)
    complete: bool = True
    wall_time_s: float = 0.0

    def summary(self) -> xr.Dataset:
        """Assurance per verdict and power per test, with Monte Carlo standard errors."""
        alpha = self.settings["alpha"]
        ok = self.raw["upper"].notnull().all("verdict")
        hold = verdict_holds(self.raw["upper"]).where(ok)
        weat = (self.raw["weat_p"] <= alpha).where(ok)
        power = xr.concat([hold.rename(verdict="quantity"),
                           weat.mean("class_pair").expand_dims(quantity=["WEAT (per pair)"]),
                           (weat.min("class_pair") > 0).expand_dims(
                               quantity=["WEAT (all pairs)"]).where(ok),
                           (self.raw["mac_p"] <= alpha).where(ok).expand_dims(
                               quantity=["MAC t-test"])], dim="quantity")
        n = ok.sum("replication")
        p = power.mean("replication")
        se = np.sqrt(p * (1 - p) / n)
        ds = xr.Dataset({"power": p, "mc_se": se, "replications": n})
        ds.attrs.update(alpha=alpha, ci_prob=self.settings["ci_prob"], ci_kind="hdi",
                        method=self.settings["method"])
        return ds

    def to_frame(self) -> pd.DataFrame:
        """One row per design: sizes, total words, then power and MC se per quantity."""
        s = self.summary()
        rows = []
        for i, d in enumerate(self.designs):
            row = {**asdict(d), "total_words": d.total_words,
                   "replications": int(s["replications"].isel(design=i))}
            for q in s.quantity.values:
                row[str(q)] = float(s["power"].isel(design=i).sel(quantity=q))
                row[f"{q} se"] = float(s["mc_se"].isel(design=i).sel(quantity=q))
            rows.append(row)
        frame = pd.DataFrame(rows)
        frame.attrs.update(s.attrs)
        return frame

    def smallest(self, target: float = 0.8, verdict: str = "associated - human") -> dict:
        """Return the design with the fewest words whose assurance for `verdict` reaches `target`.

        Returns a dict with ``design`` (None if no candidate reaches it) and its assurance.
        """
        frame = self.to_frame()
        if verdict not in frame:
            raise InvalidArgumentError(f"unknown verdict {verdict!r}; valid: "
                                       f"{', '.join(VERDICTS)}, WEAT (per pair), MAC t-test")
        hit = frame.loc[frame[verdict] >= target].sort_values(["total_words", "words"])
        if hit.empty:
            return {"verdict": verdict, "target": target, "design": None,
                    "best": float(frame[verdict].max())}
        r = hit.iloc[0]
        i = int(hit.index[0])
        return {"verdict": verdict, "target": target, "design": asdict(self.designs[i]),
                "label": self.designs[i].label, "assurance": float(r[verdict]),
                "mc_se": float(r[f"{verdict} se"])}

    def to_dict(self, target: float = 0.8, verdict: str = "associated - human") -> dict:
        """Plain data for JSON."""
        return {"pilot": self.pilot.to_dict(), "settings": {
                    k: v for k, v in self.settings.items() if k != "fit_kwargs"},
                "complete": self.complete, "wall_time_s": round(self.wall_time_s, 2),
                "designs": self.to_frame().to_dict(orient="records"),
                "smallest": self.smallest(target, verdict),
                "rule": "a verdict holds when the contrast's HDI lies below zero; "
                        "assurance = share of simulated studies in which it holds"}

    def __str__(self) -> str:
        f = self.to_frame()
        s = self.settings
        qs = [q for q in self.summary().quantity.values]
        show = pd.DataFrame({"design": [d.label for d in self.designs],
                             "words": f["total_words"]})
        for q in qs:
            show[str(q)] = [f"{p:.2f} ({e:.2f})" for p, e in zip(f[q], f[f"{q} se"],
                                                               strict=True)]
        head = (f"design study ({s['method']} posterior, {int(f['replications'].min())} "
                f"replications per design{'' if self.complete else ', INTERRUPTED'}; "
                f"pilot: {self.pilot.source}, truth from its posterior"
                + (f", null: {s['null']} = 0" if s.get("null") else "") + ")")
        rule = (f"assurance = share of studies whose {s['ci_prob']:.0%} HDI of the contrast "
                f"lies below 0; WEAT and MAC one-sided at alpha {s['alpha']}; (Monte Carlo se)")
        return "\n".join([head, rule, show.to_string(index=False)])

    def plot(self, path=None, verdicts=VERDICTS):
        """Power curves (assurance or power vs the design variable).

        Saved as PNG at `path` (returned), or the Figure is returned when `path` is None.
        """
        f = self.to_frame()
        fig = new_figure(figsize=(8.6, 4.2))
        ax = fig.subplots()
        qs = list(verdicts) + ["WEAT (per pair)", "MAC t-test"]
        column, xlabel = design_axis(f)
        x = f[column].to_numpy(dtype=float)
        # curves that coincide (e.g. WEAT and MAC both at 1) are shifted apart a little
        span = float(np.ptp(x)) or 1.0
        styles = {"WEAT (per pair)": ("--", "^", "C3"), "MAC t-test": (":", "s", "C4")}
        for i, q in enumerate(qs):
            ls, marker, color = styles.get(q, ("-", "o", f"C{i}"))
            shift = (i - (len(qs) - 1) / 2) * 0.006 * span
            ax.errorbar(x + shift, f[q], yerr=2 * f[f"{q} se"], ls=ls, marker=marker,
                        color=color, ms=5 if q in styles else 4,
                        mfc="white" if q == "MAC t-test" else color, capsize=2, label=q)
        ax.set_xticks(sorted(set(x)))
        target = self.settings.get("target")
        if target:
            ax.axhline(target, color="grey", lw=0.8, ls=":")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("assurance / power")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"Design study ({self.settings['method']}; bars: 2 Monte Carlo se)",
                     fontsize=10)
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        fig.tight_layout()
        if path is None:
            return fig
        with atomic_path(path, suffix=".png") as tmp:
            fig.savefig(tmp, dpi=120, format="png")
        return path


#: Axis labels of the design variables.
_AXIS = {"words": "protected words per class", "stereotypes": "stereotype attributes per class",
         "human": "human-attribute control words", "none": "neutral control words",
         "classes": "protected classes"}


def design_axis(frame: pd.DataFrame) -> tuple[str, str]:
    """Return the column and label for a design plot's x axis.

    The one design variable that varies (e.g. words per class for ``--words 5,10,20``), else
    the total number of words.
    """
    varying = [k for k in _AXIS if k in frame and frame[k].nunique() > 1]
    if len(varying) == 1:
        return varying[0], _AXIS[varying[0]]
    return "total_words", "words in the study (protected + stereotypes + controls)"


def run_design(pilot: Pilot, designs, *, reps: int = 200, method: str = "exact",
               alpha: float = 0.05, ci_prob: float | None = None, null: str | None = None,
               seed: int | None = None, n_draws: int = 2000, n_permutations: int = 2000,
               chunk_size: int = 25, workers: int | None = None, scheduler: str | None = None,
               processes: bool = True, target: float | None = None,
               fit_kwargs: dict | None = None) -> DesignResult:
    """Assurance of the verdicts and power of WEAT and MAC for candidate designs.

    Parameters
    ----------
    pilot : Pilot
    designs : sequence of Design
    reps : int
        Simulated studies per design (Monte Carlo se of an assurance p: sqrt(p(1-p)/reps)).
    method : {"exact", "nuts"}
        Posterior of each simulated study: exact marginal (fast) or NUTS fits.
    alpha : float
        Level of WEAT's and MAC's tests.
    ci_prob : float, optional
        HDI probability of the verdicts (default ``defaults.ci_prob``).
    null : str, optional
        Set this contrast (e.g. ``"associated - human"``) to 0 in every truth: the
        "power" is then the false-positive rate.
    seed : int, optional
    n_draws : int
        Posterior draws per study (exact method).
    chunk_size : int
        Replications per task (part of the seed scheme).
    workers, scheduler, processes
        See :func:`bayesbias.parallel.run_tasks`.
    fit_kwargs : dict, optional
        For ``method="nuts"``: draws, tune, chains, ...
    """
    if method not in METHODS:
        raise InvalidArgumentError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if method == "exact" and not (supports(pilot.spec) or (
            family(pilot.spec.family).ATTRIBUTE_EFFECTS
            and supports(_hierarchical_part(pilot.spec)))):
        raise ModelSpecError(f"model {pilot.spec.name!r} has no exact marginal form; "
                             "use method='nuts'")
    if not 0 < alpha < 1:
        raise InvalidArgumentError(f"alpha must be in (0, 1), got {alpha}")
    if null:
        _contrast_index(null)
    designs = list(designs)
    if not designs:
        raise InputDataError("no candidate designs")
    ci_prob, _ = resolve_ci(ci_prob, "hdi")
    seed = defaults.seed if seed is None else int(seed)
    settings = {"method": method, "alpha": float(alpha), "ci_prob": ci_prob, "null": null,
                "seed": seed, "reps": int(reps), "n_draws": int(n_draws),
                "n_permutations": int(n_permutations), "chunk_size": int(chunk_size),
                "target": target, "fit_kwargs": dict(fit_kwargs or {}),
                "seed_scheme": "numpy SeedSequence(seed, spawn_key=(design, chunk)); truths "
                               "from spawn_key=(2**20, chunk), shared by all designs"}
    draws = {"mu_bar": pilot.mu_bar, "tau": pilot.tau, "sigma": pilot.sigma,
             "omega": pilot.omega}
    parts = chunks(int(reps), int(chunk_size))
    tasks = [((d, k), (draws, pilot.spec, design, seed, k, n, settings))
             for d, design in enumerate(designs) for k, (_, n) in enumerate(parts)]
    res = run_tasks(_run_chunk, tasks, seed=seed, workers=workers, scheduler=scheduler,
                    processes=processes, label="design study")
    raw = _assemble(res, designs, parts)
    return DesignResult(raw, designs, pilot, settings, res.complete, res.wall_time_s)


def _assemble(res, designs, parts) -> xr.Dataset:
    """Stack chunk results into (design, replication, ...) arrays; missing chunks are NaN."""
    first = next(iter(res.results.values()), None)
    if first is None:
        raise InputDataError("no replication finished")
    R = sum(n for _, n in parts)
    shapes = {k: v.shape[1:] for k, v in first.items()}
    arrays = {k: np.full((len(designs), R) + s, np.nan) for k, s in shapes.items()}
    for (d, k), out in res.results.items():
        start, n = parts[k]
        for name, v in out.items():
            arrays[name][d, start:start + n] = v
    dims = {"lower": ("verdict",), "upper": ("verdict",), "prob_below_zero": ("verdict",),
            "true_contrast": ("verdict",), "weat_p": ("class_pair",), "mac_p": ()}
    ds = xr.Dataset({k: (("design", "replication") + dims[k], v) for k, v in arrays.items()},
                    coords={"design": [d.label for d in designs], "replication": np.arange(R),
                            "verdict": list(VERDICTS)})
    return ds

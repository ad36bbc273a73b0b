"""CEAT: the Contextualized Embedding Association Test (Guo & Caliskan 2021).

Each word has several contextual vectors (one per corpus sentence that contains it). One
*draw* picks one vector per word of X, Y, A and B at random and computes the WEAT effect
size ES_i and its in-sample variance V_i (the sample variance of s(w, A, B) over X ∪ Y, as
the authors' code). The draws are combined by a random-effects meta-analysis with the
DerSimonian-Laird between-draw variance:

    w_i = 1 / V_i,  Q = Σ w_i ES_i² − (Σ w_i ES_i)² / Σ w_i,  df = N − 1,
    τ² = max(0, (Q − df) / (Σ w_i − Σ w_i² / Σ w_i)),
    w*_i = 1 / (V_i + τ²),  CES = Σ w*_i ES_i / Σ w*_i,  Var(CES) = 1 / Σ w*_i.

The interval is CES ± z · sqrt(Var(CES)); the p-value is one-sided (CES > 0) as in the paper,
with the two-sided one alongside. That interval counts only the spread *between draws* of the
same words and contexts: its se shrinks like 1 / sqrt(draws), a simulation setting, and says
nothing about the words and contexts having been sampled. :func:`ceat_bootstrap` adds the
interval that does: a two-stage bootstrap that resamples the words of X, Y, A and B, then
each drawn word's contexts, and recomputes CES from random draws on every resample. It does
not shrink when ``n_draws`` grows; it is the primary interval of :class:`CeatResult`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from ..config import defaults, validate_ci_prob
from ..errors import InputDataError, OutOfVocabularyError, WordListError
from ..intervals import normal_quantile
from ..plain import DROPPED_KEY, dropped_line
from ..resampling import percentile_interval
from .weat import _ddof, association, effect_size, resolve_weat_sets

__all__ = ["random_effects", "RandomEffects", "ceat_draws", "ceat_from_pools", "CeatResult",
           "ceat", "ceat_bootstrap", "INNER_DRAWS"]

#: Context draws combined on each resample of :func:`ceat_bootstrap` (at most ``n_draws``).
INNER_DRAWS = 200


@dataclass(frozen=True)
class RandomEffects:
    """DerSimonian-Laird random-effects combination of effect sizes."""

    estimate: float
    se: float
    tau2: float
    q: float
    df: int
    ci: tuple[float, float]
    ci_prob: float
    p_greater: float
    p_two_sided: float
    ci_kind: str = "normal (Wald) interval of the random-effects estimate"


def random_effects(es, v, ci_prob: float | None = None) -> RandomEffects:
    """Combine effect sizes `es` with within-study variances `v` (DerSimonian-Laird).

    Parameters
    ----------
    es, v : array_like, shape (n,)
    ci_prob : float, optional
        Interval probability (default ``defaults.ci_prob``).

    Returns
    -------
    RandomEffects
    """
    es = np.asarray(es, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    if es.ndim != 1 or es.shape != v.shape or es.size < 2:
        raise InputDataError("random_effects needs two or more effect sizes with variances")
    if not (np.isfinite(es).all() and np.isfinite(v).all()) or (v <= 0).any():
        raise InputDataError("effect sizes must be finite and variances positive")
    ci_prob = validate_ci_prob(defaults.ci_prob if ci_prob is None else ci_prob)
    w = 1.0 / v
    sw = w.sum()
    q = float((w * es**2).sum() - (w * es).sum() ** 2 / sw)
    df = es.size - 1
    c = sw - (w**2).sum() / sw
    tau2 = max(0.0, (q - df) / c) if c > 0 else 0.0
    w_star = 1.0 / (v + tau2)
    est = float((w_star * es).sum() / w_star.sum())
    se = float(np.sqrt(1.0 / w_star.sum()))
    z = normal_quantile(ci_prob)
    p_greater = float(stats.norm.sf(est / se))
    p_two = float(2 * stats.norm.sf(abs(est) / se))
    return RandomEffects(est, se, float(tau2), q, int(df), (est - z * se, est + z * se),
                         ci_prob, p_greater, p_two)


def ceat_draws(pools, n_draws: int, seed=None, sd: str = "sample"):
    """Effect sizes and in-sample variances of `n_draws` random context draws.

    Parameters
    ----------
    pools : dict with keys "X", "Y", "A", "B"
        For each set, a list with one array per word of shape (n_contexts, dim).
    n_draws : int
    seed : int or numpy.random.Generator, optional
    sd : {"sample", "population"}
        Denominator of the effect size's sd (CEAT: sample).

    Returns
    -------
    es, v : ndarray, shape (n_draws,)
    """
    rng = np.random.default_rng(seed)
    picked = {}
    for key in "XYAB":
        words = pools[key]
        if not words:
            raise InputDataError(f"CEAT set {key} has no word with a context")
        # (n_draws, n_words, dim): one random context per word per draw
        picked[key] = np.stack([p[rng.integers(0, len(p), size=n_draws)] for p in words],
                               axis=1).astype(np.float64)
    unit = {k: v / np.linalg.norm(v, axis=-1, keepdims=True) for k, v in picked.items()}
    targets = np.concatenate([unit["X"], unit["Y"]], axis=1)
    sim_a = targets @ unit["A"].transpose(0, 2, 1)
    sim_b = targets @ unit["B"].transpose(0, 2, 1)
    s = association(sim_a, sim_b)  # (n_draws, n_X + n_Y)
    n_x = unit["X"].shape[1]
    es = effect_size(s[:, :n_x], s[:, n_x:], sd=sd)
    v = s.var(axis=1, ddof=1)
    return es, v


def _random_effects_rows(es: np.ndarray, v: np.ndarray) -> np.ndarray:
    """DerSimonian-Laird estimate over the last axis (vectorised :func:`random_effects`)."""
    w = 1.0 / v
    sw = w.sum(axis=-1)
    q = (w * es**2).sum(axis=-1) - (w * es).sum(axis=-1) ** 2 / sw
    c = sw - (w**2).sum(axis=-1) / sw
    with np.errstate(divide="ignore", invalid="ignore"):
        tau2 = np.where(c > 0, np.maximum(0.0, (q - (es.shape[-1] - 1)) / c), 0.0)
    w_star = 1.0 / (v + tau2[..., None])
    return (w_star * es).sum(axis=-1) / w_star.sum(axis=-1)


def _padded_units(words) -> tuple[np.ndarray, np.ndarray]:
    """Return unit vectors of each word's contexts, padded to (n_words, max_contexts, dim)."""
    sizes = np.array([len(p) for p in words])
    dim = np.asarray(words[0]).shape[1]
    out = np.zeros((len(words), int(sizes.max()), dim))
    for i, p in enumerate(words):
        p = np.asarray(p, dtype=np.float64)
        out[i, :len(p)] = p / np.linalg.norm(p, axis=1, keepdims=True)
    return out, sizes


def ceat_bootstrap(pools, *, n_bootstrap: int = 500, n_draws: int = INNER_DRAWS, seed=None,
                   sd: str = "sample", chunk: int = 20) -> np.ndarray:
    """Two-stage bootstrap of CEAT's combined effect size over words and their contexts.

    Each resample draws the words of X, Y, A and B with replacement (sizes kept), then for
    every drawn word its contexts with replacement (its number of contexts kept), and
    computes CES (random-effects combination) from `n_draws` random draws of one context
    per word from these resampled pools. The spread of the resamples is the uncertainty
    from having sampled these words and these contexts; more `n_draws` only removes Monte
    Carlo noise, so the interval does not shrink towards zero as it grows.

    Parameters
    ----------
    pools : dict with keys "X", "Y", "A", "B"
        For each set, a list with one array per word of shape (n_contexts, dim).
    n_bootstrap : int
    n_draws : int
        Context draws per resample.
    seed : int or numpy.random.Generator, optional
    sd : {"sample", "population"}

    Returns
    -------
    ndarray, shape (n_bootstrap,)
        CES of each resample (NaN when no draw had a defined effect size).
    """
    ddof = _ddof(sd)
    rng = np.random.default_rng(seed)
    for key in "XYAB":
        if not pools[key]:
            raise InputDataError(f"CEAT set {key} has no word with a context")
    targets, t_size = _padded_units(list(pools["X"]) + list(pools["Y"]))
    attrs, a_size = _padded_units(list(pools["A"]) + list(pools["B"]))
    n_x, n_y = len(pools["X"]), len(pools["Y"])
    n_a, n_b = len(pools["A"]), len(pools["B"])
    # every context of every target word against every context of every attribute word
    sims = np.einsum("icd,jed->ijce", targets, attrs)  # (n_T, n_At, C_t, C_a)
    out = np.empty(int(n_bootstrap))
    done = 0
    while done < n_bootstrap:
        k = min(chunk, n_bootstrap - done)
        # stage 1: words (indices into the targets / attributes, within their own set)
        wt = np.concatenate([rng.integers(0, n_x, (k, n_x)),
                             n_x + rng.integers(0, n_y, (k, n_y))], axis=1)  # (k, n_T)
        wa = np.concatenate([rng.integers(0, n_a, (k, n_a)),
                             n_a + rng.integers(0, n_b, (k, n_b))], axis=1)  # (k, n_At)
        # stage 2: each drawn word's contexts, resampled: pool[k, slot, j] = a context index
        ct_pool = (rng.random((k, wt.shape[1], targets.shape[1]))
                   * t_size[wt][..., None]).astype(np.intp)
        ca_pool = (rng.random((k, wa.shape[1], attrs.shape[1]))
                   * a_size[wa][..., None]).astype(np.intp)
        # the draws: one context per slot from its resampled pool
        rt = (rng.random((k, n_draws, wt.shape[1])) * t_size[wt][:, None, :]).astype(np.intp)
        ra = (rng.random((k, n_draws, wa.shape[1])) * a_size[wa][:, None, :]).astype(np.intp)
        ct = np.take_along_axis(ct_pool[:, None, :, :], rt[..., None], axis=3)[..., 0]
        ca = np.take_along_axis(ca_pool[:, None, :, :], ra[..., None], axis=3)[..., 0]
        # sim[k, d, t, a] = sims[word_t, word_a, ctx_t, ctx_a]
        sim = sims[wt[:, None, :, None], wa[:, None, None, :], ct[..., :, None],
                   ca[..., None, :]]  # (k, n_draws, n_T, n_At)
        s = sim[..., :n_a].mean(axis=-1) - sim[..., n_a:].mean(axis=-1)  # (k, n_draws, n_T)
        sx, sy = s[..., :n_x], s[..., n_x:]
        scale = s.std(axis=-1, ddof=ddof)
        v = s.var(axis=-1, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            es = (sx.mean(axis=-1) - sy.mean(axis=-1)) / scale
        ok = np.isfinite(es) & (v > 0)
        es, v = np.where(ok, es, 0.0), np.where(ok, v, np.inf)
        est = _random_effects_rows(es, v)
        out[done:done + k] = np.where(ok.sum(axis=-1) >= 2, est, np.nan)
        done += k
    return out


@dataclass
class CeatResult:
    """CEAT: the distribution of WEAT effect sizes over context draws, and their combination."""

    combined: float
    se: float
    ci: tuple[float, float]
    ci_prob: float
    ci_kind: str
    p_value: float
    p_two_sided: float
    tau2: float
    q: float
    n_draws: int
    seed: int
    effect_sizes: np.ndarray = field(repr=False)
    variances: np.ndarray = field(repr=False)
    sizes: dict = field(default_factory=dict)
    names: dict = field(default_factory=dict)
    contexts: dict = field(default_factory=dict)
    dropped: dict = field(default_factory=dict)
    source: str = ""
    #: Two-stage bootstrap interval over words and their contexts (:func:`ceat_bootstrap`).
    word_ci: tuple[float, float] | None = None
    n_bootstrap: int = 0
    bootstrap_draws: int = 0
    #: One-sided p over words and contexts: the share of the two-stage resamples whose CES is
    #: at most 0 (the percentile interval's test: ``word_ci`` excludes 0 at level 1 - 2p).
    word_p: float | None = None

    def quantiles(self, probs=(0.05, 0.25, 0.5, 0.75, 0.95)) -> dict:
        """Quantiles of the per-draw effect sizes."""
        return {float(p): float(q) for p, q in zip(probs, np.quantile(self.effect_sizes, probs),
                                                   strict=True)}

    def to_dict(self) -> dict:
        """Plain-Python dict (JSON-ready); per-draw effect sizes summarised by quantiles."""
        d = asdict(self)
        d[DROPPED_KEY] = d.pop("dropped")
        d.pop("effect_sizes")
        d.pop("variances")
        d["ci"] = list(self.ci)
        d["word_ci"] = list(self.word_ci) if self.word_ci else None
        d["word_ci_kind"] = ("two-stage percentile bootstrap over words, then each word's "
                             f"contexts ({self.n_bootstrap} resamples, {self.bootstrap_draws} "
                             "context draws each)") if self.word_ci else None
        d["ci_note"] = ("`ci` is the random-effects interval of the paper: it counts only the "
                        "spread between context draws and shrinks as n_draws grows; "
                        "`word_ci` counts the sampling of words and contexts")
        from ..verdicts.reconcile import format_p

        d["p_text"] = f"{format_p(self.p_value)} (one-sided, combined > 0; random effects)"
        d["word_p_text"] = (f"{format_p(self.word_p, floor=self._word_p_floor)} (one-sided, "
                            "combined > 0; two-stage bootstrap over words and contexts)"
                            if self.word_p is not None else None)
        d["effect_size_quantiles"] = self.quantiles()
        d["effect_size_mean"] = float(self.effect_sizes.mean())
        d["effect_size_sd"] = float(self.effect_sizes.std(ddof=1))
        d["method"] = ("CEAT (Guo & Caliskan 2021): WEAT effect size per random draw of one "
                       "context per word; random-effects combination, DerSimonian-Laird tau^2")
        return d

    @property
    def _word_p_floor(self) -> float | None:
        return 1.0 / self.n_bootstrap if self.n_bootstrap else None

    def __str__(self) -> str:
        from ..verdicts.reconcile import format_p

        n = self.names
        q = self.quantiles()
        sizes = self.sizes
        word = ([f"  {self.ci_prob:.0%} interval over words and contexts: [{self.word_ci[0]:.3f}, "
                 f"{self.word_ci[1]:.3f}] (two-stage bootstrap: {sizes.get('X')}+"
                 f"{sizes.get('Y')} target and {sizes.get('A')}+{sizes.get('B')} attribute "
                 f"words, then each word's contexts; {self.n_bootstrap} resamples of "
                 f"{self.bootstrap_draws} draws; does not shrink with --context-draws)",
                 f"  p over words and contexts (combined > 0, one-sided: share of resamples "
                 f"at or below 0) {_op(format_p(self.word_p, floor=self._word_p_floor))}"]
                if self.word_ci else
                ["  no interval over words and contexts (--bootstrap 0): the interval below "
                 "counts only the draws"])
        return "\n".join([
            f"CEAT {n.get('X', 'X')} vs {n.get('Y', 'Y')} / {n.get('A', 'A')} vs "
            f"{n.get('B', 'B')} ({self.n_draws} draws, seed {self.seed}; {self.source})",
            f"  combined effect size = {self.combined:.4f}",
            *word,
            f"  secondary, the paper's random-effects combination over draws: se "
            f"{self.se:.4f}, {self.ci_prob:.0%} interval [{self.ci[0]:.3f}, {self.ci[1]:.3f}] "
            f"(normal; narrows as --context-draws grows, a simulation setting)",
            f"  p (combined > 0, random effects, one-sided) {_op(format_p(self.p_value))}; "
            f"two-sided {_op(format_p(self.p_two_sided))}; "
            f"tau^2 = {self.tau2:.4g}, Q = {self.q:.1f} on {self.n_draws - 1} df",
            f"  per-draw effect sizes: median {q[0.5]:.3f}, 90% of draws in "
            f"[{q[0.05]:.3f}, {q[0.95]:.3f}]",
        ] + (["  " + dropped_line(self.dropped, "dropped (no context)")]
             if dropped_line(self.dropped) else []))


def _op(text: str) -> str:
    return text if text[:1] in "<n" else f"= {text}"


def ceat_from_pools(pools, *, n_draws: int = 1000, seed: int | None = None,
                    ci_prob: float | None = None, sd: str = "sample", names=None,
                    contexts=None, dropped=None, source: str = "",
                    bootstrap: int = 500) -> CeatResult:
    """CEAT from per-word pools of contextual vectors (see :func:`ceat_draws`).

    `bootstrap` resamples of :func:`ceat_bootstrap` (each with ``min(n_draws,
    INNER_DRAWS)`` draws) give ``word_ci``, the interval over words and contexts; 0 skips it.
    """
    seed = defaults.seed if seed is None else int(seed)
    if int(n_draws) < 2:
        raise InputDataError("CEAT needs at least 2 draws")
    es, v = ceat_draws(pools, int(n_draws), seed=seed, sd=sd)
    ok = np.isfinite(es) & (v > 0)
    if ok.sum() < 2:
        raise InputDataError("CEAT: fewer than 2 draws with a defined effect size")
    re = random_effects(es[ok], v[ok], ci_prob)
    word_ci, word_p, inner = None, None, 0
    if bootstrap:
        inner = min(int(n_draws), INNER_DRAWS)
        boot = ceat_bootstrap(pools, n_bootstrap=int(bootstrap), n_draws=inner,
                              seed=np.random.SeedSequence([seed, 2]), sd=sd)
        word_ci = percentile_interval(boot, re.ci_prob)
        finite = boot[np.isfinite(boot)]
        word_p = float(np.mean(finite <= 0)) if finite.size else None
    return CeatResult(
        combined=re.estimate, se=re.se, ci=re.ci, ci_prob=re.ci_prob, ci_kind=re.ci_kind,
        p_value=re.p_greater, p_two_sided=re.p_two_sided, tau2=re.tau2, q=re.q,
        n_draws=int(ok.sum()), seed=seed, effect_sizes=es[ok], variances=v[ok],
        sizes={k: len(pools[k]) for k in "XYAB"}, names=dict(names or {}),
        contexts=dict(contexts or {}), dropped=dict(dropped or {}), source=source,
        word_ci=word_ci, n_bootstrap=int(bootstrap) if word_ci else 0, bootstrap_draws=inner,
        word_p=word_p)


def ceat(source, wordlist_or_sets, *, n_draws: int = 1000, seed: int | None = None,
         ci_prob: float | None = None, on_missing: str = "error",
         bootstrap: int = 500) -> CeatResult:
    """Run CEAT with an encoder and a corpus.

    Parameters
    ----------
    source : EncoderSource
        Encoder, corpus, contexts per word and the seed of the context sampling.
    wordlist_or_sets : WordList, str, WeatSets, mapping or 4-tuple
        X, Y, A, B as for :func:`~bayesbias.comparators.weat.weat`.
    n_draws : int
        Random draws of one context per word.
    bootstrap : int
        Resamples of the two-stage bootstrap over words and contexts (``word_ci``; 0: none).
    seed : int, optional
        Seed of the draws (default: the source's seed).
    on_missing : {"error", "drop"}
        Words with no context in the corpus: raise, or drop and list them.
    """
    sets = resolve_weat_sets(wordlist_or_sets)
    parts = {k: list(getattr(sets, k)) for k in "XYAB"}
    words = list(dict.fromkeys(w for k in "XYAB" for w in parts[k]))
    vecs = source.context_vectors(words)
    missing = {k: [w for w in parts[k] if not len(vecs[w])] for k in "XYAB"}
    if any(missing.values()):
        if on_missing == "error":
            raise OutOfVocabularyError(missing, f"corpus {source.corpus}")
    pools = {k: [vecs[w] for w in parts[k] if len(vecs[w])] for k in "XYAB"}
    empty = [k for k in "XYAB" if not pools[k]]
    if empty:
        raise WordListError(f"CEAT set(s) {', '.join(empty)} have no word with a context in "
                            f"{source.corpus}")
    return ceat_from_pools(
        pools, n_draws=n_draws, seed=source.seed if seed is None else seed, ci_prob=ci_prob,
        names=dict(zip("XYAB", sets.names, strict=True)),
        contexts={w: len(vecs[w]) for w in words},
        dropped={k: v for k, v in missing.items() if v}, source=str(source),
        bootstrap=bootstrap)

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
with the two-sided one alongside.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from ..config import defaults, validate_ci_prob
from ..errors import InputDataError, WordListError
from .weat import association, effect_size, resolve_weat_sets

__all__ = ["random_effects", "RandomEffects", "ceat_draws", "ceat_from_pools", "CeatResult",
           "ceat"]


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
    z = stats.norm.ppf((1 + ci_prob) / 2)
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

    def quantiles(self, probs=(0.05, 0.25, 0.5, 0.75, 0.95)) -> dict:
        """Quantiles of the per-draw effect sizes."""
        return {float(p): float(q) for p, q in zip(probs, np.quantile(self.effect_sizes, probs),
                                                   strict=True)}

    def to_dict(self) -> dict:
        """Plain-Python dict (JSON-ready); per-draw effect sizes summarised by quantiles."""
        d = asdict(self)
        d.pop("effect_sizes")
        d.pop("variances")
        d["ci"] = list(self.ci)
        d["effect_size_quantiles"] = self.quantiles()
        d["effect_size_mean"] = float(self.effect_sizes.mean())
        d["effect_size_sd"] = float(self.effect_sizes.std(ddof=1))
        d["method"] = ("CEAT (Guo & Caliskan 2021): WEAT effect size per random draw of one "
                       "context per word; random-effects combination, DerSimonian-Laird tau^2")
        return d

    def __str__(self) -> str:
        n = self.names
        q = self.quantiles()
        return "\n".join([
            f"CEAT {n.get('X', 'X')} vs {n.get('Y', 'Y')} / {n.get('A', 'A')} vs "
            f"{n.get('B', 'B')} ({self.n_draws} draws, seed {self.seed}; {self.source})",
            f"  combined effect size = {self.combined:.4f} (se {self.se:.4f}); "
            f"{self.ci_prob:.0%} interval [{self.ci[0]:.3f}, {self.ci[1]:.3f}] ({self.ci_kind})",
            f"  p (combined > 0) = {self.p_value:.3g}; two-sided {self.p_two_sided:.3g}; "
            f"tau^2 = {self.tau2:.4g}, Q = {self.q:.1f} on {self.n_draws - 1} df",
            f"  per-draw effect sizes: median {q[0.5]:.3f}, 90% of draws in "
            f"[{q[0.05]:.3f}, {q[0.95]:.3f}]",
        ] + (["  dropped (no context): " + "; ".join(
            f"{k}: {', '.join(v)}" for k, v in self.dropped.items() if v)]
             if any(self.dropped.values()) else []))


def ceat_from_pools(pools, *, n_draws: int = 1000, seed: int | None = None,
                    ci_prob: float | None = None, sd: str = "sample", names=None,
                    contexts=None, dropped=None, source: str = "") -> CeatResult:
    """CEAT from per-word pools of contextual vectors (see :func:`ceat_draws`)."""
    seed = defaults.seed if seed is None else int(seed)
    if int(n_draws) < 2:
        raise InputDataError("CEAT needs at least 2 draws")
    es, v = ceat_draws(pools, int(n_draws), seed=seed, sd=sd)
    ok = np.isfinite(es) & (v > 0)
    if ok.sum() < 2:
        raise InputDataError("CEAT: fewer than 2 draws with a defined effect size")
    re = random_effects(es[ok], v[ok], ci_prob)
    return CeatResult(
        combined=re.estimate, se=re.se, ci=re.ci, ci_prob=re.ci_prob, ci_kind=re.ci_kind,
        p_value=re.p_greater, p_two_sided=re.p_two_sided, tau2=re.tau2, q=re.q,
        n_draws=int(ok.sum()), seed=seed, effect_sizes=es[ok], variances=v[ok],
        sizes={k: len(pools[k]) for k in "XYAB"}, names=dict(names or {}),
        contexts=dict(contexts or {}), dropped=dict(dropped or {}), source=source)


def ceat(source, wordlist_or_sets, *, n_draws: int = 1000, seed: int | None = None,
         ci_prob: float | None = None, on_missing: str = "error") -> CeatResult:
    """Run CEAT with an encoder and a corpus.

    Parameters
    ----------
    source : EncoderSource
        Encoder, corpus, contexts per word and the seed of the context sampling.
    wordlist_or_sets : WordList, str, WeatSets, mapping or 4-tuple
        X, Y, A, B as for :func:`~bayesbias.comparators.weat.weat`.
    n_draws : int
        Random draws of one context per word.
    seed : int, optional
        Seed of the draws (default: the source's seed).
    on_missing : {"error", "drop"}
        Words with no context in the corpus: raise, or drop and list them.
    """
    from ..errors import OutOfVocabularyError

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
        dropped={k: v for k, v in missing.items() if v}, source=str(source))

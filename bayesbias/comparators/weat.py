"""The Word Embedding Association Test (Caliskan, Bryson & Narayanan 2017), done right.

Two layers. The array layer works on cosine similarities: :func:`association` gives
s(w, A, B) for every target word, :func:`effect_size` and :func:`sum_statistic` summarise
them, :func:`permutation_test` re-partitions X ∪ Y without replacement (exactly when the
number of splits is small enough, otherwise by seeded Monte Carlo with the +1 correction,
or, for sets of thousands of words, from the Normal with the re-partition distribution's
exact mean and variance), and :func:`bootstrap_effect_size` resamples targets and
attributes. The functions accept leading batch axes, which the null simulations use.

The word layer, :func:`weat`, takes an :class:`~bayesbias.embeddings.Embedding` and a two-class
word list (or explicit X, Y, A, B), reports out-of-vocabulary words instead of silently
shrinking the sets, and returns a :class:`WeatResult` that states every convention used.
:func:`weat_from_table` runs the same test on a long distance table.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..config import defaults, validate_ci_prob
from ..display import card
from ..errors import DistanceTableError, InputDataError, InvalidArgumentError, WordListError
from ..inputs.embeddings import Embedding, as_embedding, lookup
from ..inputs.wordlists import WeatSets, WordList, available_wordlists, load_wordlist
from ..plain import DROPPED_KEY, dropped_line
from ..resampling import (
    bootstrap_indices,
    bootstrap_weights,
    ordered_subsets,
    percentile_interval,
)
from ..validation import validate_int

if TYPE_CHECKING:  # pandas is imported where a frame is built (a cached `seat` needs none)
    import pandas as pd

__all__ = [
    "ALTERNATIVES",
    "SD_CONVENTIONS",
    "association",
    "effect_size",
    "sum_statistic",
    "weat_bound",
    "mean_difference",
    "n_splits",
    "split_indicators",
    "permutation_test",
    "normal_permutation_p",
    "PermutationTest",
    "bootstrap_effect_size",
    "WeatResult",
    "weat_from_similarities",
    "weat",
    "weat_from_table",
    "weat_class_pairs",
    "resolve_weat_sets",
]

log = logging.getLogger(__name__)

#: Alternatives of the permutation test. ``"greater"`` is Caliskan et al.'s one-sided test
#: (X more associated with A than Y is); ``"two-sided"`` uses the absolute difference.
ALTERNATIVES = ("greater", "less", "two-sided")
#: Standard-deviation conventions of the effect size and their ``ddof``.
SD_CONVENTIONS = {"sample": 1, "population": 0}
_SD_LABEL = {"sample": "sample sd (n - 1 denominator)",
             "population": "population sd (n denominator, as WEFE and Caliskan's code)"}
_CHUNK = 20_000  # permutations per vectorised block (bounds memory)
_BLOCK_CELLS = 1 << 19  # (test, split) cells compared at once (fits the CPU cache)


# --------------------------------------------------------------------------------------
# Array layer
# --------------------------------------------------------------------------------------
def association(sim_a, sim_b) -> np.ndarray:
    """s(w, A, B): mean similarity of each word to A minus its mean similarity to B.

    Parameters
    ----------
    sim_a, sim_b : array_like, shape (..., n_words, n_A) and (..., n_words, n_B)
        Cosine similarities of the target words with the attributes of A and of B.

    Returns
    -------
    ndarray, shape (..., n_words)
    """
    sim_a = np.asarray(sim_a, dtype=np.float64)
    sim_b = np.asarray(sim_b, dtype=np.float64)
    if sim_a.shape[-1] == 0 or sim_b.shape[-1] == 0:
        raise InputDataError("attribute sets A and B must not be empty")
    return sim_a.mean(axis=-1) - sim_b.mean(axis=-1)


def _check_s(s_x, s_y):
    s_x = np.asarray(s_x, dtype=np.float64)
    s_y = np.asarray(s_y, dtype=np.float64)
    if s_x.shape[-1] == 0 or s_y.shape[-1] == 0:
        raise InputDataError("target sets X and Y must not be empty")
    if np.isnan(s_x).any() or np.isnan(s_y).any():
        raise InputDataError("association values contain NaN")
    return s_x, s_y


def sum_statistic(s_x, s_y) -> np.ndarray:
    """Caliskan's test statistic: sum of s over X minus sum of s over Y (last axis)."""
    s_x, s_y = _check_s(s_x, s_y)
    return s_x.sum(axis=-1) - s_y.sum(axis=-1)


def weat_bound(n_x: int, n_y: int, sd: str = "sample") -> float:
    """Largest possible |WEAT effect size| for target sets of sizes n_x and n_y.

    With N = n_x + n_y and D the difference of the two means, the total sum of squares of
    the pooled s values is at least its between-set part n_x n_y D^2 / N, so
    |d| <= sqrt(N (N - ddof) / (n_x n_y)): sqrt(2 (2n - 1) / n) for n + n words with the
    sample sd (sqrt(3) for 2 + 2) and 2 with the population sd. The bound is reached when
    the s values within each set are equal.
    """
    return math.sqrt((n_x + n_y) * (n_x + n_y - _ddof(sd)) / (n_x * n_y))


def mean_difference(s_x, s_y) -> np.ndarray:
    """Mean of s over X minus mean of s over Y (last axis)."""
    s_x, s_y = _check_s(s_x, s_y)
    return s_x.mean(axis=-1) - s_y.mean(axis=-1)


def effect_size(s_x, s_y, sd: str = "sample") -> np.ndarray:
    """WEAT effect size: mean difference over the sd of s on X ∪ Y (last axis).

    Parameters
    ----------
    s_x, s_y : array_like, shape (..., n_X) and (..., n_Y)
        Association values of the two target sets.
    sd : {"sample", "population"}
        Denominator of the standard deviation: n - 1 (default) or n.

    Returns
    -------
    ndarray
        NaN where the pooled sd is zero.
    """
    ddof = _ddof(sd)
    s_x, s_y = _check_s(s_x, s_y)
    both = np.concatenate([s_x, s_y], axis=-1)
    if both.shape[-1] - ddof < 1:
        raise InputDataError("need at least two target words for a sample sd")
    scale = both.std(axis=-1, ddof=ddof)
    diff = s_x.mean(axis=-1) - s_y.mean(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(scale > 0, diff / np.where(scale > 0, scale, 1.0), np.nan)


def _ddof(sd: str) -> int:
    try:
        return SD_CONVENTIONS[sd]
    except KeyError:
        raise InvalidArgumentError(
            f"sd must be one of {', '.join(SD_CONVENTIONS)}, got {sd!r}") from None


def n_splits(n_x: int, n_y: int) -> int:
    """Count the ways to re-partition X ∪ Y into sets of sizes n_x and n_y."""
    return math.comb(n_x + n_y, n_x)


def split_indicators(n_x: int, n_y: int, *, n_permutations: int | None = None,
                     exact_limit: int | None = None, rng=None, chunk: int = _CHUNK):
    """Yield 0/1 matrices whose rows mark the X members of re-partitions of X ∪ Y.

    All ``n_splits(n_x, n_y)`` splits when that number is at most `exact_limit`, else
    `n_permutations` uniformly random splits (drawn without replacement within a split).

    Yields
    ------
    ndarray of float64, shape (k, n_x + n_y)
    """
    n = n_x + n_y
    exact_limit = defaults.exact_permutation_limit if exact_limit is None else exact_limit
    n_permutations = defaults.n_permutations if n_permutations is None else n_permutations
    total = n_splits(n_x, n_y)
    if total <= exact_limit:
        combos = itertools.combinations(range(n), n_x)
        done = 0
        while done < total:
            k = min(chunk, total - done)
            idx = np.fromiter(itertools.chain.from_iterable(itertools.islice(combos, k)),
                              dtype=np.intp, count=k * n_x).reshape(k, n_x)
            ind = np.zeros((k, n))
            np.put_along_axis(ind, idx, 1.0, axis=1)
            done += k
            yield ind
        return
    n_permutations = validate_int(n_permutations, "n_permutations", low=1)
    rng = np.random.default_rng(rng)
    done = 0
    while done < n_permutations:
        k = min(chunk, n_permutations - done)
        ind = np.zeros((k, n))
        np.put_along_axis(ind, ordered_subsets(rng, k, n, n_x), 1.0, axis=1)
        done += k
        yield ind


@dataclass(frozen=True)
class PermutationTest:
    """Outcome of a permutation test (arrays when run over a batch)."""

    p_value: np.ndarray | float
    n_permutations: int
    exact: bool
    alternative: str
    #: ``"exact"``, ``"monte-carlo"`` or ``"normal"`` (:func:`permutation_test`).
    method: str = ""


def normal_permutation_p(s_x, s_y, alternative: str = "greater") -> np.ndarray:
    """P-value of the mean difference from the Normal with its re-partition moments.

    Under random re-partition of X ∪ Y (sizes n_X, n_Y, N = n_X + n_Y) the mean difference
    has mean 0 and variance ``N S² / (n_X n_Y)``, S² the sample variance (N - 1
    denominator) of s over X ∪ Y (sampling without replacement). Close to the permutation
    p-value for sets of thousands of words, where Monte Carlo splits cost O(splits x N).
    """
    from scipy.special import ndtr

    s_x, s_y = _check_s(s_x, s_y)
    n_x, n_y = s_x.shape[-1], s_y.shape[-1]
    batch = np.broadcast_shapes(s_x.shape[:-1], s_y.shape[:-1])
    s = np.concatenate([np.broadcast_to(s_x, batch + (n_x,)),
                        np.broadcast_to(s_y, batch + (n_y,))], axis=-1)
    n = n_x + n_y
    observed = s_x.mean(axis=-1) - s_y.mean(axis=-1)
    sd = np.sqrt(n * s.var(axis=-1, ddof=1) / (n_x * n_y))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, observed / np.where(sd > 0, sd, 1.0), 0.0)
    if alternative == "greater":
        p = ndtr(-z)
    elif alternative == "less":
        p = ndtr(z)
    else:
        p = 2.0 * ndtr(-np.abs(z))
    # every split gives the same difference: each is "at least as extreme"
    return np.where(sd > 0, p, 1.0)


def permutation_test(s_x, s_y, *, alternative: str = "greater",
                     n_permutations: int | None = None, exact_limit: int | None = None,
                     seed=None, normal_min: float | None = None) -> PermutationTest:
    """Permutation p-value of the WEAT statistic, re-partitioning X ∪ Y without replacement.

    The statistic is the mean difference of s between the two sets; for the one-sided
    alternatives it orders splits exactly as Caliskan's sum statistic does, and for equal set
    sizes the two-sided test equals the test on ``|statistic|``. (With unequal sizes the sum
    statistic is not centred under re-partition, so the mean difference is the right one.)

    Parameters
    ----------
    s_x, s_y : array_like, shape (..., n_X) and (..., n_Y)
        Association values; leading axes are a batch sharing the same splits.
    alternative : {"greater", "less", "two-sided"}
    n_permutations : int, optional
        Monte Carlo splits when the exact count exceeds `exact_limit`
        (default ``defaults.n_permutations``).
    exact_limit : int, optional
        Largest number of splits enumerated exactly (default
        ``defaults.exact_permutation_limit``).
    seed : int or numpy.random.Generator, optional
        Seed of the Monte Carlo splits.
    normal_min : int, optional
        When the splits are not enumerated and both sets have at least this many members,
        p comes from :func:`normal_permutation_p` (default
        ``defaults.normal_permutation_min``; ``math.inf``: Monte Carlo at every size).

    Returns
    -------
    PermutationTest
        Exact: fraction of all splits at least as extreme (the observed split is one of them).
        Monte Carlo: ``(1 + #extreme) / (1 + n_permutations)``, so p is never 0.
        Normal: ``n_permutations`` is 0.
    """
    if alternative not in ALTERNATIVES:
        raise InvalidArgumentError(f"alternative must be one of {', '.join(ALTERNATIVES)}, "
                         f"got {alternative!r}")
    s_x, s_y = _check_s(s_x, s_y)
    n_x, n_y = s_x.shape[-1], s_y.shape[-1]
    batch = np.broadcast_shapes(s_x.shape[:-1], s_y.shape[:-1])
    s_x = np.broadcast_to(s_x, batch + (n_x,))
    s_y = np.broadcast_to(s_y, batch + (n_y,))
    s = np.concatenate([s_x, s_y], axis=-1)
    total = s.sum(axis=-1, keepdims=True)
    observed = s_x.mean(axis=-1) - s_y.mean(axis=-1)
    # tolerance so that the observed split counts as "at least as extreme" despite rounding
    tol = 1e-9 * (np.abs(s).max(axis=-1) + 1e-300)
    count = np.zeros(observed.shape)
    exact_limit = defaults.exact_permutation_limit if exact_limit is None else exact_limit
    exact = n_splits(n_x, n_y) <= exact_limit
    if normal_min is None:
        normal_min = defaults.normal_permutation_min
    if not exact and normal_min is not None and min(n_x, n_y) >= normal_min:
        p = normal_permutation_p(s_x, s_y, alternative)
        return PermutationTest(float(p) if p.ndim == 0 else p, 0, False, alternative,
                               "normal")
    if alternative == "greater":
        bound = observed[..., None] - tol[..., None]
    elif alternative == "less":
        bound = observed[..., None] + tol[..., None]
    else:
        bound = np.abs(observed)[..., None] - tol[..., None]
    # splits in blocks whose (batch, split) arrays stay in the CPU cache
    block = max(1, _BLOCK_CELLS // max(1, math.prod(batch)))
    drawn = 0
    for chunk in split_indicators(n_x, n_y, n_permutations=n_permutations,
                                  exact_limit=exact_limit, rng=seed):
        for start in range(0, chunk.shape[0], block):
            ind = chunk[start:start + block]
            sum_x = s @ ind.T  # (..., k)
            diff = sum_x / n_x
            rest = total - sum_x
            rest /= n_y
            diff -= rest  # sum_x / n_x - (total - sum_x) / n_y
            if alternative == "less":
                hit = diff <= bound
            else:
                if alternative == "two-sided":
                    np.abs(diff, out=diff)
                hit = diff >= bound
            count += hit.sum(axis=-1)
        drawn += chunk.shape[0]
    p = count / drawn if exact else (count + 1.0) / (drawn + 1.0)
    if p.ndim == 0:
        p = float(p)
    return PermutationTest(p, int(drawn), bool(exact), alternative,
                           "exact" if exact else "monte-carlo")


def bootstrap_effect_size(sim_a, sim_b, n_x: int, *, n_bootstrap: int = 2000,
                          sd: str = "sample", seed=None, chunk: int = 2000) -> np.ndarray:
    """Bootstrap draws of the effect size, resampling targets and attributes.

    Parameters
    ----------
    sim_a, sim_b : array_like, shape (n_X + n_Y, n_A) and (n_X + n_Y, n_B)
        Similarities of the targets (X first, then Y) with A and with B.
    n_x : int
        Number of X words (the first rows).
    n_bootstrap : int
    sd : {"sample", "population"}
    seed : int or numpy.random.Generator, optional

    Returns
    -------
    ndarray, shape (n_bootstrap,)
        NaN for resamples whose pooled sd is zero (e.g. one word drawn every time).
    """
    sim_a = np.asarray(sim_a, dtype=np.float64)
    sim_b = np.asarray(sim_b, dtype=np.float64)
    rng = np.random.default_rng(seed)
    n, n_a = sim_a.shape
    n_b = sim_b.shape[1]
    n_y = n - n_x
    if n_x < 1 or n_y < 1:
        raise InputDataError("both target sets need at least one word")
    out = np.empty(n_bootstrap)
    done = 0
    while done < n_bootstrap:
        k = min(chunk, n_bootstrap - done)
        w_a = bootstrap_weights(rng, n_a, k)  # (k, n_A)
        w_b = bootstrap_weights(rng, n_b, k)
        s = w_a @ sim_a.T - w_b @ sim_b.T  # (k, n)
        ix = bootstrap_indices(rng, n_x, k)
        iy = n_x + bootstrap_indices(rng, n_y, k)
        out[done:done + k] = effect_size(np.take_along_axis(s, ix, axis=1),
                                         np.take_along_axis(s, iy, axis=1), sd=sd)
        done += k
    return out


# --------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------
@dataclass
class WeatResult:
    """A WEAT result that states every convention behind its numbers."""

    effect_size: float
    statistic: float
    mean_difference: float
    p_value: float
    alternative: str
    sd_convention: str
    n_permutations: int
    permutation: str  # "exact", "monte-carlo" or "normal"
    seed: int | None
    sizes: dict
    names: dict
    association: dict = field(default_factory=dict)
    ci: tuple[float, float] | None = None
    ci_prob: float | None = None
    ci_kind: str | None = None
    n_bootstrap: int = 0
    n_bootstrap_degenerate: int = 0
    dropped: dict = field(default_factory=dict)
    source: str = ""
    #: The test's name in the output (``"WEAT"``; ``"SEAT"`` for sentence sets).
    test: str = "WEAT"

    @property
    def exact(self) -> bool:
        """Whether the p-value enumerates every split."""
        return self.permutation == "exact"

    def to_dict(self) -> dict:
        """Plain-Python dict (JSON-ready)."""
        d = asdict(self)
        d[DROPPED_KEY] = d.pop("dropped")
        d["ci"] = list(self.ci) if self.ci is not None else None
        d["sd_description"] = _SD_LABEL[self.sd_convention]
        d["statistic_description"] = ("sum of s(x, A, B) over X minus sum of s(y, A, B) "
                                      "over Y (Caliskan et al. 2017)")
        d["p_value_description"] = self.p_value_description
        d["p_text"] = self.p_text
        return d

    @property
    def p_text(self) -> str:
        """The p-value as printed, with its sidedness: e.g. ``"p < 0.001 (two-sided)"``.

        Below what the test resolves it is a bound (:func:`bayesbias.reconcile.format_p`).
        """
        from ..verdicts.reconcile import p_text

        return p_text(self)

    @property
    def p_value_description(self) -> str:
        """One sentence on how the p-value was obtained."""
        if self.permutation == "normal":
            how = ("Normal approximation to the distribution over all splits of X ∪ Y (its "
                   "exact mean and variance; sets of thousands of words)")
        else:
            how = (f"exact over all {self.n_permutations} splits of X ∪ Y" if self.exact else
                   f"Monte Carlo over {self.n_permutations} random splits of X ∪ Y without "
                   f"replacement, (1 + hits) / (1 + n), seed {self.seed}")
        return f"{self.alternative} permutation test, {how}"

    def to_frame(self) -> pd.DataFrame:
        """One tidy row: effect size, statistic, p-value and interval."""
        import pandas as pd

        return pd.DataFrame([{
            "X": self.names.get("X"), "Y": self.names.get("Y"), "A": self.names.get("A"),
            "B": self.names.get("B"), "effect_size": self.effect_size,
            "statistic": self.statistic, "p_value": self.p_value, "p": self.p_text,
            "alternative": self.alternative, "permutation": self.permutation,
            "n_permutations": self.n_permutations,
            "ci_lower": self.ci[0] if self.ci else np.nan,
            "ci_upper": self.ci[1] if self.ci else np.nan, "ci_prob": self.ci_prob,
            "ci_kind": self.ci_kind, "sd_convention": self.sd_convention}])

    def __str__(self) -> str:
        n = self.names
        lines = [
            f"{self.test} {n.get('X', 'X')} vs {n.get('Y', 'Y')} / {n.get('A', 'A')} vs "
            f"{n.get('B', 'B')} ({self.sizes['X']}+{self.sizes['Y']} targets, "
            f"{self.sizes['A']}+{self.sizes['B']} attributes)",
            f"  effect size d = {self.effect_size:.4f} ({_SD_LABEL[self.sd_convention]})",
            f"  statistic     = {self.statistic:.6f}",
            f"  {self.p_text}; {self.p_value_description}",
        ]
        if self.ci is not None:
            lines.append(f"  {self.ci_prob:.0%} bootstrap interval for d: "
                         f"[{self.ci[0]:.3f}, {self.ci[1]:.3f}] ({self.n_bootstrap} resamples of "
                         "targets and attributes"
                         + (f", {self.n_bootstrap_degenerate} degenerate dropped"
                            if self.n_bootstrap_degenerate else "") + ")")
        if dropped_line(self.dropped):
            lines.append("  " + dropped_line(self.dropped))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return _weat_html(self)

    def __repr__(self) -> str:
        return _weat_repr(self)


def weat_from_similarities(sim_xa, sim_xb, sim_ya, sim_yb, *, alternative: str = "greater",
                           sd: str = "sample", n_permutations: int | None = None,
                           exact_limit: int | None = None, seed: int | None = None,
                           bootstrap: int = 0, ci_prob: float | None = None,
                           words: Mapping[str, Sequence[str]] | None = None,
                           names: Mapping[str, str] | None = None,
                           dropped: Mapping | None = None, source: str = "") -> WeatResult:
    """WEAT from the four blocks of cosine similarities.

    Parameters
    ----------
    sim_xa, sim_xb, sim_ya, sim_yb : array_like
        Similarities of X with A (n_X, n_A), X with B, Y with A and Y with B.
    alternative : {"greater", "less", "two-sided"}
    sd : {"sample", "population"}
    n_permutations, exact_limit : int, optional
        See :func:`permutation_test`.
    seed : int, optional
        Seed of the Monte Carlo splits and the bootstrap (default ``defaults.seed``).
    bootstrap : int
        Number of bootstrap resamples for an interval on the effect size (0: none).
    ci_prob : float, optional
        Probability of the equal-tailed bootstrap interval (default ``defaults.ci_prob``).
    words, names, dropped, source
        Labels carried into the result.
    """
    _ddof(sd)
    sim_xa, sim_xb, sim_ya, sim_yb = (np.asarray(m, dtype=np.float64)
                                      for m in (sim_xa, sim_xb, sim_ya, sim_yb))
    for label, m in (("X-A", sim_xa), ("X-B", sim_xb), ("Y-A", sim_ya), ("Y-B", sim_yb)):
        if m.ndim != 2 or 0 in m.shape:
            raise InputDataError(f"similarity block {label} must be a non-empty 2-d array")
        if not np.isfinite(m).all():
            raise InputDataError(f"similarity block {label} has non-finite values")
    seed = defaults.seed if seed is None else int(seed)
    s_x = association(sim_xa, sim_xb)
    s_y = association(sim_ya, sim_yb)
    ss = np.random.SeedSequence(seed)
    perm_seed, boot_seed = ss.spawn(2)
    test = permutation_test(s_x, s_y, alternative=alternative, n_permutations=n_permutations,
                            exact_limit=exact_limit, seed=np.random.default_rng(perm_seed))
    d = float(effect_size(s_x, s_y, sd=sd))
    if not np.isfinite(d):  # never a p-value for an undefined statistic
        raise InputDataError(
            "the effect size is undefined: every target has the same association with A "
            "and B (are all the vectors equal, e.g. from an encoder that knows no word?)")
    ci = None
    n_degenerate = 0
    if bootstrap:
        ci_prob = validate_ci_prob(defaults.ci_prob if ci_prob is None else ci_prob)
        draws = bootstrap_effect_size(np.vstack([sim_xa, sim_ya]), np.vstack([sim_xb, sim_yb]),
                                      len(s_x), n_bootstrap=int(bootstrap), sd=sd,
                                      seed=np.random.default_rng(boot_seed))
        n_degenerate = int(np.isnan(draws).sum())
        ci = percentile_interval(draws, ci_prob)
    words = words or {}
    assoc = {}
    for key, vals in (("X", s_x), ("Y", s_y)):
        labels = words.get(key) or [f"{key}{i}" for i in range(len(vals))]
        assoc.update({str(w): float(v) for w, v in zip(labels, vals, strict=True)})
    return WeatResult(
        effect_size=d,
        statistic=float(sum_statistic(s_x, s_y)),
        mean_difference=float(mean_difference(s_x, s_y)),
        p_value=float(test.p_value),
        alternative=alternative,
        sd_convention=sd,
        n_permutations=test.n_permutations,
        permutation=test.method,
        seed=None if test.method != "monte-carlo" and not bootstrap else seed,
        sizes={"X": sim_xa.shape[0], "Y": sim_ya.shape[0], "A": sim_xa.shape[1],
               "B": sim_xb.shape[1]},
        names=dict(names or {"X": "X", "Y": "Y", "A": "A", "B": "B"}),
        association=assoc,
        ci=ci,
        ci_prob=ci_prob if bootstrap else None,
        ci_kind="bootstrap" if bootstrap else None,
        n_bootstrap=int(bootstrap),
        n_bootstrap_degenerate=n_degenerate,
        dropped={k: list(v) for k, v in (dropped or {}).items()},
        source=source,
    )


# --------------------------------------------------------------------------------------
# Word layer
# --------------------------------------------------------------------------------------
def resolve_weat_sets(wordlist_or_sets) -> WeatSets:
    """Turn a word list, its name, a :class:`WeatSets`, a mapping or a 4-tuple into sets.

    Raises
    ------
    WordListError
        Empty sets, words repeated within a set, or words in both X and Y.
    """
    obj = wordlist_or_sets
    if isinstance(obj, str):
        key = obj.replace("_", "").replace("-", "").lower()
        obj = load_wordlist(key if key in available_wordlists() else obj)
    if isinstance(obj, WordList):
        sets = obj.weat_sets()
    elif isinstance(obj, WeatSets):
        sets = obj
    elif isinstance(obj, Mapping):
        try:
            sets = WeatSets(*(tuple(obj[k]) for k in "XYAB"),
                            **({"names": tuple(obj["names"])} if "names" in obj else {}))
        except KeyError as exc:
            raise WordListError(f"WEAT sets need keys X, Y, A, B; missing {exc}") from None
    elif isinstance(obj, Sequence) and len(obj) == 4:
        sets = WeatSets(*(tuple(s) for s in obj))
    else:
        raise WordListError("give a two-class WordList, its name, WeatSets, a mapping with "
                            f"keys X, Y, A, B or four word sequences; got {type(obj).__name__}")
    for key in "XYAB":
        words = getattr(sets, key)
        if isinstance(words, str):
            raise WordListError(f"set {key} must be a sequence of words, not a string")
        if not words:
            raise WordListError(f"WEAT set {key} is empty")
        dupes = sorted({w for w in words if words.count(w) > 1})
        if dupes:
            raise WordListError(f"WEAT set {key} repeats word(s) {', '.join(dupes)}")
    both = sorted(set(sets.X) & set(sets.Y))
    if both:
        raise WordListError(f"word(s) in both target sets X and Y: {', '.join(both)}")
    return sets


def weat(embedding: Embedding, wordlist_or_sets, *, on_missing: str = "error",
         alternative: str = "greater", sd: str = "sample", n_permutations: int | None = None,
         exact_limit: int | None = None, seed: int | None = None, bootstrap: int = 0,
         ci_prob: float | None = None) -> WeatResult:
    """Run WEAT on an embedding.

    Parameters
    ----------
    embedding : Embedding
    wordlist_or_sets : WordList, str, WeatSets, mapping or 4-tuple
        A two-class word list (X, Y = protected words, A, B = stereotypes of the two
        classes), the name of a shipped one (``"weat7"``) or explicit X, Y, A, B.
    on_missing : {"error", "drop"}
        Words not in the embedding: raise :class:`~bayesbias.errors.OutOfVocabularyError`,
        or drop them and list them in ``result.dropped``.
    alternative, sd, n_permutations, exact_limit, seed, bootstrap, ci_prob
        See :func:`weat_from_similarities`.

    Returns
    -------
    WeatResult
    """
    embedding = as_embedding(embedding)
    sets = resolve_weat_sets(wordlist_or_sets)
    parts = {"X": sets.X, "Y": sets.Y, "A": sets.A, "B": sets.B}
    kept, missing = lookup(embedding, parts, on_missing)
    empty = [k for k, v in kept.items() if not v]
    if empty:
        raise WordListError(f"WEAT set(s) {', '.join(empty)} empty after dropping words "
                            f"missing from {embedding.source}")
    targets = list(kept["X"]) + list(kept["Y"])
    from ..inputs.distances import cosine_similarity_matrix

    t = embedding.matrix(targets)
    sim_a = cosine_similarity_matrix(t, embedding.matrix(kept["A"]))
    sim_b = cosine_similarity_matrix(t, embedding.matrix(kept["B"]))
    n_x = len(kept["X"])
    names = dict(zip("XYAB", sets.names, strict=True))
    return weat_from_similarities(
        sim_a[:n_x], sim_b[:n_x], sim_a[n_x:], sim_b[n_x:], alternative=alternative, sd=sd,
        n_permutations=n_permutations, exact_limit=exact_limit, seed=seed,
        bootstrap=bootstrap, ci_prob=ci_prob, words=kept, names=names,
        dropped={k: v for k, v in missing.items() if v}, source=embedding.source)


def weat_from_table(table: pd.DataFrame, classes: Sequence[str] | None = None, **kwargs
                    ) -> WeatResult:
    """Run WEAT on a long distance table (e.g. the published ``weat_1`` / ``weat_7`` tables).

    X and Y are the protected words of the two classes, A and B the attributes whose
    ``attribute_class`` is the first and second class (connections associated/different).

    Parameters
    ----------
    table : pandas.DataFrame
        Columns of :data:`bayesbias.distances.COLUMNS`.
    classes : pair of str, optional
        The two protected classes in X, Y order (default: order of first appearance).
    **kwargs
        Passed to :func:`weat_from_similarities`.
    """
    from ..inputs.distances import single_embedding

    table = single_embedding(table, "WEAT")  # several embeddings: refused, not mixed
    stereo = table.loc[table["connection"].isin(["associated", "different"])]
    found = [str(c) for c in stereo["protected_class"].drop_duplicates()]
    classes = list(classes) if classes is not None else found
    if len(classes) != 2 or not set(classes) <= set(found):
        raise DistanceTableError(
            f"WEAT needs two protected classes; the table has {', '.join(found) or 'none'}"
            + (f", asked for {', '.join(classes)}" if classes != found else ""))
    sim = stereo.pivot_table(index="protected_word", columns="attribute",
                             values="cosine_similarity", aggfunc="first")
    # words in order of first appearance, each with the class of its first row
    words = stereo.drop_duplicates("protected_word")
    attrs = stereo.drop_duplicates("attribute")
    w_class = words["protected_class"].astype(str).to_numpy()
    a_class = attrs["attribute_class"].astype(str).to_numpy()
    x, y = (words["protected_word"].to_numpy()[w_class == c].tolist() for c in classes)
    a, b = (attrs["attribute"].to_numpy()[a_class == c].tolist() for c in classes)
    empty = [k for k, v in zip("XYAB", (x, y, a, b), strict=True) if not v]
    if empty:
        raise DistanceTableError(
            f"WEAT set(s) {', '.join(empty)} of classes {classes[0]!r} / {classes[1]!r} have no "
            "words in the distance table (X, Y: protected words; A, B: stereotypes)")
    block = sim.loc[x + y, a + b]
    if block.isna().any().any():
        gaps = block.isna().stack()
        first = gaps[gaps].index[0]
        raise DistanceTableError(
            f"distance table lacks {int(gaps.sum())} (protected word, attribute) pair(s) "
            f"needed for WEAT, first {list(first)}")
    m = block.to_numpy(dtype=np.float64)
    n_x, n_a = len(x), len(a)
    kwargs.setdefault("names", {"X": classes[0], "Y": classes[1],
                                "A": f"{classes[0]} attributes", "B": f"{classes[1]} attributes"})
    kwargs.setdefault("dropped", table.attrs.get("missing", {}))
    kwargs.setdefault("source", str(table.attrs.get("source", "<table>")))
    return weat_from_similarities(m[:n_x, :n_a], m[:n_x, n_a:], m[n_x:, :n_a], m[n_x:, n_a:],
                                  words={"X": x, "Y": y, "A": a, "B": b}, **kwargs)


def weat_class_pairs(table: pd.DataFrame, **kwargs) -> list[tuple[tuple[str, str], WeatResult]]:
    """WEAT for every pair of protected classes of a distance table.

    For classes (x, y), X and Y are their protected words and A and B their stereotypes; a
    two-class table gives one result. `kwargs` go to :func:`weat_from_similarities`.
    """
    from ..inputs.distances import n_embeddings

    stereo = table.loc[table["connection"].isin(["associated", "different"])]
    classes = [str(c) for c in stereo["protected_class"].drop_duplicates()]
    # WEAT reads only the stereotype rows of a pair: taken from those (a third of a big
    # table) rather than from every row, unless a table of several embeddings is to be
    # refused per pair as :func:`weat_from_table` refuses it
    rows = stereo if "embedding" not in table.columns or n_embeddings(table) < 2 else table
    results = []
    for x, y in itertools.combinations(classes, 2):
        pair = rows.loc[rows["protected_class"].isin([x, y])
                        & rows["attribute_class"].isin([x, y])]
        results.append(((x, y), weat_from_table(pair, classes=(x, y), **kwargs)))
    return results


# -- how it shows itself (the card kit: bayesbias.display) --------------------


def _weat_title(r) -> str:
    n = r.names
    return (f"{r.test} {n.get('X', 'X')} vs {n.get('Y', 'Y')} / {n.get('A', 'A')} vs "
            f"{n.get('B', 'B')}")


def _weat_html(r) -> str:
    """HTML card of a :class:`~bayesbias.comparators.weat.WeatResult` (or SEAT result)."""
    s = r.sizes
    lines = [f"statistic {r.statistic:.6f}; {r.p_value_description}"]
    if r.ci is not None:
        lines.append(f"{r.ci_prob:.0%} bootstrap interval for d: [{r.ci[0]:.3f}, "
                     f"{r.ci[1]:.3f}] ({r.n_bootstrap} resamples of targets and attributes)")
    dropped = {k: v for k, v in r.dropped.items() if v}
    notes = [f"dropped (not in the embedding) {k}: {', '.join(v)}" for k, v in dropped.items()]
    if r.source:
        notes.append(f"source: {r.source}")
    return card(_weat_title(r), f"{s['X']}+{s['Y']} targets, {s['A']}+{s['B']} attributes",
                f"effect size d = {r.effect_size:.3f}, {r.p_text}", lines, notes=notes)


def _weat_repr(r) -> str:
    """Short repr of a WeatResult."""
    ci = f", {r.ci_prob:.0%} CI [{r.ci[0]:.3f}, {r.ci[1]:.3f}]" if r.ci is not None else ""
    return f"<{type(r).__name__} {_weat_title(r)}: d = {r.effect_size:.3f}, {r.p_text}{ci}>"

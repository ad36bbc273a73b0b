"""Recoverability: is the bias gone from the geometry, or only hidden from WEAT.

Gonen & Goldberg (2019) showed that hard-debiased embeddings still carry the protected
classes: k-means on the most biased words splits them by class, a classifier recovers the
class from the vectors, and a word's neighbours give its class away. Each test here gives
a number, an interval and a null band:

- :func:`cluster_alignment`: k-means (k = number of classes) on the words; alignment is
  the share of words whose cluster matches their class under the best one-to-one matching
  (for two classes ``max(acc, 1 - acc)``, Wang et al. 2020). Interval: percentile
  bootstrap over words (k-means refitted on each resample). Null band: the same clusters
  against permuted class labels ("no structure").
- :func:`classifier_recovery`: cross-validated accuracy of a linear (logistic regression)
  or non-linear (RBF-kernel SVM, or a one-hidden-layer ReLU MLP as Ravfogel et al. 2020)
  classifier. Interval: the equal-tailed Jeffreys Beta posterior of the pooled
  out-of-fold accuracy (``Beta(k + 1/2, n - k + 1/2)``; it treats the n out-of-fold
  predictions as independent). Null band: the cross-validated accuracy with permuted
  labels (chance, including what the classifier can fit to noise).
- :func:`neighbour_bias`: for each word, the share of its `k` nearest neighbours (cosine,
  among the labelled words) of the same class, with a Jeffreys interval; overall, their
  mean with a percentile bootstrap over words; the null band permutes the labels.

The words and their classes are fixed on the embedding *before* debiasing
(:func:`bayesbias.debias.biased_words`) and the tests are run on the vectors after.
:func:`recoverability` runs all of them on an embedding.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from ..errors import InputDataError, InvalidArgumentError
from ..inputs.debias import _alignment, biased_words, one_thread
from ..inputs.embeddings import as_embedding
from ..inputs.wordlists import load_wordlist
from ..intervals import percentile_interval, tail_probabilities
from ..validation import validate_choice

__all__ = ["RecoverabilityResult", "RecoverabilityTable", "cluster_alignment",
           "classifier_recovery", "neighbour_bias", "recoverability", "hidden_or_removed",
           "plot_debiasing", "debiasing_frame", "TESTS", "MODELS"]

log = logging.getLogger(__name__)

#: Classifiers of :func:`classifier_recovery`.
MODELS = ("linear", "rbf", "mlp")
#: Tests of :func:`recoverability`, in table order.
TESTS = ("alignment", "linear", "rbf", "neighbours")
_TEST_NAMES = {"alignment": "cluster alignment", "linear": "linear classifier accuracy",
               "rbf": "RBF-SVM accuracy", "mlp": "MLP accuracy",
               "neighbours": "same-class neighbour share"}


@dataclass
class RecoverabilityResult:
    """One recoverability test: value, interval and null band.

    Attributes
    ----------
    test : str
    value : float
    lower, upper : float
        The interval (`ci_prob`, `ci_kind`).
    null_lower, null_upper, null_mean : float
        The central `ci_prob` of the null distribution, and its mean.
    p_value : float
        Share of null draws at or above `value` (with the ``+1`` correction).
    n : int
        Words.
    details : dict
        Per-word values (neighbours), folds, settings.
    """

    test: str
    value: float
    lower: float
    upper: float
    null_lower: float
    null_upper: float
    null_mean: float
    p_value: float
    ci_prob: float
    ci_kind: str
    n: int
    null_kind: str
    details: dict = field(default_factory=dict)

    @property
    def reading(self) -> str:
        """Read the result against its null band.

        ``"recoverable"`` (interval above the band), ``"at chance"`` (value inside it) or
        ``"unclear"``.
        """
        if self.lower > self.null_upper:
            return "recoverable"
        if self.null_lower <= self.value <= self.null_upper:
            return "at chance"
        return "unclear"

    def to_dict(self) -> dict:
        """Plain dict (JSON-ready), with `reading`."""
        out = asdict(self)
        out["reading"] = self.reading
        out["details"] = {k: v for k, v in self.details.items() if k != "per_word"}
        return out

    def __str__(self) -> str:
        return (f"{_TEST_NAMES.get(self.test, self.test)}: {self.value:.3f} "
                f"[{self.lower:.3f}, {self.upper:.3f}] ({self.ci_kind} {self.ci_prob:.0%}); "
                f"null {self.null_kind} [{self.null_lower:.3f}, {self.null_upper:.3f}]; "
                f"{self.reading}")


def _rng(seed):
    return np.random.default_rng(seed)


def _jeffreys(k, n, lo_q, hi_q):
    """Equal-tailed Jeffreys interval, with the ends at 0 (k = 0) and 1 (k = n)."""
    from scipy.stats import beta

    k = np.asarray(k, dtype=float)
    lo = np.where(k == 0, 0.0, beta.ppf(lo_q, k + 0.5, n - k + 0.5))
    hi = np.where(k == n, 1.0, beta.ppf(hi_q, k + 0.5, n - k + 0.5))
    return lo, hi


def _check(x, labels, normalize=True):
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or not len(x):
        raise InputDataError(f"vectors must be a non-empty 2-d array, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise InputDataError("vectors contain NaN or infinite values")
    classes, codes = np.unique(np.asarray(labels), return_inverse=True)
    if codes.shape[0] != x.shape[0]:
        raise InputDataError(f"{x.shape[0]} vectors but {codes.shape[0]} labels")
    counts = np.bincount(codes)
    if len(classes) < 2 or counts.min() < 2:
        raise InputDataError(f"recoverability needs two or more classes of two or more words, "
                             f"got {dict(zip(map(str, classes), counts.tolist(), strict=True))}")
    if not normalize:
        return x, classes, codes
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise InputDataError("a vector is all zeros (no direction)")
    return x / norms, classes, codes


def _result(test, value, interval, null, ci_prob, ci_kind, n, null_kind, **details):
    lo, hi = percentile_interval(null, ci_prob)
    p = float((1 + np.sum(np.asarray(null) >= value - 1e-12)) / (1 + len(null)))
    return RecoverabilityResult(test, float(value), float(interval[0]), float(interval[1]),
                                lo, hi, float(np.mean(null)), p, ci_prob, ci_kind, n,
                                null_kind, details)


def cluster_alignment(x, labels, *, n_boot: int = 200, n_null: int = 1000,
                      ci_prob: float = 0.95, seed: int = 0, n_init: int = 4
                      ) -> RecoverabilityResult:
    """k-means alignment of `x` with `labels`, bootstrap interval and permutation null.

    Parameters
    ----------
    x : ndarray of shape (n, dim)
        Vectors (scaled to unit length here).
    labels : array-like of shape (n,)
    n_boot : int
        Bootstrap resamples of the words (k-means refitted on each).
    n_null : int
        Label permutations against the fitted clusters.
    seed : int
        Seeds k-means, the bootstrap and the permutations.

    Returns
    -------
    RecoverabilityResult
    """
    from sklearn.cluster import KMeans

    x, classes, codes = _check(x, labels)
    k = len(classes)
    rng = _rng(seed)
    with one_thread():
        clusters = KMeans(k, n_init=n_init, random_state=seed).fit(x).labels_
        value = _alignment(clusters, codes, k)
        boot = []
        for b in range(n_boot):
            idx = rng.integers(0, len(codes), len(codes))
            if len(np.unique(idx)) < k:
                continue
            cl = KMeans(k, n_init=n_init, random_state=seed + 1 + b).fit(x[idx]).labels_
            boot.append(_alignment(cl, codes[idx], k))
    null = [_alignment(clusters, rng.permutation(codes), k) for _ in range(n_null)]
    interval = percentile_interval(boot, ci_prob) if boot else (value, value)
    return _result("alignment", value, interval, null, ci_prob, "bootstrap", len(codes),
                   "label permutation", n_boot=n_boot, n_null=n_null,
                   classes=[str(c) for c in classes])


def _classifier(model: str, seed: int):
    if model == "linear":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(max_iter=2000)
    if model == "rbf":
        from sklearn.svm import SVC

        return SVC(kernel="rbf", C=1.0, gamma="scale")
    from sklearn.neural_network import MLPClassifier

    return MLPClassifier(hidden_layer_sizes=(100,), max_iter=500, random_state=seed)


def _cv_accuracy(x, codes, model, folds, seed) -> float:
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    cv = StratifiedKFold(folds, shuffle=True, random_state=seed)
    with warnings.catch_warnings(), one_thread():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pred = cross_val_predict(_classifier(model, seed), x, codes, cv=cv)
    return int(np.sum(pred == codes))


def classifier_recovery(x, labels, model: str = "linear", *, folds: int = 5, n_null: int = 20,
                        ci_prob: float = 0.95, seed: int = 0) -> RecoverabilityResult:
    """Cross-validated accuracy of predicting the class from the vectors.

    Parameters
    ----------
    x : ndarray of shape (n, dim)
        Vectors as given (not scaled: scaling to unit length is itself non-linear and
        could carry the class after a linear erasure).
    labels : array-like of shape (n,)
    model : {"linear", "rbf", "mlp"}
        Logistic regression, an RBF-kernel SVM (C = 1, gamma "scale"), or a
        one-hidden-layer (100 ReLU units) MLP.
    folds : int
        Stratified folds (shuffled with `seed`).
    n_null : int
        Label permutations, each cross-validated like the real labels: the null band.
    seed : int

    Returns
    -------
    RecoverabilityResult
        Interval: the Jeffreys Beta posterior of the pooled out-of-fold accuracy.
    """
    validate_choice(model, MODELS, "model")
    x, classes, codes = _check(x, labels, normalize=False)
    if np.bincount(codes).min() < folds:
        raise InputDataError(f"a class has fewer words ({np.bincount(codes).min()}) than the "
                             f"{folds} cross-validation folds")
    n = len(codes)
    k = _cv_accuracy(x, codes, model, folds, seed)
    lo_q, hi_q = tail_probabilities(ci_prob)
    interval = [float(v) for v in _jeffreys(k, n, lo_q, hi_q)]
    rng = _rng(seed)
    null = [_cv_accuracy(x, rng.permutation(codes), model, folds, seed) / n
            for _ in range(n_null)]
    return _result(model, k / n, interval, null, ci_prob, "beta posterior", n,
                   "label permutation", correct=k, folds=folds, n_null=n_null,
                   majority=float(np.bincount(codes).max() / n),
                   classes=[str(c) for c in classes])


def neighbour_bias(x, labels, words=None, *, k: int | None = None, n_boot: int = 1000,
                   n_null: int = 1000, ci_prob: float = 0.95, seed: int = 0
                   ) -> RecoverabilityResult:
    """Measure the share of each word's `k` nearest neighbours of its own class.

    Neighbours by cosine, among the labelled words; per word and overall.

    Parameters
    ----------
    x : ndarray of shape (n, dim)
    labels : array-like of shape (n,)
    words : sequence of str, optional
        Names of the rows, for the per-word table (``details["per_word"]``).
    k : int, optional
        Neighbours per word (default ``min(100, n // 4)``).
    n_boot, n_null : int
        Bootstrap resamples of the words; label permutations with the neighbours fixed.

    Returns
    -------
    RecoverabilityResult
        ``details["per_word"]``: a frame of each word's share and Jeffreys interval.
    """
    x, classes, codes = _check(x, labels)
    n = len(codes)
    k = min(100, n // 4) if k is None else int(k)
    if not 1 <= k < n:
        raise InvalidArgumentError(f"k must be between 1 and {n - 1} (the other words), got {k}")
    sims = x @ x.T
    np.fill_diagonal(sims, -np.inf)
    nbrs = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    same = (codes[nbrs] == codes[:, None]).sum(axis=1)
    share = same / k
    value = float(share.mean())
    rng = _rng(seed)
    boot = [share[rng.integers(0, n, n)].mean() for _ in range(n_boot)]
    null = []
    for _ in range(n_null):
        c = rng.permutation(codes)
        null.append(float((c[nbrs] == c[:, None]).mean()))
    lo_q, hi_q = tail_probabilities(ci_prob)
    per_word = pd.DataFrame({
        "word": list(words) if words is not None else np.arange(n),
        "class": classes[codes].astype(str), "share": share,
        "lower": _jeffreys(same, k, lo_q, hi_q)[0],
        "upper": _jeffreys(same, k, lo_q, hi_q)[1]})
    return _result("neighbours", value, percentile_interval(boot, ci_prob), null, ci_prob,
                   "bootstrap", n, "label permutation", k=k, per_word=per_word,
                   classes=[str(c) for c in classes])


@dataclass
class RecoverabilityTable:
    """The recoverability tests of one embedding (see :func:`recoverability`)."""

    source: str
    wordlist: str
    n_per_class: int
    results: list[RecoverabilityResult]
    words: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    def __getitem__(self, test: str) -> RecoverabilityResult:
        for r in self.results:
            if r.test == test:
                return r
        raise KeyError(test)

    @property
    def recovered(self) -> list[str]:
        """Tests whose interval lies above their null band."""
        return [r.test for r in self.results if r.reading == "recoverable"]

    def to_frame(self) -> pd.DataFrame:
        """One row per test: value, interval, null band, p, reading."""
        return pd.DataFrame([{"test": r.test, "value": r.value, "ci_lower": r.lower,
                              "ci_upper": r.upper, "null_lower": r.null_lower,
                              "null_upper": r.null_upper, "p_value": r.p_value,
                              "ci_kind": r.ci_kind, "ci_prob": r.ci_prob, "n": r.n,
                              "reading": r.reading} for r in self.results])

    def to_dict(self) -> dict:
        """Plain dict (JSON-ready)."""
        return {"source": self.source, "wordlist": self.wordlist,
                "n_per_class": self.n_per_class,
                "results": [r.to_dict() for r in self.results]}

    def __str__(self) -> str:
        head = (f"recoverability of {self.wordlist!r} classes in {self.source} "
                f"({self.n_per_class} most biased words per class)")
        return "\n".join([head] + [f"  {r}" for r in self.results])


def recoverability(embedding, wordlist, *, original=None, n_per_class: int = 500,
                   tests=TESTS, within: int | None = None, words=None, labels=None,
                   ci_prob: float = 0.95, seed: int = 0, n_boot: int = 200,
                   n_null: int = 1000, n_null_classifier: int = 20, k: int | None = None
                   ) -> RecoverabilityTable:
    """Run the recoverability tests on `embedding` for the classes of `wordlist`.

    Parameters
    ----------
    embedding : Embedding
        The embedding to test (e.g. a debiased one).
    wordlist : WordList or str
    original : Embedding, optional
        The embedding before debiasing: the `n_per_class` most biased words per class and
        their classes are chosen there (:func:`bayesbias.debias.biased_words`). Default:
        `embedding` itself.
    n_per_class : int
    tests : sequence of {"alignment", "linear", "rbf", "mlp", "neighbours"}
    within : int, optional
        Rank biased words among the first `within` rows only.
    words, labels : optional
        Use these words and classes instead of choosing them.
    ci_prob, seed, n_boot, n_null, n_null_classifier, k
        Interval probability; seed; bootstrap resamples (alignment; neighbours use
        ``5 * n_boot``); permutations for alignment and neighbours; permutations for the
        classifiers; neighbours per word.

    Returns
    -------
    RecoverabilityTable
    """
    for t in tests:
        validate_choice(t, ("alignment", "linear", "rbf", "mlp", "neighbours"), "test")
    embedding = as_embedding(embedding)
    wl = load_wordlist(wordlist)
    if words is None:
        words, labels = biased_words(as_embedding(original) if original is not None
                                     else embedding, wl, n_per_class, within=within)
    missing = [w for w in words if w not in embedding]
    if missing:
        raise InputDataError(f"{len(missing)} test word(s) not in {embedding.source}: "
                             + ", ".join(missing[:20]))
    x = embedding.matrix(words)
    labels = np.asarray(labels)
    results = []
    for t in tests:
        log.info("recoverability: %s on %s", t, embedding.source)
        if t == "alignment":
            results.append(cluster_alignment(x, labels, n_boot=n_boot, n_null=n_null,
                                             ci_prob=ci_prob, seed=seed))
        elif t == "neighbours":
            results.append(neighbour_bias(x, labels, words, k=k, n_boot=5 * n_boot,
                                          n_null=n_null, ci_prob=ci_prob, seed=seed))
        else:
            results.append(classifier_recovery(x, labels, t, n_null=n_null_classifier,
                                               ci_prob=ci_prob, seed=seed))
    return RecoverabilityTable(embedding.source, wl.name, n_per_class, results, list(words),
                               [str(c) for c in labels])


# -- the debiasing section of ``compare`` -------------------------------------------------
def hidden_or_removed(name: str, table: RecoverabilityTable, weat_sees_bias: bool | None,
                      verdict_before: str | None = None, verdict_after: str | None = None
                      ) -> str:
    """Answer "did this debiasing remove the bias, or only hide it from WEAT?" in a sentence.

    Parameters
    ----------
    name : str
        The method (row) named in the sentence.
    table : RecoverabilityTable
        Its recoverability tests (words fixed on the original embedding).
    weat_sees_bias : bool or None
        Whether WEAT still finds the stereotype (some class pair with two-sided p < 0.05)
        after debiasing; None if WEAT was not computed.
    verdict_before, verdict_after : str, optional
        The control-aware verdict codes (:class:`bayesbias.verdicts.Verdict`).
    """
    found = [_TEST_NAMES.get(t, t) for t in table.recovered]
    verdict = ""
    if verdict_before and verdict_after:
        verdict = (f"; the Bayesian verdict went from '{verdict_before}' to '{verdict_after}'"
                   if verdict_before != verdict_after
                   else f"; the Bayesian verdict stayed '{verdict_after}'")
    if not found:
        return (f"{name}: removed, as far as these tests can tell: no recoverability test "
                f"beats its null band{verdict}.")
    tests = ", ".join(found)
    if weat_sees_bias is False:
        return (f"{name}: hidden, not removed: WEAT no longer finds the stereotype, but "
                f"{tests} still recover the classes above chance{verdict}.")
    if weat_sees_bias is True:
        return (f"{name}: not removed: WEAT still finds the stereotype and {tests} still "
                f"recover the classes above chance{verdict}.")
    return f"{name}: not removed: {tests} still recover the classes above chance{verdict}."


def plot_debiasing(tables: dict, path=None):
    """Forest plot of the recoverability tests per method: interval, value, null band.

    Parameters
    ----------
    tables : dict of {str: RecoverabilityTable}
        Rows (methods) in order.
    path : str or Path, optional
        Save the figure (PNG) there.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    names = list(tables)
    tests = [r.test for r in next(iter(tables.values())).results]
    fig = Figure(figsize=(3.2 * len(tests), 0.45 * len(names) + 1.6))
    axes = fig.subplots(1, len(tests), sharey=True, squeeze=False)
    for ax_, test in zip(axes[0], tests, strict=True):
        for i, name in enumerate(names):
            r = tables[name][test]
            y = len(names) - 1 - i
            ax_.fill_betweenx([y - 0.35, y + 0.35], r.null_lower, r.null_upper, color="0.85",
                              label="null band" if i == 0 else None)
            # a bootstrap interval need not contain the value (k-means on resamples)
            ax_.hlines(y, r.lower, r.upper, color="C3" if r.reading == "recoverable" else "C0")
            ax_.plot(r.value, y, "o", color="C3" if r.reading == "recoverable" else "C0")
        ax_.set_title(_TEST_NAMES.get(test, test), fontsize=9)
        ax_.set_yticks(range(len(names)), names[::-1])
    axes[0][0].legend(loc="lower left", fontsize=7)
    fig.suptitle("Recoverability after debiasing (red: interval above the null band)",
                 fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def debiasing_frame(rows: list[dict]) -> pd.DataFrame:
    """Tabulate the debiasing section: one row per method, one column per test.

    Each test cell reads ``value [interval] null [band]``; then the verdict change, WEAT's
    smallest p and the answer. `rows` as built by ``bayesbias compare``.
    """
    out = []
    for row in rows:
        table = row["table"]
        rec = {"method": row["name"]}
        for r in table.results:
            rec[_TEST_NAMES.get(r.test, r.test)] = (
                f"{r.value:.3f} [{r.lower:.3f}, {r.upper:.3f}] null [{r.null_lower:.3f}, "
                f"{r.null_upper:.3f}]")
        rec["verdict"] = row.get("verdict_change", "")
        rec["WEAT min p"] = row.get("weat_min_p")
        rec["answer"] = row.get("answer", "")
        out.append(rec)
    return pd.DataFrame(out)

"""Embedding-bias metrics of the other toolkits, each with an interval and a null range.

One entry per metric in :data:`METRICS` (paper, definition, direction). :func:`embedding_metric`
computes one metric for two target sets X, Y, two attribute sets A, B and target pairs (a
word list gives them: protected words, stereotypes, and its definite sets), with

- a percentile **bootstrap interval** that resamples the target words, the attribute words
  and the pairs (``ci_kind="bootstrap"``), and
- its distribution under three **nulls** of :mod:`bayesbias.comparators.null` at the same
  list sizes (independent, hierarchical, resampled-neutral vectors), so that a reader sees
  what "no bias" gives for this metric at this list size.

:func:`metric_table` runs every metric (and WEAT-ES) on a word list, per pair of classes.

Which words go where (a word list with classes c1, c2): X, Y = the classes' protected
words; A, B = their stereotypes. RND, ECT, RIPA and direct bias take A ∪ B as their one
attribute (neutral-word) set, like the occupation lists of Garg et al. and Bolukbasi et al.;
RNSB trains its classifier on A (label 0) vs B (label 1) and scores X ∪ Y; RIPA and the
bias direction use the definite-set pairs (else X and Y zipped, which needs equal sizes).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import pandas as pd

from ..config import defaults, validate_ci_prob
from ..display import card
from ..errors import InputDataError, InvalidArgumentError, WordListError
from ..inputs import embeddings
from ..inputs.embeddings import Embedding, as_embedding, lookup
from ..inputs.wordlists import WordList, default_controls, load_wordlist
from ..plain import DROPPED_KEY, dropped_line, format_number, plain_number
from ..progress import progress
from ..resampling import bootstrap_indices, percentile_interval
from ..validation import MAX_RESAMPLES, validate_int
from . import bolukbasi, ect, ripa, rnd, rnsb
from .null import VECTOR_NULLS, VectorNull
from .weat import SD_CONVENTIONS, association, effect_size

__all__ = [
    "METRICS",
    "MetricInfo",
    "MetricSets",
    "MetricResult",
    "MetricTable",
    "metric_sets",
    "embedding_metric",
    "metric_table",
    "report_metrics",
    "compute_metric",
]


@dataclass(frozen=True)
class MetricInfo:
    """What a metric is: its paper, definition, and which values mean bias."""

    name: str
    title: str
    paper: str
    definition: str
    direction: str
    no_bias: float


METRICS: dict[str, MetricInfo] = {m.name: m for m in (
    MetricInfo("weat_es", "WEAT effect size", "Caliskan, Bryson & Narayanan 2017",
               "(mean_X s - mean_Y s) / sd of s over X ∪ Y, s(w) = mean cos(w, A) - mean "
               "cos(w, B)", "positive: X nearer A and Y nearer B (stereotype-consistent); "
               "0 = no bias", 0.0),
    MetricInfo("rnd", "Relative norm distance", "Garg, Schiebinger, Jurafsky & Zou 2018",
               "sum over attributes a of ||a - mean X|| - ||a - mean Y|| (Euclidean; "
               "distance='cosine' is a labelled variant)",
               "negative: attributes nearer X; positive: nearer Y; 0 = no bias", 0.0),
    MetricInfo("rnsb", "Relative negative sentiment bias", "Sweeney & Najafian 2019",
               "KL divergence from uniform of p_i / sum p, p_i = P(B | t_i) of a logistic "
               "regression trained on A (0) vs B (1) (all words; the spread over random "
               "held-out splits is shown), over targets t in X ∪ Y",
               ">= 0; larger: targets differ in P(B); 0 = no bias (unsigned)", 0.0),
    MetricInfo("ect", "Embedding coherence test", "Dev & Phillips 2019",
               "Spearman correlation over attributes a of cos(a, mean X) and cos(a, mean Y)",
               "1 = both groups rank the attributes alike (no bias); lower = bias", 1.0),
    MetricInfo("ripa", "Relational inner product association",
               "Ethayarajh, Duvenaud & Hirst 2019",
               "mean over attributes w of <w, b>, b = unit first principal direction of the "
               "pair differences x_i - y_i (raw w, not normalised)",
               "positive: attributes lean to the X side of the pairs; negative: Y side; "
               "0 = no bias", 0.0),
    MetricInfo("direct_bias", "Direct bias", "Bolukbasi, Chang, Zou, Saligrama & Kalai 2016",
               "mean over attributes w of |cos(w, g)|^c, g = first principal component of "
               "the pair-centred unit vectors of the pairs",
               ">= 0; 0 = no bias (unsigned)", 0.0),
    MetricInfo("indirect_bias", "Indirect bias", "Bolukbasi, Chang, Zou, Saligrama & Kalai 2016",
               "mean over pairs (w, v) of attribute words of beta = (w.v - w⊥.v⊥ / "
               "(|w⊥| |v⊥|)) / w.v, w⊥ = w - (w.g) g (unit vectors)",
               "share of similarity due to g; 0 = no bias (per pair signed)", 0.0),
)}

#: Options of each metric and their defaults.
OPTIONS = {
    "weat_es": {"sd": "sample"},
    "rnd": {"distance": "euclidean"},
    "rnsb": {"test_size": 0.2, "splits": 100, "C": 1.0},
    "ect": {},
    "ripa": {"variant": "paper"},
    "direct_bias": {"c": 1.0},
    "indirect_bias": {},
}
MIN_SIZES = {"X": 1, "Y": 1, "A": 1, "B": 1}


# --------------------------------------------------------------------------------------
# Word sets
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MetricSets:
    """Targets X, Y, attributes A, B and target pairs (x_i, y_i), with names."""

    X: tuple[str, ...]
    Y: tuple[str, ...]
    A: tuple[str, ...]
    B: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...] = ()
    names: tuple[str, str, str, str] = ("X", "Y", "A", "B")

    def parts(self) -> dict[str, tuple[str, ...]]:
        """Named word sets (pairs as ``pairs:X`` and ``pairs:Y``)."""
        return {"X": self.X, "Y": self.Y, "A": self.A, "B": self.B,
                "pairs:X": tuple(p[0] for p in self.pairs),
                "pairs:Y": tuple(p[1] for p in self.pairs)}

    @property
    def sizes(self) -> dict[str, int]:
        """Sizes of X, Y, A, B and the number of pairs."""
        return {"X": len(self.X), "Y": len(self.Y), "A": len(self.A), "B": len(self.B),
                "pairs": len(self.pairs)}


def _pairs_for(wl: WordList | None, x, y) -> tuple[tuple[str, str], ...]:
    if wl is not None and wl.definite_sets:
        pairs = []
        for s in wl.definite_sets:
            px = [w for w in s if w in x]
            py = [w for w in s if w in y]
            if len(px) == 1 and len(py) == 1:
                pairs.append((px[0], py[0]))
        if pairs:  # a pair in two definite sets (race: black-asian) is one pair
            return tuple(dict.fromkeys(pairs))
    if len(x) == len(y):
        return tuple(zip(x, y, strict=True))
    return ()


def metric_sets(wordlist_or_sets, classes: Sequence[str] | None = None) -> MetricSets:
    """Resolve a word list (name, path, WordList; two classes or `classes`) or explicit sets.

    Explicit sets: a mapping with keys X, Y, A, B and optionally ``pairs`` (a list of
    (x, y) word pairs; default X and Y zipped when they have equal sizes).
    """
    obj = wordlist_or_sets
    if isinstance(obj, MetricSets):
        sets = obj
    elif isinstance(obj, Mapping):
        try:
            x, y, a, b = (tuple(obj[k]) for k in "XYAB")
        except KeyError as exc:
            raise WordListError(f"metric sets need keys X, Y, A, B; missing {exc}") from None
        pairs = obj.get("pairs")
        pairs = tuple(tuple(p) for p in pairs) if pairs else _pairs_for(None, x, y)
        sets = MetricSets(x, y, a, b, pairs, tuple(obj.get("names", ("X", "Y", "A", "B"))))
    else:
        wl = load_wordlist(obj)
        names = [c.name for c in wl.classes]
        classes = list(classes) if classes is not None else names
        if len(classes) != 2 or not set(classes) <= set(names):
            raise WordListError(
                f"word list {wl.name!r} has classes {', '.join(names)}; give two of them "
                f"(--classes a,b; classes=(a, b) in Python), got {', '.join(classes)}")
        c1, c2 = (next(c for c in wl.classes if c.name == k) for k in classes)
        pairs = _pairs_for(wl, c1.protected_words, c2.protected_words)
        sets = MetricSets(c1.protected_words, c2.protected_words, c1.stereotypes,
                          c2.stereotypes, pairs,
                          (c1.name, c2.name, f"{c1.name} stereotypes", f"{c2.name} stereotypes"))
    for key in "XYAB":
        words = getattr(sets, key)
        if not words:
            raise WordListError(f"metric set {key} ({sets.names['XYAB'.index(key)]}) is empty")
        dupes = sorted({w for w in words if words.count(w) > 1})
        if dupes:
            raise WordListError(f"metric set {key} repeats word(s) {', '.join(dupes)}")
    for p in sets.pairs:
        if len(p) != 2 or p[0] == p[1]:
            raise WordListError(f"target pair {p!r} must be two different words")
    return sets


# --------------------------------------------------------------------------------------
# Computation on vectors
# --------------------------------------------------------------------------------------
@dataclass
class Vectors:
    """Vectors of the sets (rows in set order): each (n, dim), or (draws, n, dim) stacked."""

    x: np.ndarray
    y: np.ndarray
    a: np.ndarray
    b: np.ndarray
    px: np.ndarray
    py: np.ndarray
    _derived: dict = field(default_factory=dict, repr=False, compare=False)

    def derived(self, key: str, compute):
        """Return ``compute()`` for `key`, computed once per Vectors (e.g. the bias direction).

        Used on the read-only draws of a study, whose direct and indirect bias share one
        direction; :func:`compute_metric` starts each call with an empty cache.
        """
        if key not in self._derived:
            self._derived[key] = compute()
        return self._derived[key]

    @property
    def attributes(self) -> np.ndarray:
        """A ∪ B."""
        return np.concatenate([self.a, self.b], axis=-2)

    @property
    def targets(self) -> np.ndarray:
        """X ∪ Y."""
        return np.concatenate([self.x, self.y], axis=-2)

    def __getitem__(self, draws) -> Vectors:
        """Select draws of stacked vectors."""
        return Vectors(*(m[draws] for m in (self.x, self.y, self.a, self.b, self.px, self.py)))


def _unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _check_sizes(name: str, v: Vectors) -> None:
    n = {"X": len(v.x), "Y": len(v.y), "A": len(v.a), "B": len(v.b), "pairs": len(v.px)}
    need = {"weat_es": {"X": 1, "Y": 1, "A": 1, "B": 1},
            "rnd": {"X": 1, "Y": 1},
            "rnsb": {"A": 1, "B": 1},
            "ect": {"X": 1, "Y": 1},
            "ripa": {"pairs": 1},
            "direct_bias": {"pairs": 1},
            "indirect_bias": {"pairs": 1}}[name]
    for key, k in need.items():
        if n[key] < k:
            hint = (" (pairs come from the word list's definite sets, or X and Y zipped "
                    "when they have equal sizes; give --pairs)") if key == "pairs" else ""
            raise InputDataError(f"{name} needs at least {k} word(s) in {key}, has "
                                 f"{n[key]}{hint}")
    if name == "weat_es" and n["X"] + n["Y"] < 3:
        raise InputDataError("weat_es needs at least three target words for a sample sd")
    if name == "ect" and n["A"] + n["B"] < 3:
        raise InputDataError("ect needs at least three attribute words for a rank correlation")
    if name == "rnsb" and n["X"] + n["Y"] < 2:
        raise InputDataError("rnsb needs at least two target words")
    if name == "indirect_bias" and n["A"] + n["B"] < 2:
        raise InputDataError("indirect_bias needs at least two attribute words")


def _weat_association(v: Vectors) -> np.ndarray:
    t = _unit(v.targets)
    return association(t @ np.swapaxes(_unit(v.a), -1, -2), t @ np.swapaxes(_unit(v.b), -1, -2))


def _degenerate(name: str, v: Vectors) -> np.ndarray:
    """Flag each draw of stacked vectors on which metric `name` is undefined."""
    if name == "weat_es":
        return np.isnan(_weat_association(v)).any(axis=-1)
    if name == "ripa":
        return ripa.identical_pairs(v.px, v.py)
    if name in ("direct_bias", "indirect_bias"):
        return bolukbasi.degenerate(v.px, v.py, v.attributes)
    return np.zeros(v.x.shape[0], dtype=bool)


#: Largest indirect-bias block (draws x attribute pairs x dim) computed at once.
_MAX_CELLS = 2_000_000


def _evaluate(name: str, v: Vectors, opts: dict, rng) -> tuple[np.ndarray, np.ndarray]:
    """Value and per-word values of metric `name` over the leading axes of `v` (may raise)."""
    if name == "weat_es":
        s = _weat_association(v)
        n_x = v.x.shape[-2]
        return effect_size(s[..., :n_x], s[..., n_x:], sd=opts["sd"]), s
    if name == "rnd":
        per = rnd.rnd_per_attribute(v.x, v.y, v.attributes, opts["distance"])
        return per.sum(axis=-1), per
    if name == "ect":
        sx, sy = ect.ect_similarities(v.x, v.y, v.attributes)
        return ect.ect(v.x, v.y, v.attributes), sx - sy
    if name == "rnsb":
        return rnsb.rnsb(v.a, v.b, v.targets, test_size=opts["test_size"], C=opts["C"],
                         rng=rng)
    if name == "ripa":
        fn = ripa.ripa if opts["variant"] == "paper" else ripa.ripa_pairwise
        per = fn(v.px, v.py, v.attributes)
        return per.mean(axis=-1), per
    g = v.derived("bias_direction", lambda: bolukbasi.bias_direction(v.px, v.py))
    w = v.attributes
    if name == "direct_bias":
        per = np.abs((_unit(w) @ g[..., None])[..., 0]) ** float(opts["c"])
        return bolukbasi.direct_bias(g, w, opts["c"]), per
    if name == "indirect_bias":
        if w.ndim == 2:
            per = bolukbasi.indirect_bias_pairs(g, w)
        else:  # draws in blocks, to bound the memory of the (draw, pair, dim) arrays
            step = max(1, _MAX_CELLS // max(1, w.shape[-2] ** 2 * w.shape[-1] // 2))
            per = np.concatenate([bolukbasi.indirect_bias_pairs(g[k:k + step], w[k:k + step])
                                  for k in range(0, len(w), step)])
        finite = np.isfinite(per).any(axis=-1)
        with np.errstate(invalid="ignore"):
            mean = np.nanmean(np.where(finite[..., None], per, 0.0), axis=-1)
        return np.where(finite, mean, np.nan), per
    raise InvalidArgumentError(f"unknown metric {name!r}; valid: {', '.join(METRICS)}")


def compute_metric(name: str, v: Vectors, options: Mapping | None = None, rng=None
                   ) -> tuple[float | np.ndarray, np.ndarray]:
    """Value of metric `name` and its per-word values (per attribute, target or pair).

    Per-word values: weat_es s(t) over X ∪ Y; rnd, ect (cos to mean X minus cos to mean Y),
    ripa and direct_bias per attribute of A ∪ B; rnsb P(B | t) over X ∪ Y; indirect_bias
    per pair of attribute words.

    Stacked vectors (a leading draw axis) give arrays over the draws, NaN on a draw where
    the metric is undefined (e.g. a pair with identical vectors); one set of vectors raises
    :class:`~bayesbias.errors.InputDataError` there. RNSB draws the training split of each
    draw from `rng` in turn.
    """
    if name not in METRICS:
        raise InvalidArgumentError(f"unknown metric {name!r}; valid: {', '.join(METRICS)}")
    # a fresh cache of derived values: the caller's arrays may have changed since
    return _compute(name, replace(v, _derived={}), {**OPTIONS[name], **(options or {})}, rng)


def _compute(name: str, v: Vectors, opts: dict, rng) -> tuple[float | np.ndarray, np.ndarray]:
    if v.x.ndim == 2:
        value, per = _evaluate(name, v, opts, rng)
        return float(value), per
    bad = _degenerate(name, v)
    if not bad.any():
        return _evaluate(name, v, opts, rng)
    value = np.full(len(bad), np.nan)
    per = None
    if not bad.all():
        good, per_good = _evaluate(name, v[~bad], opts, rng)
        value[~bad] = good
        per = np.full((len(bad),) + per_good.shape[1:], np.nan)
        per[~bad] = per_good
    return value, per


def _validate_options(name: str, options: Mapping) -> dict:
    if name not in METRICS:
        raise InvalidArgumentError(f"unknown metric {name!r}; valid: {', '.join(METRICS)}")
    unknown = set(options) - set(OPTIONS[name])
    if unknown:
        raise InvalidArgumentError(f"{name} has no option(s) {', '.join(sorted(unknown))}; valid: "
                                   f"{', '.join(OPTIONS[name]) or 'none'}")
    opts = {**OPTIONS[name], **options}
    if name == "weat_es" and opts["sd"] not in SD_CONVENTIONS:
        raise InvalidArgumentError(f"sd must be one of {', '.join(SD_CONVENTIONS)}")
    if name == "rnd" and opts["distance"] not in rnd.DISTANCES:
        raise InvalidArgumentError(f"distance must be one of {', '.join(rnd.DISTANCES)}")
    if name == "ripa" and opts["variant"] not in ("paper", "pairwise"):
        raise InvalidArgumentError("RIPA variant must be 'paper' or 'pairwise'")
    if name == "rnsb":
        if not 0 <= float(opts["test_size"]) < 1:
            raise InvalidArgumentError(f"RNSB test_size must be in [0, 1), got {opts['test_size']}")
        if int(opts["splits"]) < 1:
            raise InvalidArgumentError("RNSB splits must be >= 1")
        if not float(opts["C"]) > 0 or not np.isfinite(float(opts["C"])):
            raise InvalidArgumentError(f"RNSB C must be a positive number, got {opts['C']}")
    if name == "direct_bias" and not (np.isfinite(float(opts["c"])) and float(opts["c"]) >= 0):
        raise InvalidArgumentError(f"strictness c must be a finite number >= 0, got {opts['c']}")
    return opts


def _point(name: str, v: Vectors, opts: dict, rng) -> tuple[float, np.ndarray, dict]:
    """Point value; RNSB also its values over seeded random training splits.

    RNSB's value trains on every attribute word (deterministic); the paper holds out a test
    split, so the spread over `splits` random splits with `test_size` held out is reported
    next to it, as the dependence on the split.
    """
    value, per = compute_metric(name, v, {**opts, "test_size": 0.0} if name == "rnsb"
                                else opts, rng)
    if name != "rnsb" or not opts["test_size"]:
        return value, per, {}
    k = int(opts["splits"])
    values = compute_metric(name, Vectors(*(np.broadcast_to(m, (k,) + m.shape) for m in (
        v.x, v.y, v.a, v.b, v.px, v.py))), opts, rng)[0]
    lo, hi = np.quantile(values, [0.025, 0.975])
    return value, per, {
        "split_values_mean": float(values.mean()),
        "split_values_sd": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
        "split_interval_95": [float(lo), float(hi)],
        "splits": int(opts["splits"]), "test_size": float(opts["test_size"])}


def _resampled(v: Vectors, rng, n: int) -> Vectors:
    """`n` bootstrap resamples of the words of each set and of the pairs, stacked.

    The indices are drawn resample by resample: the pairs, then X, Y, A and B.
    """
    sets = (v.x, v.y, v.a, v.b)
    idx = [np.empty((n, len(m)), dtype=int) for m in sets]
    ip = np.empty((n, len(v.px)), dtype=int)
    for i in range(n):
        if len(v.px):
            ip[i] = bootstrap_indices(rng, len(v.px))
        for m, out in zip(sets, idx, strict=True):
            if len(m):
                out[i] = bootstrap_indices(rng, len(m))
    return Vectors(*(m[k] for m, k in zip(sets, idx, strict=True)), v.px[ip], v.py[ip])


def _draws(name: str, opts: dict, vectors: Vectors) -> np.ndarray:
    """Metric over stacked vector draws; NaN where a draw is degenerate.

    RNSB trains on every attribute word of the draw, as its point value does.
    """
    if name == "rnsb":
        opts = {**opts, "test_size": 0.0}
    return _compute(name, vectors, opts, None)[0]


# --------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------
_num = plain_number


@dataclass
class MetricResult:
    """One metric on one pair of target sets, with its interval and null ranges."""

    metric: str
    value: float
    per_word: pd.DataFrame
    options: dict
    sizes: dict
    names: dict
    ci: tuple[float, float] | None = None
    ci_prob: float | None = None
    ci_kind: str | None = None
    n_bootstrap: int = 0
    n_bootstrap_degenerate: int = 0
    null: dict = field(default_factory=dict)
    null_reps: int = 0
    null_ci_prob: float = 0.95
    splits: dict = field(default_factory=dict)
    seed: int | None = None
    dropped: dict = field(default_factory=dict)
    source: str = ""

    @property
    def info(self) -> MetricInfo:
        """Paper, definition and direction of the metric."""
        return METRICS[self.metric]

    def to_dict(self) -> dict:
        """Plain JSON data (no numpy; NaN as null)."""
        return {
            "metric": self.metric, "title": self.info.title, "paper": self.info.paper,
            "definition": self.info.definition, "direction": self.info.direction,
            "value": _num(self.value),
            "ci": [_num(c) for c in self.ci] if self.ci else None,
            "ci_prob": self.ci_prob, "ci_kind": self.ci_kind,
            "n_bootstrap": self.n_bootstrap,
            "n_bootstrap_degenerate": self.n_bootstrap_degenerate,
            "null": {k: {kk: (_num(vv) if isinstance(vv, float) else vv)
                         for kk, vv in d.items()} for k, d in self.null.items()},
            "null_reps": self.null_reps, "null_ci_prob": self.null_ci_prob,
            "splits": self.splits, "options": dict(self.options), "sizes": dict(self.sizes),
            "names": dict(self.names), "seed": self.seed,
            "per_word": [{"word": str(r.word), "role": str(r.role), "value": _num(r.value)}
                         for r in self.per_word.itertuples()],
            DROPPED_KEY: {k: list(v) for k, v in self.dropped.items()}, "source": self.source,
        }

    def to_frame(self) -> pd.DataFrame:
        """One tidy row: value, interval, and each null's range."""
        row = {"metric": self.metric, "X": self.names.get("X"), "Y": self.names.get("Y"),
               "value": self.value,
               "ci_lower": self.ci[0] if self.ci else np.nan,
               "ci_upper": self.ci[1] if self.ci else np.nan,
               "ci_prob": self.ci_prob, "ci_kind": self.ci_kind}
        for k, d in self.null.items():
            row[f"null_{k}_lower"] = d.get("lower", np.nan)
            row[f"null_{k}_upper"] = d.get("upper", np.nan)
        return pd.DataFrame([row])

    def __str__(self) -> str:
        n = self.names
        opts = ", ".join(f"{k}={v}" for k, v in self.options.items())
        lines = [f"{self.info.title} ({self.metric}; {self.info.paper})"
                 + (f" [{opts}]" if opts else ""),
                 f"  {n.get('X')} vs {n.get('Y')}; sizes "
                 + ", ".join(f"{k} {v}" for k, v in self.sizes.items()),
                 f"  value = {self.value:.4f}    ({self.info.direction})"]
        if self.splits:
            lo, hi = self.splits["split_interval_95"]
            lines.append(f"  classifier trained on every attribute word; over "
                         f"{self.splits['splits']} seeded splits holding out "
                         f"{self.splits['test_size']:.0%}: mean "
                         f"{self.splits['split_values_mean']:.4f}, 95% of splits in "
                         f"[{lo:.4f}, {hi:.4f}]")
        if self.ci:
            lines.append(f"  {self.ci_prob:.0%} bootstrap interval [{self.ci[0]:.4f}, "
                         f"{self.ci[1]:.4f}] ({self.n_bootstrap} resamples of words"
                         + (f", {self.n_bootstrap_degenerate} degenerate dropped"
                            if self.n_bootstrap_degenerate else "") + ")")
        for k, d in self.null.items():
            if d.get("lower") is None or not np.isfinite(d.get("lower", np.nan)):
                lines.append(f"  null {k}: {d.get('note', 'not available')}")
                continue
            lines.append(f"  null {k}: {self.null_ci_prob:.0%} of {self.null_reps} draws in "
                         f"[{d['lower']:.4f}, {d['upper']:.4f}] (median {d['median']:.4f})")
        if dropped_line(self.dropped):
            lines.append("  " + dropped_line(self.dropped))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return _metric_result_html(self)

    def __repr__(self) -> str:
        return _metric_result_repr(self)


# --------------------------------------------------------------------------------------
# Word layer
# --------------------------------------------------------------------------------------
def _vectors(embedding: Embedding, sets: MetricSets, on_missing: str):
    kept, missing = lookup(embedding, sets.parts(), on_missing)
    if on_missing == "drop":  # a pair survives only with both words
        pairs = tuple(p for p in sets.pairs if p[0] in embedding and p[1] in embedding)
    else:
        pairs = sets.pairs
    kept_sets = MetricSets(kept["X"], kept["Y"], kept["A"], kept["B"], pairs, sets.names)
    empty = [k for k in "XYAB" if not getattr(kept_sets, k)]
    if empty:
        raise WordListError(f"set(s) {', '.join(empty)} empty after dropping words missing "
                            f"from {embedding.source}")
    m = embedding.matrix
    v = Vectors(m(kept_sets.X), m(kept_sets.Y), m(kept_sets.A), m(kept_sets.B),
                m([p[0] for p in pairs]) if pairs else np.empty((0, embedding.dim)),
                m([p[1] for p in pairs]) if pairs else np.empty((0, embedding.dim)))
    return kept_sets, v, {k: list(w) for k, w in missing.items() if w}


def _per_word_frame(name: str, sets: MetricSets, per: np.ndarray) -> pd.DataFrame:
    if name in ("weat_es", "rnsb"):
        words = list(sets.X) + list(sets.Y)
        roles = ["X"] * len(sets.X) + ["Y"] * len(sets.Y)
    elif name == "indirect_bias":
        attrs = list(sets.A) + list(sets.B)
        i, j = np.triu_indices(len(attrs), k=1)
        words = [f"{attrs[a]}|{attrs[b]}" for a, b in zip(i, j, strict=True)]
        roles = ["pair"] * len(words)
    else:
        words = list(sets.A) + list(sets.B)
        roles = ["A"] * len(sets.A) + ["B"] * len(sets.B)
    return pd.DataFrame({"word": words, "role": roles, "value": np.asarray(per, dtype=float)})


def _pools(embedding: Embedding, sets: MetricSets, wl: WordList | None):
    """Return the pools of the resampled-neutral null.

    Targets come from the study's target words, attributes from the word list's control
    words (the shipped controls otherwise).
    """
    targets = list(dict.fromkeys([*sets.X, *sets.Y, *(w for p in sets.pairs for w in p)]))
    controls = wl.controls if (wl is not None and wl.controls) else default_controls()
    neutral = list(dict.fromkeys(w for g in controls.values() for w in g))
    targets = [w for w in targets if w in embedding]
    neutral = [w for w in neutral if w in embedding and w not in set(targets)]
    t = embedding.matrix(targets) if targets else np.empty((0, embedding.dim))
    n = embedding.matrix(neutral) if neutral else np.empty((0, embedding.dim))
    return t, n


def embedding_metric(name: str, embedding: Embedding, wordlist_or_sets, *,
                     classes: Sequence[str] | None = None, on_missing: str = "error",
                     bootstrap: int = 1000, ci_prob: float | None = None,
                     nulls: Sequence[str] = VECTOR_NULLS, null_reps: int = 500,
                     null_ci_prob: float = 0.95, seed: int | None = None,
                     **options) -> MetricResult:
    """Compute metric `name` with a bootstrap interval and its null ranges.

    Parameters
    ----------
    name : str
        One of :data:`METRICS`.
    embedding : Embedding
    wordlist_or_sets : WordList, str, MetricSets or mapping
        See :func:`metric_sets`.
    classes : pair of str, optional
        The two classes of a word list with more than two.
    on_missing : {"error", "drop"}
    bootstrap : int
        Resamples of the words for the interval (0: none).
    ci_prob : float, optional
        Probability of the bootstrap interval (default ``defaults.ci_prob``).
    nulls : sequence of {"independent", "hierarchical", "resample"}
    null_reps : int
        Draws per null (0: none).
    null_ci_prob : float
        Central share of the null draws reported as the null range.
    seed : int, optional
        Seeds the RNSB splits, the bootstrap and the nulls (default ``defaults.seed``).
    **options
        Metric options (:data:`OPTIONS`): ``sd`` (weat_es), ``distance`` (rnd),
        ``test_size``, ``splits``, ``C`` (rnsb), ``variant`` (ripa), ``c`` (direct_bias).
    """
    embedding = as_embedding(embedding)
    opts = _validate_options(name, options)
    bootstrap, null_reps, nulls = _validate_draws(bootstrap, null_reps, nulls)
    ci_prob = validate_ci_prob(defaults.ci_prob if ci_prob is None else ci_prob)
    null_ci_prob = validate_ci_prob(null_ci_prob)
    seed = defaults.seed if seed is None else int(seed)
    wl = None
    if not isinstance(wordlist_or_sets, (Mapping, MetricSets)):
        wl = load_wordlist(wordlist_or_sets)
        wordlist_or_sets = wl
    study = _Study(embedding, wl, metric_sets(wordlist_or_sets, classes), on_missing, seed,
                   bootstrap, nulls, null_reps)
    return _metric_result(name, opts, study, ci_prob, null_ci_prob)


def _validate_draws(bootstrap, null_reps, nulls) -> tuple[int, int, tuple[str, ...]]:
    bootstrap = validate_int(bootstrap, "bootstrap", low=0, high=MAX_RESAMPLES)
    null_reps = validate_int(null_reps, "null_reps", low=0, high=MAX_RESAMPLES)
    unknown = [k for k in nulls if k not in VECTOR_NULLS]
    if unknown:
        raise InvalidArgumentError(f"unknown null(s) {', '.join(unknown)}; valid: "
                                   f"{', '.join(VECTOR_NULLS)}")
    return int(bootstrap), int(null_reps), tuple(nulls)


class _Study:
    """The vectors of one pair of target sets and their seeded draws, shared by the metrics.

    Every metric of a study sees the same bootstrap resamples and null draws (they come
    from the same seeds), so they are drawn once, on first use, stacked on a draw axis.
    """

    def __init__(self, embedding: Embedding, wl: WordList | None, sets: MetricSets,
                 on_missing: str, seed: int, bootstrap: int, nulls: Sequence[str],
                 null_reps: int):
        self.embedding, self.wl, self.seed = embedding, wl, seed
        self.bootstrap, self.nulls, self.null_reps = bootstrap, tuple(nulls), null_reps
        self.sets, self.v, self.dropped = _vectors(embedding, sets, on_missing)
        self.point_seed, self.boot_seed, null_seed = np.random.SeedSequence(seed).spawn(3)
        self.null_seeds = dict(zip(self.nulls, null_seed.spawn(len(self.nulls)), strict=True))
        self._null: dict[str, tuple[VectorNull | str, Vectors | None]] = {}

    @cached_property
    def resamples(self) -> Vectors:
        """The bootstrap resamples of the words (drawn on first use)."""
        return _resampled(self.v, np.random.default_rng(self.boot_seed), self.bootstrap)

    @cached_property
    def pools(self) -> tuple[np.ndarray, np.ndarray]:
        """Target and control-word vectors of the resampled-neutral null."""
        return _pools(self.embedding, self.sets, self.wl)

    def null_draws(self, k: str) -> tuple[VectorNull | str, Vectors | None]:
        """Return the generator of null `k` and its draws, or why it is not available."""
        if k not in self._null:
            v = self.v
            sizes = (len(v.x), len(v.y), len(v.a), len(v.b), len(v.px))
            try:
                gen = VectorNull(k, sizes, reference=np.vstack([v.x, v.y, v.a, v.b]),
                                 target_pool=self.pools[0], attribute_pool=self.pools[1])
            except InputDataError as exc:
                self._null[k] = (str(exc), None)
            else:
                self._null[k] = (gen, Vectors(*gen.draw(
                    np.random.default_rng(self.null_seeds[k]), self.null_reps)))
        return self._null[k]


def _metric_result(name: str, opts: dict, study: _Study, ci_prob: float,
                   null_ci_prob: float) -> MetricResult:
    v, sets = study.v, study.sets
    _check_sizes(name, v)
    value, per, splits = _point(name, v, opts, np.random.default_rng(study.point_seed))
    ci, n_degenerate = None, 0
    if study.bootstrap:
        draws = _draws(name, opts, study.resamples)
        n_degenerate = int(np.isnan(draws).sum())
        ci = percentile_interval(draws, ci_prob)
    null = {}
    if study.null_reps:
        for k in study.nulls:
            gen, vectors = study.null_draws(k)
            if vectors is None:
                null[k] = {"lower": None, "upper": None, "median": None, "note": gen}
                continue
            draws = _draws(name, opts, vectors)
            rng_ = percentile_interval(draws, null_ci_prob)
            ok = draws[np.isfinite(draws)]
            null[k] = {"lower": rng_[0] if rng_ else None, "upper": rng_[1] if rng_ else None,
                       "median": float(np.median(ok)) if ok.size else None,
                       "n_degenerate": int((~np.isfinite(draws)).sum()),
                       "description": gen.description}
    return MetricResult(
        metric=name, value=value, per_word=_per_word_frame(name, sets, per), options=opts,
        sizes=sets.sizes, names=dict(zip("XYAB", sets.names, strict=True)), ci=ci,
        ci_prob=ci_prob if study.bootstrap else None,
        ci_kind="bootstrap" if study.bootstrap else None,
        n_bootstrap=study.bootstrap, n_bootstrap_degenerate=n_degenerate, null=null,
        null_reps=study.null_reps, null_ci_prob=null_ci_prob, splits=splits, seed=study.seed,
        dropped=study.dropped, source=study.embedding.source)


@dataclass
class MetricTable:
    """Every metric of a word list, per pair of classes (see :func:`metric_table`)."""

    wordlist: str
    results: list[MetricResult]
    source: str = ""

    def to_frame(self) -> pd.DataFrame:
        """One row per (class pair, metric)."""
        if not self.results:
            return pd.DataFrame()
        return pd.concat([r.to_frame() for r in self.results], ignore_index=True)

    def to_dict(self) -> dict:
        """Plain JSON data."""
        return {"wordlist": self.wordlist, "source": self.source,
                "metrics": {k: {"paper": m.paper, "definition": m.definition,
                                "direction": m.direction} for k, m in METRICS.items()},
                "results": [r.to_dict() for r in self.results]}

    def to_markdown(self) -> str:
        """Return a Markdown table: value, bootstrap interval, null ranges, direction."""
        if not self.results:
            return "(no metrics)"
        nulls = list(dict.fromkeys(k for r in self.results for k in r.null))
        head = (["classes", "metric", "value", "interval"] + [f"null {k}" for k in nulls]
                + ["no bias"])
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

        def rng(d):
            lo, hi = d.get("lower"), d.get("upper")
            return "n/a" if lo is None or not np.isfinite(lo) else f"[{lo:.3f}, {hi:.3f}]"

        for r in self.results:
            ci = (f"[{r.ci[0]:.3f}, {r.ci[1]:.3f}] ({r.ci_prob:.0%})" if r.ci else "—")
            cells = [f"{r.names['X']} vs {r.names['Y']}", r.metric,
                     f"{r.value:.4f}" if np.isfinite(r.value) else "nan", ci]
            cells += [rng(r.null.get(k, {})) for k in nulls]
            cells.append(f"{METRICS[r.metric].no_bias:g}")
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def __str__(self) -> str:
        return f"Embedding-bias metrics, word list {self.wordlist} ({self.source})\n" + \
            self.to_markdown()

    def _repr_html_(self) -> str:
        return _metric_table_html(self)

    def __repr__(self) -> str:
        return _metric_table_repr(self)


def metric_table(embedding: Embedding, wordlist, *, metrics: Sequence[str] | None = None,
                 on_missing: str = "error", bootstrap: int = 500, ci_prob: float | None = None,
                 nulls: Sequence[str] = VECTOR_NULLS, null_reps: int = 200,
                 seed: int | None = None, options: Mapping[str, Mapping] | None = None
                 ) -> MetricTable:
    """Every metric (default all of :data:`METRICS`) for every pair of classes of a word list.

    A metric that cannot be computed for a pair (e.g. RIPA without pairs) is left out of the
    table with a logged warning.
    """
    import logging

    log = logging.getLogger(__name__)
    embedding = as_embedding(embedding)
    wl = load_wordlist(wordlist)
    metrics = list(metrics or METRICS)
    options = dict(options or {})
    results = []
    for c1, c2 in itertools.combinations([c.name for c in wl.classes], 2):
        study = None  # the pair's vectors and draws, shared by its metrics
        for name in metrics:
            try:
                opts = _validate_options(name, dict(options.get(name, {})))
                if study is None:
                    boot, reps, kinds = _validate_draws(bootstrap, null_reps, nulls)
                    ci = validate_ci_prob(defaults.ci_prob if ci_prob is None else ci_prob)
                    study = _Study(embedding, wl, metric_sets(wl, (c1, c2)), on_missing,
                                   defaults.seed if seed is None else int(seed), boot, kinds,
                                   reps)
                results.append(_metric_result(name, opts, study, ci, 0.95))
            except InputDataError as exc:
                log.warning("%s skipped for %s vs %s: %s", name, c1, c2, exc)
    return MetricTable(wl.name, results, embedding.source)


# --------------------------------------------------------------------------------------
# Report section
# --------------------------------------------------------------------------------------
#: Report caps: the metric table's bootstrap and null draws (each metric, class pair, null).
REPORT_BOOTSTRAP = 300
REPORT_NULL_REPS = 150


def _report_wordlist(settings, name: str) -> WordList | None:
    for spec in getattr(settings, "wordlists", ()) or ():
        try:
            wl = load_wordlist(spec)
        except WordListError:
            continue
        if wl.name == name:
            return wl
    try:
        return load_wordlist(name)
    except WordListError:
        return None


def report_metrics(settings, name: str) -> MetricTable | None:
    """Compute the report's metric table for word list `name` (None without vectors).

    `settings` are the report's (``embedding``, ``wordlists``, ``distances``, ``format``,
    ``trust_pickle``, ``on_missing``, ``n_bootstrap``, ``null_reps``, ``ci_prob``, ``seed``).
    """
    s = settings
    wl = None if getattr(s, "distances", ()) else _report_wordlist(s, name)
    if getattr(s, "embedding", None) is None or wl is None:
        return None
    words = set(wl.all_words) | {w for g in (wl.controls or default_controls()).values()
                                 for w in g}
    emb = embeddings.load_embedding(s.embedding, words, format=getattr(s, "format", "auto"),
                         trust_pickle=getattr(s, "trust_pickle", False))
    return metric_table(emb, wl, on_missing=getattr(s, "on_missing", "drop"),
                        bootstrap=_report_bootstrap(s), ci_prob=getattr(s, "ci_prob", None),
                        null_reps=_report_null_reps(s), seed=getattr(s, "seed", None))


def _report_bootstrap(settings) -> int:
    return min(int(getattr(settings, "n_bootstrap", REPORT_BOOTSTRAP)), REPORT_BOOTSTRAP)


def _report_null_reps(settings) -> int:
    return min(int(getattr(settings, "null_reps", REPORT_NULL_REPS)), REPORT_NULL_REPS)


def _null_cell(d: dict) -> str:
    lo, hi = d.get("lower"), d.get("upper")
    if lo is None or hi is None or not (np.isfinite(lo) and np.isfinite(hi)):
        why = d.get("note") or ("every null draw was degenerate (undefined metric)"
                                if d.get("n_degenerate") else "not computed")
        return f"n/a: {why}"
    return f"[{lo:.3f}, {hi:.3f}]"


def _reading(value: float, null: dict) -> str:
    """Inside or beyond each no-bias (null) range, in words."""
    ranges = [(d.get("lower"), d.get("upper")) for d in null.values()]
    ranges = [(lo, hi) for lo, hi in ranges
              if lo is not None and hi is not None and np.isfinite(lo) and np.isfinite(hi)]
    if not np.isfinite(value):
        return "no value"
    if not ranges:
        return "no null range could be computed (see the null columns)"
    beyond = sum(not (lo <= value <= hi) for lo, hi in ranges)
    if beyond == 0:
        return f"inside all {len(ranges)} null ranges"
    if beyond == len(ranges):
        return f"beyond all {len(ranges)} null ranges"
    return f"beyond {beyond} of {len(ranges)} null ranges"


def report_frame(table: MetricTable, weats=(), sd: str = "sample") -> pd.DataFrame:
    """Return the metric table as the report shows it: one row per (class pair, metric).

    Columns ``classes, metric, value, interval, null <kind>..., no bias, reading``; null
    ranges as ``[lower, upper]`` or ``n/a: reason``; ``reading`` says whether the value lies
    inside or beyond every null range. A WEAT-ES row whose value is the effect size of the
    report's WEAT table for the same pair shows that table's interval (one interval per
    effect size on a page), as `weats` (``[((x, y), WeatResult), ...]``) give it.
    """
    weat_ci = {}
    for (x, y), r in weats or ():
        if r.ci is not None and r.sd_convention == sd:
            weat_ci[(x, y)] = r
    rows = []
    for r in table.results:
        ci = (f"[{r.ci[0]:.3f}, {r.ci[1]:.3f}] ({r.ci_prob:.0%}, {r.n_bootstrap} resamples)"
              if r.ci else "—")
        w = weat_ci.get((r.names.get("X"), r.names.get("Y")))
        if r.metric == "weat_es" and w is not None and np.isclose(w.effect_size, r.value,
                                                                   rtol=1e-9, atol=1e-12):
            ci = (f"[{w.ci[0]:.3f}, {w.ci[1]:.3f}] ({w.ci_prob:.0%}, {w.n_bootstrap} "
                  "resamples; the WEAT table's)")
        row = {"classes": f"{r.names.get('X')} vs {r.names.get('Y')}", "metric": r.metric,
               "value": float(r.value), "interval": ci}
        for k, d in r.null.items():
            row[f"null {k}"] = _null_cell(d)
        row["no bias"] = f"{METRICS[r.metric].no_bias:g}"
        row["reading"] = _reading(float(r.value), r.null)
        rows.append(row)
    return pd.DataFrame(rows)


def _pairs_sentence(s, wl: WordList) -> str | None:
    """Which target pairs RIPA and direct/indirect bias used, and where they came from."""
    out = []
    for c1, c2 in itertools.combinations([c.name for c in wl.classes], 2):
        try:
            sets = metric_sets(wl, (c1, c2))
        except WordListError:
            continue
        if not sets.pairs:
            out.append(f"{c1} vs {c2}: no pairs (unequal sizes and no definite sets)")
            continue
        how = ("the list's definite sets" if wl.definite_sets else
               "no definite sets in the list, so X and Y zipped in list order")
        shown = ", ".join(f"{a}-{b}" for a, b in sets.pairs[:8]) + (
            ", ..." if len(sets.pairs) > 8 else "")
        out.append(f"{c1} vs {c2}: {shown} ({how})")
    if not out:
        return None
    return "Target pairs used by RIPA and Bolukbasi's direct/indirect bias: " + "; ".join(out)


def metrics_section(ctx) -> None:
    """Report section: RND, RNSB, ECT, RIPA, direct/indirect bias and WEAT-ES per class pair.

    `ctx` is a report word-list context (``settings``, ``name``, ``key``, ``section``,
    ``results``; its ``embedding_metrics`` when it has them, else they are computed here).
    The metrics need word vectors: a report built from distance tables only gets a note
    instead.
    """
    s, sec = ctx.settings, ctx.section
    sec.heading("Embedding-bias metrics of other toolkits (with intervals and null ranges)")
    wl = None if getattr(s, "distances", ()) else _report_wordlist(s, ctx.name)
    if getattr(s, "embedding", None) is None or wl is None:
        sec.text("RND, RNSB, ECT, RIPA and Bolukbasi's direct and indirect bias need word "
                 "vectors; this section was built from a distance table only, so they are "
                 "not shown (run the report with --embedding).")
        return
    progress.info(f"{ctx.name}: RND, RNSB, ECT, RIPA, direct/indirect bias")
    table = (ctx.embedding_metrics if hasattr(ctx, "embedding_metrics")
             else report_metrics(s, ctx.name))
    boot, reps = _report_bootstrap(s), _report_null_reps(s)
    weats = ctx.weats if hasattr(ctx, "weats") else ()
    frame = report_frame(table, weats, getattr(s, "sd_convention", "sample"))
    sec.text(f"Each metric computed from its paper on the word list's classes (X, Y: "
             f"protected words; A, B: stereotypes), with a percentile bootstrap interval over "
             f"the words ({boot} resamples; WEAT-ES shows the WEAT table's interval of the same "
             f"d) and the central 95% of the metric under three nulls at the same list sizes "
             f"({reps} draws each): what 'no bias' gives here. `reading` says whether the "
             "value lies inside or beyond every null range (inside = no evidence of bias by "
             "that metric); `no bias` is the metric's own reference value.")
    sec.table(frame, f"{ctx.key}_embedding_metrics",
              "Embedding-bias metrics: value, bootstrap interval, null ranges (or why a null "
              "could not be drawn), reference value and reading")
    pairs = _pairs_sentence(s, wl)
    if pairs:
        sec.text(pairs)
    sec.bullets([f"{m.name}: {m.title} ({m.paper}); {m.definition}; {m.direction}"
                 for m in METRICS.values()])
    ctx.results["embedding_metrics"] = table.to_dict()


# -- how it shows itself (the card kit: bayesbias.display) --------------------


def _null_ranges(r) -> list[str]:
    out = []
    for k, d in r.null.items():
        lo = d.get("lower")
        if lo is None or not np.isfinite(lo):
            out.append(f"null {k}: {d.get('note', 'not available')}")
        else:
            out.append(f"null {k}: {r.null_ci_prob:.0%} of {r.null_reps} draws in "
                       f"[{lo:.4f}, {d['upper']:.4f}]")
    return out


def _metric_result_html(r) -> str:
    """HTML card of a :class:`~bayesbias.comparators.metrics.MetricResult`."""
    lines = []
    if r.ci:
        lines.append(f"{r.ci_prob:.0%} bootstrap interval [{r.ci[0]:.4f}, {r.ci[1]:.4f}] "
                     f"({r.n_bootstrap} resamples of words)")
    lines += _null_ranges(r)
    return card(f"{r.info.title} ({r.metric})", f"{r.names.get('X')} vs {r.names.get('Y')}",
                f"value = {r.value:.4f} ({r.info.direction})", lines,
                tables=[("per word", r.per_word)] if len(r.per_word) else (),
                notes=[r.info.paper])


def _metric_result_repr(r) -> str:
    """Short repr of a MetricResult."""
    ci = f", {r.ci_prob:.0%} CI [{r.ci[0]:.4f}, {r.ci[1]:.4f}]" if r.ci else ""
    return (f"<MetricResult {r.metric} {r.names.get('X')} vs {r.names.get('Y')}: "
            f"{format_number(r.value, '.4f')}{ci}>")


def _metric_table_html(t) -> str:
    """HTML card of a :class:`~bayesbias.comparators.metrics.MetricTable`."""
    frame = t.to_frame()
    keep = [c for c in frame.columns if c not in ("ci_prob", "ci_kind")]
    pairs = {(r.names.get("X"), r.names.get("Y")) for r in t.results}
    head = (f"{len({r.metric for r in t.results})} metrics on {len(pairs)} pair(s) of classes, "
            "each with a bootstrap interval and the ranges of its nulls")
    return card(f"Embedding-bias metrics: {t.wordlist}", t.source, head,
                tables=[("value, interval and null ranges per pair and metric",
                         frame[keep] if len(frame) else frame)])


def _metric_table_repr(t) -> str:
    """Short repr of a MetricTable."""
    return (f"<MetricTable {t.wordlist!r}: {len(t.results)} results "
            f"({len({r.metric for r in t.results})} metrics) on {t.source or '<memory>'}>")

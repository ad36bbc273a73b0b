"""Mean Average Cosine distance (MAC; Manzini, Lim, Tsvetkov & Black 2019).

S(t, A_j) is the mean cosine *distance* of target word t to the attributes of class A_j;
MAC is the mean of S over every target and every attribute class. Manzini et al. compare
a biased and a debiased embedding with a paired t-test on the S values
(:func:`mac_ttest`). MAC does not distinguish a target's own stereotypes from those of other
classes and is not scaled by any spread, so it is a distance level, not an effect size.

Targets: by default every protected word once. ``targets="definite_sets"`` repeats each
word as often as it appears in the word list's definite sets, as Manzini's evaluation loop
does over its target sets (this matters for race, whose definite sets repeat words).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..display import card
from ..errors import DistanceTableError, InputDataError, InvalidArgumentError, WordListError
from ..inputs.embeddings import Embedding, as_embedding, lookup
from ..inputs.wordlists import WordList, load_wordlist
from ..plain import DROPPED_KEY, dropped_line

if TYPE_CHECKING:  # pandas is imported where a frame is built (a cached `seat` needs none)
    import pandas as pd

__all__ = [
    "class_scores",
    "mac_value",
    "MacResult",
    "MacTTest",
    "mac",
    "mac_from_table",
    "mac_ttest",
]

log = logging.getLogger(__name__)
TARGET_MODES = ("unique", "definite_sets")


# --------------------------------------------------------------------------------------
# Array layer
# --------------------------------------------------------------------------------------
def class_scores(distances, attribute_class, n_classes: int | None = None) -> np.ndarray:
    """S(t, A_j): mean distance of each target to the attributes of each class.

    Parameters
    ----------
    distances : array_like, shape (..., n_targets, n_attributes)
        Cosine distances.
    attribute_class : array_like of int, shape (n_attributes,)
        Class index (0 .. n_classes - 1) of each attribute.
    n_classes : int, optional
        Number of classes (default: ``max(attribute_class) + 1``).

    Returns
    -------
    ndarray, shape (..., n_targets, n_classes)
    """
    d = np.asarray(distances, dtype=np.float64)
    codes = np.asarray(attribute_class, dtype=np.intp)
    if codes.ndim != 1 or codes.shape[0] != d.shape[-1]:
        raise InputDataError("attribute_class needs one class index per attribute column")
    n_classes = int(codes.max()) + 1 if n_classes is None else n_classes
    onehot = np.zeros((codes.shape[0], n_classes))
    onehot[np.arange(codes.shape[0]), codes] = 1.0
    counts = onehot.sum(axis=0)
    if (counts == 0).any():
        raise InputDataError(
            f"attribute class(es) {np.flatnonzero(counts == 0).tolist()} are empty")
    return (d @ onehot) / counts


def mac_value(scores) -> np.ndarray:
    """MAC: mean of S over targets and attribute classes (last two axes)."""
    s = np.asarray(scores, dtype=np.float64)
    return s.mean(axis=(-2, -1))


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------
@dataclass
class MacResult:
    """MAC with its per-(target, attribute class) scores.

    ``scores`` is a long DataFrame with columns ``protected_word, protected_class,
    attribute_class, S, weight`` (weight = how often the target counts).
    """

    mac: float
    scores: pd.DataFrame
    targets: str
    n_targets: int
    n_attribute_classes: int
    attribute_classes: dict
    dropped: dict = field(default_factory=dict)
    source: str = ""

    def to_dict(self) -> dict:
        """Plain-Python dict (JSON-ready)."""
        return {
            "mac": self.mac,
            "definition": "mean over targets t and attribute classes A_j of "
                          "S(t, A_j) = mean cosine distance of t to the attributes of A_j "
                          "(Manzini et al. 2019)",
            "targets": self.targets,
            "n_targets": self.n_targets,
            "n_attribute_classes": self.n_attribute_classes,
            "attribute_classes": self.attribute_classes,
            "scores": self.scores.to_dict(orient="records"),
            DROPPED_KEY: self.dropped,
            "source": self.source,
        }

    def to_frame(self) -> pd.DataFrame:
        """Return the tidy S(t, A_j) scores (one row per target and attribute class)."""
        return self.scores.copy()

    def __str__(self) -> str:
        wide = self.scores.drop_duplicates(["protected_word", "attribute_class"]).pivot(
            index="protected_word", columns="attribute_class", values="S")
        lines = [f"MAC = {self.mac:.4f} (mean cosine distance; {self.n_targets} target "
                 f"occurrences x {self.n_attribute_classes} attribute classes, targets: "
                 f"{self.targets})", "S(t, A_j):", wide.round(4).to_string()]
        if dropped_line(self.dropped):
            lines.append(dropped_line(self.dropped))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return _mac_html(self)

    def __repr__(self) -> str:
        return _mac_repr(self)


@dataclass
class MacTTest:
    """Paired t-test of S values between two embeddings (as Manzini et al. report it)."""

    mac_a: float
    mac_b: float
    statistic: float
    p_value: float
    df: int
    n_pairs: int
    mean_difference: float
    unmatched: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Plain-Python dict (JSON-ready)."""
        return {
            "mac_a": self.mac_a, "mac_b": self.mac_b, "statistic": self.statistic,
            "p_value": self.p_value, "df": self.df, "n_pairs": self.n_pairs,
            "mean_difference": self.mean_difference,
            "test": "paired t-test (scipy.stats.ttest_rel) over matched S(t, A_j) values, "
                    "two-sided; the S values are means over attributes, so the test ignores "
                    "the attribute-level variation",
            "unmatched": self.unmatched,
        }

    def to_frame(self) -> pd.DataFrame:
        """One tidy row."""
        import pandas as pd

        return pd.DataFrame([{k: v for k, v in self.to_dict().items()
                              if k not in ("unmatched", "test")}])

    def __str__(self) -> str:
        return (f"MAC a = {self.mac_a:.4f}, MAC b = {self.mac_b:.4f}; paired t-test over "
                f"{self.n_pairs} S values: t = {self.statistic:.3f}, df = {self.df}, "
                f"p {_p_text(self.p_value)} (two-sided)")


# --------------------------------------------------------------------------------------
# Word layer
# --------------------------------------------------------------------------------------
def _target_weights(words: Sequence[str], targets: str, wordlist: WordList | None) -> dict:
    if targets not in TARGET_MODES:
        raise InvalidArgumentError(
            f"targets must be one of {', '.join(TARGET_MODES)}, got {targets!r}")
    if targets == "unique":
        return dict.fromkeys(words, 1)
    if wordlist is None or not wordlist.definite_sets:
        raise WordListError("targets='definite_sets' needs a word list with definite sets")
    weights = {w: 0 for w in words}
    for s in wordlist.definite_sets:
        for w in s:
            if w in weights:
                weights[w] += 1
    return {w: c for w, c in weights.items() if c}


def _result(S: np.ndarray, words, pclass, classes, weights, targets, attr_words,
            dropped, source) -> MacResult:
    import pandas as pd

    rows = []
    for i, w in enumerate(words):
        if w not in weights:
            continue
        for j, c in enumerate(classes):
            rows.append((w, pclass[i], c, float(S[i, j]), weights[w]))
    scores = pd.DataFrame(rows, columns=["protected_word", "protected_class", "attribute_class",
                                         "S", "weight"])
    if scores.empty:
        raise WordListError("no targets left for MAC")
    value = float(np.average(scores["S"], weights=scores["weight"]))
    return MacResult(mac=value, scores=scores, targets=targets,
                     n_targets=int(sum(weights.values())), n_attribute_classes=len(classes),
                     attribute_classes={c: list(a) for c, a in attr_words.items()},
                     dropped=dropped, source=source)


def mac(embedding: Embedding, wordlist, *, on_missing: str = "error",
        targets: str = "unique") -> MacResult:
    """MAC of a word list on an embedding.

    Parameters
    ----------
    embedding : Embedding
    wordlist : WordList or str
        Targets are its protected words; attribute classes are its classes' stereotypes.
    on_missing : {"error", "drop"}
        Words not in the embedding: raise, or drop and list them in ``result.dropped``.
    targets : {"unique", "definite_sets"}
        Count every protected word once, or as often as it occurs in the definite sets.
    """
    embedding = as_embedding(embedding)
    wl = load_wordlist(wordlist)
    parts = {f"protected:{c.name}": c.protected_words for c in wl.classes}
    parts.update({f"stereotypes:{c.name}": c.stereotypes for c in wl.classes if c.stereotypes})
    kept, missing = lookup(embedding, parts, on_missing)
    classes = [c.name for c in wl.classes if kept.get(f"stereotypes:{c.name}")]
    if not classes:
        raise WordListError(f"word list {wl.name!r} has no stereotype attributes for MAC")
    attr_words = {c: kept[f"stereotypes:{c}"] for c in classes}
    words = [w for c in wl.classes for w in kept[f"protected:{c.name}"]]
    pclass = [wl.class_of(w) for w in words]
    attrs = [a for c in classes for a in attr_words[c]]
    codes = [j for j, c in enumerate(classes) for _ in attr_words[c]]
    from ..inputs.distances import cosine_similarity_matrix

    dist = 1.0 - cosine_similarity_matrix(embedding.matrix(words), embedding.matrix(attrs))
    S = class_scores(dist, codes, len(classes))
    weights = _target_weights(words, targets, wl)
    return _result(S, words, pclass, classes, weights, targets, attr_words,
                   {k: v for k, v in missing.items() if v}, embedding.source)


def mac_from_table(table: pd.DataFrame, *, targets: str = "unique",
                   wordlist=None) -> MacResult:
    """MAC from a long distance table (stereotype rows: connection associated/different).

    Parameters
    ----------
    table : pandas.DataFrame
        Columns of :data:`bayesbias.distances.COLUMNS`; repeated (word, attribute) pairs are
        averaged (they agree in the published race tables).
    targets : {"unique", "definite_sets"}
    wordlist : WordList or str, optional
        Needed for ``targets="definite_sets"``.
    """
    from ..inputs.distances import single_embedding

    table = single_embedding(table, "MAC")  # several embeddings: refused, not averaged
    stereo = table.loc[table["connection"].astype(str).isin(["associated", "different"])]
    if stereo.empty:
        raise DistanceTableError("distance table has no associated/different rows for MAC")
    wide = stereo.pivot_table(index="protected_word", columns="attribute",
                              values="cosine_distance", aggfunc="mean", sort=False)
    at_class = stereo.groupby("attribute", sort=False)["attribute_class"].first()
    classes = list(dict.fromkeys(stereo["attribute_class"].astype(str)))
    attr_words = {c: [a for a in wide.columns if at_class[a] == c] for c in classes}
    ordered = [a for c in classes for a in attr_words[c]]
    block = wide.loc[:, ordered]
    codes = [j for j, c in enumerate(classes) for _ in attr_words[c]]
    d = block.to_numpy(dtype=np.float64)
    if np.isnan(d).any():
        # Missing pairs: average what is there, per class, and say so.
        log.warning("distance table lacks %d stereotype pairs; S averages the rest",
                    int(np.isnan(d).sum()))
        blocks = [d[:, np.asarray(codes) == j] for j in range(len(classes))]
        for j, blk in enumerate(blocks):
            empty = np.flatnonzero(np.isnan(blk).all(axis=1))
            if empty.size:
                raise DistanceTableError(
                    f"protected word {block.index[empty[0]]!r} has no distance to any "
                    f"attribute of class {classes[j]!r}; S(t, A_j) is undefined (drop the word "
                    "or the class from the table)")
        S = np.column_stack([np.nanmean(blk, axis=1) for blk in blocks])
    else:
        S = class_scores(d, codes, len(classes))
    words = list(block.index)
    pclass = stereo.groupby("protected_word")["protected_class"].first().reindex(words).tolist()
    wl = load_wordlist(wordlist) if wordlist is not None else None
    weights = _target_weights(words, targets, wl)
    return _result(S, words, pclass, classes, weights, targets, attr_words,
                   dict(table.attrs.get("missing", {})), str(table.attrs.get("source", "")))


def mac_ttest(a: MacResult, b: MacResult) -> MacTTest:
    """Paired t-test of S(t, A_j) between two embeddings (e.g. biased vs debiased).

    S values are matched on (protected word, attribute class); a target counted several
    times (``targets="definite_sets"``) enters the test that many times, as in Manzini's code.
    """
    key = ["protected_word", "attribute_class"]
    left = a.scores.set_index(key)
    right = b.scores.set_index(key)
    common = left.index.intersection(right.index)
    if len(common) < 2:
        raise InputDataError("the two MAC results share fewer than two "
                             "(protected word, attribute class) pairs")
    unmatched = {"a_only": [list(i) for i in left.index.difference(right.index)],
                 "b_only": [list(i) for i in right.index.difference(left.index)]}
    if unmatched["a_only"] or unmatched["b_only"]:
        log.warning("paired t-test uses %d matched S values; %d/%d unmatched", len(common),
                    len(unmatched["a_only"]), len(unmatched["b_only"]))
    la = left.loc[common]
    reps = la["weight"].to_numpy(dtype=int)
    xa = np.repeat(la["S"].to_numpy(), reps)
    xb = np.repeat(right.loc[common, "S"].to_numpy(), reps)
    from scipy import stats  # imported here: keeps `bayesbias weat` start-up short

    res = stats.ttest_rel(xa, xb)
    return MacTTest(mac_a=a.mac, mac_b=b.mac, statistic=float(res.statistic),
                    p_value=float(res.pvalue), df=int(xa.size - 1), n_pairs=int(xa.size),
                    mean_difference=float(np.mean(xa - xb)), unmatched=unmatched)


def _p_text(p) -> str:
    from ..verdicts.reconcile import format_p

    text = format_p(p)
    return text if text[:1] in "<n" else f"= {text}"


# -- how it shows itself (the card kit: bayesbias.display) --------------------


def _mac_html(r) -> str:
    """HTML card of a :class:`~bayesbias.comparators.mac.MacResult`."""
    wide = r.scores.drop_duplicates(["protected_word", "attribute_class"]).pivot(
        index="protected_word", columns="attribute_class", values="S").reset_index()
    wide.columns.name = None
    return card("MAC", r.source, f"MAC = {r.mac:.4f} (mean cosine distance; "
                f"{r.n_targets} target occurrences x {r.n_attribute_classes} attribute "
                "classes)", tables=[("S(t, A_j) per target and attribute class", wide)])


def _mac_repr(r) -> str:
    """Short repr of a MacResult."""
    return (f"<MacResult MAC = {r.mac:.4f} ({r.n_targets} targets x "
            f"{r.n_attribute_classes} attribute classes)>")

"""Hard debiasing of word embeddings, for two or more protected classes.

The method is that of Bolukbasi et al. (2016), generalised to several classes by Manzini
et al. (2019):

1. **Bias subspace.** Each definite set of the word list (words of different protected
   classes that should differ only in the protected attribute, e.g. ``jew / christian /
   muslim``) is centred on its own mean; the first `k` principal directions of all the
   centred vectors span the bias subspace.
2. **Neutralise.** The chosen words (by default the stereotype attributes of the word list,
   as Manzini et al. did) lose their component in the subspace and are scaled back to unit
   length, so they have no projection on it.
3. **Equalise.** The words of each definite set are made symmetric around the subspace:
   they share one off-subspace component, and their in-subspace components have the same
   length, so every neutralised word has the same cosine with every word of the set.

Every vector that takes part is first scaled to unit length, as in Bolukbasi et al.
Which words change
------------------
Only the neutralised words and the words of the definite sets. Every other row of the
embedding is returned bit-for-bit unchanged (``normalize_all=False``, the default); cosine
distances, the only quantity bayesbias measures, do not depend on vector length. With
``normalize_all=True`` every row is additionally scaled to unit length, as Bolukbasi et al.
do before debiasing; directions (and so cosines) of untouched words are still unchanged.

Multiclass symmetry
-------------------
After equalising a set of ``n`` words with mean ``mu`` and off-subspace mean ``nu``, each
word is ``nu + sqrt(1 - |nu|^2) * u`` where ``u`` is the unit direction, inside the
subspace, of the word's offset from ``mu``. So (a) all words share the off-subspace part
``nu`` and (b) all in-subspace parts have the same length. For a pair the two in-subspace
parts are exact opposites (they sum to zero). For three or more words they sum to zero
only if the offsets from the mean have equal lengths, which is not true in general: with
``k = 1`` each word lands at ``+r`` or ``-r`` along the bias direction (e.g. two at ``+r``
and one at ``-r``). What holds for every ``n`` is (a) and (b), hence equal cosines with
every neutralised word; that is the symmetry the tests check.

Definite sets that share words (the race list) are by default equalised one after
another in file order, as in Manzini et al.'s code; a word in several sets ends symmetric
with respect to the last of them only. The report lists the residual asymmetry of each
set. The published debiased Reddit race table shows such a residual (associated and
different means differ by 0.012 there, but by < 1e-15 for religion and gender, whose sets
are disjoint). ``overlapping="merge"`` instead equalises each group of sets linked by
shared words as one set, so that every set ends symmetric.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from .embeddings import Embedding, as_embedding, lookup
from .errors import InputDataError, InvalidArgumentError, WordListError
from .plain import DROPPED_KEY, dropped_line
from .validation import validate_choice
from .wordlists import WordList, load_wordlist

__all__ = [
    "BiasSubspace",
    "DebiasReport",
    "bias_subspace",
    "project",
    "neutralize",
    "equalize",
    "hard_debias",
    "needed_k",
    "NEUTRALIZE_CHOICES",
    "OVERLAPPING_CHOICES",
]

log = logging.getLogger(__name__)

#: Named word groups `hard_debias` can neutralise.
NEUTRALIZE_CHOICES = ("stereotypes", "attributes")
#: Ways to equalise definite sets that share words.
OVERLAPPING_CHOICES = ("sequential", "merge")

_DEGENERATE = 1e-10


# -- array layer ------------------------------------------------------------------------
@dataclass(frozen=True)
class BiasSubspace:
    """An orthonormal basis of the bias subspace and how much variance it explains.

    Attributes
    ----------
    basis : ndarray of shape (k, dim)
        Orthonormal rows spanning the subspace (their signs are arbitrary).
    explained_variance_ratio : ndarray of shape (k,)
        Share of the total variance of the centred definite-set vectors along each row.
    max_k : int
        Largest `k` the sets allow: ``min(dim, sum(len(set) - 1))``.
    """

    basis: np.ndarray
    explained_variance_ratio: np.ndarray
    max_k: int

    @property
    def k(self) -> int:
        """Number of bias directions."""
        return int(self.basis.shape[0])


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    if np.any(norms == 0):
        raise InputDataError("cannot scale a zero vector to unit length")
    return vectors / norms


def bias_subspace(vectors_by_set: Sequence[np.ndarray], k: int = 1) -> BiasSubspace:
    """Principal directions of the definite sets, each centred on its own mean.

    Parameters
    ----------
    vectors_by_set : sequence of ndarray of shape (n_i, dim)
        The vectors of each definite set (``n_i >= 2``), used as given; `hard_debias`
        passes unit vectors.
    k : int, default 1
        Number of directions.

    Returns
    -------
    BiasSubspace

    Raises
    ------
    WordListError
        If there are no sets, a set has fewer than two vectors, or `k` exceeds the
        ``sum(n_i - 1)`` dimensions the centred vectors can span (or their numerical rank).
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidArgumentError(f"k must be a positive integer, got {k!r}")
    sets = [np.atleast_2d(np.asarray(v, dtype=np.float64)) for v in vectors_by_set]
    if not sets:
        raise WordListError("no definite sets: the bias subspace needs at least one set")
    for i, s in enumerate(sets):
        if s.shape[0] < 2:
            raise WordListError(
                f"definite set {i} has {s.shape[0]} vector(s); it needs two or more")
    dims = {s.shape[1] for s in sets}
    if len(dims) != 1:
        raise InputDataError(f"definite sets have vectors of different lengths {sorted(dims)}")
    dim = dims.pop()
    centred = np.concatenate([s - s.mean(axis=0) for s in sets])
    max_k = min(dim, sum(s.shape[0] - 1 for s in sets))
    if k > max_k:
        raise WordListError(
            f"k={k} bias directions requested, but {len(sets)} definite set(s) of sizes "
            f"{[s.shape[0] for s in sets]} span at most {max_k} (the sum of set size minus "
            f"one{', capped by the vector length' if max_k == dim else ''})"
        )
    _, sv, vt = np.linalg.svd(centred, full_matrices=False)
    var = sv**2
    if var[k - 1] <= _DEGENERATE * var[0]:
        rank = int(np.sum(var > _DEGENERATE * var[0]))
        raise WordListError(
            f"k={k} bias directions requested, but the centred definite-set vectors have "
            f"numerical rank {rank} (some set words have identical vectors)"
        )
    return BiasSubspace(vt[:k].copy(), var[:k] / var.sum(), max_k)


def _as_basis(basis) -> np.ndarray:
    if isinstance(basis, BiasSubspace):
        basis = basis.basis
    return np.atleast_2d(np.asarray(basis, dtype=np.float64))


def project(vectors: np.ndarray, basis) -> np.ndarray:
    """Coordinates of `vectors` (n, dim) along the orthonormal rows of `basis`: (n, k)."""
    return np.asarray(vectors, dtype=np.float64) @ _as_basis(basis).T


def neutralize(vectors: np.ndarray, basis) -> np.ndarray:
    """Remove the bias-subspace component of each row and rescale it to unit length.

    Parameters
    ----------
    vectors : ndarray of shape (n, dim)
    basis : BiasSubspace or ndarray of shape (k, dim)
        Orthonormal rows.

    Returns
    -------
    ndarray of shape (n, dim), float64
        Unit rows orthogonal to the subspace.
    """
    b = _as_basis(basis)
    v = _unit(np.atleast_2d(vectors))
    out = v - (v @ b.T) @ b
    norms = np.linalg.norm(out, axis=-1, keepdims=True)
    if np.any(norms < _DEGENERATE):
        raise InputDataError("a vector lies inside the bias subspace; it cannot be neutralised")
    return out / norms


def equalize(vectors_of_set: np.ndarray, basis) -> np.ndarray:
    """Make the rows of one definite set symmetric around the bias subspace.

    Rows are first scaled to unit length. The result shares the off-subspace part of the
    set mean, and every row has unit length, so their in-subspace parts are equally long
    and point the way each row's offset from the mean points inside the subspace (see the
    module notes on sets of three or more).

    Parameters
    ----------
    vectors_of_set : ndarray of shape (n, dim), n >= 2
    basis : BiasSubspace or ndarray of shape (k, dim)

    Returns
    -------
    ndarray of shape (n, dim), float64
    """
    b = _as_basis(basis)
    v = _unit(np.atleast_2d(vectors_of_set))
    if v.shape[0] < 2:
        raise WordListError("a definite set needs two or more words to be equalised")
    mu = v.mean(axis=0)
    mu_b = (mu @ b.T) @ b
    nu = mu - mu_b
    offsets = (v @ b.T) @ b - mu_b
    lengths = np.linalg.norm(offsets, axis=-1, keepdims=True)
    if np.any(lengths < _DEGENERATE):
        raise InputDataError(
            "a word of a definite set has the same bias-subspace component as the set mean, "
            "so it has no side to be equalised to"
        )
    scale = np.sqrt(max(0.0, 1.0 - float(nu @ nu)))
    return nu + scale * offsets / lengths


# `hard_debias` takes arguments named like these functions.
_neutralize, _equalize = neutralize, equalize


# -- embedding layer --------------------------------------------------------------------
@dataclass
class DebiasReport:
    """What :func:`hard_debias` changed, and the checks it ran on the result.

    Attributes
    ----------
    wordlist, source : str
        The word list and the embedding debiased.
    k : int
        Bias directions; `explained_variance_ratio` gives each one's share.
    neutralize : str
        What was neutralised (``"stereotypes"``, ``"attributes"`` or ``"custom"``).
    neutralized : tuple of str
        Words neutralised (present in the embedding).
    equalized : tuple of tuple of str
        Definite sets equalised, in order (present words only); with
        ``overlapping="merge"`` the merged groups.
    missing : dict of {str: list of str}
        Words of each part not in the embedding (dropped with ``on_missing="drop"``).
    skipped : tuple of str
        Words asked to be neutralised that are in a definite set (equalised instead).
    max_projection_before, max_projection_after : float
        Largest absolute coordinate of a neutralised word on the subspace, before and after
        (after: measured on the returned vectors, in their dtype).
    set_checks : list of dict
        Per definite set: ``offsubspace_spread`` (largest distance between two words'
        off-subspace parts), ``norm_spread`` (largest difference of in-subspace lengths),
        ``projection_sum`` (norm of the sum of in-subspace parts; 0 for pairs) and
        ``symmetric`` (both spreads < `tolerance`).
    normalize_all : bool
        Whether every row of the output was scaled to unit length.
    overlapping : {"sequential", "merge"}
        How definite sets that share words were equalised (then `equalized` lists the
        merged groups).
    """

    wordlist: str
    source: str
    k: int
    explained_variance_ratio: tuple[float, ...]
    neutralize: str
    neutralized: tuple[str, ...]
    equalized: tuple[tuple[str, ...], ...]
    missing: dict[str, list[str]]
    skipped: tuple[str, ...]
    max_projection_before: float
    max_projection_after: float
    set_checks: list[dict] = field(default_factory=list)
    normalize_all: bool = False
    overlapping: str = "sequential"
    n_words: int = 0
    tolerance: float = 1e-6
    needed_k: int = 1
    allow_merge: bool = False

    @property
    def changed_words(self) -> tuple[str, ...]:
        """Every word whose vector changed direction (neutralised or equalised)."""
        return tuple(dict.fromkeys(self.neutralized + tuple(w for s in self.equalized
                                                            for w in s)))

    @property
    def merged_words(self) -> list[tuple[str, str]]:
        """Pairs of equalised words left with identical vectors."""
        return [tuple(p) for c in self.set_checks for p in c.get("coinciding", ())]

    @property
    def passed(self) -> bool:
        """Whether every check holds.

        Neutralised words have no projection, disjoint sets are symmetric, and no two
        equalised words coincide (unless merging was allowed).
        """
        return (self.max_projection_after < self.tolerance and all(
            c["symmetric"] for c in self.set_checks
            if self.overlapping == "merge" or not c["shares_words_with_later_set"])
            and (self.allow_merge or not self.merged_words))

    def to_dict(self) -> dict:
        """Plain dict (JSON-ready), with `changed_words` and `passed`."""
        out = asdict(self)
        out[DROPPED_KEY] = out.pop("missing")
        out["equalized"] = [list(s) for s in self.equalized]
        out["changed_words"] = list(self.changed_words)
        out["merged_words"] = [list(p) for p in self.merged_words]
        out["passed"] = self.passed
        return out

    def summary(self) -> str:
        """Summarise the report in a few lines for people."""
        evr = ", ".join(f"{v:.3f}" for v in self.explained_variance_ratio)
        lines = [
            f"hard debiasing of {self.source} for {self.wordlist!r}: k={self.k} "
            f"(explained variance ratio {evr}; definite sets of up to {self.needed_k + 1} "
            f"words need k >= {self.needed_k} to stay distinct)",
            f"neutralised ({self.neutralize}, {len(self.neutralized)}): "
            + ", ".join(self.neutralized),
            f"equalised ({len(self.equalized)} "
            f"{'merged groups' if self.overlapping == 'merge' else 'sets'}): "
            + "; ".join("/".join(s) for s in self.equalized),
            f"max |projection| of neutralised words: {self.max_projection_before:.4f} before, "
            f"{self.max_projection_after:.2e} after",
        ]
        for c in self.set_checks:
            note = (" (shares words with a later set)"
                    if c["shares_words_with_later_set"] and self.overlapping == "sequential"
                    else "")
            lines.append(
                f"  set {'/'.join(c['words'])}: off-subspace spread {c['offsubspace_spread']:.2e}, "
                f"norm spread {c['norm_spread']:.2e}, projection sum {c['projection_sum']:.3f}, "
                f"{'symmetric' if c['symmetric'] else 'NOT symmetric'}{note}"
            )
        if self.merged_words:
            lines.append(("merged (allowed): " if self.allow_merge else "MERGED: ")
                         + ", ".join(f"{a} = {b}" for a, b in self.merged_words)
                         + f" have identical vectors (k={self.k} < {self.needed_k})")
        if self.skipped:
            lines.append("not neutralised (in a definite set, equalised instead): "
                         + ", ".join(self.skipped))
        if dropped_line(self.missing):
            lines.append(dropped_line(self.missing))
        lines.append(
            f"{len(self.changed_words)} of {self.n_words} words changed"
            + ("; every row scaled to unit length" if self.normalize_all
               else "; all other rows unchanged")
        )
        lines.append("checks: " + ("passed" if self.passed else "FAILED"))
        return "\n".join(lines)


def _neutralize_words(wordlist: WordList, neutralize) -> tuple[str, tuple[str, ...]]:
    if neutralize is None:
        return "none", ()
    if isinstance(neutralize, str):
        if neutralize == "stereotypes":
            return neutralize, wordlist.stereotypes
        if neutralize == "attributes":
            return neutralize, wordlist.attributes
        raise InvalidArgumentError(
            f"neutralize must be one of {', '.join(NEUTRALIZE_CHOICES)} or a list of words, "
            f"got {neutralize!r}"
        )
    words = tuple(dict.fromkeys(str(w) for w in neutralize))
    return "custom", words


def _merge_overlapping(sets) -> list[tuple[str, ...]]:
    """Union of the sets that share words (transitively), in first-appearance order."""
    groups: list[list[str]] = []
    for s in sets:
        touching = [g for g in groups if set(g) & set(s)]
        merged = [w for g in touching for w in g]
        merged += [w for w in s if w not in merged]
        groups = [g for g in groups if g not in touching]
        groups.append(merged)
    first: dict[str, int] = {}
    for w in (w for s in sets for w in s):
        first.setdefault(w, len(first))
    return sorted((tuple(sorted(g, key=first.get)) for g in groups), key=lambda g: first[g[0]])


def _set_checks(sets, vectors_by_set, basis, tol) -> list[dict]:
    checks = []
    for i, (words, v) in enumerate(zip(sets, vectors_by_set, strict=True)):
        v = np.asarray(v, dtype=np.float64)
        inside = (v @ basis.T) @ basis
        off = v - inside
        lengths = np.linalg.norm(inside, axis=-1)
        spread = max(float(np.linalg.norm(a - b)) for j, a in enumerate(off) for b in off[j + 1:])
        later = {w for s in sets[i + 1:] for w in s}
        coinciding = [(words[a], words[b]) for a in range(len(words))
                      for b in range(a + 1, len(words))
                      if np.linalg.norm(v[a] - v[b]) < max(tol, 1e-5)]
        checks.append({
            "words": list(words),
            "offsubspace_spread": spread,
            "norm_spread": float(lengths.max() - lengths.min()),
            "projection_sum": float(np.linalg.norm(inside.sum(axis=0))),
            "symmetric": bool(spread < tol and lengths.max() - lengths.min() < tol),
            "shares_words_with_later_set": bool(later & set(words)),
            "coinciding": coinciding,
            "distinct": not coinciding,
        })
    return checks


def needed_k(definite_sets) -> int:
    """Smallest `k` that keeps the words of every definite set distinct: ``max(m) - 1``.

    Equalising `m` words gives each the same off-subspace part, so they can differ only
    inside the k-dimensional bias subspace, where their m unit offsets must be distinct:
    with ``k = 1`` there are only two sides (+r, -r), so three words always put two on
    one side and make them identical. ``k >= m - 1`` leaves room for all m.
    """
    return max((len(s) for s in definite_sets), default=2) - 1


def hard_debias(
    embedding: Embedding,
    wordlist,
    *,
    k: int | None = None,
    allow_merge: bool = False,
    neutralize="stereotypes",
    equalize: bool = True,
    on_missing: str = "error",
    normalize_all: bool = False,
    overlapping: str = "sequential",
    tolerance: float = 1e-6,
) -> tuple[Embedding, DebiasReport]:
    """Hard-debias `embedding` for the protected classes of `wordlist`.

    Parameters
    ----------
    embedding : Embedding
        The whole embedding; every word is kept in the output.
    wordlist : WordList or str
        A word list with ``definite_sets`` (or the name/path of one).
    k : int, optional
        Bias directions (principal components of the centred definite sets). Default:
        :func:`needed_k`, the largest definite set's size minus one (1 for pairs, 2 for
        the three-word religion and race sets), capped by what the sets span.
    allow_merge : bool, default False
        A `k` below :func:`needed_k` makes words of a definite set identical after
        equalising (e.g. ``jew`` and ``christian`` with ``k=1``). It raises
        :class:`~bayesbias.errors.InvalidArgumentError` unless ``allow_merge=True``;
        then a warning names the merged words and the report lists them.
    neutralize : {"stereotypes", "attributes"}, sequence of str or None
        Words to neutralise: the stereotype attributes of every class (default, as Manzini
        et al.), those plus the human and neutral control words, your own list, or none.
        Words of definite sets are never neutralised (they are equalised).
    equalize : bool, default True
        Equalise the definite sets after neutralising.
    on_missing : {"error", "drop"}
        Words not in the embedding raise :class:`~bayesbias.errors.OutOfVocabularyError`,
        or are dropped and listed in the report.
    normalize_all : bool, default False
        Also scale every untouched row to unit length (changed rows are always unit length).
    overlapping : {"sequential", "merge"}, default "sequential"
        Definite sets that share words: equalise them one after another in file order, as
        Manzini et al.'s code does (a shared word ends symmetric within the last set only),
        or merge sets that share words into one group and equalise each group (every set
        ends symmetric; words of one class in a group are equalised against each other too).
    tolerance : float, default 1e-6
        Tolerance of the report's checks.

    Returns
    -------
    debiased : Embedding
        Same words in the same order, same dtype; ``meta["debias"]`` holds the report dict.
    report : DebiasReport

    Raises
    ------
    WordListError
        No definite sets, a definite set left with fewer than two words, or `k` too large.
    OutOfVocabularyError
        Words missing with ``on_missing="error"``.
    ValueError
        An unknown `neutralize`, `overlapping` or `on_missing` choice, or a bad `k`.
    """
    validate_choice(overlapping, OVERLAPPING_CHOICES, "overlapping")
    embedding = as_embedding(embedding)
    wl = load_wordlist(wordlist)
    if not wl.definite_sets:
        raise WordListError(
            f"word list {wl.name!r} has no definite sets; hard debiasing needs "
            "definite_sets = [[word of class 1, word of class 2, ...], ...] in its file"
        )
    mode, requested = _neutralize_words(wl, neutralize)
    parts = {f"definite_set:{'/'.join(s)}": s for s in wl.definite_sets}
    parts[f"neutralize:{mode}"] = requested
    kept, missing = lookup(embedding, parts, on_missing)
    sets = []
    for s in wl.definite_sets:
        present = kept[f"definite_set:{'/'.join(s)}"]
        if len(present) < 2:
            gone = missing[f"definite_set:{'/'.join(s)}"]
            raise WordListError(
                f"definite set {list(s)} of {wl.name!r} has {len(present)} word(s) in "
                f"{embedding.source} (missing: {', '.join(gone) or 'none'}); a set needs two "
                "or more words"
            )
        sets.append(present)
    groups = _merge_overlapping(sets) if overlapping == "merge" else sets
    need = needed_k(groups) if equalize else 1
    span = sum(len(s) - 1 for s in sets)
    if k is None:
        k = min(need, span, embedding.dim)
    elif equalize and k < need:
        if not allow_merge:
            raise InvalidArgumentError(
                f"k={k} would make words of a definite set identical: equalising {need + 1} "
                f"words needs k >= {need} (the default). Pass allow_merge=True "
                "(CLI: --allow-merge) to merge them anyway")
    set_words = {w for s in sets for w in s}
    skipped = tuple(w for w in kept[f"neutralize:{mode}"] if w in set_words)
    if skipped:
        log.info("not neutralising definite-set word(s) %s (they are equalised)", skipped)
    to_neutralize = tuple(w for w in kept[f"neutralize:{mode}"] if w not in set_words)

    subspace = bias_subspace([_unit(embedding.matrix(s)) for s in sets], k)
    basis = subspace.basis

    out = np.array(embedding.vectors, copy=True)
    if normalize_all:
        norms = np.linalg.norm(out.astype(np.float64), axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out = (out / norms).astype(embedding.vectors.dtype)
    index = {w: embedding.index(w) for w in set_words | set(to_neutralize)}

    before = 0.0
    if to_neutralize:
        rows = [index[w] for w in to_neutralize]
        original = _unit(embedding.vectors[rows])
        before = float(np.abs(project(original, basis)).max())
        out[rows] = _neutralize(original, basis)
    if equalize:
        for group in groups:
            rows = [index[w] for w in group]
            out[rows] = _equalize(out[rows], basis)
    after = (float(np.abs(project(out[[index[w] for w in to_neutralize]], basis)).max())
             if to_neutralize else 0.0)
    checks = _set_checks(sets, [out[[index[w] for w in s]] for s in sets], basis,
                         tolerance) if equalize else []
    merged = [pair for c in checks for pair in c["coinciding"]]
    if merged:
        log.warning("k=%d merged equalised words (identical vectors): %s", subspace.k,
                    ", ".join(f"{a}={b}" for a, b in merged))
    report = DebiasReport(
        wordlist=wl.name,
        source=embedding.source,
        k=subspace.k,
        explained_variance_ratio=tuple(float(x) for x in subspace.explained_variance_ratio),
        neutralize=mode,
        neutralized=to_neutralize,
        equalized=tuple(tuple(g) for g in groups) if equalize else (),
        missing={p: list(v) for p, v in missing.items() if v},
        skipped=skipped,
        max_projection_before=before,
        max_projection_after=after,
        set_checks=checks,
        normalize_all=normalize_all,
        overlapping=overlapping,
        n_words=len(embedding),
        tolerance=tolerance,
        needed_k=need,
        allow_merge=allow_merge,
    )
    if not report.passed:
        log.warning("hard debiasing checks failed: %s", report.summary())
    meta = dict(embedding.meta, debias=report.to_dict(), basis=basis)
    debiased = Embedding(embedding.words, out,
                         f"{embedding.source} [hard-debiased: {wl.name}, k={subspace.k}]", meta)
    return debiased, report


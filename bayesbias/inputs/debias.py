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

from ..errors import InputDataError, InvalidArgumentError, WordListError
from ..plain import DROPPED_KEY, dropped_line
from ..validation import validate_choice
from .embeddings import Embedding, as_embedding, lookup
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
    "LinearEraser",
    "ErasureReport",
    "leace_fit",
    "inlp_fit",
    "biased_words",
    "training_words",
    "leace_debias",
    "inlp_debias",
    "double_hard_debias",
    "kmeans_alignment",
    "debias",
    "METHODS",
    "NEUTRALIZE_CHOICES",
    "OVERLAPPING_CHOICES",
]

log = logging.getLogger(__name__)

#: Named word groups `hard_debias` can neutralise.
NEUTRALIZE_CHOICES = ("stereotypes", "attributes", "all")
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
        if neutralize == "all":  # Bolukbasi et al.: every word but the gendered ones
            return neutralize, None
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
    neutralize : {"stereotypes", "attributes", "all"}, sequence of str or None
        Words to neutralise: the stereotype attributes of every class (default, as Manzini
        et al.), those plus the human and neutral control words, every word of the
        embedding but the protected words and definite sets (``"all"``, as Bolukbasi et al.
        with their list of gender-specific words), your own list, or none.
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
    if requested is None:  # "all": every word but the protected words and definite sets
        protected = set(wl.protected_words) | {w for s in wl.definite_sets for w in s}
        requested = tuple(w for w in embedding.words if w not in protected)
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



# == linear erasure and Double-Hard ======================================================
#: Debiasing methods of :func:`debias` (``"multiclass"`` is ``"hard"`` on a word list with
#: definite sets of three or more words, Manzini et al.'s generalisation).
METHODS = ("hard", "multiclass", "inlp", "leace", "double-hard")


def _finite_rows(x: np.ndarray, what: str = "vectors") -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise InputDataError(f"{what} must be a 2-d array (rows x dims), got shape {x.shape}")
    bad = ~np.isfinite(x).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)[:5].tolist()
        raise InputDataError(f"{what}: {int(bad.sum())} row(s) with NaN or infinite values "
                             f"(first rows {rows})")
    return x


def _labels(y, n: int) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y)
    if y.shape != (n,):
        raise InputDataError(f"labels must have one entry per row ({n}), got shape {y.shape}")
    classes, codes = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise WordListError(f"erasure needs at least two classes, got {classes.tolist()}")
    counts = np.bincount(codes)
    if counts.min() < 2:
        lone = [str(c) for c, k in zip(classes, counts, strict=True) if k < 2]
        raise WordListError(f"class(es) {', '.join(lone)} have a single word; every class "
                            "needs two or more")
    return classes, codes


@dataclass(frozen=True)
class LinearEraser:
    """An affine eraser ``x -> x - (x - mean) @ proj_right.T @ proj_left.T``.

    LEACE (Belrose et al. 2023) gives an oblique projection (``proj_left`` is not
    ``proj_right.T``); INLP (Ravfogel et al. 2020) an orthogonal one with ``mean = 0``.

    Attributes
    ----------
    mean : ndarray of shape (dim,)
    proj_left, proj_right : ndarray of shape (dim, r) and (r, dim)
    method : str
    details : dict
        What the fit measured (INLP: training accuracy per iteration).
    """

    mean: np.ndarray
    proj_left: np.ndarray
    proj_right: np.ndarray
    method: str
    details: dict = field(default_factory=dict)

    @property
    def rank(self) -> int:
        """Rank of the update ``proj_left @ proj_right``."""
        m = self.proj_left @ self.proj_right
        return int(np.linalg.matrix_rank(m, tol=1e-8 * max(1.0, np.abs(m).max())))

    @property
    def matrix(self) -> np.ndarray:
        """``I - proj_left @ proj_right``: the linear part of the eraser."""
        return np.eye(self.mean.shape[0]) - self.proj_left @ self.proj_right

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Erase the concept from the rows of `x` (float64 result)."""
        x = np.asarray(x, dtype=np.float64)
        return x - ((x - self.mean) @ self.proj_right.T) @ self.proj_left.T


def _shrunk(s_n: np.ndarray, n: int) -> np.ndarray:
    """Optimal linear shrinkage toward a scaled identity (as ``concept-erasure``)."""
    p = s_n.shape[0]
    eps = np.finfo(np.float64).eps
    trace = np.trace(s_n)
    sigma0 = np.eye(p) * trace / p
    s0_sq, s_sq = np.sum(sigma0**2), np.sum(s_n**2)
    prod = np.trace(s_n @ sigma0)
    top = trace * trace * s0_sq / n
    bottom = s_sq * s0_sq - prod * prod
    alpha = 1 - (top + eps) / (bottom + eps)
    beta = (1 - alpha) * (prod + eps) / (s0_sq + eps)
    return alpha * s_n + beta * sigma0


def leace_fit(x, y, *, svd_tol: float = 0.01, constrain_cov_trace: bool = True,
              shrinkage: bool = False) -> LinearEraser:
    """Fit LEACE in closed form (Belrose et al. 2023), in NumPy.

    The eraser whitens ``x`` with the pseudo-inverse square root ``W`` of its covariance,
    projects out the column space of ``W @ cov(x, z)`` (``z`` the one-hot labels; one 0/1
    column for two classes) and unwhitens. After it every class has the same mean, so no
    linear classifier does better than a constant, and the change is the smallest (in
    mean squared norm) that achieves this. The arithmetic follows EleutherAI's
    ``concept-erasure`` (``LeaceFitter``, ``method="leace"``): its eigenvalue threshold,
    `svd_tol`, the trace constraint and (optionally) its covariance shrinkage, so the two
    agree to rounding (tested to 1e-8 where the library is installed).

    Parameters
    ----------
    x : ndarray of shape (n, dim)
    y : array-like of shape (n,)
        Class labels (two or more classes, two or more rows each).
    svd_tol : float, default 0.01
        Singular values of ``W @ cov(x, z)`` at or below it are dropped.
    constrain_cov_trace : bool, default True
        If the erasure would increase the trace of the covariance, mix it with the
        orthogonal projection so that it does not (as ``concept-erasure``).
    shrinkage : bool, default False
        Shrink the covariance toward a scaled identity (``concept-erasure``'s default; off
        here, the plain sample covariance of the paper's closed form).

    Returns
    -------
    LinearEraser
    """
    x = _finite_rows(x)
    classes, codes = _labels(y, x.shape[0])
    n, dim = x.shape
    z = np.eye(len(classes))[codes]
    if len(classes) == 2:
        z = z[:, 1:]  # concept-erasure's binary case: one 0/1 column
    mean = x.mean(axis=0)
    xc = x - mean
    scatter = xc.T @ xc
    scatter = (scatter + scatter.T) / 2
    sigma = _shrunk(scatter / n, n) if shrinkage else scatter / (n - 1)
    sigma_xz = xc.T @ (z - z.mean(axis=0)) / (n - 1)
    lam, v = np.linalg.eigh(sigma)
    mask = lam > lam[-1] * dim * np.finfo(np.float64).eps
    lam = np.clip(lam, 0.0, None)
    w = (v * np.where(mask, 1 / np.sqrt(np.where(mask, lam, 1.0)), 0.0)) @ v.T
    w_inv = (v * np.where(mask, np.sqrt(lam), 0.0)) @ v.T
    u, s, _ = np.linalg.svd(w @ sigma_xz, full_matrices=False)
    u = u * (s > svd_tol)
    left, right = w_inv @ u, u.T @ w
    mixed = False
    if constrain_cov_trace:
        eye = np.eye(dim)
        p = eye - left @ right
        old, new = np.trace(sigma), np.trace(p @ sigma @ p.T)
        if new > old:
            # the mixture a P + (1 - a) Q with the orthogonal projection Q whose covariance
            # has the original trace (concept-erasure's quadratic)
            q = eye - u @ u.T
            b, c = 2 * np.trace(p @ sigma @ q.T), np.trace(q @ sigma @ q.T)
            discr = np.sqrt(4 * old * new - 4 * old * b + 4 * old * c - 4 * new * c + b**2)
            a1 = (-b / 2 + c - discr / 2) / (new - b + c)
            a2 = (-b / 2 + c + discr / 2) / (new - b + c)
            alpha = float(np.clip(a1 if a1 > 0 else a2, 0, 1))
            p = alpha * p + (1 - alpha) * q
            uu, ss, vh = np.linalg.svd(eye - p)
            left, right = uu * np.sqrt(ss), np.sqrt(ss)[:, None] * vh
            mixed = True
    return LinearEraser(mean, left, right, "leace",
                        {"classes": [str(c) for c in classes], "n": n,
                         "trace_constrained": mixed, "shrinkage": shrinkage})


def _orthonormal_rows(w: np.ndarray) -> np.ndarray:
    u, s, vt = np.linalg.svd(w, full_matrices=False)
    keep = s > 1e-10 * max(1.0, s.max(initial=0.0))
    return vt[keep]


def inlp_fit(x, y, n_iterations: int = 10, *, seed: int = 0, classifier: str = "svm",
             c: float = 1.0) -> LinearEraser:
    """Fit iterative nullspace projection (INLP, Ravfogel et al. 2020).

    Each iteration trains a linear classifier (scikit-learn ``LinearSVC``, or
    ``LogisticRegression`` with ``classifier="logistic"``) to predict the class from the
    projected vectors and adds its weight rows to the removed space; the eraser is the
    orthogonal projection onto the intersection of the classifiers' nullspaces.

    Parameters
    ----------
    x : ndarray of shape (n, dim)
    y : array-like of shape (n,)
    n_iterations : int, default 10
        Classifiers trained; each removes one direction for two classes, one per class
        otherwise. Their total may not exceed ``dim``.
    seed : int, default 0
        Seeds the classifiers (deterministic for a seed).
    classifier : {"svm", "logistic"}
    c : float
        Inverse regularisation strength of the classifiers.

    Returns
    -------
    LinearEraser
        ``details["accuracy"]``: the training accuracy of each iteration's classifier.
    """
    validate_choice(classifier, ("svm", "logistic"), "classifier")
    x = _finite_rows(x)
    classes, codes = _labels(y, x.shape[0])
    if isinstance(n_iterations, bool) or not isinstance(n_iterations, (int, np.integer)) \
            or n_iterations < 1:
        raise InvalidArgumentError(f"n_iterations must be a positive integer, got "
                                   f"{n_iterations!r}")
    per = 1 if len(classes) == 2 else len(classes)
    dim = x.shape[1]
    if n_iterations * per > dim:
        raise InvalidArgumentError(
            f"INLP with {n_iterations} iterations removes up to {n_iterations * per} "
            f"directions, more than the {dim} dimensions of the vectors")
    removed = np.zeros((0, dim))
    accuracy = []
    with one_thread():
        removed, accuracy = _inlp_loop(x, codes, n_iterations, seed, classifier, c, dim)
    return LinearEraser(np.zeros(dim), removed.T, removed, "inlp",
                        {"accuracy": accuracy, "classes": [str(c) for c in classes],
                         "n": x.shape[0], "classifier": classifier})


def _inlp_loop(x, codes, n_iterations, seed, classifier, c, dim):
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    removed = np.zeros((0, dim))
    accuracy = []
    for i in range(int(n_iterations)):
        p = np.eye(dim) - removed.T @ removed
        xp = x @ p
        if classifier == "svm":
            clf = LinearSVC(C=c, random_state=seed + i, max_iter=20_000, dual="auto")
        else:
            clf = LogisticRegression(C=c, random_state=seed + i, max_iter=5_000)
        clf.fit(xp, codes)
        accuracy.append(float(clf.score(xp, codes)))
        removed = _orthonormal_rows(np.vstack([removed, clf.coef_ @ p]))
    return removed, accuracy


# -- which words train an eraser -----------------------------------------------------------
def _class_directions(embedding: Embedding, wl: WordList) -> tuple[np.ndarray, list[str]]:
    """Centred, unit mean direction of each class's protected words (present ones)."""
    means = []
    for c in wl.classes:
        present = [w for w in c.protected_words if w in embedding]
        means.append(_unit(embedding.matrix(present)).mean(axis=0))
    means = np.asarray(means)
    centred = means - means.mean(axis=0)
    return _unit(centred), list(wl.class_names)


def biased_words(embedding: Embedding, wordlist, n: int = 500, *, within: int | None = None,
                 alpha_only: bool = True, exclude=()) -> tuple[list[str], np.ndarray]:
    """Return the `n` words most biased toward each protected class, labelled by class.

    A word's bias toward class ``j`` is its cosine with the direction of the class's
    protected words (their mean unit vector, centred on the mean over classes; for two
    classes this is the cosine with ``mean(he, his, ...) - mean(she, hers, ...)``, the
    ranking of Wang et al. 2020 with ``he - she``). Each word goes to the class it leans to
    most; per class the `n` with the largest bias are kept.

    Parameters
    ----------
    embedding : Embedding
        The embedding *before* debiasing (words and labels are fixed there).
    wordlist : WordList or str
    n : int
        Words per class.
    within : int, optional
        Consider only the first `within` rows (the most frequent words of a GloVe or
        word2vec file, as Wang et al. use the 50,000 most frequent).
    alpha_only : bool, default True
        Only lower-case alphabetic words.
    exclude : iterable of str
        Words never taken (the word list's own words are always excluded).

    Returns
    -------
    words : list of str
    labels : ndarray of str
        The class of each word.
    """
    wl = load_wordlist(wordlist)
    missing = [w for c in wl.classes for w in c.protected_words if w not in embedding]
    empty = [c.name for c in wl.classes if all(w not in embedding for w in c.protected_words)]
    if empty:
        raise WordListError(f"class(es) {', '.join(empty)} of {wl.name!r} have no protected "
                            f"word in {embedding.source} (missing: {', '.join(missing)})")
    dirs, names = _class_directions(embedding, wl)
    skip = set(wl.all_words) | {w for s in wl.definite_sets for w in s} | set(exclude)
    stop = len(embedding) if within is None else min(int(within), len(embedding))
    rows = [i for i, w in enumerate(embedding.words[:stop])
            if w not in skip and (not alpha_only or (w.isalpha() and w.islower()))]
    v = embedding.vectors[rows].astype(np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    v = v / np.where(norms == 0, 1.0, norms)
    scores = v @ dirs.T
    side = scores.argmax(axis=1)
    words, labels = [], []
    for j, name in enumerate(names):
        idx = np.flatnonzero(side == j)
        top = idx[np.argsort(-scores[idx, j], kind="stable")[:n]]
        if len(top) < n:
            log.warning("only %d word(s) lean toward class %s (asked for %d)", len(top), name, n)
        words += [embedding.words[rows[i]] for i in top]
        labels += [name] * len(top)
    return words, np.asarray(labels)


def training_words(embedding: Embedding, wordlist, n_biased: int = 1000, *,
                   on_missing: str = "error", within: int | None = None, exclude=()
                   ) -> tuple[list[str], np.ndarray, dict]:
    """Return the words (and classes) that train INLP and LEACE.

    The protected words of each class, plus the `n_biased` most biased words per class
    (:func:`biased_words`), leaving out `exclude` (e.g. the words a recoverability test
    will be run on: an eraser fitted on the test words makes cross-validated accuracy on
    them fall *below* chance, each fold's class means being pushed apart by the erasure
    of the others).

    Returns
    -------
    words, labels, missing
    """
    wl = load_wordlist(wordlist)
    parts = {f"class:{c.name}": c.protected_words for c in wl.classes}
    kept, missing = lookup(embedding, parts, on_missing)
    words, labels = [], []
    for c in wl.classes:
        present = kept[f"class:{c.name}"]
        if len(present) < 2 and n_biased == 0:
            raise WordListError(f"class {c.name!r} of {wl.name!r} has {len(present)} word(s) in "
                                f"{embedding.source}; every class needs two or more")
        words += list(present)
        labels += [c.name] * len(present)
    if n_biased:
        extra, extra_labels = biased_words(embedding, wl, n_biased, within=within,
                                           exclude=exclude)
        words += extra
        labels += list(extra_labels)
    return words, np.asarray(labels), {k: v for k, v in missing.items() if v}


# -- embedding layer -----------------------------------------------------------------------
@dataclass
class ErasureReport:
    """What :func:`inlp_debias`, :func:`leace_debias` or :func:`double_hard_debias` did.

    Attributes
    ----------
    method, wordlist, source : str
    n_training : dict of {str: int}
        Training words per class.
    rank : int
        Directions removed (rank of the update; for Double-Hard the hard-debiasing `k`).
    before, after : dict
        Largest absolute difference of the class means of the training words, and
        (INLP) the classifier's training accuracy per iteration.
    seed : int
    details : dict
    """

    method: str
    wordlist: str
    source: str
    n_training: dict
    rank: int
    seed: int
    n_words: int
    missing: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)
    tolerance: float = 1e-6

    @property
    def passed(self) -> bool:
        """Whether the method's own check holds (LEACE: equal class means)."""
        if self.method == "leace":
            return self.details["class_mean_gap_after"] < self.tolerance
        if self.method == "double-hard":
            return bool(self.details["hard"]["passed"])
        return True

    def to_dict(self) -> dict:
        """Plain dict (JSON-ready), with `passed`."""
        out = asdict(self)
        out[DROPPED_KEY] = out.pop("missing")
        out["passed"] = self.passed
        return out

    def summary(self) -> str:
        """Summarise the report in a few lines for people."""
        counts = ", ".join(f"{k} {v}" for k, v in self.n_training.items())
        what = (f"bias directions k={self.rank} after one frequency direction"
                if self.method == "double-hard" else f"rank of the update {self.rank}")
        verb = "chose the direction on" if self.method == "double-hard" else "trained on"
        lines = [f"{self.method} debiasing of {self.source} for {self.wordlist!r} "
                 f"(seed {self.seed}): {verb} {counts} words; {what}"]
        d = self.details
        if "class_mean_gap_before" in d:
            lines.append(f"largest class-mean gap of the training words: "
                         f"{d['class_mean_gap_before']:.4f} before, "
                         f"{d['class_mean_gap_after']:.2e} after")
        if "accuracy" in d:
            lines.append("INLP classifier training accuracy per iteration: "
                         + ", ".join(f"{a:.3f}" for a in d["accuracy"]))
        if "component" in d:
            lines.append(f"frequency direction removed: principal component {d['component']} "
                         f"(alignment after hard debiasing per candidate: "
                         + ", ".join(f"{a:.3f}" for a in d["alignment_by_component"]) + ")")
        if dropped_line(self.missing):
            lines.append(dropped_line(self.missing))
        lines.append(f"all {self.n_words} words changed (a map of the whole space)")
        lines.append("checks: " + ("passed" if self.passed else "FAILED"))
        return "\n".join(lines)


def _check_embedding(embedding: Embedding) -> Embedding:
    embedding = as_embedding(embedding)
    v = embedding.vectors
    bad = ~np.isfinite(v).all(axis=1)
    if bad.any():
        words = [embedding.words[i] for i in np.flatnonzero(bad)[:5]]
        raise InputDataError(f"{embedding.source}: {int(bad.sum())} vector(s) with NaN or "
                             f"infinite values (e.g. {', '.join(words)})")
    return embedding


def _class_mean_gap(x, labels) -> float:
    means = np.asarray([x[labels == c].mean(axis=0) for c in np.unique(labels)])
    return float(np.abs(means - means.mean(axis=0)).max())


def _erase(embedding, wordlist, method, *, n_biased, on_missing, within, seed, fit, exclude):
    embedding = _check_embedding(embedding)
    wl = load_wordlist(wordlist)
    words, labels, missing = training_words(embedding, wl, n_biased, on_missing=on_missing,
                                            within=within, exclude=exclude)
    x = embedding.matrix(words)
    eraser = fit(x, labels)
    after = eraser(x)
    out = eraser(embedding.vectors.astype(np.float64)).astype(embedding.vectors.dtype)
    details = dict(eraser.details, class_mean_gap_before=_class_mean_gap(x, labels),
                   class_mean_gap_after=_class_mean_gap(after, labels), n_biased=n_biased,
                   n_excluded=len(set(exclude)))
    report = ErasureReport(method, wl.name, embedding.source,
                           {c: int((labels == c).sum()) for c in wl.class_names},
                           eraser.rank, seed, len(embedding), missing, details)
    meta = dict(embedding.meta, debias=report.to_dict(), eraser=eraser)
    return Embedding(embedding.words, out,
                     f"{embedding.source} [{method}: {wl.name}]", meta), report


def leace_debias(embedding: Embedding, wordlist, *, n_biased: int = 1000,
                 on_missing: str = "error", within: int | None = None, seed: int = 0,
                 exclude=(), shrinkage: bool = False) -> tuple[Embedding, ErasureReport]:
    """Erase the protected classes of `wordlist` from every vector with LEACE.

    The eraser (:func:`leace_fit`) is fitted on the protected words of each class plus
    the `n_biased` most biased words per class (:func:`biased_words`) and applied to every
    row. LEACE has no randomness; `seed` is recorded only. `exclude`: words never
    trained on (see :func:`training_words`); `shrinkage`: see :func:`leace_fit`.

    Returns
    -------
    debiased : Embedding
        Same words and dtype; ``meta["eraser"]`` the :class:`LinearEraser`.
    report : ErasureReport
    """
    return _erase(embedding, wordlist, "leace", n_biased=n_biased, on_missing=on_missing,
                  within=within, seed=seed, exclude=exclude,
                  fit=lambda x, y: leace_fit(x, y, shrinkage=shrinkage))


def inlp_debias(embedding: Embedding, wordlist, *, n_iterations: int = 10,
                n_biased: int = 1000, on_missing: str = "error", within: int | None = None,
                seed: int = 0, classifier: str = "svm", exclude=()
                ) -> tuple[Embedding, ErasureReport]:
    """Erase the protected classes of `wordlist` from every vector with INLP.

    Trained like :func:`leace_debias`; see :func:`inlp_fit` for `n_iterations`,
    `classifier` and `seed`.
    """
    if isinstance(n_iterations, (int, np.integer)) and not isinstance(n_iterations, bool):
        dim = as_embedding(embedding).dim
        wl = load_wordlist(wordlist)
        per = 1 if len(wl.classes) == 2 else len(wl.classes)
        if n_iterations * per > dim:  # before collecting training words
            raise InvalidArgumentError(
                f"INLP with {n_iterations} iterations removes up to {n_iterations * per} "
                f"directions, more than the {dim} dimensions of {as_embedding(embedding).source}")
    return _erase(embedding, wordlist, "inlp", n_biased=n_biased, on_missing=on_missing,
                  within=within, seed=seed, exclude=exclude,
                  fit=lambda x, y: inlp_fit(x, y, n_iterations, seed=seed,
                                            classifier=classifier))


def kmeans_alignment(x: np.ndarray, labels, *, seed: int = 0, n_init: int = 4) -> float:
    """Share of rows whose k-means cluster (k = number of classes) matches their class.

    Clusters are matched to classes by the best one-to-one assignment (for two classes
    ``max(acc, 1 - acc)``, Wang et al.'s alignment). Rows are scaled to unit length.
    """
    from sklearn.cluster import KMeans

    classes, codes = np.unique(np.asarray(labels), return_inverse=True)
    x = _unit(np.asarray(x, dtype=np.float64))
    with one_thread():
        km = KMeans(len(classes), n_init=n_init, random_state=seed).fit(x)
    return _alignment(km.labels_, codes, len(classes))


def _alignment(clusters, codes, k) -> float:
    from scipy.optimize import linear_sum_assignment

    table = np.zeros((k, k))
    np.add.at(table, (clusters, codes), 1)
    r, c = linear_sum_assignment(-table)
    return float(table[r, c].sum() / len(codes))


def double_hard_debias(embedding: Embedding, wordlist, *, n_components: int = 20,
                       n_select: int = 500, k: int | None = None, within: int | None = None,
                       on_missing: str = "error", seed: int = 0
                       ) -> tuple[Embedding, ErasureReport]:
    """Double-Hard debiasing (Wang et al. 2020): a frequency direction, then hard debiasing.

    1. Centre every vector on the vocabulary mean and find its principal components.
    2. For each of the first `n_components` components ``u``: remove ``u`` from the
       vectors of the `n_select` most biased words per class (:func:`biased_words`),
       hard-debias them, and measure how well k-means still recovers their classes.
    3. Remove the component with the lowest alignment from every vector
       (``w - (u . w) u - mean``, as the authors' code) and hard-debias the whole
       embedding (:func:`hard_debias` with ``neutralize="all"``: every word but the
       protected words and definite sets is neutralised, the sets are equalised).

    Parameters
    ----------
    n_components : int, default 20
        Candidate frequency directions (at most the dimension).
    n_select : int, default 500
        Biased words per class used to choose the direction.
    k : int, optional
        Bias directions of the hard-debiasing step (default: :func:`needed_k`).
    within : int, optional
        Rank biased words among the first `within` rows only.
    seed : int
        Seeds k-means (deterministic for a seed).

    Returns
    -------
    debiased : Embedding
    report : ErasureReport
        ``details["component"]``, the alignment per candidate, and the hard report.
    """
    embedding = _check_embedding(embedding)
    wl = load_wordlist(wordlist)
    if isinstance(n_components, bool) or not isinstance(n_components, (int, np.integer)) \
            or not 1 <= n_components <= embedding.dim:
        raise InvalidArgumentError(f"n_components must be between 1 and the dimension "
                                   f"{embedding.dim}, got {n_components!r}")
    parts = {f"class:{c.name}": c.protected_words for c in wl.classes}
    parts.update({f"definite_set:{'/'.join(s)}": s for s in wl.definite_sets})
    _, missing = lookup(embedding, parts, on_missing)
    words, labels = biased_words(embedding, wl, n_select, within=within)
    v = embedding.vectors.astype(np.float64)
    mean = v.mean(axis=0)
    _, _, components = np.linalg.svd(v - mean, full_matrices=False)
    rows = [embedding.index(w) for w in words]
    set_words = tuple(dict.fromkeys(w for s in wl.definite_sets for w in s if w in embedding))
    set_rows = [embedding.index(w) for w in set_words]
    scores = []
    for u in components[:n_components]:
        sub = v[rows + set_rows]
        sub = sub - np.outer(sub @ u, u) - mean
        small = Embedding(words + list(set_words), sub, "candidate")
        hd, _ = hard_debias(small, wl, k=k, neutralize=words, on_missing="drop",
                            allow_merge=True)
        scores.append(kmeans_alignment(hd.vectors[:len(words)], labels, seed=seed))
    best = int(np.argmin(scores))
    u = components[best]
    shifted = v - np.outer(v @ u, u) - mean
    centred = Embedding(embedding.words, shifted.astype(embedding.vectors.dtype),
                        embedding.source, dict(embedding.meta))
    out, hard = hard_debias(centred, wl, k=k, neutralize="all", on_missing="drop",
                            normalize_all=True)
    report = ErasureReport("double-hard", wl.name, embedding.source,
                           {c: int((labels == c).sum()) for c in wl.class_names},
                           hard.k, seed, len(embedding), {p: m for p, m in missing.items() if m},
                           {"component": best, "alignment_by_component": scores,
                            "n_select": n_select, "hard": hard.to_dict()})
    meta = dict(embedding.meta, debias=report.to_dict(), basis=out.meta["basis"],
                frequency_direction=u, mean=mean)
    return Embedding(embedding.words, out.vectors,
                     f"{embedding.source} [double-hard: {wl.name}, k={hard.k}]", meta), report


def debias(embedding: Embedding, wordlist, method: str = "hard", *, seed: int = 0, **kwargs):
    """Debias `embedding` for `wordlist` with one of :data:`METHODS`.

    ``"hard"`` and ``"multiclass"`` call :func:`hard_debias` (the same method; Manzini
    et al.'s multiclass form applies to definite sets of three or more words), the others
    :func:`inlp_debias`, :func:`leace_debias` and :func:`double_hard_debias`; `kwargs` go to
    that function.

    Returns
    -------
    debiased : Embedding
    report : DebiasReport or ErasureReport
    """
    validate_choice(method, METHODS, "method")
    if method in ("hard", "multiclass"):
        return hard_debias(embedding, wordlist, **kwargs)
    fn = {"inlp": inlp_debias, "leace": leace_debias, "double-hard": double_hard_debias}[method]
    return fn(embedding, wordlist, seed=seed, **kwargs)


def one_thread():
    """Limit OpenMP/BLAS to one thread.

    k-means with many threads on a busy machine is tens of times slower than with one; the
    small problems here gain nothing from more.
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1)

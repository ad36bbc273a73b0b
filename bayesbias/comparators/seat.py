"""SEAT: the Sentence Encoder Association Test (May et al. 2019).

SEAT is WEAT whose targets and attributes are sentences: each word of X, Y, A and B is put
into semantically bleached templates ("This is a nurse.", "The nurse is here.") and every
sentence embedding is one member of its set. The shipped tests ``seat6`` and ``seat7`` carry
the authors' sentences for WEAT 6 and 7 (``wordlists/seat/``); any two-class word list can be
turned into a SEAT test with the templates.

The sentences of one word are not independent draws: they share the word. What was sampled
is the words, so the interval and the p-value resample the *words* (clusters):
:func:`cluster_bootstrap_effect_size` resamples words of X, Y, A and B with replacement and
keeps all sentences of each drawn word; :func:`cluster_permutation_test` re-partitions the
words of X ∪ Y, all sentences of a word moving together. May et al.'s sentence-level
numbers (every sentence resampled or permuted on its own) are kept as a labelled secondary
result: they treat the sentences as independent and their intervals are too narrow.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field

import numpy as np

from .._atomic import shipped_dir
from ..config import defaults, validate_ci_prob
from ..encoders.words import Templates
from ..errors import InputDataError, InvalidArgumentError, WordListError
from ..inputs.wordlists import WordList, load_wordlist
from ..resampling import percentile_interval
from .weat import (
    ALTERNATIVES,
    PermutationTest,
    WeatResult,
    _ddof,
    n_splits,
    resolve_weat_sets,
    split_indicators,
    weat_from_similarities,
)

__all__ = ["SeatTest", "SeatResult", "available_seat_tests", "load_seat_test",
           "seat_test_from_words", "seat", "seat_from_similarities",
           "cluster_bootstrap_effect_size", "cluster_permutation_test"]


@dataclass(frozen=True)
class SeatTest:
    """Sentences of the four sets X, Y, A, B of a SEAT test, and the word of each sentence.

    ``words[k][i]`` is the word whose templates made ``sets[k][i]`` (the unit that was
    sampled); empty when unknown, and then each sentence is its own unit.
    """

    name: str
    sets: dict
    names: dict
    provenance: dict = field(default_factory=dict)
    words: dict = field(default_factory=dict)

    def sizes(self) -> dict:
        """Sentences per set."""
        return {k: len(v) for k, v in self.sets.items()}

    def units(self, key: str) -> tuple[str, ...]:
        """Return the word of each sentence of set `key` (the sentence itself when unknown)."""
        return tuple(self.words.get(key) or self.sets[key])


def _words_of_sentences(sets: dict, wordlist: str) -> dict:
    """Return the word of each sentence, regenerated from the word list and templates."""
    try:
        weat_sets = resolve_weat_sets(wordlist)
    except WordListError:
        return {}
    t = Templates.shipped()
    out = {}
    for key in "XYAB":
        made = {}
        for w in getattr(weat_sets, key):
            for form in dict.fromkeys((w, w.capitalize())):
                for sentence in t.seat_sentences(form):
                    made.setdefault(sentence, w)
        words = [made.get(sentence) for sentence in sets[key]]
        if None in words:  # a sentence not made from the list: units unknown
            return {}
        out[key] = tuple(words)
    return out


def available_seat_tests() -> dict:
    """Shipped SEAT tests by name (``seat6``, ``seat7``)."""
    root = shipped_dir("wordlists") / "seat"
    return {p.stem: p for p in sorted(root.glob("seat*.toml"))}


def load_seat_test(name_or_path) -> SeatTest:
    """Load a shipped SEAT test by name, or a TOML file with ``[sets.X] sentences = [...]``."""
    from pathlib import Path

    shipped = available_seat_tests()
    path = shipped.get(str(name_or_path)) or Path(name_or_path)
    if not path.is_file():
        raise WordListError(f"SEAT test {str(name_or_path)!r} is neither shipped "
                            f"({', '.join(shipped)}) nor an existing file")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise WordListError(f"{path}: not valid TOML: {exc}") from None
    raw = data.get("sets")
    if not isinstance(raw, dict) or set(raw) != set("XYAB"):
        raise WordListError(f"{path}: needs [sets.X], [sets.Y], [sets.A] and [sets.B]")
    sets, names = {}, {}
    for key in "XYAB":
        sentences = raw[key].get("sentences") if isinstance(raw[key], dict) else None
        if (not isinstance(sentences, list) or not sentences
                or not all(isinstance(s, str) and s.strip() for s in sentences)):
            raise WordListError(f"{path}: sets.{key}.sentences must be a non-empty list of "
                                "non-empty strings")
        sets[key] = tuple(sentences)
        names[key] = str(raw[key].get("category", key))
    words = _words_of_sentences(sets, str(data["wordlist"])) if data.get("wordlist") else {}
    return SeatTest(str(data.get("name", path.stem)), sets, names,
                    dict(data.get("provenance", {})), words)


def seat_test_from_words(wordlist_or_sets, templates=None) -> SeatTest:
    """Make a SEAT test from a two-class word list (or X, Y, A, B) and templates.

    Parameters
    ----------
    wordlist_or_sets
        As for :func:`~bayesbias.comparators.weat.weat`.
    templates : bayesbias.encoders.Templates, optional
        Default: SEAT's templates plus the word list's own ``[templates]`` table.
    """
    obj = wordlist_or_sets
    if isinstance(obj, str):
        try:
            obj = load_wordlist(obj)
        except WordListError:
            pass
    if templates is None:
        templates = (Templates.from_wordlist(obj) if isinstance(obj, WordList)
                     else Templates.shipped())
    sets = resolve_weat_sets(obj)
    made = {k: [(w, s) for w in getattr(sets, k) for s in templates.sentences(w)]
            for k in "XYAB"}
    return SeatTest(getattr(obj, "name", "custom"),
                    {k: tuple(s for _, s in v) for k, v in made.items()},
                    dict(zip("XYAB", sets.names, strict=True)),
                    {"templates": templates.source},
                    {k: tuple(w for w, _ in v) for k, v in made.items()})


def _codes(labels) -> np.ndarray:
    """Integer code of each label, in order of first appearance."""
    index: dict = {}
    return np.array([index.setdefault(u, len(index)) for u in labels], dtype=np.intp)


def cluster_bootstrap_effect_size(sim_a, sim_b, n_x: int, units_t, units_a, units_b, *,
                                  n_bootstrap: int = 2000, sd: str = "sample", seed=None,
                                  chunk: int = 500) -> np.ndarray:
    """Bootstrap draws of the SEAT effect size resampling words (clusters of sentences).

    Each resample draws the words of X, Y, A and B with replacement (sizes kept) and keeps
    every sentence of each drawn word, as often as the word was drawn.

    Parameters
    ----------
    sim_a, sim_b : array_like, shape (n_X + n_Y, n_A) and (n_X + n_Y, n_B)
        Similarities of the target sentences (X first) with the sentences of A and of B.
    n_x : int
        Number of X sentences (the first rows).
    units_t, units_a, units_b : sequence
        The word of each target, A and B sentence.
    n_bootstrap : int
    sd : {"sample", "population"}
    seed : int or numpy.random.Generator, optional

    Returns
    -------
    ndarray, shape (n_bootstrap,)
        NaN for resamples whose pooled sd is zero.
    """
    sim_a = np.asarray(sim_a, dtype=np.float64)
    sim_b = np.asarray(sim_b, dtype=np.float64)
    ddof = _ddof(sd)
    rng = np.random.default_rng(seed)
    units_t = list(units_t)
    gx, gy = _codes(units_t[:n_x]), _codes(units_t[n_x:])
    ga, gb = _codes(units_a), _codes(units_b)
    if len(gx) != n_x or not len(gy) or len(ga) != sim_a.shape[1] or \
            len(gb) != sim_b.shape[1] or len(units_t) != sim_a.shape[0]:
        raise InputDataError("units must name the word of every sentence of X, Y, A and B")
    sizes = [int(g.max()) + 1 for g in (gx, gy, ga, gb)]
    out = np.empty(int(n_bootstrap))
    done = 0
    while done < n_bootstrap:
        k = min(chunk, n_bootstrap - done)
        # word multiplicities of each resample, spread to the word's sentences
        wx, wy, wa, wb = (rng.multinomial(n, np.full(n, 1.0 / n), size=k)[:, g]
                          .astype(np.float64)
                          for n, g in zip(sizes, (gx, gy, ga, gb), strict=True))
        s = (wa @ sim_a.T) / wa.sum(axis=1, keepdims=True) \
            - (wb @ sim_b.T) / wb.sum(axis=1, keepdims=True)  # (k, n_targets)
        w = np.concatenate([wx, wy], axis=1)
        n_tot = w.sum(axis=1)
        mean_x = (wx * s[:, :n_x]).sum(axis=1) / wx.sum(axis=1)
        mean_y = (wy * s[:, n_x:]).sum(axis=1) / wy.sum(axis=1)
        mean = (w * s).sum(axis=1) / n_tot
        var = (w * (s - mean[:, None]) ** 2).sum(axis=1) / (n_tot - ddof)
        scale = np.sqrt(var)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[done:done + k] = np.where(scale > 1e-15 * (np.abs(mean) + 1),
                                          (mean_x - mean_y) / scale, np.nan)
        done += k
    return out


def cluster_permutation_test(s_x, s_y, units_x, units_y, *, alternative: str = "greater",
                             n_permutations: int | None = None,
                             exact_limit: int | None = None, seed=None):
    """Permutation p of the mean difference, re-partitioning the *words* of X ∪ Y.

    All sentences of a word move together: the splits are those of the words (exact when
    there are at most `exact_limit`, else `n_permutations` random ones with the +1
    correction), the statistic the mean of s over the X sentences minus over the Y ones.

    Returns
    -------
    bayesbias.comparators.weat.PermutationTest
    """
    if alternative not in ALTERNATIVES:
        raise InvalidArgumentError(f"alternative must be one of {', '.join(ALTERNATIVES)}, "
                                   f"got {alternative!r}")
    s_x = np.asarray(s_x, dtype=np.float64)
    s_y = np.asarray(s_y, dtype=np.float64)
    gx, gy = _codes(units_x), _codes(units_y)
    if len(gx) != len(s_x) or len(gy) != len(s_y) or not len(gx) or not len(gy):
        raise InputDataError("units must name the word of every sentence of X and Y")
    n_wx, n_wy = int(gx.max()) + 1, int(gy.max()) + 1
    sums = np.concatenate([np.bincount(gx, s_x, n_wx), np.bincount(gy, s_y, n_wy)])
    counts = np.concatenate([np.bincount(gx, minlength=n_wx),
                             np.bincount(gy, minlength=n_wy)]).astype(np.float64)
    total, n_total = sums.sum(), counts.sum()
    observed = s_x.mean() - s_y.mean()
    tol = 1e-9 * (max(np.abs(s_x).max(), np.abs(s_y).max()) + 1e-300)
    exact_limit = defaults.exact_permutation_limit if exact_limit is None else exact_limit
    exact = n_splits(n_wx, n_wy) <= exact_limit
    count, drawn = 0, 0
    for ind in split_indicators(n_wx, n_wy, n_permutations=n_permutations,
                                exact_limit=exact_limit, rng=seed):
        sum_x, cnt_x = ind @ sums, ind @ counts
        diff = sum_x / cnt_x - (total - sum_x) / (n_total - cnt_x)
        if alternative == "greater":
            count += int((diff >= observed - tol).sum())
        elif alternative == "less":
            count += int((diff <= observed + tol).sum())
        else:
            count += int((np.abs(diff) >= abs(observed) - tol).sum())
        drawn += ind.shape[0]
    p = count / drawn if exact else (count + 1.0) / (drawn + 1.0)
    return PermutationTest(float(p), int(drawn), bool(exact), alternative)


@dataclass(repr=False)  # the short repr of WeatResult
class SeatResult(WeatResult):
    """SEAT: the effect size of May et al., with word-level (cluster) p and interval.

    ``p_value``, ``ci`` and ``n_permutations`` resample the *words* (the sentences of a word
    move together); ``sentence_level`` holds May et al.'s numbers, which treat every
    sentence as independent (secondary: their intervals are too narrow).
    """

    units: dict = field(default_factory=dict)
    sentence_level: dict = field(default_factory=dict)

    @property
    def p_value_description(self) -> str:
        """One sentence on how the p-value was obtained."""
        n = self.units
        how = (f"exact over all {self.n_permutations} splits" if self.exact else
               f"Monte Carlo over {self.n_permutations} random splits, (1 + hits) / (1 + n), "
               f"seed {self.seed}")
        return (f"{self.alternative} permutation test of the words: the {n.get('X', '?')} + "
                f"{n.get('Y', '?')} words of X ∪ Y re-partitioned, all sentences of a word "
                f"moving together; {how}")

    def __str__(self) -> str:
        from ..verdicts.reconcile import format_p, sidedness

        lines = super().__str__().splitlines()
        lines[0] = lines[0].replace(" targets, ", " target sentences, ").replace(
            " attributes)", " attribute sentences)")
        sl = self.sentence_level
        at = next((i for i, line in enumerate(lines) if "bootstrap interval" in line),
                  len(lines) - 1)
        if self.ci is not None:
            lines[at] = (f"  {self.ci_prob:.0%} bootstrap interval for d over words: "
                         f"[{self.ci[0]:.3f}, {self.ci[1]:.3f}] ({self.n_bootstrap} resamples "
                         "of the words of X, Y, A and B, each with all its sentences)")
        u = self.units
        lines.insert(1, f"  units: {u.get('X')}+{u.get('Y')} target words, {u.get('A')}+"
                        f"{u.get('B')} attribute words (the sentences of a word are one "
                        "cluster)")
        if sl:
            floor = 1 / (1 + sl["n_permutations"]) if sl["permutation"] == "monte-carlo" \
                else None
            p = format_p(sl["p_value"], floor=floor)
            extra = (f"; interval [{sl['ci'][0]:.3f}, {sl['ci'][1]:.3f}]"
                     if sl.get("ci") else "")
            lines.append(f"  secondary, sentence level (May et al.; treats sentences as "
                         f"independent, too narrow): p {p if p[:1] in '<n' else '= ' + p} "
                         f"({sidedness(sl['alternative'])}){extra}")
        return "\n".join(lines)


def seat_from_similarities(sim_xa, sim_xb, sim_ya, sim_yb, units, *,
                           alternative: str = "two-sided", sd: str = "sample",
                           n_permutations: int | None = None, exact_limit: int | None = None,
                           seed: int | None = None, bootstrap: int = 0,
                           ci_prob: float | None = None, sentence_level: bool = True,
                           **labels) -> SeatResult:
    """SEAT from the sentence similarity blocks and the word of each sentence.

    Parameters
    ----------
    sim_xa, sim_xb, sim_ya, sim_yb : array_like
        Similarities of the X and Y sentences with the A and B sentences.
    units : dict
        ``{"X": words, "Y": ..., "A": ..., "B": ...}``: the word of each sentence.
    sentence_level : bool
        Also compute May et al.'s sentence-level p (and interval), as a secondary result.
    **labels
        ``words``, ``names``, ``source`` as for
        :func:`~bayesbias.comparators.weat.weat_from_similarities`.
    """
    base = weat_from_similarities(sim_xa, sim_xb, sim_ya, sim_yb, alternative=alternative,
                                  sd=sd, n_permutations=n_permutations,
                                  exact_limit=exact_limit, seed=seed,
                                  bootstrap=bootstrap if sentence_level else 0,
                                  ci_prob=ci_prob, **labels)
    seed = defaults.seed if seed is None else int(seed)
    perm_seed, boot_seed = np.random.SeedSequence([seed, 1]).spawn(2)
    sim_xa, sim_xb, sim_ya, sim_yb = (np.asarray(m, dtype=np.float64)
                                      for m in (sim_xa, sim_xb, sim_ya, sim_yb))
    s_x = sim_xa.mean(axis=1) - sim_xb.mean(axis=1)
    s_y = sim_ya.mean(axis=1) - sim_yb.mean(axis=1)
    test = cluster_permutation_test(s_x, s_y, units["X"], units["Y"], alternative=alternative,
                                    n_permutations=n_permutations, exact_limit=exact_limit,
                                    seed=np.random.default_rng(perm_seed))
    ci, n_degenerate = None, 0
    if bootstrap:
        ci_prob = validate_ci_prob(defaults.ci_prob if ci_prob is None else ci_prob)
        draws = cluster_bootstrap_effect_size(
            np.vstack([sim_xa, sim_ya]), np.vstack([sim_xb, sim_yb]), len(s_x),
            list(units["X"]) + list(units["Y"]), units["A"], units["B"],
            n_bootstrap=int(bootstrap), sd=sd, seed=np.random.default_rng(boot_seed))
        n_degenerate = int(np.isnan(draws).sum())
        ci = percentile_interval(draws, ci_prob)
    fields = {k: getattr(base, k) for k in WeatResult.__dataclass_fields__}
    fields.update(p_value=float(test.p_value), n_permutations=test.n_permutations,
                  permutation="exact" if test.exact else "monte-carlo",
                  seed=None if test.exact and not bootstrap else seed, ci=ci,
                  ci_prob=ci_prob if bootstrap else None,
                  ci_kind="cluster bootstrap over words" if bootstrap else None,
                  n_bootstrap=int(bootstrap), n_bootstrap_degenerate=n_degenerate,
                  test="SEAT")
    secondary = {}
    if sentence_level:
        secondary = {"p_value": base.p_value, "alternative": base.alternative,
                     "permutation": base.permutation, "n_permutations": base.n_permutations,
                     "ci": list(base.ci) if base.ci else None, "n_bootstrap": base.n_bootstrap,
                     "note": "May et al.'s sentence-level test: every sentence resampled or "
                             "permuted on its own, as if independent; too narrow"}
    n_units = {k: len(set(units[k])) for k in "XYAB"}
    return SeatResult(**fields, units=n_units, sentence_level=secondary)


def seat(encoder, test, *, alternative: str = "two-sided", sd: str = "sample",
         n_permutations: int | None = None, exact_limit: int | None = None,
         seed: int | None = None, bootstrap: int = 0, ci_prob: float | None = None
         ) -> SeatResult:
    """Run SEAT: May et al.'s effect size on sentence embeddings, words as the units.

    Parameters
    ----------
    encoder : bayesbias.encoders.Encoder
    test : SeatTest, or str
        A test, the name of a shipped one (``"seat7"``), a SEAT TOML file, or a two-class
        word list (name or file) turned into sentences with the templates.
    alternative, sd, n_permutations, exact_limit, seed, bootstrap, ci_prob
        See :func:`~bayesbias.comparators.weat.weat_from_similarities`. The p-value and the
        interval resample the words (clusters of sentences); May et al.'s sentence-level p
        and interval are in ``sentence_level``.

    Returns
    -------
    SeatResult
        ``association`` is keyed by sentence.
    """
    if not isinstance(test, SeatTest):
        name = str(test)
        test = (load_seat_test(name) if name in available_seat_tests() or name.endswith(".toml")
                and _is_seat_file(name) else seat_test_from_words(name))
    from ..inputs.distances import cosine_similarity_matrix

    emb = {k: encoder.encode(list(v)) for k, v in test.sets.items()}
    sim_xa = cosine_similarity_matrix(emb["X"], emb["A"])
    sim_xb = cosine_similarity_matrix(emb["X"], emb["B"])
    sim_ya = cosine_similarity_matrix(emb["Y"], emb["A"])
    sim_yb = cosine_similarity_matrix(emb["Y"], emb["B"])
    return seat_from_similarities(
        sim_xa, sim_xb, sim_ya, sim_yb, {k: test.units(k) for k in "XYAB"},
        alternative=alternative, sd=sd, n_permutations=n_permutations,
        exact_limit=exact_limit, seed=seed, bootstrap=bootstrap, ci_prob=ci_prob,
        words={k: list(v) for k, v in test.sets.items()}, names=test.names,
        source=f"SEAT {test.name} on encoder {encoder.name}")


def _is_seat_file(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return "sets" in tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return False

"""The synthetic corpus generator: planted association, equal kind shares, unequal words."""

from collections import Counter

import numpy as np
import pytest

from bayesbias.corpora import SyntheticDesign, synthetic_corpus
from bayesbias.errors import InvalidArgumentError


def _counts(docs, design):
    c = Counter(w for d in docs for w in d)
    return {part: np.array([c[w] for w in ws]) for part, ws in design.words().items()}


def test_planted_share_of_own_class_stereotypes():
    d = SyntheticDesign()
    own = other = 0
    for doc in synthetic_corpus(3000, planted=0.6, seed=4):
        k = "alpha" if any(w.startswith("alpha") for w in doc) else "beta"
        st = [w for w in doc if w.startswith("s")]
        own += sum(w.startswith(f"s{k}") for w in st)
        other += len(st) - sum(w.startswith(f"s{k}") for w in st)
    share = own / (own + other)  # (1 + 0.6) / 2 = 0.8; se about 0.005 at 6,000 draws
    assert abs(share - 0.8) < 0.02
    assert d.stereotypes_per_class == 6


def test_word_sd_makes_words_of_a_kind_unequal_and_keeps_kind_shares():
    n = 4000
    flat = _counts(synthetic_corpus(n, 0.5, 7), SyntheticDesign())
    design = SyntheticDesign(word_sd=0.8)
    uneven = _counts(synthetic_corpus(n, 0.5, 7, design), design)
    # the kinds' shares are the design's, whatever the weights
    assert uneven["human"].sum() == flat["human"].sum() == n * design.human_per_doc
    assert uneven["none"].sum() == flat["none"].sum() == n * design.none_per_doc
    # exchangeable words: counts within Poisson-like noise; weighted words: far more spread
    cv = {k: v.std() / v.mean() for k, v in uneven.items()}
    cv_flat = {k: v.std() / v.mean() for k, v in flat.items()}
    assert max(cv_flat.values()) < 0.15
    assert np.median(list(cv.values())) > 0.4
    # a corpus's weights are its own: another seed gives another sample of words
    other = _counts(synthetic_corpus(n, 0.5, 8, design), design)
    assert not np.array_equal(np.argsort(other["none"]), np.argsort(uneven["none"]))
    # unless they share a word seed: two corpora of one language, same weights
    shared = SyntheticDesign(word_sd=0.8, word_seed=7)
    again = _counts(synthetic_corpus(n, 0.5, 8, shared), shared)
    assert np.corrcoef(again["none"], uneven["none"])[0, 1] > 0.9


def test_word_sd_zero_is_the_exchangeable_generator():
    a = list(synthetic_corpus(20, 0.5, 3))
    b = list(synthetic_corpus(20, 0.5, 3, SyntheticDesign(word_sd=0.0)))
    assert a == b


def test_bad_word_sd():
    with pytest.raises(InvalidArgumentError, match="word_sd"):
        next(synthetic_corpus(5, 0.5, 0, SyntheticDesign(word_sd=-1.0)))


def test_stereotype_strengths_per_word_with_equal_frequencies():
    from bayesbias.corpora import stereotype_strengths

    design = SyntheticDesign(strength_sd=0.3, word_seed=11)
    s = stereotype_strengths(design, 0.5, 11)
    assert len(set(s.values())) > 3 and all(-1 <= v <= 1 for v in s.values())
    alpha = [v for w, v in s.items() if w.startswith("salpha")]
    beta = [v for w, v in s.items() if w.startswith("sbeta")]
    assert sum(alpha) == pytest.approx(sum(beta), abs=1e-12)  # same sums: equal frequencies
    assert sorted(alpha) != sorted(beta)  # independent draws, not one set twice
    # near the bounds the deviations shrink, the sums stay equal
    edge = stereotype_strengths(SyntheticDesign(strength_sd=2.0), 0.9, 3)
    assert all(-1 <= v <= 1 for v in edge.values())
    assert sum(v for w, v in edge.items() if w.startswith("salpha")) == pytest.approx(
        sum(v for w, v in edge.items() if w.startswith("sbeta")), abs=1e-12)
    own, total = Counter(), Counter()
    for doc in synthetic_corpus(8000, 0.5, 3, design):
        k = "alpha" if any(w.startswith("alpha") for w in doc) else "beta"
        for w in doc:
            if w in s:
                total[w] += 1
                own[w] += w.startswith(f"s{k}")
    counts = np.array([total[w] for w in s])
    # every stereotype 8,000 x 2 / 12 = 1,333 times in expectation (Poisson-like: sd ~ 37)
    assert np.all(np.abs(counts - 8000 * 2 / 12) < 150)
    # its share in its own class's documents is (1 + s_w) / 2 (se <= 0.014 per word)
    share = np.array([own[w] / total[w] for w in s])
    assert np.max(np.abs(share - (1 + np.array(list(s.values()))) / 2)) < 0.06
    # another corpus of the same language: the same strengths
    assert stereotype_strengths(design, 0.5, 11) == s

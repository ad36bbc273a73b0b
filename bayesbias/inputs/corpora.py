"""Seeded synthetic corpora with a planted association of known size, and their word list.

Two protected classes (``alpha``, ``beta``) of protected words, each with its stereotype
words; human-attribute and neutral control words; Zipf-distributed filler. Every document
is about one class: it holds protected words of that class and stereotype words, each of
which is one of the class's own stereotypes with probability ``(1 + planted) / 2`` (so
``planted = 0`` is the null: stereotypes are independent of the class) and controls drawn
independently of the class. The default sizes give stereotypes, human and neutral words the
same expected frequency: word2vec puts words of similar frequency closer together, so controls
of another frequency would show an "association" on a null corpus (measured: with 20 neutral
words at 2 per document against 12 stereotypes at 2 per document, all of 4 seeds and 6
bootstraps gave ``associated - none`` < 0 at ``planted = 0``). With ``word_sd > 0`` the words
of a kind differ: each corpus draws every list word a log-normal weight, and a word is chosen
within its kind in proportion to it (the kinds' shares of the text stay fixed), so a corpus is
written by one sample of words from a population of words of unequal frequency, as real word
lists are (``word_seed`` gives several corpora the same words' weights). With
``strength_sd > 0`` each stereotype has its own association strength around ``planted``
(:func:`stereotype_strengths`: independent draws) at an unchanged frequency. For tests,
notebooks and users' own checks: nothing is downloaded.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InvalidArgumentError

__all__ = ["SyntheticDesign", "synthetic_corpus", "write_synthetic_corpus",
           "synthetic_wordlist_toml", "stereotype_strengths"]

CLASSES = ("alpha", "beta")


@dataclass(frozen=True)
class SyntheticDesign:
    """Sizes of the synthetic vocabulary and documents."""

    protected_per_class: int = 5
    stereotypes_per_class: int = 6
    n_human: int = 6
    n_none: int = 12
    n_filler: int = 2000
    doc_length: int = 40
    protected_per_doc: int = 2
    stereotypes_per_doc: int = 2
    human_per_doc: int = 1
    none_per_doc: int = 2
    #: sd of the log weights of the list's words within their kind (0: exchangeable words)
    word_sd: float = 0.0
    #: sd of the stereotypes' own association strengths around ``planted`` (0: every
    #: stereotype has strength ``planted``); stereotypes keep equal frequencies
    strength_sd: float = 0.0
    #: seed of those weights and strengths (None: the corpus's seed); corpora that share it
    #: share their words, as samples of one language do
    word_seed: int | None = None

    def words(self) -> dict[str, list[str]]:
        """Return the word-list parts: protected words and stereotypes per class, controls."""
        out = {}
        for c in CLASSES:
            out[f"{c}:protected"] = [f"{c}{i}" for i in range(self.protected_per_class)]
            out[f"{c}:stereotypes"] = [f"s{c}{i}" for i in range(self.stereotypes_per_class)]
        out["human"] = [f"hum{i}" for i in range(self.n_human)]
        out["none"] = [f"neu{i}" for i in range(self.n_none)]
        return out


def synthetic_corpus(n_docs: int = 1250, planted: float = 0.5, seed: int = 0,
                     design: SyntheticDesign | None = None):
    """Yield `n_docs` documents (lists of tokens) with association strength `planted`.

    Parameters
    ----------
    planted : float in [-1, 1]
        0: no association (the null); 1: stereotypes only ever meet their own class.
    """
    if not -1.0 <= planted <= 1.0:
        raise InvalidArgumentError(f"planted must be in [-1, 1], got {planted!r}")
    d = design or SyntheticDesign()
    for name in ("word_sd", "strength_sd"):
        if not getattr(d, name) >= 0.0:
            raise InvalidArgumentError(f"{name} must be >= 0, got {getattr(d, name)!r}")
    words = d.words()
    rng = np.random.default_rng(seed)
    word_seed = seed if d.word_seed is None else d.word_seed
    weight = _word_weights(words, d.word_sd, word_seed)
    ster_given = None
    if d.strength_sd > 0.0:
        ster_given = _stereotype_probabilities(d, planted, word_seed)
    ranks = np.arange(1, d.n_filler + 1)
    zipf = 1.0 / ranks
    zipf /= zipf.sum()
    filler = np.array([f"f{i}" for i in range(d.n_filler)], dtype=object)
    prot = [np.array(words[f"{c}:protected"], dtype=object) for c in CLASSES]
    ster = [np.array(words[f"{c}:stereotypes"], dtype=object) for c in CLASSES]
    human = np.array(words["human"], dtype=object)
    none = np.array(words["none"], dtype=object)
    own = (1.0 + planted) / 2.0
    n_fill = d.doc_length - d.protected_per_doc - d.stereotypes_per_doc - d.human_per_doc \
        - d.none_per_doc
    for _ in range(n_docs):
        k = int(rng.integers(len(CLASSES)))
        if ster_given is None:
            which = np.where(rng.random(d.stereotypes_per_doc) < own, k, 1 - k)
            stereotypes = [rng.choice(ster[j], p=weight[f"{CLASSES[j]}:stereotypes"])
                           for j in which]
        else:
            stereotypes = rng.choice(ster_given[0], d.stereotypes_per_doc, p=ster_given[1][k])
        doc = np.concatenate([
            rng.choice(prot[k], d.protected_per_doc, p=weight[f"{CLASSES[k]}:protected"]),
            stereotypes,
            rng.choice(human, d.human_per_doc, p=weight["human"]),
            rng.choice(none, d.none_per_doc, p=weight["none"]),
            filler[rng.choice(d.n_filler, max(n_fill, 0), p=zipf)]])
        rng.shuffle(doc)
        yield doc.tolist()


def _word_weights(words: dict, sd: float, seed: int) -> dict:
    """Return each list part's within-part choice probabilities (``None``: uniform)."""
    if sd == 0.0:
        return dict.fromkeys(words)
    rng = np.random.default_rng([seed, 1])  # apart from the documents' stream
    out = {}
    for part, ws in words.items():
        w = np.exp(sd * rng.standard_normal(len(ws)))
        out[part] = w / w.sum()
    return out


def stereotype_strengths(design: SyntheticDesign, planted: float, word_seed: int) -> dict:
    """Return each stereotype's own association strength in the corpora of `word_seed`.

    Every stereotype draws ``planted + strength_sd * z`` independently (clipped to [-1, 1]);
    each class's strengths are then moved to the mean of all of them (their deviations
    shrunk if needed to stay in [-1, 1]), so both classes have the same sum and every
    stereotype keeps the same frequency. The language's mean strength is that of all its
    stereotypes' independent draws, as for a list sampled from a population of stereotypes.
    """
    words = design.words()
    rng = np.random.default_rng([word_seed, 2])  # apart from the documents and the weights
    n = design.stereotypes_per_class
    raw = np.clip(planted + design.strength_sd * rng.standard_normal((2, n)), -1.0, 1.0)
    mean = raw.mean()
    out = []
    for row in raw:
        dev = row - row.mean()
        room = np.where(dev > 0, 1.0 - mean, np.where(dev < 0, -1.0 - mean, np.inf)) / \
            np.where(dev != 0, dev, 1.0)
        out.append(mean + min(1.0, float(room.min())) * dev)
    return dict(zip(words[f"{CLASSES[0]}:stereotypes"] + words[f"{CLASSES[1]}:stereotypes"],
                    np.concatenate(out).tolist(), strict=True))


def _stereotype_probabilities(design: SyntheticDesign, planted: float, word_seed: int):
    """Return all stereotypes and, per class, the probability of each in a stereotype slot.

    ``P(w | class k) = (1 + s_w e_wk) / N`` with ``e = +1`` for the class's own stereotypes
    and -1 for the other's: sums to 1 because both classes' strengths have the same sum, and
    every word's frequency is 1 / N whatever its strength.
    """
    strengths = stereotype_strengths(design, planted, word_seed)
    names = np.array(list(strengths), dtype=object)
    s = np.array(list(strengths.values()))
    own0 = np.array([w.startswith(f"s{CLASSES[0]}") for w in names])
    probs = []
    for k in range(len(CLASSES)):
        e = np.where(own0 if k == 0 else ~own0, 1.0, -1.0)
        p = (1.0 + s * e) / s.size
        probs.append(p / p.sum())  # exact sum 1 up to rounding
    return names, probs


def write_synthetic_corpus(path, n_docs: int = 1250, planted: float = 0.5, seed: int = 0,
                           design: SyntheticDesign | None = None) -> Path:
    """Write a synthetic corpus, one document per line (``.gz`` compresses); return the path.

    The word list that goes with it is :func:`synthetic_wordlist_toml`.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as fh:
        for doc in synthetic_corpus(n_docs, planted, seed, design):
            fh.write(" ".join(doc) + "\n")
    return path


def synthetic_wordlist_toml(path=None, design: SyntheticDesign | None = None) -> str:
    """Return the word list of the synthetic corpora (TOML text; written to `path` if given)."""
    w = (design or SyntheticDesign()).words()

    def q(words):
        return "[" + ", ".join(f'"{x}"' for x in words) + "]"

    lines = ['name = "synthetic"',
             'description = "Synthetic corpus of bayesbias.corpora (planted association)"', ""]
    for c in CLASSES:
        lines += [f"[classes.{c}]", f"protected_words = {q(w[f'{c}:protected'])}",
                  f"stereotypes = {q(w[f'{c}:stereotypes'])}", ""]
    lines += ["[controls]", f"human = {q(w['human'])}", f"none = {q(w['none'])}", ""]
    text = "\n".join(lines)
    if path is not None:
        Path(path).write_text(text)
    return text

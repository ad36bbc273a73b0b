"""SEAT: the Sentence Encoder Association Test (May et al. 2019).

SEAT is WEAT whose targets and attributes are sentences: each word of X, Y, A and B is put
into semantically bleached templates ("This is a nurse.", "The nurse is here.") and every
sentence embedding is one member of its set. The shipped tests ``seat6`` and ``seat7`` carry
the authors' sentences for WEAT 6 and 7 (``wordlists/seat/``); any two-class word list can be
turned into a SEAT test with the templates.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field

from .._atomic import shipped_dir
from ..distances import cosine_similarity_matrix
from ..errors import WordListError
from .weat import WeatResult, resolve_weat_sets, weat_from_similarities

__all__ = ["SeatTest", "available_seat_tests", "load_seat_test", "seat_test_from_words",
           "seat"]


@dataclass(frozen=True)
class SeatTest:
    """Sentences of the four sets X, Y, A, B of a SEAT test."""

    name: str
    sets: dict
    names: dict
    provenance: dict = field(default_factory=dict)

    def sizes(self) -> dict:
        """Sentences per set."""
        return {k: len(v) for k, v in self.sets.items()}


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
    return SeatTest(str(data.get("name", path.stem)), sets, names,
                    dict(data.get("provenance", {})))


def seat_test_from_words(wordlist_or_sets, templates=None) -> SeatTest:
    """Make a SEAT test from a two-class word list (or X, Y, A, B) and templates.

    Parameters
    ----------
    wordlist_or_sets
        As for :func:`~bayesbias.comparators.weat.weat`.
    templates : bayesbias.encoders.Templates, optional
        Default: SEAT's templates plus the word list's own ``[templates]`` table.
    """
    from ..encoders.words import Templates
    from ..wordlists import WordList, load_wordlist

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
    sentences = {k: tuple(s for w in getattr(sets, k) for s in templates.sentences(w))
                 for k in "XYAB"}
    return SeatTest(getattr(obj, "name", "custom"), sentences,
                    dict(zip("XYAB", sets.names, strict=True)),
                    {"templates": templates.source})


def seat(encoder, test, *, alternative: str = "greater", sd: str = "sample",
         n_permutations: int | None = None, exact_limit: int | None = None,
         seed: int | None = None, bootstrap: int = 0, ci_prob: float | None = None
         ) -> WeatResult:
    """Run SEAT: WEAT on the sentence embeddings of a SEAT test.

    Parameters
    ----------
    encoder : bayesbias.encoders.Encoder
    test : SeatTest, or str
        A test, the name of a shipped one (``"seat7"``), a SEAT TOML file, or a two-class
        word list (name or file) turned into sentences with the templates.
    alternative, sd, n_permutations, exact_limit, seed, bootstrap, ci_prob
        See :func:`~bayesbias.comparators.weat.weat_from_similarities`; every sentence is one
        member of its set, as in May et al.

    Returns
    -------
    WeatResult
        ``association`` is keyed by sentence.
    """
    if not isinstance(test, SeatTest):
        name = str(test)
        test = (load_seat_test(name) if name in available_seat_tests() or name.endswith(".toml")
                and _is_seat_file(name) else seat_test_from_words(name))
    emb = {k: encoder.encode(list(v)) for k, v in test.sets.items()}
    sim_xa = cosine_similarity_matrix(emb["X"], emb["A"])
    sim_xb = cosine_similarity_matrix(emb["X"], emb["B"])
    sim_ya = cosine_similarity_matrix(emb["Y"], emb["A"])
    sim_yb = cosine_similarity_matrix(emb["Y"], emb["B"])
    return weat_from_similarities(
        sim_xa, sim_xb, sim_ya, sim_yb, alternative=alternative, sd=sd,
        n_permutations=n_permutations, exact_limit=exact_limit, seed=seed,
        bootstrap=bootstrap, ci_prob=ci_prob, words={k: list(v) for k, v in test.sets.items()},
        names=test.names, source=f"SEAT {test.name} on encoder {encoder.name}")


def _is_seat_file(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return "sets" in tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return False

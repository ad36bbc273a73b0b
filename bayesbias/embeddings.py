"""Embedding files: reading only the words a study needs, with clear errors.

(Interface stub written by the lead; the readers are being completed in this module.)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from .errors import OutOfVocabularyError

__all__ = ["Embedding", "load_embedding", "lookup"]

log = logging.getLogger(__name__)


@dataclass
class Embedding:
    """Word vectors: ``vectors[i]`` is the vector of ``words[i]``."""

    words: tuple[str, ...]
    vectors: np.ndarray
    source: str = "<memory>"
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        self.words = tuple(self.words)
        self.vectors = np.asarray(self.vectors)
        self._index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word) -> bool:
        return word in self._index

    @property
    def dim(self) -> int:
        """Vector length."""
        return int(self.vectors.shape[1])

    def index(self, word: str) -> int:
        """Row of `word` in :attr:`vectors`."""
        return self._index[word]

    def matrix(self, words) -> np.ndarray:
        """Vectors of `words` as a (len(words), dim) float64 array."""
        return self.vectors[[self._index[w] for w in words]].astype(np.float64)


def lookup(embedding: Embedding, parts: dict, on_missing: str = "error"):
    """Check the words of each named part against `embedding`.

    Parameters
    ----------
    embedding : Embedding
    parts : dict of {str: sequence of str}
        Named word sets, e.g. ``{"X": [...], "A": [...]}``.
    on_missing : {"error", "drop"}
        Raise :class:`OutOfVocabularyError` listing every missing word, or drop them.

    Returns
    -------
    kept : dict of {str: tuple of str}
    missing : dict of {str: list of str}
        Missing words per part (empty lists included), the report to show the user.
    """
    if on_missing not in ("error", "drop"):
        raise ValueError(f"on_missing must be 'error' or 'drop', got {on_missing!r}")
    kept, missing = {}, {}
    for name, words in parts.items():
        kept[name] = tuple(w for w in words if w in embedding)
        missing[name] = [w for w in words if w not in embedding]
    if any(missing.values()):
        if on_missing == "error":
            raise OutOfVocabularyError(missing, embedding.source)
        for name, words in missing.items():
            if words:
                log.warning("dropped %d word(s) of %s not in %s: %s", len(words), name,
                            embedding.source, ", ".join(words))
    return kept, missing


def load_embedding(path, words=None, *, format: str = "auto", trust_pickle: bool = False):
    """Read an embedding file, keeping only `words` if given (see module docs)."""
    raise NotImplementedError("being written")

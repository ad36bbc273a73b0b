"""Distance tables with a ``context`` column: one row per protected word, attribute and draw."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..distances import distance_table
from ..embeddings import Embedding
from ..errors import OutOfVocabularyError
from ..progress import progress
from ..wordlists import load_wordlist

__all__ = ["context_distance_table", "CONTEXT_COLUMN"]

#: Name of the column that numbers the context draws.
CONTEXT_COLUMN = "context"


def context_distance_table(source, wordlist, *, n_draws: int = 10, on_missing: str = "drop",
                           seed: int | None = None) -> tuple[pd.DataFrame, dict]:
    """Build the distance table of `wordlist` over `n_draws` random draws of corpus contexts.

    In each draw every word (protected words and attributes) gets one of its contextual
    vectors at random (as a CEAT draw); the draw's rows are the usual distance table.

    Parameters
    ----------
    source : bayesbias.encoders.EncoderSource
        Encoder and corpus; ``source.contexts`` vectors are drawn per word first.
    wordlist : WordList or str
    n_draws : int
    on_missing : {"error", "drop"}
        Words with no context in the corpus.
    seed : int, optional
        Seed of the draws (default: the source's seed).

    Returns
    -------
    table : pandas.DataFrame
        The columns of :func:`~bayesbias.distances.distance_table` plus ``context``
        (0 .. n_draws - 1).
    dropped : dict of {str: list of str}
        Words without a context, per word-list part.
    """
    wl = load_wordlist(wordlist)
    words = list(wl.all_words)
    vecs = source.context_vectors(words)
    present = [w for w in words if len(vecs[w])]
    missing = {k: [w for w in v if not len(vecs[w])] for k, v in wl.parts().items()}
    missing = {k: v for k, v in missing.items() if v}
    if missing and on_missing == "error":
        raise OutOfVocabularyError(missing, f"corpus {source.corpus}")
    keep = set(present)
    wl_kept = wl.restrict(keep) if missing else wl
    seed = source.seed if seed is None else int(seed)
    rng = np.random.default_rng([seed, 0xCEA7])
    tables = []
    for d in range(int(n_draws)):
        rows = np.vstack([vecs[w][rng.integers(0, len(vecs[w]))] for w in present])
        emb = Embedding(tuple(present), rows, source=str(source))
        t = distance_table(emb, wl_kept, on_missing="error")
        t.insert(0, CONTEXT_COLUMN, d)
        tables.append(t)
        progress.info("context draw %d of %d", d + 1, n_draws)
    table = pd.concat(tables, ignore_index=True)
    table.attrs.update(wordlist=wl.name, embedding=str(source), missing=missing,
                       draws=int(n_draws), seed=seed)
    return table, missing

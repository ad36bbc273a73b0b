"""Distance tables with a ``context`` column: one row per protected word, attribute and draw."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InvalidArgumentError, OutOfVocabularyError
from ..inputs.distances import distance_table
from ..inputs.embeddings import Embedding
from ..inputs.wordlists import load_wordlist
from ..progress import progress

__all__ = ["context_distance_table", "check_context_draws", "CONTEXT_COLUMN",
           "MAX_CONTEXT_ROWS"]

#: Name of the column that numbers the context draws.
CONTEXT_COLUMN = "context"
#: Most rows of a context distance table (about 100 bytes each in memory: 2 GB).
MAX_CONTEXT_ROWS = 20_000_000


def check_context_draws(wordlist, n_draws: int) -> int:
    """Refuse `n_draws` whose table would exceed :data:`MAX_CONTEXT_ROWS`; return it.

    Checked before any encoding: the rows are at most protected words x attributes per
    draw.
    """
    wl = load_wordlist(wordlist)
    n_draws = int(n_draws)
    per_draw = len(wl.protected_words) * len(wl.attributes)
    if n_draws < 1 or n_draws * per_draw > MAX_CONTEXT_ROWS:
        raise InvalidArgumentError(
            f"--draws {n_draws:,}: {per_draw:,} rows per draw would give "
            f"{n_draws * per_draw:,} rows, more than {MAX_CONTEXT_ROWS:,} (about 2 GB); "
            f"use at most {max(MAX_CONTEXT_ROWS // max(per_draw, 1), 1):,} draws")
    return n_draws


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
    n_draws = check_context_draws(wl, n_draws)
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

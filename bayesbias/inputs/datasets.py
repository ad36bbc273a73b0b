"""Real published data shipped with the package (no downloads)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..errors import DistanceTableError, InvalidArgumentError
from ..validation import validate_choice
from .distances import read_distance_table, read_published_table

__all__ = ["published_table", "published_tables", "read_table", "madlibs", "adult_llama",
           "ADULT_LLAMA", "DATA_DIR"]

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
EMBEDDINGS = ("reddit", "google", "glove", "debiased_reddit")
TOPICS = ("religion", "race", "gender", "weat_1", "weat_7")


def _published_path(topic: str, embedding: str) -> Path:
    validate_choice(topic, TOPICS, "topic")
    validate_choice(embedding, EMBEDDINGS, "embedding")
    if embedding == "debiased_reddit":
        if topic not in ("religion", "race", "gender"):
            raise InvalidArgumentError(f"no debiased table for {topic!r}; there are "
                                       "debiased tables for religion, race, gender")
        name = f"debiased_{topic}_reddit.csv.gz"
    elif topic.startswith("weat"):
        name = f"{topic}_{embedding}.csv.gz"
    else:
        name = f"{topic}_group_{embedding}_dataset.csv.gz"
    return DATA_DIR / "published" / name


def published_table(topic: str, embedding: str = "reddit", **kwargs) -> pd.DataFrame:
    """Return a published distance table of Dobrzeniecka & Urbaniak, in our column format.

    Parameters
    ----------
    topic : {"religion", "race", "gender", "weat_1", "weat_7"}
    embedding : {"reddit", "google", "glove", "debiased_reddit"}
    **kwargs
        Passed to :func:`bayesbias.distances.read_published_table` (``duplicates``,
        ``missing``): by default repeated race pairs are kept once and ``-100`` sentinel
        rows are dropped with a report in ``table.attrs["missing"]``.
    """
    table = read_published_table(_published_path(topic, embedding), **kwargs)
    table.attrs.update(topic=topic, embedding=embedding)
    return table


def published_tables() -> list[tuple[str, str]]:
    """Every (topic, embedding) pair that has a shipped table."""
    pairs = [(t, e) for t in TOPICS for e in EMBEDDINGS
             if e != "debiased_reddit" or t in ("religion", "race", "gender")]
    return [(t, e) for t, e in pairs if _published_path(t, e).exists()]


def madlibs() -> pd.DataFrame:
    """Return the scored toxicity madlibs (30,240 rows; see ``data/madlibs/README.md``)."""
    return pd.read_csv(DATA_DIR / "madlibs" / "intersectional_madlibs_scored.csv.gz")


#: How the adult_llama fixture is read as group rates (``bayesbias groups --example``).
ADULT_LLAMA = {"label": "label", "pred": "pred", "positive": "greater than 50K",
               "sensitive": ("race", "sex", "age"), "bins": {"age": (25, 65)}}


def adult_llama(strip: bool = True) -> pd.DataFrame:
    """Return UCI Adult with a Llama 3 70B model's income predictions (48,842 rows).

    CC BY 4.0, from Khodak et al.'s SureMap repository: see ``data/adult_llama/ATTRIBUTION.md``
    (keep it and ``LICENSE-CC-BY`` with any copy). Columns ``id, age, race, sex, label,
    pred``; `strip` removes the leading spaces of the UCI strings (`` White`` -> ``White``).
    Binned as in SureMap (``age`` bands <25, 25-64, >=65) it has 30 race x sex x age cells.
    """
    table = pd.read_csv(DATA_DIR / "adult_llama" / "adult_llama.csv.gz")
    if strip:
        for col in ("race", "sex"):
            table[col] = table[col].str.strip()
    return table


def read_table(spec, labels: str = "str") -> pd.DataFrame:
    """Read a distance table from a file, or a shipped one as ``published:TOPIC:EMBEDDING``.

    `labels`: see :func:`~bayesbias.distances.read_distance_table` (files only).
    """
    spec = str(spec)
    if not spec.startswith("published:"):
        return read_distance_table(spec, labels=labels)
    parts = spec.split(":")
    if len(parts) != 3:
        raise DistanceTableError(f"{spec!r}: write published:TOPIC:EMBEDDING, e.g. "
                                 "published:religion:reddit")
    try:
        return published_table(parts[1], parts[2])
    except InvalidArgumentError as exc:
        raise DistanceTableError(f"{spec!r}: {exc}") from None

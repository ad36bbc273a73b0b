"""Options and table reading shared by the sub-commands that take a scored table.

``bayesbias classifier`` and ``bayesbias groups`` both read a CSV or Parquet table of gold
labels and predictions (or scores with a threshold); the flags and the read live here once.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputDataError
from ._common import finite_float


def read_table(path):
    """Read a CSV or Parquet table; :class:`InputDataError` naming the file otherwise."""
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise InputDataError(f"{p}: no such file")
    try:
        if p.suffix.lower() in (".parquet", ".pq"):
            return pd.read_parquet(p)
        return pd.read_csv(p)
    except Exception as exc:  # parser errors vary by engine
        raise InputDataError(f"{p}: cannot read the table: {exc}") from None


def add_prediction_options(p, *, label: str, positive: str, score: str, pred: str,
                           threshold: str = "threshold turning scores into labels") -> None:
    """Add ``--label``, ``--positive``, ``--score``, ``--pred`` and ``--threshold``.

    The help texts are given per command: their defaults differ.
    """
    p.add_argument("--label", default=None, help=label)
    p.add_argument("--positive", default=None, help=positive)
    p.add_argument("--score", default=None, help=score)
    p.add_argument("--pred", default=None, help=pred)
    p.add_argument("--threshold", type=finite_float, default=0.5, help=threshold)

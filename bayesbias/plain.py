"""Plain data and text shared by every result: JSON values and the dropped-words note.

One home for the concepts that results, the report and the command line all need:

- :func:`to_plain` turns NumPy / pandas / xarray values into plain JSON types (``NaN`` and
  infinities as ``None``: JSON has no NaN) and :func:`plain_number` does it for one number;
- :func:`dropped_line` is the one wording of the note listing the words that were dropped
  because the embedding (or the table, or the corpus) lacks them. Their JSON key is
  :data:`DROPPED_KEY` (``"dropped_words"``) in every result and command;
- :func:`format_number` writes a number for people (``n/a`` for a missing one).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

__all__ = ["DROPPED_KEY", "to_plain", "plain_number", "format_number", "dropped_line"]

#: JSON key of the words dropped as not in the embedding / table / corpus, per word-list part.
DROPPED_KEY = "dropped_words"


def plain_number(x) -> float | None:
    """`x` as a float, or ``None`` when it is ``None``, NaN or infinite."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def to_plain(obj):
    """`obj` with NumPy / pandas / xarray values as plain JSON types (NaN -> None).

    Dicts (keys as strings), lists and tuples are converted item by item; a DataFrame
    becomes a list of records, a Series a dict, an array a (nested) list, a path a string.
    """
    import numpy as np

    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    pd = sys.modules.get("pandas")  # not imported: `obj` is no pandas object (saves 0.4 s)
    if pd is not None and isinstance(obj, pd.DataFrame):
        return _plain_records(obj)
    if pd is not None and isinstance(obj, pd.Series):
        return to_plain(obj.to_dict())
    if isinstance(obj, np.ndarray):
        return to_plain(obj.tolist())
    if hasattr(obj, "values") and type(obj).__module__.startswith("xarray"):
        return to_plain(np.asarray(obj.values))
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        return plain_number(obj)
    if isinstance(obj, np.str_):
        return str(obj)
    if isinstance(obj, Path):
        return str(obj)
    return obj


def _plain_column(values) -> list | None:
    """Return a NumPy column as plain values (non-finite floats as None); None for others."""
    import numpy as np

    if not isinstance(values, np.ndarray) or values.dtype.kind not in "biuf":
        if isinstance(values, np.ndarray) and values.dtype == object:
            out = values.tolist()
            return out if all(type(v) is str for v in out) else None
        return None
    out = values.tolist()  # Python floats / ints / bools, as ``to_dict`` boxes them
    if values.dtype.kind == "f":
        for i in np.flatnonzero(~np.isfinite(values)).tolist():
            out[i] = None
    return out


def _plain_records(frame) -> list[dict]:
    """`frame` as a list of plain records: ``to_plain(frame.to_dict(orient="records"))``.

    Column by column for NumPy number, bool and string columns (a per-word table of 60,000
    rows: 0.2 s instead of 2 s); any other column (or repeated names), value by value.
    """
    cols = [_plain_column(frame[c].to_numpy()) if frame.columns.is_unique else None
            for c in frame.columns]
    if not cols or any(c is None for c in cols):
        return to_plain(frame.to_dict(orient="records"))
    keys = [str(c) for c in frame.columns]
    return [dict(zip(keys, row, strict=True)) for row in zip(*cols, strict=True)]


def dropped_line(dropped: dict | None, lead: str = "dropped (not in the embedding)") -> str:
    """One line listing the dropped words per word-list part; ``""`` when none was dropped.

    >>> dropped_line({"protected:jew": ["rabbi"], "none": []})
    'dropped (not in the embedding): protected:jew: rabbi'
    """
    parts = {k: v for k, v in (dropped or {}).items() if v}
    if not parts:
        return ""
    return f"{lead}: " + "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in parts.items())


def format_number(x, fmt: str = ".3f") -> str:
    """Return `x` formatted with `fmt`, or ``n/a`` for None / NaN (a non-number as text)."""
    if x is None:
        return "n/a"
    try:
        if not math.isfinite(x):
            return "n/a"
    except TypeError:
        return str(x)
    return format(x, fmt)

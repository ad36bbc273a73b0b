"""``to_plain`` of a DataFrame, column by column, equals the record-by-record conversion."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bayesbias.plain import to_plain


def _reference(frame: pd.DataFrame) -> list[dict]:
    """Convert every record's values one at a time (the straightforward reference)."""
    return [{str(k): to_plain(v) for k, v in rec.items()}
            for rec in frame.to_dict(orient="records")]


@pytest.mark.parametrize("frame", [
    pd.DataFrame({"word": ["a", "b", "c"], "mean": [0.1, np.nan, -np.inf],
                  "rows": np.array([1, 0, 3], dtype=np.int64), "ok": [True, False, True],
                  "sd": np.array([1.5, 2.5, np.inf], dtype=np.float32)}),
    pd.DataFrame({"mixed": ["a", 1, None], "x": [1.0, 2.0, 3.0]}),  # value by value
    pd.DataFrame({"s": pd.array(["x", None], dtype="string"), "n": [1, 2]}),
    pd.DataFrame({1: [0.5], "1": [0.25]}),  # names as strings
    pd.DataFrame(index=range(2)),  # rows without columns
    pd.DataFrame({"a": [], "b": []}),
])
def test_frame_records_equal_the_reference(frame):
    got = to_plain(frame)
    assert got == _reference(frame)
    assert json.dumps(got) == json.dumps(_reference(frame))  # same types (1 vs 1.0, None)

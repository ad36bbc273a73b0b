"""What a written file holds: more than that it exists."""

from __future__ import annotations

import struct
from pathlib import Path


def assert_png(path, min_side: int = 100) -> tuple[int, int]:
    """`path` is a PNG image of at least `min_side` pixels a side; return (width, height)."""
    head = Path(path).read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path}: not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    assert min(width, height) >= min_side, f"{path}: {width} x {height} pixels"
    return width, height


def assert_distance_table(path, rows: int | None = None):
    """`path` reads back as a distance table (of `rows` rows when given); return it."""
    from bayesbias.distances import read_distance_table

    table = read_distance_table(path)
    assert len(table) > 0 and {"protected_word", "attribute", "connection",
                               "cosine_distance"} <= set(table.columns)
    if rows is not None:
        assert len(table) == rows
    return table


def assert_fit(path, spec_hash: str | None = None):
    """`path` loads as a saved fit (of the spec with `spec_hash` when given); return it."""
    from bayesbias.models import load_fit

    fit = load_fit(path)
    assert fit.idata["posterior"].sizes["draw"] > 0
    if spec_hash is not None:
        assert fit.spec.hash == spec_hash
    return fit

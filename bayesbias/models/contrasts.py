"""Contrasts between connections: the default list, parsing, labels and differences of draws."""

from __future__ import annotations

from .._xarray import xr
from ..config import CONNECTIONS
from ..errors import InvalidArgumentError

__all__ = ["CONTRASTS", "ALL_CONTRASTS", "contrast_pairs", "contrast_label", "differences"]


#: The contrasts reported by default, as (minuend, subtrahend) connections: the four a
#: verdict reads (:data:`bayesbias.verdicts.VERDICT_CONTRASTS`, in its order), then
#: ``different - none``.
CONTRASTS = (("associated", "none"), ("associated", "human"), ("associated", "different"),
             ("human", "none"), ("different", "none"))


#: All six pairwise contrasts between the four connections (``contrasts="all"``).
ALL_CONTRASTS = CONTRASTS + (("different", "human"),)


def contrast_pairs(contrasts=None) -> tuple[tuple[str, str], ...]:
    """Resolve `contrasts` to (minuend, subtrahend) pairs of connections.

    ``None`` gives :data:`CONTRASTS`, ``"all"`` :data:`ALL_CONTRASTS`; otherwise a sequence of
    pairs or of labels such as ``"associated - human"`` (any pair of connections, either
    order).
    """
    if contrasts is None:
        return CONTRASTS
    if isinstance(contrasts, str):
        if contrasts == "all":
            return ALL_CONTRASTS
        contrasts = [contrasts]
    out = []
    for c in contrasts:
        pair = tuple(p.strip() for p in c.split(" - ")) if isinstance(c, str) else tuple(c)
        if len(pair) != 2 or pair[0] == pair[1] or not set(pair) <= set(CONNECTIONS):
            raise InvalidArgumentError(
                f"contrast {c!r}: give two different connections of {', '.join(CONNECTIONS)} "
                "as a pair or as 'a - b' (or contrasts='all')")
        out.append(pair)
    return tuple(out)


def contrast_label(a: str, b: str) -> str:
    """Label of the contrast ``a - b``."""
    return f"{a} - {b}"


def differences(draws: xr.DataArray, contrasts) -> xr.DataArray:
    """Differences between connections of `draws`, along a new ``contrast`` dim."""
    parts = [draws.sel(connection=a, drop=True) - draws.sel(connection=b, drop=True)
             for a, b in contrasts]
    labels = [contrast_label(a, b) for a, b in contrasts]
    return xr.concat(parts, dim="contrast").assign_coords(contrast=labels).rename("contrast")

"""Bridges from other bias toolkits' objects to bayesbias calls.

:func:`wefe_sets` turns a WEFE ``Query`` of two target and two attribute sets into the sets
that :func:`~bayesbias.comparators.weat.weat` and
:func:`~bayesbias.comparators.metrics.embedding_metric` take, so a WEFE study runs here with
the same numbers plus intervals and null ranges (docs/guide/metrics.md, "For WEFE users").
"""

from __future__ import annotations

from ..errors import InvalidArgumentError

__all__ = ["wefe_sets"]


def wefe_sets(query) -> dict:
    """Return the X, Y, A, B sets (and their names) of a WEFE ``Query``.

    Parameters
    ----------
    query : wefe.query.Query
        Two target sets and two attribute sets (WEFE's WEAT template, ``(2, 2)``). Any
        object with ``target_sets``, ``attribute_sets`` and optionally
        ``target_sets_names`` and ``attribute_sets_names`` works; WEFE is not imported.

    Returns
    -------
    dict
        ``{"X", "Y", "A", "B", "names"}``, accepted as `wordlist_or_sets` by
        :func:`~bayesbias.comparators.weat.weat` and
        :func:`~bayesbias.comparators.metrics.embedding_metric`.

    Raises
    ------
    InvalidArgumentError
        Not a query, or not two target and two attribute sets.
    """
    try:
        targets, attributes = list(query.target_sets), list(query.attribute_sets)
    except (AttributeError, TypeError):
        raise InvalidArgumentError(f"expected a WEFE Query (target_sets, attribute_sets), "
                                   f"got {type(query).__name__}") from None
    if len(targets) != 2 or len(attributes) != 2:
        raise InvalidArgumentError(
            f"the query has {len(targets)} target and {len(attributes)} attribute sets; "
            "WEAT and the pairwise metrics need 2 and 2 (split a larger query into pairs)")
    names = [*(getattr(query, "target_sets_names", None) or ("X", "Y")),
             *(getattr(query, "attribute_sets_names", None) or ("A", "B"))]
    return {"X": tuple(targets[0]), "Y": tuple(targets[1]), "A": tuple(attributes[0]),
            "B": tuple(attributes[1]), "names": tuple(map(str, names))}

"""The model families: one module each, found by name.

A family module defines

- ``PRIORS``: prior names in model-card order; ``SCALES``: those that must be positive;
- ``PARAMETERS``: posterior variables listed by :meth:`Fit.parameters`;
- ``GROUP_MEAN``: the posterior variable holding the group-level mean per connection, or
  ``None`` (then the average of the cell means over units with rows is used);
- ``card_lines(spec, unit, s)``: the model's equations for the model card;
- ``cell_means(spec, cells)``: adds the PyMC cell means ``mu`` to the current model;
- optionally ``validate(spec, source)``, ``model_data(spec, cells)`` (values of extra
  ``pm.Data``), ``marginal_blocks(spec)`` and ``derived(values, m)`` (sampling with the
  cell means integrated out, see :mod:`bayesbias.models.marginal`).

A new family is one module here plus one spec file in ``models/``.
"""

from __future__ import annotations

import importlib

__all__ = ["FAMILIES", "family_module"]

#: Family name -> module (relative to this package).
FAMILIES = {"hierarchical": ".hierarchical", "offsets": ".offsets", "additive": ".additive",
            "separate": ".separate", "crossed": ".crossed"}


def family_module(name: str):
    """Return the module implementing family `name`."""
    return importlib.import_module(FAMILIES[name], __package__)

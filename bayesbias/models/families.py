"""The model families: one module each, found by name, plus one spec file in ``models/``.

A family module implements :class:`Family`. Required:

- ``PRIORS``: prior names in model-card order; ``SCALES``: those that must be positive;
- ``PARAMETERS``: posterior variables listed by :meth:`Fit.parameters`;
- ``GROUP_MEAN``: the posterior variable holding the group-level mean per connection, or
  ``None`` (then the average of the cell means over units with rows is used);
- ``card_lines(spec, unit, s)``: the model's equations for the model card;
- ``cell_means(spec, cells)``: adds the PyMC cell means ``mu`` to the current model.

Optional (absent means "no"):

- ``OPTIONAL_PRIORS``: priors a spec may leave out, dropping their level of the model;
- ``NONCENTRED``: the spec's ``noncentred`` choice applies (pooled cell means);
- ``SPEC_KEYS``: spec keys of this family alone, with their defaults;
- ``EXACT_MARGINAL``: the exact posterior of :mod:`bayesbias.studies.exact_posterior`
  applies;
- ``ATTRIBUTE_EFFECTS``: the hierarchical model plus one random effect per attribute word
  (``v[a] ~ Normal(0, omega)``); design and sensitivity studies analyse it in plug-in form
  (attribute deviations removed, the hierarchical part exact);
- ``EMBEDDINGS``: the family models a table of several embeddings (an ``embedding``
  column, :mod:`bayesbias.inputs.ensemble`); every other family refuses one (a single embedding's
  ensemble columns are dropped);
- ``ADAPTATION``: nutpie's mass-matrix adaptation for the cell-marginal sampler;
- ``validate(spec, source)``: structural checks beyond the priors;
- ``model_data(spec, cells)``: values of the family's own ``pm.Data``;
- ``structure_key(spec, cells)``: what fixes a compiled PyMC model beyond spec and shapes;
- ``row_effects(spec, cells)``: a per-row term of the mean (a row-level PyMC model);
- ``simulate_cell_means(spec, rng, n_u, unit, given)``: true cell means and parameters for
  :func:`bayesbias.testing.simulate_table` (absent: independent cell means);
- ``simulate_row_effects(spec, rng, table, given)``: a per-row term of the simulated
  distances, with its true parameters and coordinates;
- ``n_effects(cells)``: values per draw beyond the cell means (memory bound of a fit);
- ``cells(table, level)``: the cell layout, a :class:`~bayesbias.models.cells.Cells`
  (default :func:`~bayesbias.models.cells.cells_from_table`); finer cells of the family's
  own go in its ``sub_cells``;
- ``likelihood(spec, cells, mu)``: adds the rows' log-density to the current model
  (default: Normal rows around the cell means with the shared ``sigma``, made by
  :func:`~bayesbias.models.base.build_model`); a family with its own creates ``sigma``;
- ``row_attribute_effects(posterior, cells, keep)``: each row's attribute-effect index and
  the effects at the given draws, for the model checks (default: ``attribute_effect``);
- ``row_sd(posterior)``: each row's sd around its cell mean per connection, draws (default
  ``sigma``), for the predictive check and the model checks;
- ``PM_SAMPLE``: sampled through ``pm.sample`` rather than nutpie's compiled-model cache;
- ``TARGET_ACCEPT``: NUTS target acceptance rate when the caller gives none (default 0.8);
- ``marginal_blocks(spec)`` and ``derived(values, m)``, or ``marginal_kernel(spec, cells)``:
  sampling with the cell means integrated out (:mod:`bayesbias.models.marginal`);
- ``native_supported(cells)``: whether the family's native kernel covers this table (absent:
  it covers every table the marginal sampler takes);
- ``grouped_is_cheaper(cells)``: evaluate the marginal density on groups of cells (or
  classes) rather than rows (absent: only for a large fit);
- ``GAUSSIAN_GROUP_MEANS``: given the scales the group means are exactly Gaussian (a Normal
  ``mu_bar`` prior), so the verdict reads Rao-Blackwellised interval ends
  (:mod:`bayesbias.models.contrast_mixture`);
- ``WORD_SUMMARIES``: fits can keep Rao-Blackwellised per-word summaries instead of per-word
  draws (:mod:`bayesbias.models.word_summaries`); its ``marginal_kernel`` then takes
  ``word_draws`` and ``grouped``.

A new family is one module here, one entry in :data:`FAMILIES` and one spec file in
``models/`` (``tests/test_models_spec.py`` checks each against the protocol).
"""

from __future__ import annotations

import importlib
from typing import Protocol, runtime_checkable

__all__ = ["FAMILIES", "Family", "family_has", "family_module"]

#: Family name -> module (relative to this package).
FAMILIES = {"hierarchical": ".hierarchical", "offsets": ".offsets", "additive": ".additive",
            "separate": ".separate", "crossed": ".crossed",
            "embedding_level": ".embedding_level", "context": ".context"}


@runtime_checkable
class Family(Protocol):
    """What every family module defines (the optional parts are listed in the module doc)."""

    PRIORS: tuple[str, ...]
    SCALES: tuple[str, ...]
    PARAMETERS: tuple[str, ...]
    GROUP_MEAN: str | None

    def card_lines(self, spec, unit: str, s: str) -> list[str]:
        """Return the model card's equations."""

    def cell_means(self, spec, cells):
        """Add the PyMC cell means ``mu`` to the current model."""


def family_module(name: str):
    """Return the module implementing family `name`."""
    return importlib.import_module(FAMILIES[name], __package__)


def family_has(name: str, hook: str) -> bool:
    """Whether family `name` sets the optional flag or defines the optional hook `hook`."""
    return bool(getattr(family_module(name), hook, False))

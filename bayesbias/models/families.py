"""The model families: one :class:`Family` each, found by name, plus one spec file in ``models/``.

:class:`Family` documents every flag (class attributes, whose defaults mean "no") and every
hook (methods; the defaults are methods of the base class). :func:`family` returns the family
of a name: a shipped family module defines the flags and hooks at module level, and
:func:`family` makes its subclass from them; a family may also be written as one subclass of
:class:`Family` in its module. ``family(name).EMBEDDINGS`` replaces
``family_has(name, "EMBEDDINGS")`` (kept for one release, as :func:`family_module`).

A new family is one module here (one subclass, or the names of :class:`Family` at module
level), one entry in :data:`FAMILIES` and one spec file in ``models/``
(``tests/test_models_spec.py`` checks each against the class).
"""

from __future__ import annotations

import importlib
import types

from ..errors import ModelSpecError

__all__ = ["FAMILIES", "Family", "family", "family_has", "family_module"]

#: Family name -> module (relative to this package).
FAMILIES = {"hierarchical": ".hierarchical", "offsets": ".offsets", "additive": ".additive",
            "separate": ".separate", "crossed": ".crossed",
            "embedding_level": ".embedding_level", "context": ".context"}

#: The optional hooks (see :class:`Family`): a family that lacks one has no such attribute.
OPTIONAL_HOOKS = ("structure_key", "row_effects", "simulate_cell_means",
                  "simulate_row_effects", "likelihood", "row_attribute_effects", "row_sd",
                  "marginal_blocks", "derived", "marginal_kernel", "native_supported",
                  "grouped_is_cheaper", "cell_moments")


class Family:
    """A model family: what :func:`~bayesbias.models.fit_model` asks of it.

    A family is a subclass: its flags are class attributes (the defaults below mean "no"),
    its hooks are methods. The defaults of :meth:`validate`, :meth:`model_data`,
    :meth:`n_effects` and :meth:`cells` are methods here; the optional hooks listed in
    :data:`OPTIONAL_HOOKS` are absent unless the family defines them (absent means "no").
    A family module may instead define the same names at module level (the shipped families
    do): :func:`family` makes the subclass from them.

    Required
    --------
    PRIORS : tuple of str
        Prior names in model-card order; ``SCALES`` those that must be positive.
    PARAMETERS : tuple of str
        Posterior variables listed by :meth:`Fit.parameters`.
    GROUP_MEAN : str or None
        The posterior variable of the group-level mean per connection, or None (then the
        average of the cell means over units with rows).
    card_lines(spec, unit, s)
        The model's equations for the model card.
    cell_means(spec, cells)
        Add the PyMC cell means ``mu`` to the current model.

    Flags
    -----
    OPTIONAL_PRIORS
        Priors a spec may leave out, dropping their level of the model.
    NONCENTRED
        The spec's ``noncentred`` choice applies (pooled cell means).
    SPEC_KEYS
        Spec keys of this family alone, with their defaults.
    EXACT_MARGINAL
        The exact posterior of :mod:`bayesbias.studies.exact_posterior` applies.
    ATTRIBUTE_EFFECTS
        The hierarchical model plus one random effect per attribute word
        (``v[a] ~ Normal(0, omega)``); design and sensitivity studies analyse it in plug-in
        form (attribute deviations removed, the hierarchical part exact).
    EMBEDDINGS
        The family models a table of several embeddings (an ``embedding`` column,
        :mod:`bayesbias.inputs.ensemble`); every other family refuses one (a single
        embedding's ensemble columns are dropped).
    GAUSSIAN_GROUP_MEANS
        Given the scales the group means are exactly Gaussian (a Normal ``mu_bar`` prior),
        so the verdict reads Rao-Blackwellised interval ends
        (:mod:`bayesbias.models.contrast_mixture`).
    WORD_SUMMARIES
        Fits can keep Rao-Blackwellised per-word summaries instead of per-word draws
        (:mod:`bayesbias.models.word_summaries`); its ``marginal_kernel`` then takes
        ``word_draws`` and ``grouped``.
    WORD_DRAWS_OPTIONAL
        Its ``marginal_kernel`` takes ``word_draws`` and can leave out the cell means' draws
        (:func:`bayesbias.models.marginal.sample_marginal`), without per-word summaries.
    PM_SAMPLE
        Sampled through ``pm.sample`` rather than nutpie's compiled-model cache.
    TARGET_ACCEPT
        NUTS target acceptance rate when the caller gives none.
    PYMC_TARGET_ACCEPT
        The same for a fit that does not take the cell-marginal sampler (None: ``TARGET_ACCEPT``).
    DRAWS
        Posterior draws per chain when the caller gives none (None: the configured default,
        :data:`bayesbias.config.defaults`).
    TUNE
        Tuning steps per chain of the cell-marginal sampler when the caller gives none (None,
        and always for the PyMC model: the configured default).
    ADAPTATION
        nutpie's mass-matrix adaptation for the cell-marginal sampler.

    Optional hooks (absent means "no")
    ----------------------------------
    structure_key(spec, cells)
        What fixes a compiled PyMC model beyond spec and shapes.
    row_effects(spec, cells)
        A per-row term of the mean (a row-level PyMC model).
    simulate_cell_means(spec, rng, n_u, unit, given)
        True cell means and parameters for :func:`bayesbias.testing.simulate_table`
        (absent: independent cell means).
    simulate_row_effects(spec, rng, table, given)
        A per-row term of the simulated distances, with its true parameters and
        coordinates.
    likelihood(spec, cells, mu)
        Add the rows' log-density to the current model (absent: Normal rows around the cell
        means with the shared ``sigma``, made by :func:`~bayesbias.models.base.build_model`);
        a family with its own creates ``sigma``.
    row_attribute_effects(posterior, cells, keep)
        Each row's attribute-effect index and the effects at the given draws, for the model
        checks (absent: ``attribute_effect``).
    row_sd(posterior)
        Each row's sd around its cell mean per connection, draws (absent: ``sigma``), for
        the predictive check and the model checks.
    marginal_blocks(spec) and derived(values, m), or marginal_kernel(spec, cells)
        Sampling with the cell means integrated out (:mod:`bayesbias.models.marginal`).
    native_supported(cells)
        Whether the family's native kernel covers this table (absent: it covers every table
        the marginal sampler takes).
    grouped_is_cheaper(cells)
        Evaluate the marginal density on groups of cells (or classes) rather than rows
        (absent: only for a large fit).
    cell_moments(fit)
        ``moments(keep, sl, cells)``: each cell mean's Normal conditional (means, sds) at
        the given draws, for a fit without per-cell draws whose cell means need more than
        M, T, S (with ``WORD_DRAWS_OPTIONAL``: such fits are made when the draws would be
        too big; the checks and per-word summaries use it).

    A new family is one subclass (or one module of these names) in :data:`FAMILIES` and one
    spec file in ``models/`` (``tests/test_models_spec.py`` checks each).
    """

    #: The family's name (its key in :data:`FAMILIES`).
    name: str = ""
    PRIORS: tuple[str, ...] = ()
    SCALES: tuple[str, ...] = ()
    PARAMETERS: tuple[str, ...] = ()
    GROUP_MEAN: str | None = None
    OPTIONAL_PRIORS: tuple[str, ...] = ()
    NONCENTRED: bool = False
    SPEC_KEYS: dict = types.MappingProxyType({})
    EXACT_MARGINAL: bool = False
    ATTRIBUTE_EFFECTS: bool = False
    EMBEDDINGS: bool = False
    GAUSSIAN_GROUP_MEANS: bool = False
    WORD_SUMMARIES: bool = False
    WORD_DRAWS_OPTIONAL: bool = False
    PM_SAMPLE: bool = False
    TARGET_ACCEPT: float = 0.8
    PYMC_TARGET_ACCEPT: float | None = None
    DRAWS: int | None = None
    TUNE: int | None = None
    ADAPTATION: str = "diag"

    def card_lines(self, spec, unit: str, s: str) -> list[str]:
        """Return the model card's equations."""
        raise NotImplementedError

    def cell_means(self, spec, cells):
        """Add the PyMC cell means ``mu`` to the current model."""
        raise NotImplementedError

    def validate(self, spec, source: str) -> None:
        """Check the spec's structure beyond its priors (default: nothing more)."""

    def model_data(self, spec, cells) -> dict:
        """Return the values of the family's own ``pm.Data`` (default: none)."""
        return {}

    def n_effects(self, cells) -> int:
        """Return the values per draw beyond the cell means (memory bound of a fit)."""
        return 0

    def cells(self, table, level):
        """Return the cell layout of `table` (default: one cell per unit and connection)."""
        from .cells import cells_from_table  # pandas: not needed to ask a family's flags

        return cells_from_table(table, level)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


_HOOKS = ("PRIORS", "SCALES", "PARAMETERS", "GROUP_MEAN", "OPTIONAL_PRIORS", "NONCENTRED",
          "SPEC_KEYS", "EXACT_MARGINAL", "ATTRIBUTE_EFFECTS", "EMBEDDINGS",
          "GAUSSIAN_GROUP_MEANS", "WORD_SUMMARIES", "WORD_DRAWS_OPTIONAL", "PM_SAMPLE",
          "TARGET_ACCEPT", "PYMC_TARGET_ACCEPT", "DRAWS", "TUNE", "ADAPTATION",
          "card_lines", "cell_means", "validate", "model_data", "n_effects", "cells",
          *OPTIONAL_HOOKS)
_REQUIRED = ("PRIORS", "SCALES", "PARAMETERS", "GROUP_MEAN", "card_lines", "cell_means")
_MADE: dict[tuple[str, int], Family] = {}


def _from_module(name: str, module) -> Family:
    """Return the family of `module`.

    Its own subclass of :class:`Family`, or one made from its module-level flags and hooks.
    """
    own = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, Family)
           and v is not Family and v.__module__ == module.__name__]
    if own:
        return own[0]()
    missing = [h for h in _REQUIRED if not hasattr(module, h)]
    if missing:
        raise ModelSpecError(f"family {name!r} ({module.__name__}) lacks {', '.join(missing)}")
    body = {"name": name, "__module__": module.__name__,
            "__doc__": (module.__doc__ or "").strip().split("\n", 1)[0]}
    for hook in _HOOKS:
        if hasattr(module, hook):
            value = getattr(module, hook)
            body[hook] = staticmethod(value) if callable(value) else value
    cls = type(f"{name.title().replace('_', '')}Family", (Family,), body)
    return cls()


def family(name: str) -> Family:
    """Return family `name` (a :class:`Family`; its flags and hooks are attributes)."""
    module = importlib.import_module(FAMILIES[name], __package__)
    key = (name, id(module))
    if key not in _MADE:
        _MADE[key] = _from_module(name, module)
    return _MADE[key]


def family_module(name: str) -> Family:
    """Return family `name` (kept for one release: :func:`family`)."""
    return family(name)


def family_has(name: str, hook: str) -> bool:
    """Whether family `name` sets the flag or defines the optional hook `hook`.

    Kept for one release: ``family(name).FLAG`` for a flag, ``hasattr(family(name), hook)``
    for an optional hook.
    """
    return bool(getattr(family(name), hook, False))

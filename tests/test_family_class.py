"""The Family base class: flags as class attributes, defaults as methods, one subclass a family."""

import sys
import types

import pytest

from bayesbias.errors import ModelSpecError
from bayesbias.models import families
from bayesbias.models.families import FAMILIES, Family, family, family_has


def test_flags_are_attributes_with_defaults():
    crossed, paper = family("crossed"), family("hierarchical")
    assert isinstance(crossed, Family) and crossed.name == "crossed"
    assert crossed.ATTRIBUTE_EFFECTS and not paper.ATTRIBUTE_EFFECTS  # default: no
    assert family("embedding_level").EMBEDDINGS and not crossed.EMBEDDINGS
    assert paper.TARGET_ACCEPT == Family.TARGET_ACCEPT == 0.8
    for name in FAMILIES:  # the old question and the new one agree
        for flag in ("NONCENTRED", "EXACT_MARGINAL", "ATTRIBUTE_EFFECTS", "EMBEDDINGS",
                     "GAUSSIAN_GROUP_MEANS", "WORD_SUMMARIES", "PM_SAMPLE"):
            assert family_has(name, flag) == bool(getattr(family(name), flag)), (name, flag)
    # defaults as methods; optional hooks absent unless the family defines them
    assert paper.model_data(None, None) == {} and paper.n_effects(None) == 0
    assert not hasattr(paper, "row_effects") and hasattr(crossed, "marginal_kernel")


def test_a_family_written_as_one_subclass_is_used(monkeypatch):
    module = types.ModuleType("one_subclass_family")
    source = (
        "from bayesbias.models.families import Family\n"
        "class Shared(Family):\n"
        "    name = 'shared'\n"
        "    PRIORS = ('mu_bar', 'sigma')\n"
        "    SCALES = ('sigma',)\n"
        "    PARAMETERS = ('mu_bar', 'sigma')\n"
        "    GROUP_MEAN = 'mu_bar'\n"
        "    NONCENTRED = True\n"
        "    def card_lines(self, spec, unit, s):\n"
        "        return ['y ~ Normal(mu_bar[c], sigma)']\n")
    exec(compile(source, "one_subclass_family", "exec"), module.__dict__)
    module.Shared.__module__ = module.__name__
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(FAMILIES, "shared", module.__name__)
    monkeypatch.setattr(families, "_MADE", {})
    fam = family("shared")
    assert type(fam) is module.Shared and fam.NONCENTRED and not fam.EMBEDDINGS
    assert fam.card_lines(None, "word", "") == ["y ~ Normal(mu_bar[c], sigma)"]
    with pytest.raises(NotImplementedError):
        fam.cell_means(None, None)  # a required hook it did not write


def test_a_module_lacking_a_required_hook_is_named(monkeypatch):
    module = types.ModuleType("broken_family")
    module.PRIORS = ("mu_bar",)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(FAMILIES, "broken", module.__name__)
    monkeypatch.setattr(families, "_MADE", {})
    with pytest.raises(ModelSpecError, match="broken.*SCALES"):
        family("broken")

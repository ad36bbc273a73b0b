"""The package's layers, kept by a test that walks the imports (``ast``; nothing imported).

Rooms, lowest first: the root's plumbing (errors, config, validation, plain, display, ...),
``inputs/`` (what a study measures before any model), ``models/`` (the Bayesian models),
``verdicts/`` (what the posterior says), then ``report/``, ``studies/``, ``cli/`` and the
comparators and classifier metrics beside them. The rule:

- ``inputs/`` never imports ``models/``, ``verdicts/`` or ``report/``;
- ``models/`` never imports ``verdicts/`` or ``report/``, but for one arrow up, kept on
  purpose: a fit and a comparison of fits show their verdict (``Fit.__str__`` and its
  notebook card, ``compare_fits``), so ``models.result`` and ``models.compare`` import the
  rule (``bayesbias.verdicts``, which imports no module that imports them back);
- no import circle between the package's modules (any import, top-level or deferred);
- the package's own imports deferred into function bodies stay few (measured by
  ``scripts/import_graph.py``, which prints the numbers);
- the root holds at most 20 modules with code (besides thin re-exports kept for one
  release at the old paths).
"""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
graph = sys.modules["import_graph"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(graph)

#: The one arrow up from models/ (module -> target), see the module docstring.
UPWARD = {("bayesbias.models.result", "bayesbias.verdicts"),
          ("bayesbias.models.compare", "bayesbias.verdicts")}
#: Most deferred own import statements, as a share of all own import statements.
DEFERRED_SHARE = 0.20


@pytest.fixture(scope="module")
def imports():
    return graph.own_imports(ROOT)


def _in(module: str, room: str) -> bool:
    return module == f"bayesbias.{room}" or module.startswith(f"bayesbias.{room}.")


def _crossing(found, lower: str, higher: tuple[str, ...]):
    return sorted({(i.source, i.target) for i in found
                   if _in(i.source, lower) and any(_in(i.target, h) for h in higher)})


def test_inputs_never_import_models_verdicts_or_report(imports):
    _, found = imports
    assert _crossing(found, "inputs", ("models", "verdicts", "report")) == []


def test_models_import_verdicts_only_through_the_one_documented_arrow(imports):
    _, found = imports
    assert set(_crossing(found, "models", ("verdicts", "report"))) <= UPWARD


def test_no_import_circles(imports):
    modules, found = imports
    assert graph.circles(modules, found) == []


def test_few_own_imports_are_deferred(imports):
    _, found = imports
    statements = {(i.source, i.line): i.deferred for i in found}
    assert sum(statements.values()) / len(statements) <= DEFERRED_SHARE


def test_the_root_holds_at_most_20_modules_with_code():
    code, shims = graph.root_modules(ROOT)
    assert len(code) <= 20, code
    for name in shims:  # a thin re-export: its docstring, one import, one assignment
        assert len((ROOT / "bayesbias" / name).read_text().splitlines()) <= 12, name


def test_the_graph_reader_sees_deferred_imports_and_circles(tmp_path):
    pkg = tmp_path / "bayesbias"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .a import x\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from . import a\n")
    modules, found = graph.own_imports(tmp_path)
    assert {(i.source, i.target, i.deferred) for i in found} == {
        ("bayesbias.a", "bayesbias.b", False), ("bayesbias.b", "bayesbias.a", True)}
    assert graph.circles(modules, found) == [["bayesbias.a", "bayesbias.b"]]

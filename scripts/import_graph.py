"""Measure the package's own import graph: circles, deferred imports, layer arrows.

Reads ``bayesbias/**/*.py`` as text (``ast``; nothing is imported) and prints

- the number of import circles between the package's modules (strongly connected
  components of more than one module, over every own import, top-level or deferred;
  imports under ``if TYPE_CHECKING:`` are left out: they never run; ``from package import
  name`` of a package that imports its names on first use counts as an import of the
  module that defines the name),
- the share of the package's own import statements that are deferred into function bodies
  (one ``from x import a, b`` is one statement),
- the root's module count (``bayesbias/*.py``; thin re-export modules kept for one release
  counted apart) and every import that crosses the layer rule of ``tests/test_layers.py``.

Run from the repository's root::

    python scripts/import_graph.py            # the summary
    python scripts/import_graph.py --circles  # and each circle's modules
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "bayesbias"
#: Marker that a module at an old path only re-exports its new home (kept for one release).
SHIM_MARK = "this old path is kept for one release"


@dataclass(frozen=True)
class OwnImport:
    """One import of a package module by a package module."""

    source: str
    target: str
    deferred: bool
    line: int


def module_name(path: Path, root: Path) -> str:
    """Dotted module name of `path` (a file below `root`, the folder holding the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, current: str, is_package: bool) -> str | None:
    if node.level == 0:
        return node.module
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(tree: ast.AST):
    """Yield ``(import node, deferred)`` for every import, skipping TYPE_CHECKING blocks."""

    def visit(node, deferred):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    yield from visit(sub, deferred)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, deferred
            inner = deferred or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            yield from visit(child, inner)

    yield from visit(tree, False)


def _lazy_exports(name: str, tree: ast.Module) -> dict[str, str]:
    """Name -> defining module of a package that imports its names on first use (PEP 562).

    Reads the dict literals of the package's ``__init__``: ``{"name": ".module"}`` (or
    ``"sub.module"``, relative to the package) and ``{".module": ("name", ...)}``.
    """
    out = {}

    def absolute(spec: str) -> str:
        return f"{name}.{spec.lstrip('.')}"

    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            if isinstance(value, ast.Constant) and isinstance(value.value, str) \
                    and not key.value.startswith("."):
                out.setdefault(key.value, absolute(value.value))
            elif key.value.startswith(".") and isinstance(value, ast.Tuple | ast.List):
                for item in value.elts:
                    if isinstance(item, ast.Constant) and isinstance(item.value, str):
                        out.setdefault(item.value, absolute(key.value))
    return out


def own_imports(root: Path) -> tuple[set[str], list[OwnImport]]:
    """Every module of the package and every import of one package module by another.

    A thin re-export kept for one release at an old path (its text says so) is left out, and
    an import of it counts as an import of its new home.
    """
    files = sorted((root / PACKAGE).rglob("*.py"))
    modules = {module_name(f, root): f for f in files}
    trees = {m: ast.parse(f.read_text(encoding="utf-8"), str(f)) for m, f in modules.items()}
    lazy = {m: {k: v for k, v in _lazy_exports(m, trees[m]).items() if v in modules}
            for m, f in modules.items() if f.name == "__init__.py"}
    found = []
    for name, path in modules.items():
        tree = trees[name]
        is_package = path.name == "__init__.py"
        for node, deferred in _walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = _resolve(node, name, is_package)
                if base is None:
                    continue
                for alias in node.names:  # a submodule, a name resolved on first use, or not
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules
                                   else lazy.get(base, {}).get(alias.name, base))
            for target in targets:
                while target and target not in modules:  # bayesbias.x.y where y is a name
                    target = target.rpartition(".")[0]
                if target and target.split(".")[0] == PACKAGE and target != name:
                    found.append(OwnImport(name, target, deferred, node.lineno))
    # A thin re-export at an old path stands for its new home: it is no module of its own.
    shims = {m for m, f in modules.items() if SHIM_MARK in f.read_text(encoding="utf-8")}
    home = {i.source: i.target for i in found if i.source in shims}
    found = [
        OwnImport(i.source, home.get(i.target, i.target), i.deferred, i.line)
        for i in found
        if i.source not in shims and home.get(i.target, i.target) != i.source
    ]
    return set(modules) - shims, found


def circles(modules: set[str], imports: list[OwnImport]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    graph = {m: sorted({i.target for i in imports if i.source == m}) for m in sorted(modules)}
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def root_modules(root: Path) -> tuple[list[str], list[str]]:
    """Return the root's modules: ``(with code, thin re-exports kept for one release)``."""
    code, shims = [], []
    for path in sorted((root / PACKAGE).glob("*.py")):
        (shims if SHIM_MARK in path.read_text(encoding="utf-8") else code).append(path.name)
    return code, shims


def main(argv=None) -> int:
    """Print the summary; ``--circles`` lists each circle's modules."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--circles", action="store_true", help="list each circle's modules")
    args = parser.parse_args(argv)
    modules, imports = own_imports(args.root)
    found = circles(modules, imports)
    top = [i for i in imports if not i.deferred]
    statements = {(i.source, i.line): i.deferred for i in imports}
    deferred = sum(statements.values())
    code, shims = root_modules(args.root)
    print(f"modules: {len(modules)}; import statements of own modules: {len(statements)}")
    print(f"import circles (all own imports): {len(found)}"
          f" (largest {max(map(len, found), default=0)} modules)")
    print(f"import circles (top-level imports only): {len(circles(modules, top))}")
    share = deferred / len(statements)
    print(f"deferred own imports (statements): {deferred}/{len(statements)} = {share:.0%}")
    print(f"root modules: {len(code)} with code"
          f" + {len(shims)} thin re-exports kept for one release")
    if args.circles:
        for component in found:
            print("  circle:", ", ".join(component))
    return 0


if __name__ == "__main__":
    sys.exit(main())

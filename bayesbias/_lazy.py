"""Lazy package exports (PEP 562): names are imported from their module on first use."""

from __future__ import annotations

from importlib import import_module

__all__ = ["lazy_exports"]


def lazy_exports(package: str, modules: dict[str, tuple[str, ...]], namespace: dict):
    """Return ``(__getattr__, __dir__)`` for `package` exporting `modules` lazily.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    modules : dict of {str: tuple of str}
        Submodule (relative, e.g. ``".auc"``) -> names it defines.
    namespace : dict
        The package's ``globals()``; imported names are cached there.
    """
    where = {name: mod for mod, names in modules.items() for name in names}

    def __getattr__(name: str):
        if name in where:
            value = getattr(import_module(where[name], package), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__

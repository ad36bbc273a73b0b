"""xarray, without importing dask.array and sparse for its first array.

xarray asks, for the first array it wraps, whether it is a dask or a sparse array, and
answers by importing ``dask.array`` (and with it ``sparse`` and numba when installed):
0.2-0.5 s per process in which bayesbias never makes such an array (0.5 s of the 6 s
``bayesbias fit`` on 5 million rows, in the test environment). :func:`lazy_duck_arrays`
tells xarray their array types without importing them: a type whose ``isinstance`` asks
the real class once its module is imported, and answers False before, when no such array
can exist yet. Every other answer is xarray's own. Applied on import of this module, which
bayesbias imports xarray through; a no-op when the module is already imported or xarray's
private cache is not the one this was written for (xarray 2024.10 to 2026.9).

Likewise :func:`lazy_dask_collections`: xarray asks of each index it builds whether it is a
dask collection, and answers by importing ``dask`` (0.2 s); nothing is one before ``dask``
is imported, so the answer is False until then and xarray's own after.
"""

from __future__ import annotations

import contextlib
import sys

import xarray as xr

__all__ = ["xr", "lazy_duck_arrays", "lazy_dask_collections"]

#: xarray's name of a duck-array module -> (module, attribute) of its array class.
_LAZY = {"dask": ("dask.array", "Array"), "sparse": ("sparse", "SparseArray")}


class _LazyMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        module = sys.modules.get(cls._module)
        return module is not None and isinstance(obj, getattr(module, cls._attr))


def lazy_duck_arrays() -> list[str]:
    """Tell xarray the dask and sparse array types without importing them.

    Returns the names registered (none when xarray has looked them up already or its
    cache differs from the one expected).
    """
    import importlib.metadata
    import importlib.util

    try:
        from xarray.namedarray import pycompat
        cache, module_type, version = (pycompat._cached_duck_array_modules,
                                       pycompat.DuckArrayModule, pycompat.Version)
    except (ImportError, AttributeError):
        return []
    done = []
    for name, (module, attr) in _LAZY.items():
        if name in cache or module in sys.modules or importlib.util.find_spec(name) is None:
            continue
        try:
            ver = version(importlib.metadata.version(name))
        except (importlib.metadata.PackageNotFoundError, ValueError):
            continue
        entry = module_type.__new__(module_type)
        entry.module = None  # xarray reads only type, version and available of these two
        entry.version = ver
        entry.type = (_LazyMeta(f"Lazy{attr}", (), {"_module": module, "_attr": attr}),)
        entry.available = True
        cache[name] = entry
        done.append(name)
    return done


def lazy_dask_collections() -> bool:
    """Answer xarray's "is this a dask collection?" with False while dask is not imported.

    Returns whether xarray's check was wrapped (False when already wrapped or when xarray's
    function is not where this expects it).
    """
    try:
        from xarray.namedarray import utils
        original = utils.is_dask_collection
    except (ImportError, AttributeError):
        return False
    if getattr(original, "_bayesbias_lazy", False):
        return False

    def is_dask_collection(x):
        # an object of a dask class exists only once dask is imported (None: an import
        # blocked for a moment, see _no_distributed_probe below)
        return sys.modules.get("dask") is not None and original(x)

    is_dask_collection._bayesbias_lazy = True
    utils.is_dask_collection = is_dask_collection
    return True


lazy_duck_arrays()
lazy_dask_collections()


@contextlib.contextmanager
def _no_distributed_probe():
    """Keep xarray's netCDF writer from importing ``dask`` and ``distributed`` (0.2-0.5 s).

    ``to_netcdf`` always asks dask which scheduler is active, importing ``dask`` and
    ``distributed``. When ``distributed`` is not imported yet and no dask scheduler is
    configured, no Client can exist; when ``dask`` itself is not imported, none of its
    arrays exists either. The file holds numpy arrays only, written the same way whatever
    the answer: blocked imports raise ImportError ("not installed") for the write.
    """
    blocked = []
    if "dask" not in sys.modules:
        blocked = ["dask", "distributed"]
    else:
        import dask.config

        if "distributed" not in sys.modules and dask.config.get("scheduler", None) is None:
            blocked = ["distributed"]
    for name in blocked:
        sys.modules[name] = None  # an import now raises ImportError
    try:
        yield
    finally:
        for name in blocked:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]

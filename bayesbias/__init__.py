"""bayesbias: bias in NLP with honest uncertainty.

The names below are imported on first use (PEP 562), so ``import bayesbias`` is quick and
pulls in neither PyMC nor ArviZ; the Bayesian models live in :mod:`bayesbias.models`.
"""

from importlib import import_module

from .errors import *  # noqa: F403, E402  (light: no dependencies)
from .errors import __all__ as _errors_all  # noqa: E402

#: Public name -> module that defines it.
_LAZY = {
    # data path: embeddings -> word lists -> distance table
    "Embedding": "inputs.embeddings",
    "load_embedding": "inputs.embeddings",
    "save_embedding": "inputs.embeddings",
    "WordList": "inputs.wordlists",
    "load_wordlist": "inputs.wordlists",
    "available_wordlists": "inputs.wordlists",
    "distance_table": "inputs.distances",
    "read_distance_table": "inputs.distances",
    "read_published_table": "inputs.distances",
    "write_distance_table": "inputs.distances",
    "to_xarray": "inputs.distances",
    # comparators (bayesbias.comparators; null studies in bayesbias.comparators.null)
    "weat": "comparators.weat",
    "weat_from_table": "comparators.weat",
    "mac": "comparators.mac",
    "mac_from_table": "comparators.mac",
    "mac_ttest": "comparators.mac",
    # debiasing
    "hard_debias": "inputs.debias",
    # configuration
    "defaults": "config",
    "CONNECTIONS": "config",
}

__all__ = [*_LAZY, *_errors_all]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bayesbias")
    except PackageNotFoundError:  # running from a source tree
        return "0.1.0"


def __getattr__(name: str):
    if name == "__version__":  # importlib.metadata costs ~50 ms: only when asked
        value = globals()["__version__"] = _version()
        return value
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'bayesbias' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))

"""bayesbias: bias in NLP with honest uncertainty."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("bayesbias")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.1.0"

from .comparators.mac import mac, mac_from_table, mac_ttest
from .comparators.weat import weat, weat_from_table
from .config import CONNECTIONS, defaults
from .debias import hard_debias
from .distances import (
    distance_table,
    read_distance_table,
    read_published_table,
    to_xarray,
    write_distance_table,
)
from .embeddings import Embedding, load_embedding, save_embedding
from .errors import *  # noqa: F403
from .wordlists import WordList, available_wordlists, load_wordlist

__all__ = [
    # data path: embeddings -> word lists -> distance table
    "Embedding",
    "load_embedding",
    "save_embedding",
    "WordList",
    "load_wordlist",
    "available_wordlists",
    "distance_table",
    "read_distance_table",
    "read_published_table",
    "write_distance_table",
    "to_xarray",
    # comparators (bayesbias.comparators, bayesbias.simulate for null studies)
    "weat",
    "weat_from_table",
    "mac",
    "mac_from_table",
    "mac_ttest",
    # debiasing
    "hard_debias",
    # Bayesian models live in bayesbias.models (imports PyMC); classifier metrics in
    # bayesbias.classifier.
    # configuration
    "defaults",
    "CONNECTIONS",
]

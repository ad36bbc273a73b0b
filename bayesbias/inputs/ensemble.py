"""The distance table of many embeddings: one block of rows per embedding.

The table is the usual distance table (:mod:`bayesbias.inputs.distances`, which holds its
schema: :data:`~bayesbias.inputs.distances.ENSEMBLE_COLUMNS`) with two more columns:
``embedding`` (a label per embedding file) and ``corpus_sample`` (the corpus sample it was
trained on: ``original``, ``bootstrap-<b>``, or a corpus name). The ``embedding_level``
model reads both; :mod:`bayesbias.verdicts.ensemble` reads its fit.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from ..config import FACTOR_PREFIX
from ..errors import DistanceTableError, InputDataError
from . import embeddings
from .distances import distance_table
from .training import MANIFEST, read_manifest
from .wordlists import load_wordlist

__all__ = ["ensemble_table", "manifest_table", "manifest_path"]

log = logging.getLogger(__name__)


def ensemble_table(paths, wordlist, labels=None, corpus_samples=None,
                   format: str = "auto") -> pd.DataFrame:
    """Distance table of `wordlist` on every embedding in `paths`, stacked.

    Parameters
    ----------
    paths : list of path-like
        Embedding files (any format :func:`~bayesbias.embeddings.load_embedding` reads), all
        of one dimension.
    wordlist : WordList or str
    labels : list of str, optional
        The ``embedding`` label of each file (default: the file names without suffix).
    corpus_samples : list of str, optional
        The corpus sample of each file (default: ``"original"`` for all: seeds of one corpus).

    Notes
    -----
    A protected word or attribute missing from some embeddings is dropped from all of them
    (one warning names the word and the embeddings that lack it), so that every embedding
    has the same rows.
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise InputDataError("no embedding files given")
    labels = list(labels) if labels is not None else [p.name.split(".")[0] for p in paths]
    if len(set(labels)) != len(labels):
        raise InputDataError(f"embedding labels repeat: {labels}")
    samples = list(corpus_samples) if corpus_samples is not None else ["original"] * len(paths)
    wl = load_wordlist(wordlist)
    embs = [embeddings.load_embedding(p, wl.all_words, format=format) for p in paths]
    dims = {lab: e.dim for lab, e in zip(labels, embs, strict=True) if e.words}
    if len(set(dims.values())) > 1:
        raise InputDataError("embeddings of different dimensions: " + ", ".join(
            f"{lab} {d}" for lab, d in dims.items()))
    words = list(dict.fromkeys(wl.all_words))
    lacking = {w: [lab for lab, e in zip(labels, embs, strict=True) if w not in e]
               for w in words}
    partial = {w: labs for w, labs in lacking.items() if 0 < len(labs) < len(embs)}
    if partial:
        msg = "; ".join(f"{w} (missing from {', '.join(labs)})" for w, labs in partial.items())
        log.warning("dropped from every embedding, since some lack them: %s", msg)
    keep = {w for w, labs in lacking.items() if not labs}
    wl_kept = wl.restrict(keep) if len(keep) < len(words) else wl
    parts = []
    for lab, sample, emb in zip(labels, samples, embs, strict=True):
        t = distance_table(emb, wl_kept, on_missing="drop")
        t.insert(0, "corpus_sample", sample)
        t.insert(0, "embedding", lab)
        parts.append(t)
    table = pd.concat(parts, ignore_index=True)
    if table.empty:
        raise DistanceTableError(f"no rows: no word of {wl.name!r} is in every embedding")
    table.attrs.update(wordlist=wl.name, embeddings=labels,
                       missing={w: labs for w, labs in lacking.items() if labs})
    return table


def manifest_path(source) -> Path | None:
    """Return the training manifest `source` names (the file or its folder), or None.

    A ``.json`` file, or a folder holding ``manifest.json``, as written by ``bayesbias
    train``; anything else (an embedding file, ``default``) gives None.
    """
    if not isinstance(source, (str, Path)) or not str(source):
        return None
    path = Path(source)
    if path.is_dir() and (path / MANIFEST).is_file():
        return path / MANIFEST
    if path.suffix.lower() == ".json" and path.is_file():
        return path
    if path.is_dir() and _training_runs(path):
        return path
    return None


def _training_runs(folder: Path) -> list[Path]:
    """Subfolders of `folder` that hold a training manifest, in name order."""
    return sorted(p for p in folder.iterdir() if p.is_dir() and (p / MANIFEST).is_file())


def manifest_table(manifest, wordlist) -> pd.DataFrame:
    """:func:`ensemble_table` of the models of a training manifest (file or folder).

    A folder without a manifest whose subfolders hold one (several ``bayesbias train``
    runs, say one corpus per decade) gives one table of all their models: embedding and
    corpus-sample labels are prefixed with the subfolder's name, and each run's
    ``--factor NAME=VALUE`` becomes a column ``factor_NAME``. Runs of one corpus (same
    digest) share its corpus samples: the corpus itself, and resamples of the same
    ``--bootstrap-seed`` (same resample digest), labelled by the first such run.
    """
    path = Path(manifest)
    runs = ([path] if not path.is_dir() or (path / MANIFEST).is_file()
            else _training_runs(path))
    if not runs:
        raise InputDataError(f"{path}: no training manifest ({MANIFEST}) in it or its "
                             "subfolders")
    several = len(runs) > 1 or runs[0] != path
    entries, factors, shared = [], [], {}
    for run in runs:
        m = read_manifest(run)
        prefix = f"{run.name}/" if several else ""
        for x in m["models"]:
            sample = prefix + x["corpus_sample"]
            # runs of one corpus share its samples: the corpus itself, or the same resample
            digest = "original" if x["corpus_sample"] == "original" else \
                x.get("resample_sha256")
            if m.get("corpus_sha256") and digest:
                sample = shared.setdefault((m["corpus_sha256"], digest), sample)
            entries.append((x["path"], prefix + x["name"], sample))
            factors.append(dict(m.get("factors") or {}))
    names = sorted({k for f in factors for k in f})
    lacking = [e[1].split("/")[0] for e, f in zip(entries, factors, strict=True)
               if set(f) != set(names)]
    if lacking:
        raise InputDataError(f"{path}: every training run needs the same factors "
                             f"({', '.join(names)}); run {lacking[0]!r} differs (train "
                             "--factor)")
    table = ensemble_table([e[0] for e in entries], wordlist, labels=[e[1] for e in entries],
                           corpus_samples=[e[2] for e in entries])
    for name in names:
        by_label = {e[1]: str(f[name]) for e, f in zip(entries, factors, strict=True)}
        table[f"{FACTOR_PREFIX}{name}"] = table["embedding"].map(by_label)
    table.attrs["manifest"] = str(manifest)
    return table

"""Train many word2vec embeddings of one corpus: training seeds and document bootstraps.

One embedding describes one training run on one corpus sample. To see how much of a bias
score is the run's (seed) and how much the corpus sample's, train

- ``seeds``: K runs on the corpus itself, differing only in gensim's ``seed``;
- ``bootstrap``: B corpora resampled by documents (with replacement, same size), each with
  the first seed (or each with every seed: ``seeds_within=True``).

The corpus is plain text, one document per line, whitespace-tokenised, optionally ``.gz``;
it is streamed, never read whole. A bootstrap resample is a count per document (a
multinomial draw) replayed while streaming. Every model is trained with one gensim thread
(``workers=1``): gensim with two threads gives different vectors for the same seed.
Models are independent tasks, run with Dask (threads in-process by default, or a
``distributed`` scheduler address); each writes a word2vec binary file that
:func:`~bayesbias.embeddings.load_embedding` reads, and the folder's ``manifest.json``
records settings, seed, corpus digest, resample digest and gensim version. A re-run with
the same corpus and settings skips the models already written (each has a ``NAME.json``
record beside its file, so an interrupted run keeps its finished models).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputDataError, InvalidArgumentError
from ..progress import progress
from ..provenance import file_digest
from .embeddings import Embedding, save_embedding

__all__ = ["TrainSettings", "ModelPlan", "Corpus", "plan_models", "train_models",
           "read_manifest", "MANIFEST", "SETTINGS"]

log = logging.getLogger(__name__)

#: File name of the manifest inside the output folder.
MANIFEST = "manifest.json"
#: gensim Word2Vec parameters a user may set (gensim's own names) and their defaults here.
SETTINGS = {"vector_size": 100, "window": 5, "min_count": 5, "epochs": 5, "sg": 1,
            "negative": 5, "sample": 1e-3, "alpha": 0.025, "min_alpha": 0.0001}


@dataclass(frozen=True)
class TrainSettings:
    """gensim ``Word2Vec`` settings (gensim's names); skip-gram (``sg=1``) by default."""

    vector_size: int = 100
    window: int = 5
    min_count: int = 5
    epochs: int = 5
    sg: int = 1
    negative: int = 5
    sample: float = 1e-3
    alpha: float = 0.025
    min_alpha: float = 0.0001

    def __post_init__(self):
        for name in ("vector_size", "window", "min_count", "epochs"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise InvalidArgumentError(f"--{name.replace('_', '-')} must be a whole "
                                           f"number >= 1, got {value!r}")
        if self.sg not in (0, 1):
            raise InvalidArgumentError(f"--sg must be 0 (CBOW) or 1 (skip-gram), got {self.sg!r}")

    def to_dict(self) -> dict:
        """Plain data (for the manifest)."""
        return asdict(self)


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


@dataclass
class Corpus:
    """A plain-text corpus, one document per line, streamed (``.gz`` accepted).

    Iterating yields each document as a list of tokens; with `counts` (one per document)
    each document is yielded that many times, in place (a bootstrap resample).
    """

    path: Path
    counts: np.ndarray | None = None
    _stats: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self.path = Path(self.path)
        if not self.path.exists():
            raise InputDataError(f"{self.path}: no such corpus file")
        if not self.path.is_file():
            raise InputDataError(f"{self.path}: not a regular file")

    def __iter__(self):
        counts = self.counts
        with _open_text(self.path) as fh:
            i = 0
            for line in fh:
                tokens = line.split()
                if not tokens:
                    continue
                k = 1 if counts is None else int(counts[i])
                i += 1
                for _ in range(k):
                    yield tokens

    def scan(self) -> dict:
        """Count documents and tokens and hash the file (one streamed pass, cached)."""
        if not self._stats:
            h = hashlib.sha256()
            docs = tokens = 0
            try:
                with open(self.path, "rb") as raw:
                    for chunk in iter(lambda: raw.read(1 << 20), b""):
                        h.update(chunk)
                with _open_text(self.path) as fh:
                    for line in fh:
                        n = len(line.split())
                        if n:
                            docs += 1
                            tokens += n
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                raise InputDataError(f"{self.path}: cannot read the corpus: {exc}") from None
            self._stats.update(documents=docs, tokens=tokens, sha256=h.hexdigest())
        return self._stats


@dataclass(frozen=True)
class ModelPlan:
    """One model to train: its file name, gensim seed and corpus sample."""

    name: str
    seed: int
    corpus_sample: str  # "original" or "bootstrap-<b>"
    resample: int | None  # bootstrap number, None for the corpus itself

    def to_dict(self) -> dict:
        """Plain data."""
        return asdict(self)


def plan_models(seeds: int = 1, bootstrap: int = 0, seeds_within: bool = False,
                first_seed: int = 1) -> list[ModelPlan]:
    """List the models: `seeds` runs on the corpus and `bootstrap` resampled corpora.

    Each resample is trained with the first seed, or with every seed when `seeds_within`.
    With ``bootstrap > 0`` and ``seeds_within=False`` the corpus itself is trained with
    every seed as well (set ``seeds=0`` for bootstrap models only).
    """
    if seeds < 0 or bootstrap < 0:
        raise InvalidArgumentError("--seeds and --bootstrap must be >= 0")
    if seeds == 0 and bootstrap == 0:
        raise InvalidArgumentError("nothing to train: give --seeds N or --bootstrap N (N >= 1)")
    if seeds_within and (bootstrap == 0 or seeds == 0):
        raise InvalidArgumentError("--seeds-within needs both --seeds and --bootstrap")
    out = []
    if not seeds_within:
        out += [ModelPlan(f"original-seed{first_seed + k}", first_seed + k, "original", None)
                for k in range(seeds)]
    for b in range(bootstrap):
        for k in range(seeds if seeds_within else 1):
            s = first_seed + k
            out.append(ModelPlan(f"bootstrap{b + 1}-seed{s}", s, f"bootstrap-{b + 1}", b + 1))
    return out


def resample_counts(n_docs: int, resample: int, seed: int) -> np.ndarray:
    """Multinomial document counts of bootstrap resample `resample` (reproducible)."""
    rng = np.random.default_rng([seed, resample])
    return rng.multinomial(n_docs, np.full(n_docs, 1.0 / n_docs))


def _train_one(corpus_path: str, plan: ModelPlan, settings: TrainSettings, out: str,
               n_docs: int, bootstrap_seed: int, key: str, on_progress=None) -> dict:
    """Train one model with one gensim thread; write it; return its manifest entry."""
    import gensim
    from gensim.models import Word2Vec

    counts = None
    digest = None
    if plan.resample is not None:
        counts = resample_counts(n_docs, plan.resample, bootstrap_seed)
        digest = hashlib.sha256(counts.astype("<i8").tobytes()).hexdigest()
    t0 = time.perf_counter()
    model = Word2Vec(Corpus(corpus_path, counts), workers=1, seed=plan.seed,
                     **settings.to_dict())
    seconds = time.perf_counter() - t0
    wv = model.wv
    path = Path(out) / f"{plan.name}.bin"
    save_embedding(Embedding(wv.index_to_key, wv.vectors, source=str(path)), path, binary=True)
    if on_progress is not None:  # e.g. a progress.TrainProgress: "model k of N"
        on_progress.trained(plan.name, len(wv.index_to_key), seconds)
    else:
        progress.info("trained %s: %d words in %.1f s", plan.name, len(wv.index_to_key),
                      seconds)

    entry = dict(plan.to_dict(), file=path.name, file_sha256=file_digest(path)["sha256"],
                 resample_sha256=digest,
                 vocabulary=len(wv.index_to_key), seconds=round(seconds, 3),
                 gensim_version=gensim.__version__, key=key)
    # a record beside the file: an interrupted run keeps its finished models
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(entry))
    tmp.replace(path.with_suffix(".json"))
    return entry


def _intact(path: Path, entry: dict) -> bool:
    """Whether a model file exists with the digest its record gives (older records: exists)."""
    if not path.is_file():
        return False
    want = entry.get("file_sha256")
    return want is None or file_digest(path)["sha256"] == want


def _load_manifest(folder: Path) -> dict | None:
    path = folder / MANIFEST
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputDataError(f"{path}: not a readable manifest: {exc}") from None


def read_manifest(path) -> dict:
    """Read a manifest (the file, or the folder holding ``manifest.json``).

    Refuses a manifest whose model files lie outside its folder.
    """
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    data = _load_manifest(folder) if path.is_dir() else None
    if data is None:
        if not path.is_file():
            raise InputDataError(f"{path}: no manifest ({MANIFEST}) found")
        try:
            data = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputDataError(f"{path}: not a readable manifest: {exc}") from None
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, list) or not models:
        raise InputDataError(f"{path}: manifest lists no models")
    root = folder.resolve()
    for m in models:
        f = (folder / str(m.get("file", ""))).resolve()
        if root not in f.parents:
            raise InputDataError(f"{path}: model file {m.get('file')!r} lies outside the "
                                 "manifest's folder; refused (give such files by path)")
        if f.is_file() and not _intact(f, m):
            raise InputDataError(f"{path}: model file {m.get('file')!r} has changed since it "
                                 "was trained (its sha256 differs from the manifest's "
                                 "file_sha256); re-run train to replace it")
        m["path"] = str(f)
    data["folder"] = str(folder)
    return data


def train_models(corpus, out, *, seeds: int = 1, bootstrap: int = 0,
                 seeds_within: bool = False, first_seed: int = 1, bootstrap_seed: int = 0,
                 settings: TrainSettings | None = None, jobs: int = 1,
                 scheduler: str | None = None, factors: dict | None = None,
                 on_progress=None) -> dict:
    """Train the planned models of `corpus` into folder `out`; return the manifest.

    Parameters
    ----------
    corpus : path-like
        Plain text, one document per line (``.gz`` accepted).
    out : path-like
        Output folder (created); holds one ``NAME.bin`` per model and ``manifest.json``.
    seeds, bootstrap, seeds_within, first_seed
        See :func:`plan_models`.
    bootstrap_seed : int
        Seed of the document resampling (resample b uses ``default_rng([bootstrap_seed, b])``).
    settings : TrainSettings
    jobs : int
        Models trained at once (Dask threads; each model uses one gensim thread).
    scheduler : str, optional
        Address of a ``dask.distributed`` scheduler; default: in-process threads.
    factors : dict, optional
        ``{name: level}`` of this corpus (a decade, a source, a language), recorded in the
        manifest; a folder of such runs is one ensemble with a ``factor_<name>`` column
        (:func:`bayesbias.ensemble.manifest_table`).
    on_progress : object, optional
        Progress hook (:class:`bayesbias.progress.TrainProgress`): ``plan(models, todo,
        documents, tokens, out)`` before the first model, ``trained(name, words, seconds)``
        as each is written (from its thread; not with a `scheduler`).
    """
    import dask

    settings = settings or TrainSettings()
    corpus = Corpus(corpus)
    stats = corpus.scan()
    if stats["documents"] == 0:
        raise InputDataError(f"{corpus.path}: the corpus is empty (no non-blank line)")
    if stats["documents"] < 2 and bootstrap:
        raise InputDataError(f"{corpus.path}: one document only; resampling documents needs "
                             "at least 2")
    plans = plan_models(seeds, bootstrap, seeds_within, first_seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    head = {"corpus": str(corpus.path), "corpus_sha256": stats["sha256"],
            "documents": stats["documents"], "tokens": stats["tokens"],
            "settings": settings.to_dict(), "bootstrap_seed": bootstrap_seed,
            "workers_per_model": 1, "format": "word2vec-binary",
            "factors": {str(k): str(v) for k, v in (factors or {}).items()}}
    key = hashlib.sha256(json.dumps([head[k] for k in ("corpus_sha256", "settings",
                                                       "bootstrap_seed")]).encode()).hexdigest()
    done = {}
    for p in plans:  # finished models of the same corpus and settings (their records)
        record = out / f"{p.name}.json"
        try:
            entry = json.loads(record.read_text()) if record.is_file() else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            entry = None
        if entry and entry.get("key") == key and _intact(out / f"{p.name}.bin", entry):
            done[p.name] = entry
    todo = [p for p in plans if p.name not in done]
    if done:
        progress.info("%d of %d models already trained in %s: skipped", len(plans) - len(todo),
                      len(plans), out)
    if on_progress is not None:  # the plan, before the first model
        on_progress.plan(len(plans), len(todo), stats["documents"], stats["tokens"], out)
    hook = None if scheduler else on_progress  # (a remote worker's lines stay there)
    tasks = [dask.delayed(_train_one, pure=False)(str(corpus.path), p, settings, str(out),
                                                  stats["documents"], bootstrap_seed, key,
                                                  hook)
             for p in todo]
    if scheduler:
        from distributed import Client

        with Client(scheduler) as client:
            results = client.compute(tasks, sync=True) if tasks else []
    else:
        results = list(dask.compute(*tasks, scheduler="threads", num_workers=jobs)) \
            if tasks else []
    fresh = {r["name"]: r for r in results}
    models = [done.get(p.name) or fresh[p.name] for p in plans]
    manifest = dict(head, models=models)
    tmp = out / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2))
    tmp.replace(out / MANIFEST)
    return manifest

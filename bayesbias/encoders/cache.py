"""On-disk cache of encoder vectors, one SQLite file per model, keyed by kind and text."""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from pathlib import Path

import numpy as np

from ..config import cache_dir
from ..errors import BayesbiasError

__all__ = ["VectorCache", "CacheError", "default_cache_dir"]


class CacheError(BayesbiasError, RuntimeError):
    """The vector cache file cannot be used (not a database, read-only, corrupt)."""

_CHUNK = 500  # keys per SELECT (SQLite's parameter limit is larger)


def default_cache_dir() -> Path:
    """Folder of the vector caches (:func:`bayesbias.config.cache_dir` ``("encoders")``)."""
    return cache_dir("encoders")


class VectorCache:
    """Float32 vectors stored under a digest of (kind, text).

    Writes are transactions, so an interrupted run leaves whole entries only. With
    ``enabled=False`` nothing is read or written.
    """

    def __init__(self, path, enabled: bool = True):
        self.path = Path(path)
        self.enabled = enabled
        self._db = None

    @contextlib.contextmanager
    def _guard(self):
        """Turn SQLite and file-system failures into one CacheError naming the file."""
        try:
            yield
        except (sqlite3.DatabaseError, OSError) as exc:
            raise CacheError(f"{self.path}: cannot use the encoder cache ({exc}); remove the "
                             "file or run with --no-cache") from None

    def _conn(self):
        if self._db is None:
            with self._guard():
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=60)
                db.execute("CREATE TABLE IF NOT EXISTS vectors "
                           "(key TEXT PRIMARY KEY, data BLOB NOT NULL)")
                self._db = db
        return self._db

    @staticmethod
    def key(kind: str, text: str) -> str:
        """Digest of `kind` and `text`."""
        return hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest()

    def get_many(self, keys, dim: int) -> dict[str, np.ndarray]:
        """Return the cached vectors of `keys` (missing keys are absent from the result)."""
        if not self.enabled or not keys:
            return {}
        unique = list(dict.fromkeys(keys))
        out = {}
        db = self._conn()
        for start in range(0, len(unique), _CHUNK):
            part = unique[start:start + _CHUNK]
            with self._guard():
                rows = db.execute(f"SELECT key, data FROM vectors WHERE key IN "
                                  f"({','.join('?' * len(part))})", part).fetchall()
            for key, data in rows:
                if not isinstance(data, bytes):
                    continue
                vec = np.frombuffer(data, dtype="<f4")
                if vec.shape == (dim,) and np.isfinite(vec).all():
                    out[key] = vec.astype(np.float32)
        return out

    def put_many(self, items: dict) -> None:
        """Store ``{key: vector}``."""
        if not self.enabled or not items:
            return
        db = self._conn()
        with self._guard(), db:
            db.executemany("INSERT OR REPLACE INTO vectors (key, data) VALUES (?, ?)",
                           [(k, np.asarray(v, dtype="<f4").tobytes()) for k, v in items.items()])

    def __len__(self) -> int:
        if not self.enabled or not self.path.exists():
            return 0
        with self._guard():
            return int(self._conn().execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

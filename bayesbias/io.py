"""Atomic output and the location of shipped resources."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_path", "shipped_dir"]

_PACKAGE_DIR = Path(__file__).resolve().parent


@contextlib.contextmanager
def atomic_path(path, suffix: str | None = None):
    """Yield a temporary path next to `path`; rename it onto `path` only on success.

    An interrupted or failing writer never leaves a half-written file at `path`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=suffix or path.suffix or ".tmp", dir=path.parent
    )
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        if tmp.exists():  # mkstemp makes owner-only files; give the usual permissions
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def shipped_dir(name: str) -> Path:
    """Return the directory of a shipped resource folder (``"wordlists"`` or ``"models"``).

    Installed wheels carry them inside the package (``bayesbias/_shipped``); a source
    checkout uses the top-level folders of the repository.
    """
    for candidate in (_PACKAGE_DIR / "_shipped" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"shipped folder {name!r} not found next to {_PACKAGE_DIR}")

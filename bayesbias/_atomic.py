"""Atomic output, output-target checks, and the location of shipped resources.

Every file bayesbias writes goes through :func:`atomic_path`: the data is written to a
hidden temporary file next to the target and renamed onto it only when complete, so an
interrupted or failing writer (exception, Ctrl-C, SIGTERM: the CLI turns SIGTERM into the
same ``KeyboardInterrupt``) never leaves a half-written file at the target, and removes
its temporary file. :func:`check_output` runs the same checks up front, so a command can
refuse a bad ``-o`` before minutes of computation.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from .errors import OutputPathError

__all__ = ["atomic_path", "atomic_write_bytes", "check_output", "remove_temporary_files",
           "shipped_dir", "spreadsheet_safe", "temp_prefix", "temporary_dir", "MIN_FREE_BYTES"]

_PACKAGE_DIR = Path(__file__).resolve().parent

_DEVICE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG}

#: Temporary files of the writers still running in this process.
_LIVE: set[Path] = set()

#: Free space below which an output folder counts as full (checked up front).
MIN_FREE_BYTES = 1 << 20


def _describe(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_output(path, *, what: str = "output", folder: bool = False) -> Path:
    """Check that `path` can be written as an output file (or folder); return it.

    Refuses, with :class:`~bayesbias.errors.OutputPathError`: an empty path; a symbolic
    link; an existing target that is not a regular file (a folder, device, FIFO,
    socket), or not a folder when ``folder=True``; a parent path running through a file;
    a parent folder without write permission, on a read-only file system or with less
    than :data:`MIN_FREE_BYTES` free. Missing parent folders are fine (they are created
    when writing). Nothing is created.

    Parameters
    ----------
    path : str or path-like
    what : str
        How the target is named in messages (e.g. ``"-o"``).
    folder : bool
        The target is a folder (a report), not a file.
    """
    if path is None or str(path).strip() == "":
        raise OutputPathError(f"{what}: empty output path")
    path = Path(path)
    if path.name in ("", ".", ".."):
        raise OutputPathError(f"{what} {str(path)!r}: give a file or folder name, not "
                              f"{path.name or str(path)!r}")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        st = None  # a parent is a file: reported below
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise OutputPathError(f"{what} {str(path)[:80]}...: the name is longer than the "
                                  "file system takes") from None
        raise OutputPathError(f"{what} {path}: cannot check ({exc.strerror})") from None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise OutputPathError(
                f"{what} {path}: is a symbolic link; give the real path "
                f"({os.path.realpath(path)}) if you mean to replace that file")
        if folder and not stat.S_ISDIR(st.st_mode):
            raise OutputPathError(f"{what} {path}: exists and is not a folder")
        if not folder and not stat.S_ISREG(st.st_mode):
            raise OutputPathError(f"{what} {path}: is {_describe(st.st_mode)}, not a regular "
                                  "file; give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    existing = parent
    while True:
        try:
            pst = os.stat(existing)
        except FileNotFoundError:
            existing = existing.parent
            continue
        except NotADirectoryError:
            pst = None
        except OSError as exc:
            raise OutputPathError(f"{what} {path}: cannot check {existing} "
                                  f"({exc.strerror})") from None
        if pst is None or not stat.S_ISDIR(pst.st_mode):
            # walk up to the component that is a file
            blocker = existing
            while blocker != blocker.parent and not blocker.is_file():
                blocker = blocker.parent
            raise OutputPathError(f"{what} {path}: {blocker} is a file, not a folder")
        break
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputPathError(f"{what} {path}: no permission to write in {existing}")
    _check_name_length(path, existing, what)
    try:
        vfs = os.statvfs(existing)
    except OSError:
        vfs = None
    if vfs is not None:
        if vfs.f_flag & os.ST_RDONLY:
            raise OutputPathError(f"{what} {path}: {existing} is on a read-only file system")
        blocks = vfs.f_bfree if os.geteuid() == 0 else vfs.f_bavail
        free = blocks * vfs.f_frsize
        if vfs.f_blocks and free < MIN_FREE_BYTES:
            raise OutputPathError(f"{what} {path}: no space left on the device of {existing} "
                                  f"({free:,} bytes free)")
    _probe(existing, path, what)
    return path


def _name_max(folder: Path) -> int:
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255


def _check_name_length(path: Path, existing: Path, what: str) -> None:
    """Refuse a name or path longer than the file system takes (before any work)."""
    limit = _name_max(existing)
    for part in path.parts:
        if len(os.fsencode(part)) > limit:
            raise OutputPathError(f"{what} {str(path)[:80]}...: the name {part[:40]!r}... is "
                                  f"{len(os.fsencode(part))} bytes, longer than the "
                                  f"{limit} the file system takes")
    if len(os.fsencode(os.path.abspath(path))) >= 4096:
        raise OutputPathError(f"{what} {str(path)[:80]}...: the path is longer than 4096 "
                              "bytes")


def _probe(folder: Path, path: Path, what: str) -> None:
    """Create and remove a file in `folder`: /proc, /sys and the like refuse it up front.

    Permissions and free space do not tell a pseudo file system (procfs, sysfs) from a
    real one; creating a file does. The probe is hidden and removed at once (signals held
    meanwhile), so nothing is left behind.
    """
    import secrets

    name = os.path.join(folder, f".bayesbias-probe.{os.getpid()}.{secrets.token_hex(4)}")
    held = _hold_signals()
    try:
        try:
            os.close(os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except OSError as exc:
            raise OutputPathError(f"{what} {path}: cannot create a file in {folder} "
                                  f"({_os_message(exc)})") from None
    finally:  # also when a signal's handler raises in between
        with contextlib.suppress(OSError):
            os.unlink(name)
        _release_signals(held)


def temp_prefix(name: str, room: int = 16) -> str:
    """Prefix of a hidden temporary name next to `name`, short enough for the file system.

    ``.{name}.`` shortened (on a character boundary) so that the prefix plus `room` bytes
    (random part and suffix) fit in 255 bytes: names of 250-255 bytes stay writable.
    """
    keep = 255 - room - 2
    raw = os.fsencode(name)
    if len(raw) > keep:
        name = raw[:keep].decode("utf-8", "ignore") if not isinstance(name, bytes) else name
        while len(os.fsencode(name)) > keep:
            name = name[:-1]
    return f".{name}."


def _os_message(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    if exc.errno == errno.EDQUOT:
        return "disk quota exceeded"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.EROFS:
        return "read-only file system"
    return exc.strerror or str(exc)


@contextlib.contextmanager
def atomic_path(path, suffix: str | None = None):
    """Yield a temporary path next to `path`; rename it onto `path` only on success.

    The target is checked first (:func:`check_output`). An interrupted or failing writer
    never leaves a half-written file at `path` and never leaves its temporary file
    behind. Failures of the file system (no space, permission, read-only) raise
    :class:`~bayesbias.errors.OutputPathError`.
    """
    path = check_output(path)
    # Ctrl-C / SIGTERM are held from creating the temporary file until the block that
    # removes it is entered: a signal in between would leave it behind. The mask holds
    # signals sent to this thread only: one that another thread (BLAS, a progress timer)
    # receives still runs its Python handler here, so the name is also registered before
    # the file exists, and the command line removes what a writer could not.
    held = _hold_signals()
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        suffix = suffix or path.suffix or ".tmp"
        if len(os.fsencode(suffix)) > 32:
            suffix = ".tmp"
        tmp = _create_temporary(path, suffix)
    except OSError as exc:
        _remove_temporary(tmp)
        _release_signals(held)
        raise OutputPathError(f"cannot write {path}: {_os_message(exc)}") from None
    except BaseException:
        _remove_temporary(tmp)
        _release_signals(held)
        raise
    try:
        _release_signals(held)  # a signal held until now is raised here, inside the cleanup
        try:
            yield tmp
            if tmp.exists():  # created owner-only; give the usual permissions
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(tmp, 0o666 & ~umask)
            check_output(path)  # the target may have changed while we computed
            os.replace(tmp, path)
        except OutputPathError:
            raise
        except OSError as exc:
            ours = exc.filename in (None, str(tmp), str(path)) and not isinstance(
                exc, FileNotFoundError)
            if exc.errno in _DEVICE_ERRORS or ours:
                raise OutputPathError(f"cannot write {path}: {_os_message(exc)}") from None
            raise
    finally:
        _remove_temporary(tmp)


@contextlib.contextmanager
def temporary_dir(parent: Path, prefix: str):
    """Yield a new hidden folder in `parent` (the umask's permissions); remove it on leaving.

    Named before it is created, so that an interruption at any moment (even a signal's
    handler running as the folder appears) leaves nothing behind.
    """
    tmp = None
    try:
        tmp = _fresh(Path(parent), prefix, "", os.mkdir, _remove_dir)
        yield tmp
    finally:
        if tmp is not None:
            _remove_dir(tmp)


def _create_temporary(path: Path, suffix: str) -> Path:
    """Create an empty owner-only hidden file next to `path`, named in :data:`_LIVE` first."""
    def create(tmp):
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))

    prefix = temp_prefix(path.name, 8 + len(os.fsencode(suffix)))
    return _fresh(path.parent, prefix, suffix, create, _remove_temporary, live=True)


def _fresh(parent: Path, prefix: str, suffix: str, create, remove, live: bool = False) -> Path:
    """Create a new entry ``parent/<prefix><random><suffix>`` with `create`; return its path.

    The name exists before the entry: with `live` it is registered in :data:`_LIVE` first,
    and an exception while `create` runs (a signal's handler) removes what it made. A name
    that already exists belongs to someone else and is never removed.
    """
    import secrets

    for _ in range(100):
        tmp = parent / f"{prefix}{secrets.token_hex(4)}{suffix}"
        if live:
            _LIVE.add(tmp)
        try:
            create(tmp)
        except FileExistsError:
            _LIVE.discard(tmp)
            continue
        except BaseException:
            remove(tmp)
            raise
        return tmp
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(parent))


def _remove_dir(tmp: Path) -> None:
    import shutil

    if os.path.lexists(tmp):
        shutil.rmtree(tmp, ignore_errors=True)


def _remove_temporary(tmp: Path | None) -> None:
    """Remove the writer's temporary file `tmp` (if it exists) and forget it."""
    if tmp is None:
        return
    with contextlib.suppress(OSError):
        tmp.unlink()
    _LIVE.discard(tmp)


def remove_temporary_files() -> None:
    """Remove the temporary files of writers that an interruption left unfinished.

    A writer removes its own file when the interruption reaches it; a signal that lands
    between its ``with`` statement and the block can skip that, and the command line calls
    this before it exits.
    """
    for tmp in list(_LIVE):
        with contextlib.suppress(OSError):
            tmp.unlink()
        _LIVE.discard(tmp)


def atomic_write_bytes(path, data, suffix: str | None = None) -> Path:
    """Write `data` (bytes, memoryview) to `path` through :func:`atomic_path`.

    Made for serialisers that are unsafe on a full disk (h5py/netCDF: error cascades and a
    crash at exit): serialise in memory first, then this plain write fails cleanly. The
    free space is checked against the size first, so a too-full disk is refused before the
    temporary file is created.

    Raises
    ------
    OutputPathError
        The target is refused, or the disk has less free space than `data` needs.
    """
    path = check_output(path)
    size = memoryview(data).nbytes
    free = _free_bytes(_existing_parent(path))
    if free is not None and free < size:
        raise OutputPathError(f"cannot write {path}: no space left on the device "
                              f"({size:,} bytes to write, {free:,} free)")
    with atomic_path(path, suffix=suffix) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
    return path


def _existing_parent(path: Path) -> Path:
    parent = path.parent if str(path.parent) else Path(".")
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent


def _free_bytes(folder: Path) -> int | None:
    try:
        vfs = os.statvfs(folder)
    except OSError:
        return None
    if not vfs.f_blocks:
        return None
    return (vfs.f_bfree if os.geteuid() == 0 else vfs.f_bavail) * vfs.f_frsize


def _hold_signals():
    """Block SIGINT and SIGTERM in this thread (main thread only); return the old mask."""
    import signal
    import threading

    if (threading.current_thread() is not threading.main_thread()
            or not hasattr(signal, "pthread_sigmask")):  # Windows: no signal masks
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def _release_signals(old) -> None:
    if old is not None:
        import signal

        signal.pthread_sigmask(signal.SIG_SETMASK, old)


#: First characters that make a spreadsheet read a cell as a formula (OWASP's list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _neutralise(value):
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value  # shown as text, never evaluated
    return value  # a number written as text ("-1.5") is harmless


def spreadsheet_safe(df):
    """Return a copy of `df` whose text cells cannot run as spreadsheet formulas.

    A string cell (or column name) that starts with ``=``, ``+``, ``-``, ``@``, a tab or a
    carriage return gets a leading ``'``, the usual neutralisation (OWASP, "CSV
    injection"): ``=HYPERLINK(...)`` is shown as text. Numbers, negative ones included,
    and strings that are plain numbers are unchanged. Used for the CSV files meant for
    spreadsheets (``classifier -o``, a report's ``tables/``); distance tables are not
    neutralised, since bayesbias reads them back and the words must round-trip.
    """
    import pandas as pd

    out = df.copy()
    for col in out.columns:
        dtype = out[col].dtype
        if (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
                or isinstance(dtype, pd.CategoricalDtype)):
            out[col] = out[col].astype(object).map(_neutralise)
    out.columns = [_neutralise(c) for c in out.columns]
    return out


def shipped_dir(name: str) -> Path:
    """Return the directory of a shipped resource folder (``"wordlists"`` or ``"models"``).

    Installed wheels carry them inside the package (``bayesbias/_shipped``); a source
    checkout uses the top-level folders of the repository.
    """
    for candidate in (_PACKAGE_DIR / "_shipped" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"shipped folder {name!r} not found next to {_PACKAGE_DIR}")

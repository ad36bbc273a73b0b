"""Where a result came from: versions, date, command line and a digest of every input file.

:func:`provenance` is the one place that computes it; the report (``results.json``, the HTML and
Markdown pages) and every saved fit (:meth:`bayesbias.models.Fit.save`) carry its output. Names
of shipped data (``"default"``, ``"religion"``, ``"published:religion:reddit"``, a shipped model)
are resolved to the files they stand for, so a digest always describes bytes that were read.

Nothing here imports a heavy package: versions come from the installed distributions'
metadata, and torch / transformers / sentence-transformers / gensim / onnxruntime / tokenizers /
onnx are named only when the process has already imported them.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from ._atomic import shipped_dir
from .inputs.wordlists import available_wordlists

__all__ = ["provenance", "fit_provenance", "fit_inputs", "file_digest", "input_record",
           "set_command", "command_line",
           "git_commit", "package_versions", "provenance_lines", "compare_inputs"]

#: Distributions whose version is always recorded (when installed).
PACKAGES = ("numpy", "scipy", "pandas", "xarray", "pymc", "pytensor", "nutpie", "arviz",
            "matplotlib")
#: Recorded only when the process has already imported them (never imported to ask).
IF_IMPORTED = {"torch": "torch", "transformers": "transformers",
               "sentence_transformers": "sentence-transformers", "gensim": "gensim",
               "onnxruntime": "onnxruntime", "tokenizers": "tokenizers", "onnx": "onnx"}

_COMMAND: list[str] | None = None
_DIGESTS: dict[tuple, dict] = {}


def set_command(argv) -> None:
    """Record the command line the CLI was given (``bayesbias`` + `argv`)."""
    global _COMMAND
    _COMMAND = ["bayesbias", *map(str, argv)]


def command_line() -> str:
    """Return the exact command line: the CLI's (:func:`set_command`), else Python's argv."""
    if _COMMAND is not None:
        return shlex.join(_COMMAND)
    return shlex.join([Path(sys.executable).name, *sys.argv])


def package_versions() -> dict[str, str]:
    """Versions of the numerical stack (``None`` when a package is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    names = list(PACKAGES) + [dist for mod, dist in IF_IMPORTED.items() if mod in sys.modules]
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def git_commit() -> dict | None:
    """Return the commit of the bayesbias source tree, if it runs from a git checkout, else None."""
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        def git(*args):
            return subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                                  text=True, timeout=5, check=True).stdout.strip()

        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no", "--", "bayesbias"))
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": dirty}


def file_digest(path) -> dict:
    """``{"path", "bytes", "sha256"}`` of a file, or of a folder (its files in name order).

    A folder's digest is the sha256 of each file's relative path and sha256, one per line;
    a file's digest is cached per process by path, size and modification time.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        lines = [f"{p.relative_to(path).as_posix()} {file_digest(p)['sha256']}" for p in files]
        return {"path": str(path), "bytes": int(sum(p.stat().st_size for p in files)),
                "sha256": hashlib.sha256("\n".join(lines).encode()).hexdigest()}
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _DIGESTS[key] = {"bytes": int(st.st_size), "sha256": h.hexdigest()}
    return {"path": str(path), **_DIGESTS[key]}


def _resolve(role: str, spec) -> tuple[str | None, Path | None]:
    """(name it stands for, file) of an input given as a user would: a path or a shipped name."""
    text = str(spec)
    if role == "embedding":
        from .inputs.embeddings import default_embedding_path

        if text == "default":
            return "shipped GloVe 6B 50-d subset", default_embedding_path()
    elif role == "wordlist":
        shipped = available_wordlists()
        if text in shipped:
            return "shipped", shipped[text]
    elif role == "controls" and text == "controls":
        return "shipped control groups", shipped_dir("wordlists") / "controls.toml"
    elif role == "distances" and text.startswith("published:"):
        from .inputs.datasets import _published_path

        parts = text.split(":")
        if len(parts) == 3:
            return "shipped", _published_path(parts[1], parts[2])
    elif role == "model" and not text.endswith(".toml"):
        from .models.spec import _spec_path

        return "shipped", _spec_path(text)
    path = Path(text)
    return None, (path if path.exists() else None)


def input_record(role: str, spec) -> dict:
    """One input: its role, what was given, and the digest and size of the file it names.

    An encoder (an object with ``to_dict``) is described by its settings; a name with no file
    (e.g. a remote model) by ``"file": None``.
    """
    if hasattr(spec, "to_dict"):
        return {"role": role, "given": spec.to_dict(), "file": None}
    try:
        shipped, path = _resolve(role, spec)
    except Exception:  # noqa: BLE001 - provenance must never break a run
        shipped, path = None, None
    rec = {"role": role, "given": str(spec)}
    if shipped:
        rec["shipped"] = shipped
    rec["file"] = file_digest(path) if path is not None else None
    return rec


def provenance(inputs=()) -> dict:
    """Everything needed to say how a result was made, as plain JSON data.

    Parameters
    ----------
    inputs : iterable of (role, spec)
        The inputs as the user gave them (``("embedding", "vectors.txt")``,
        ``("wordlist", "religion")``, ``("distances", "published:religion:reddit")``,
        ``("model", "crossed")``); each gets a digest and size (:func:`input_record`).
    """
    from . import __version__

    return {
        "bayesbias": __version__,
        "git": git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": package_versions(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": command_line(),
        "cwd": os.getcwd(),
        "inputs": [input_record(role, spec) for role, spec in inputs],
    }


def compare_inputs(recorded: list[dict], current: list[dict]) -> list[str]:
    """Say which inputs differ between two provenance records (empty when all match)."""
    now = {(r["role"], json_key(r["given"])): r for r in current}
    out = []
    for r in recorded:
        c = now.get((r["role"], json_key(r["given"])))
        a = (r.get("file") or {}).get("sha256")
        b = ((c or {}).get("file") or {}).get("sha256")
        if a != b:
            out.append(f"{r['role']} {r['given']}: sha256 {str(a)[:12]} when recorded, "
                       f"{str(b)[:12]} now")
    return out


def json_key(value) -> str:
    """Return a hashable key for a JSON value."""
    import json

    return json.dumps(value, sort_keys=True)


def provenance_lines(prov: dict) -> list[str]:
    """Markdown bullet lines (``code`` spans) describing a provenance record."""
    git = prov.get("git")
    version = prov["bayesbias"] + (
        f" (git {git['commit'][:12]}{', uncommitted changes' if git['dirty'] else ''})"
        if git else "")
    pkgs = ", ".join(f"{k} {v}" for k, v in prov["packages"].items() if v)
    lines = [f"bayesbias {version}; Python {prov['python']} on {prov['platform']}",
             f"packages: {pkgs}",
             f"run on {prov['date']} (UTC) in `{prov['cwd']}`",
             f"command: `{prov['command']}`"]
    for r in prov["inputs"]:
        f = r.get("file")
        given = r["given"] if isinstance(r["given"], str) else json_key(r["given"])
        what = f" ({r['shipped']})" if r.get("shipped") else ""
        lines.append(f"{r['role']} `{given}`{what}: " + (
            f"`{f['path']}`, {f['bytes']:,} bytes, sha256 `{f['sha256']}`" if f
            else "no file (described by its settings)"))
    return lines


def fit_inputs(fit) -> list[tuple[str, str]]:
    """Return the inputs a fit records (its table's source, embedding, word list, model spec)."""
    import json

    attrs = fit.idata.attrs
    try:
        table = json.loads(attrs.get("table_attrs", "{}"))
    except ValueError:
        table = {}
    out = []
    if "topic" in table:  # a shipped published table
        out.append(("distances", f"published:{table['topic']}:{table.get('embedding')}"))
    else:
        if table.get("source") and Path(table["source"]).is_file():
            out.append(("distances", table["source"]))
        emb = str(table.get("embedding", ""))
        if emb.startswith("default"):
            out.append(("embedding", "default"))
        elif emb and Path(emb).is_file():
            out.append(("embedding", emb))
        if table.get("manifest") and Path(table["manifest"]).is_file():
            out.append(("manifest", table["manifest"]))  # the embeddings of bayesbias train
        if table.get("wordlist"):
            out.append(("wordlist", table["wordlist"]))
    out.append(("model", attrs.get("spec_name", fit.spec.name)))
    return out


def fit_provenance(fit) -> dict:
    """:func:`provenance` of a fit's inputs (:func:`fit_inputs`), for :meth:`Fit.save`."""
    return provenance(fit_inputs(fit))

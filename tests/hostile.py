"""Helpers of the hostile-input corpus (tests/test_hostile_*.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from bayesbias.cli import main

_SCRIPT = Path(sys.executable).with_name("bayesbias")
#: The installed command (the console script next to this Python), else ``python -m``.
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "bayesbias"]


def run_cli(args, cwd=None, timeout=120, **kwargs) -> subprocess.CompletedProcess:
    """Run the installed CLI in a subprocess; return the completed process (text mode)."""
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([*CLI, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env, **kwargs)


def run_main(capsys, args) -> tuple[int, str, str]:
    """Run ``main(args)`` in-process; return (exit code, stdout, stderr)."""
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:  # argparse errors and --help exit
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_clean_error(code: int, err: str, *needles: str, exit_code: int = 2) -> None:
    """Exit `exit_code`, one line on stderr naming each of `needles`, no traceback."""
    assert code == exit_code, err
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("WARNING")]
    assert len(lines) == 1, err
    assert "error" in lines[0], err
    for needle in needles:
        assert needle in lines[0], (needle, err)


def listing(folder) -> list[str]:
    """Every entry under `folder` (hidden ones included), relative, sorted."""
    folder = Path(folder)
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def copy_default_embedding(dest) -> Path:
    """Copy of the shipped default embedding (word2vec binary) at `dest`."""
    from bayesbias.embeddings import default_embedding_path

    shutil.copyfile(default_embedding_path(), dest)
    return Path(dest)

"""Start-up time of commands that do not sample, against an earlier commit, same run.

Each command runs in a fresh subprocess with this Python; the figure is the best of
``--repeat`` runs minus the best of ``python -c pass`` (Python's own start-up), measured
in the same loop so both see the same machine load. The earlier code is taken from
``--base`` (a git ref, default ``main~0`` of the repository) with ``git archive`` into a
temporary folder and run from there with ``PYTHONPATH``.

Usage::

    nice python benchmarks/bench_startup.py --base 7f4b1cd [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = "from bayesbias._entry import main\nimport sys\nsys.argv[1:] = {argv!r}\n" \
      "try:\n    main()\nexcept SystemExit:\n    pass\n"
RUN_OLD = RUN.replace("bayesbias._entry", "bayesbias.cli")
CASES = {
    "import bayesbias": None,
    "bayesbias --help": ["--help"],
    "bayesbias wordlists": ["wordlists"],
    "bayesbias bbu --n 3160 ...": ["bbu", "--n", "3160", "--ci-prob", "0.95", "--gamma",
                                   "0.5", "--variance", "4"],
    "bayesbias distances (religion, default)": ["--quiet", "distances"],
    "bayesbias weat --wordlist weat7 (default)": ["--quiet", "weat", "--wordlist", "weat7"],
}


def _time(code: str, src: Path, repeat: int) -> float:
    env = dict(os.environ, PYTHONPATH=str(src), MPLBACKEND="Agg")
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=env, cwd=tempfile.gettempdir(),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        best = min(best, time.perf_counter() - t)
    return best


def main(argv=None) -> int:
    """Measure every case for the base and the working tree; print a table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="git ref of the earlier code")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.base],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        old_entry = not (base / "bayesbias" / "_entry.py").exists()
        print(f"seconds beyond Python's own start-up (best of {args.repeat}); "
              f"base = {args.base}, new = working tree")
        print(f"{'case':42s} {'python':>7s} {'base':>7s} {'new':>7s} {'ratio':>6s}")
        for name, argv_ in CASES.items():
            py = min(_time("pass", ROOT, args.repeat), _time("pass", base, args.repeat))
            if argv_ is None:
                code_old = code_new = "import bayesbias"
            else:
                code_new = RUN.format(argv=argv_)
                code_old = (RUN_OLD if old_entry else RUN).format(argv=argv_)
            old = _time(code_old, base, args.repeat) - py
            new = _time(code_new, ROOT, args.repeat) - py
            print(f"{name:42s} {py:7.3f} {old:7.3f} {new:7.3f} {new / old:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

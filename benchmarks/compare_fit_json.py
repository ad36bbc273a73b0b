"""Check: ``bayesbias fit --json`` of this checkout against an earlier commit, same seed.

Runs the command with both versions (the baseline extracted with ``git archive``, as
``bench_scale.py`` does) on the same table and compares the outputs: the text byte for byte
with the run's ``wall_time_s`` left out, and every number (largest absolute difference).
Exit code 1 if they differ beyond ``--tol``.

    python benchmarks/compare_fit_json.py --baseline 04f8695 --rows 500000
    python benchmarks/compare_fit_json.py --baseline 04f8695 --distances published:religion:reddit

``--rows N``: a table of N rows built as ``bench_scale.py --fit`` builds them (the religion
table's protected words renamed per copy); ``--distances``: any table; further arguments go
to ``bayesbias fit`` (e.g. ``--model hierarchical``).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(root: Path, argv: list[str], cwd: Path) -> str:
    """Stdout of ``bayesbias fit --json`` with the package at `root`."""
    code = ("import sys, bayesbias.cli as c; "
            "assert c.__file__.startswith(sys.argv[1]), c.__file__; "
            "raise SystemExit(c.main(sys.argv[2:]))")
    res = subprocess.run([sys.executable, "-c", code, str(root), "fit", "--json", *argv],
                         capture_output=True, text=True, cwd=cwd,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    if res.returncode:
        raise SystemExit(f"{root}: exit {res.returncode}\n{res.stderr[-2000:]}")
    return res.stdout


def differences(a, b, path: str = "") -> tuple[float, str, list[str]]:
    """Largest absolute difference of numbers, where, and any non-numeric differences."""
    worst, where, other = 0.0, "", []
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return 0.0, "", [f"{path}: keys {list(a)} != {list(b)}"]
        items = [(a[k], b[k], f"{path}/{k}") for k in a]
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return 0.0, "", [f"{path}: {len(a)} != {len(b)} items"]
        items = [(x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b, strict=True))]
    elif isinstance(a, float) and isinstance(b, float):
        d = 0.0 if path.endswith("wall_time_s") else abs(a - b)
        return d, path, []
    else:
        return 0.0, "", [] if (type(a) is type(b) and a == b) else [f"{path}: {a!r} != {b!r}"]
    for x, y, p in items:
        d, w, o = differences(x, y, p)
        other += o
        if d > worst:
            worst, where = d, w
    return worst, where, other


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="commit to compare against")
    ap.add_argument("--rows", type=int, help="build a table of this many rows")
    ap.add_argument("--distances", help="or: this table")
    ap.add_argument("--tol", type=float, default=1e-12)
    args, rest = ap.parse_known_args(argv)
    with tempfile.TemporaryDirectory(prefix="compare_fit_") as tmp:
        tmp = Path(tmp)
        base = tmp / "baseline"
        base.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline,
                                  "bayesbias", "models"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        table = args.distances
        if table is None:
            sys.path.insert(0, str(ROOT / "benchmarks"))
            from bench_scale import make_words_table

            table = str(tmp / f"w{args.rows}.parquet")
            make_words_table(args.rows or 500_000, Path(table))
        old, new = (run(root, ["--distances", table, *rest], tmp) for root in (base, ROOT))
    strip = re.compile(r'"wall_time_s": [^,\n]*')
    same_text = strip.sub("", old) == strip.sub("", new)
    worst, where, other = differences(json.loads(old), json.loads(new))
    print(f"{table}: {len(new):,} characters of JSON; identical text (but wall_time_s): "
          f"{same_text}; largest difference of a number {worst:.3g}"
          + (f" at {where}" if where else "") + f"; other differences: {len(other)}")
    for o in other[:10]:
        print("  ", o)
    return 0 if not other and worst <= args.tol else 1


if __name__ == "__main__":
    raise SystemExit(main())

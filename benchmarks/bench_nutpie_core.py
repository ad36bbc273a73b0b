"""What driving nutpie's compiled core directly saves per process (bayesbias.models._nutpie).

Each case runs in a fresh subprocess with this Python, alternating the two drivers in one
loop so that both see the same machine load; the figure is the median over ``--repeat``
runs, and the saving is the difference of the medians (and their ratio):

- ``load``: loading the sampler (``_nutpie.core()`` against ``import nutpie``);
- ``fit``: a whole small default fit (hierarchical, simulated table, 1 chain x 100 draws,
  kernels already compiled) with ``BAYESBIAS_NUTPIE=core`` against ``=public``.

Usage::

    nice python benchmarks/bench_nutpie_core.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOAD = {"core": "from bayesbias.models._nutpie import core; core()",
        "public": "import nutpie"}
FIT = ("import warnings; warnings.simplefilter('ignore')\n"
       "from bayesbias.models import fit_model\n"
       "from bayesbias.testing import simulate_table\n"
       "t, _ = simulate_table(seed=1, words_per_class=2, n_human=4, n_none=6)\n"
       "fit_model(t, 'hierarchical', draws=100, tune=100, chains=1, seed=1)\n")


def _run(code: str, driver: str) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg", BAYESBIAS_NUTPIE=driver)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    _run(FIT, "core")  # compile the kernels and warm the file cache once
    _run(FIT, "public")
    for case in ("load", "fit"):
        times = {"core": [], "public": []}
        for _ in range(args.repeat):
            for driver in ("core", "public"):
                code = LOAD[driver] if case == "load" else FIT
                times[driver].append(_run(code, driver))
        core, public = (statistics.median(times[d]) for d in ("core", "public"))
        print(f"{case}: core {core:.2f} s, public {public:.2f} s per process (median of "
              f"{args.repeat}); saving {public - core:.2f} s, ratio {public / core:.2f}")


if __name__ == "__main__":
    main()

"""Posterior agreement check (run by hand, issue 49): integrated-scale sampler vs default fit.

On one shipped list (default ``gender``) of the default embedding: two long runs of the default
crossed fit (``draws=10000``, seeds 1 and 2) and one of
:func:`bayesbias.models.crossed_integrated.sample_scales` (``kernel="cfunc"``, 40,000 draws per
chain, seed 3) with mu_bar drawn from its conditional Normal. For each pair, the z of the 15
posterior means (mu_bar, tau, sigma, omega; z = difference / sqrt(MCSE_1^2 + MCSE_2^2)), so the
integrated sampler's disagreement with the default can be read against the default's with itself.

Run ``python benchmarks/crossed_integrated_agreement.py [list]``; appends to
``benchmarks/results/bench_crossed_integrated.txt``.
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import bench_crossed_integrated as bench  # noqa: E402

from bayesbias.inputs.distances import distance_table  # noqa: E402
from bayesbias.inputs.embeddings import default_embedding_path, load_embedding  # noqa: E402
from bayesbias.inputs.wordlists import load_wordlist  # noqa: E402
from bayesbias.models.cells import cells_from_table  # noqa: E402
from bayesbias.models.contrast_mixture import _ess  # noqa: E402
from bayesbias.models.crossed import integrated_data  # noqa: E402
from bayesbias.models.spec import load_spec  # noqa: E402


def _z(a, b):
    out = []
    for n in bench.NAMES:
        for x, y in zip(bench._series(a[n]), bench._series(b[n]), strict=True):
            se = np.hypot(x.std() / np.sqrt(_ess(x)), y.std() / np.sqrt(_ess(y)))
            out.append((x.mean() - y.mean()) / se)
    return np.array(out)


def main(name="gender"):
    t = distance_table(load_embedding(default_embedding_path()), load_wordlist(name))
    data = integrated_data(load_spec("crossed"), cells_from_table(t))
    runs = {"default seed 1": bench._current(t, draws=10000, seed=1)[0],
            "default seed 2": bench._current(t, draws=10000, seed=2)[0],
            "integrated seed 3": bench._integrated(data, draws=40000, seed=3)[0]}
    keys = list(runs)
    lines = [f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC "
             f"crossed_integrated_agreement {name}"]
    for i, p in enumerate(keys):
        for q in keys[i + 1:]:
            z = _z(runs[p], runs[q])
            lines.append(f"{p} vs {q}: max |z| {np.abs(z).max():.2f}, mean z^2 "
                         f"{np.mean(z**2):.2f}; z: " + " ".join(f"{v:+.1f}" for v in z))
    print("\n".join(lines))
    with bench.OUT.open("a") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])

"""Coverage of ``groups_accuracy.py``'s 90% intervals per cell, from its records (no refit).

Reads ``benchmarks/results/groups_accuracy.jsonl`` and prints, per subsampling rate, the
coverage over the scored cells, the cells covered in under 80% of trials (cell, full-data n,
truth, mean posterior mean, coverage), and the coverage without the worst cell, cell 0.

    python benchmarks/groups_accuracy_per_cell.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import groups_accuracy as ga  # noqa: E402


def covered(record: dict, truth: np.ndarray) -> np.ndarray:
    """Whether each cell's interval in `record` holds its full-data value."""
    return (np.asarray(record["lo"]) <= truth) & (truth <= np.asarray(record["hi"]))


def main():
    _, _, _, k, n = ga.fixture()
    truth, _, inner, _ = ga.cell_sets(k, n)
    with open(HERE / "results" / "groups_accuracy.jsonl") as fh:
        records = [json.loads(line) for line in fh]
    without = inner.copy()
    without[0] = False
    for rate in sorted({r["rate"] for r in records}):
        rs = [r for r in records if r["rate"] == rate]
        cov = np.array([covered(r, truth) for r in rs])
        mean = np.array([r["mean"] for r in rs]).mean(axis=0)
        share = cov.mean(axis=0)
        low = [(int(c), int(n[c]), round(float(truth[c]), 3), round(float(mean[c]), 3),
                round(float(share[c]), 2)) for c in np.flatnonzero(inner) if share[c] < 0.8]
        print(f"rate {rate:.3f} ({len(rs)} trials): coverage {cov[:, inner].mean():.3f}, "
              f"without cell 0 {cov[:, without].mean():.3f}; cells under 0.8: {low}")


if __name__ == "__main__":
    main()

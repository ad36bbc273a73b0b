"""SureMap's own code (Khodak et al., NeurIPS 2024) as an oracle on the accuracy study's subsamples.

Runs ``suremap.single_task`` and their structured-regression baseline ``sr.structured_regression``
(Herlihy et al.'s method as SureMap's authors implemented it) on exactly the subsamples that
``benchmarks/groups_accuracy.py`` scored: the per-cell counts (k errors of n rows, 30 cells in
the repository's order race, sex, age band) are read from its JSON-lines records, and each
cell's 0/1 error array is rebuilt as k ones and n - k zeros (their estimators use the arrays
only through counts and means, and ``sr.py``'s resampling draws rows at random, so order does
not matter beyond its random stream). The truth is the full-data error of each cell; RMSE is
over the 23 cells with n >= 40, as in the study. Written per rate to ``--out``: the RMSE of
SureMap, of their SR, of our pooled posterior mean (``full``) and of the naive cell mean, and
the mean and paired standard error (over trials) of the per-trial MSE differences against ours.

Their code is not part of this repository (MIT licence). Obtain it and a separate environment:

    git clone https://github.com/mkhodak/SureMap /tmp/suremap_src     # commit ccd80ae was used
    /root/.pyenv/versions/3.11.7/bin/python -m venv /tmp/smvenv
    /tmp/smvenv/bin/pip install numpy scipy numba 'pandas<3' scikit-learn

then, from the repository root (``bayesbias.datasets`` and ``bayesbias.groups`` are light
imports, used for the truth only):

    PYTHONPATH=$PWD /tmp/smvenv/bin/python benchmarks/groups_suremap_oracle.py /tmp/suremap_src
    PYTHONPATH=$PWD /tmp/smvenv/bin/python benchmarks/groups_suremap_oracle.py /tmp/suremap_src \
        --sr-trials 25                                 # their SR on the first 25 trials per rate

Their ``data.py`` imports ``jiwer``, ``fairlearn.datasets`` and ``sentence_transformers`` at
module level for its dataset loaders only; these are replaced by empty modules so that the
single-task path runs without them. Empty cells (n = 0) are passed as they are: SureMap gives
them weight zero (count 0, mean 0) and returns its prior mean there; their SR returns the
pooled (overall) mean there. Their SR's output is clipped to [0, 1] here (it can only gain);
SureMap's own output is used as returned (it clips to [0, inf)). Their modules call
``np.seterr(all='raise')``; their ``sr.py`` needs pandas < 3 (pandas 3's ``groupby.apply``
drops the grouping column it reads back), pandas 2.3.3 was used.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import types
from pathlib import Path

import numpy as np

SHAPE = (5, 2, 3)
C = 30
POS = "greater than 50K"


def truth_from_fixture():
    """Full-data 0-1 error of each cell (as ``groups_accuracy.fixture``) and the scored mask."""
    from bayesbias.datasets import adult_llama
    from bayesbias.groups import prepare_groups

    t = adult_llama()
    cell, _, _ = prepare_groups(t[["race", "sex", "age"]], len(t), {"age": [25, 65]})
    wrong = (t["label"].to_numpy() == POS) != (t["pred"].to_numpy() == POS)
    n = np.bincount(cell, minlength=C)
    k = np.bincount(cell, weights=wrong, minlength=C)
    big = n >= 40
    assert big.sum() == 23
    return k / n, big


def load_theirs(src: str):
    """Import ``suremap``, ``data`` and ``sr`` from their source tree."""
    for name in ("jiwer", "sentence_transformers", "fairlearn", "fairlearn.datasets"):
        if name not in sys.modules:
            sys.modules[name] = types.ModuleType(name)
    sys.modules["sentence_transformers"].SentenceTransformer = None
    sys.modules["fairlearn"].datasets = sys.modules["fairlearn.datasets"]
    sys.path.insert(0, str(Path(src).resolve()))
    import data
    import sr
    import suremap
    return suremap, data.MultiTaskStatistics, sr.structured_regression


def _mts(mts_cls, k, n):
    groups = [tuple(int(i) for i in np.unravel_index(c, SHAPE)) for c in range(C)]
    errors = [np.concatenate([np.ones(int(k[c])), np.zeros(int(n[c] - k[c]))]) for c in range(C)]
    return mts_cls([errors], groups=groups)


def _paired(a, b):
    d = np.asarray(a) - np.asarray(b)
    return float(d.mean()), (float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", help="path of a checkout of github.com/mkhodak/SureMap")
    ap.add_argument("--records", default="benchmarks/results/groups_accuracy.jsonl")
    ap.add_argument("--out", default="benchmarks/results/groups_suremap_oracle.json")
    ap.add_argument("--sr-trials", type=int, default=0,
                    help="run their SR on the first N trials of each rate (slow; 0 = skip)")
    args = ap.parse_args()
    truth, big = truth_from_fixture()
    suremap, mts_cls, their_sr = load_theirs(args.src)
    recs = [json.loads(x) for x in Path(args.records).read_text().splitlines() if x.strip()]
    out = {}
    for rate in sorted({r["rate"] for r in recs}):
        rs = sorted((r for r in recs if r["rate"] == rate), key=lambda r: r["trial"])
        sq = {"suremap": [], "full": [], "naive": [], "sr": [], "full_sr": []}
        t_sm = t_sr = 0.0
        for i, r in enumerate(rs):
            k, n = np.asarray(r["k"]), np.asarray(r["n"])
            mts = _mts(mts_cls, k, n)
            t0 = time.perf_counter()
            sm = suremap.single_task(mts)[0]
            t_sm += time.perf_counter() - t0
            overall = k.sum() / max(n.sum(), 1)
            naive = np.where(n > 0, k / np.maximum(n, 1), overall)
            full = np.asarray(r["mean"])
            sq["suremap"].append(np.mean((sm - truth)[big] ** 2))
            sq["full"].append(np.mean((full - truth)[big] ** 2))
            sq["naive"].append(np.mean((naive - truth)[big] ** 2))
            if i < args.sr_trials:
                t0 = time.perf_counter()
                est = np.clip(their_sr(mts)[0], 0.0, 1.0)
                t_sr += time.perf_counter() - t0
                sq["sr"].append(np.mean((est - truth)[big] ** 2))
                sq["full_sr"].append(sq["full"][-1])
        row = {"trials": len(rs), "rmse_suremap": float(np.sqrt(np.mean(sq["suremap"]))),
               "rmse_full": float(np.sqrt(np.mean(sq["full"]))),
               "rmse_naive": float(np.sqrt(np.mean(sq["naive"])))}
        row["mse_suremap_minus_full_mean"], row["mse_suremap_minus_full_se"] = _paired(
            sq["suremap"], sq["full"])
        row["seconds_suremap"] = round(t_sm, 2)
        if sq["sr"]:
            row["sr_trials"] = len(sq["sr"])
            row["rmse_their_sr"] = float(np.sqrt(np.mean(sq["sr"])))
            row["rmse_full_on_sr_trials"] = float(np.sqrt(np.mean(sq["full_sr"])))
            row["mse_their_sr_minus_full_mean"], row["mse_their_sr_minus_full_se"] = _paired(
                sq["sr"], sq["full_sr"])
            row["seconds_their_sr"] = round(t_sr, 2)
        out[f"{rate:.4f}"] = row
        print(f"{rate:.4f}", json.dumps(row), flush=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()

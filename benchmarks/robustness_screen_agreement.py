r"""Issue 49 check (run by hand): the robustness line's screen against the exact refits.

The report's robustness line (:func:`bayesbias.studies.sensitivity.sensitivity` with
``estimator="mixture"``) refits every left-out word and 200 resampled word lists. With
``screen=True`` (the report's default since issue 49) a cheap screen (sigma fixed at its
estimate, a one-dimensional quadrature over tau, the Normal of the resulting mixture shifted
by the whole table's exact-minus-screen difference) gives every refit's interval, and only the
refits whose verdict-contrast upper end the screen puts within ``SCREEN_MARGIN`` posterior sds
of 0 (or whose tau grid holds mass on an end) are refitted exactly.

Per shipped word list on the embedded default and per seed, this script computes the screen
and the exact refit of *every* variant and reports

- the screen's largest error on the upper ends of the three verdict contrasts, in units of the
  whole table's posterior sd of the contrast (refits flagged by the grid-edge rule excluded:
  they are refitted exactly), against the margins;
- the variants refitted exactly under the margins (the saving);
- whether :func:`sensitivity` with and without the screen gives the same robustness line
  (baseline verdicts, shares of the resampled lists, flipping words) and the same ``flips``
  and ``holds`` for every left-out word.

    PYTHONPATH=$PWD python benchmarks/robustness_screen_agreement.py --seeds 1,2,3,4 \
        --out benchmarks/results/robustness_screen_agreement.json
"""

from __future__ import annotations

import argparse
import importlib
import json
import time
import warnings
from pathlib import Path

import numpy as np

LISTS = ("religion", "race", "gender", "weat1", "weat6", "weat7", "madlibs_identity")


def errors(table, seed: int) -> dict:
    """Return the screen's error on every variant of `table` (left-out words, resampled lists)."""
    from bayesbias.models import load_spec
    from bayesbias.parallel import chunks, task_rng
    from bayesbias.report.sections import ROBUSTNESS_DRAWS
    from bayesbias.studies.design import VERDICTS

    S = importlib.import_module("bayesbias.studies.sensitivity")
    spec = S.check_model(load_spec("crossed"))
    rows = S._attribute_adjusted(S._Rows.from_table(table),
                                 per_kind=spec.attribute_sd == "per_kind")
    spec = S._hierarchical_part(spec)
    n, mean, ss = S._variant_stats(rows, [("all", -1)])
    _, draws = S._analyse_baseline(spec, n[0], mean[0], ss[0], 0.89, ROBUSTNESS_DRAWS, seed,
                                   rows)
    loo = [("word", i) for i in range(rows.units.size)] + \
        [("attribute", j) for j in range(rows.attrs.size)]
    parts = {"leave_one_out": S._variant_stats(rows, loo)}
    res = [S._resampled_stats(rows, m, task_rng(seed, (2, k)))
           for k, (_, m) in enumerate(chunks(200, 25))]
    parts["resampled"] = tuple(np.concatenate([r[i] for r in res]) for i in range(3))
    verdict = [S._CONTRASTS.index(v) for v in VERDICTS]
    sd0 = draws["sd"][verdict]
    out = {}
    for part, (pn, pm, ps) in parts.items():
        scr = S._screen(spec, pn, pm, ps, rows, draws, 0.89)
        ex = S._analyse(spec, pn, pm, ps, 0.89, ROBUSTNESS_DRAWS, seed, rows, "mixture")
        ok = np.isfinite(ex["upper"]).all(1)
        edge = scr["edge"] > S.SCREEN_EDGE
        good = ok & ~edge
        rel = np.abs(scr["upper"][:, verdict] - ex["upper"][:, verdict])[good] / sd0
        near = (np.abs(scr["upper"][:, verdict]) < S.SCREEN_MARGIN[part] * sd0).any(1)
        wrong = ((scr["upper"][:, verdict] < 0) != (ex["upper"][:, verdict] < 0)).any(1)
        out[part] = {"refits": int(ok.sum()), "edge": int((edge & ok).sum()),
                     "max_error_sd": float(rel.max()) if rel.size else 0.0,
                     "p99_error_sd": float(np.quantile(rel, 0.99)) if rel.size else 0.0,
                     "margin_sd": S.SCREEN_MARGIN[part],
                     "exact": int(((near | edge) & ok).sum()),
                     "screen_verdict_differs": int((wrong & good).sum()),
                     "differs_outside_margin": int((wrong & good & ~near).sum())}
    return out


def lines(table, seed: int) -> dict:
    """Robustness line, flips and holds with and without the screen; their CPU seconds."""
    from bayesbias.report.sections import robustness, robustness_line

    got = {}
    for screen in (False, True):
        c = time.process_time()
        sens = robustness(table, "crossed", 0.89, seed, screen=screen)
        cpu = time.process_time() - c
        line = robustness_line(sens).replace(
            ", made exactly where a screen puts a contrast near 0", "")
        lo = sens.leave_one_out
        got[screen] = {"line": line, "cpu": cpu,
                       "flips": lo["flips"].tolist(), "holds": lo["holds"].tolist(),
                       "share": sens.resampled["share_holds"].round(12).tolist()}
    full, scr = got[False], got[True]
    return {"same_line": full["line"] == scr["line"],
            "same_flips_holds": full["flips"] == scr["flips"] and full["holds"] == scr["holds"],
            "same_shares": full["share"] == scr["share"],
            "cpu_full": round(full["cpu"], 3), "cpu_screen": round(scr["cpu"], 3)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1,2,3,4")
    ap.add_argument("--lists", default=",".join(LISTS))
    ap.add_argument("--out", default="benchmarks/results/robustness_screen_agreement.json")
    args = ap.parse_args(argv)
    from bayesbias.distances import distance_table
    from bayesbias.embeddings import load_embedding
    from bayesbias.wordlists import load_wordlist

    warnings.simplefilter("ignore")
    wls = [load_wordlist(n) for n in args.lists.split(",")]
    emb = load_embedding("default", list(dict.fromkeys(w for wl in wls for w in wl.all_words)))
    out_path = Path(args.out)
    done = json.loads(out_path.read_text()) if out_path.exists() else {}
    for wl in wls:
        table = distance_table(emb, wl, on_missing="drop")
        for seed in (int(s) for s in args.seeds.split(",")):
            key = f"{wl.name}|{seed}"
            if key not in done:
                done[key] = {"errors": errors(table, seed), "report": lines(table, seed)}
                out_path.write_text(json.dumps(done, indent=1))
            r = done[key]
            e = r["errors"]
            print(f"{key:24s} " + "; ".join(
                f"{p}: max err {v['max_error_sd']:.3f} sd (margin {v['margin_sd']}), exact "
                f"{v['exact']}/{v['refits']}, verdict differs {v['screen_verdict_differs']} "
                f"({v['differs_outside_margin']} outside the margin)" for p, v in e.items())
                + f"; same line {r['report']['same_line']}, flips/holds "
                f"{r['report']['same_flips_holds']}, CPU {r['report']['cpu_full']:.2f} -> "
                f"{r['report']['cpu_screen']:.2f} s", flush=True)
    worst = {p: max(v["errors"][p]["max_error_sd"] for v in done.values())
             for p in ("leave_one_out", "resampled")}
    bad = sum(v["errors"][p]["differs_outside_margin"] for v in done.values() for p in worst)
    same = all(v["report"]["same_line"] and v["report"]["same_flips_holds"]
               for v in done.values())
    print(f"largest screen error: {worst}; verdicts decided wrongly outside the margins: {bad}; "
          f"the same line and flips everywhere: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

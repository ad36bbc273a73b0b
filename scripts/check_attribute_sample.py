#!/usr/bin/env python
"""Issue 24's simulation checks: false alarms and coverage when attribute words are a sample.

Simulates distance tables in the shipped religion/Reddit design (15 protected words in 3
classes, 11 stereotypes 4/4/3, 85 human and 226 neutral attributes, every word x every
attribute: 4,830 rows) from the crossed model, ``distance = mu[w, c] + v[a] + e``, with
hierarchical cell means (realistic tau), attribute effects of sd omega and residual sd 0.11,
and fits each table with each model at the package defaults (4 chains x 1000 draws, 89% HDI).

Cells (null x omega):

* ``N1``: no stereotype-specific effect, all connection means equal;
* ``N2``: no stereotype-specific effect, stereotypes exactly as close as other human
  attributes, both closer than neutral words
  (``mu_bar[associated] = mu_bar[different] = mu_bar[human] = mu_bar[none] - 0.05``);
* ``P``: power, stereotypes 0.05 closer than human attributes (human 0.05 closer than none).

Recorded per (cell, table, model): the verdict code of
:func:`bayesbias.verdicts.verdict_from_fit` ("stereotype-specific" under a null is the false
positive), and whether the 89% HDI of each verdict contrast covers the true population
contrast (differences of mu_bar). Results go to ``OUT.jsonl`` one line per fit as they finish
(a rerun with the same OUT resumes), then the table is printed and written to
``OUT.summary.csv`` / ``OUT.summary.json``.

Tasks run round-robin over the cells (rep 0 of every cell, then rep 1, ...) so that a run
stopped early has about as many tables in every cell.

Examples::

    python scripts/check_attribute_sample.py --reps 200 --out /tmp/attr_check --workers 2
    python scripts/check_attribute_sample.py --summarize --out /tmp/attr_check
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

#: Verdict contrasts whose coverage is checked.
CONTRASTS = ("associated - none", "associated - human", "associated - different",
             "human - none")
#: Realistic protected-word sds (the published religion/Reddit fit) and residual sd.
TAU = (0.10, 0.07, 0.05, 0.04)
SIGMA = 0.11
#: Group-level means per setting (associated, different, human, none).
SETTINGS = {
    "N1": (0.93, 0.93, 0.93, 0.93),
    "N2": (0.90, 0.90, 0.90, 0.95),
    "P": (0.85, 0.90, 0.90, 0.95),
}
NULLS = ("N1", "N2")
FALSE_POSITIVE = "stereotype-specific"
NOMINAL_ONE_SIDED = (1 - 0.89) / 2


def cells(nulls, omegas, power_omegas):
    out = [(n, float(o)) for o in omegas for n in nulls]
    out += [("P", float(o)) for o in power_omegas]
    return out


def _cell_id(setting: str, omega: float) -> str:
    return f"{setting}:omega={omega:g}"


def _table_seed(seed: int, setting: str, omega: float, rep: int) -> int:
    key = [seed, list(SETTINGS).index(setting), int(round(omega * 1000)), rep]
    return int(np.random.SeedSequence(key).generate_state(1)[0])


def simulate(setting: str, omega: float, seed: int):
    from bayesbias.testing import RELIGION_DESIGN, simulate_table

    params = {"mu_bar": SETTINGS[setting], "tau": TAU, "sigma": SIGMA, "omega": omega}
    return simulate_table("crossed", params=params, seed=seed, **RELIGION_DESIGN)


@contextlib.contextmanager
def _without_model_checks():
    """Skip the fits' model checks (LOO coverage, attribute dependence) and warnings inside.

    The checks are warnings beside a verdict, never an input to it or to the intervals, and
    take about half of a fit's time on these tables; the draws are the same without them.
    Both are put back on leaving, so a caller in the same process (a test) is unaffected.
    """
    from bayesbias.models import result

    checks, level = result._model_checks, logging.root.manager.disable
    result._model_checks = lambda fit: []
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        result._model_checks = checks
        logging.disable(level)


def run_one(task):
    """Simulate one table and fit every model: a list of result dicts (one per model)."""
    with _without_model_checks():
        return _run_one(task)


def _run_one(task):
    setting, omega, rep, seed, models, cores = task
    from bayesbias.models import fit_model
    from bayesbias.verdicts import verdict_from_fit

    tseed = _table_seed(seed, setting, omega, rep)
    table, truth = simulate(setting, omega, tseed)
    gm = truth["group_mean"]
    true = {f"{a} - {b}": float(gm.sel(connection=a) - gm.sel(connection=b))
            for a, b in (c.split(" - ") for c in CONTRASTS)}
    out = []
    for model in models:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_model(table, model, seed=tseed % (2**31 - 1), cores=cores)
        elapsed = time.perf_counter() - t0
        v = verdict_from_fit(fit)
        diag = fit.diagnostics()
        row = {"cell": _cell_id(setting, omega), "setting": setting, "omega": omega,
               "rep": rep, "table_seed": tseed, "model": model, "code": v.code,
               "seconds": round(elapsed, 3), "divergences": int(diag.divergences),
               "diagnostics_ok": bool(diag.ok)}
        for c in CONTRASTS:
            e = v[c]
            row[f"{c}|true"] = true[c]
            row[f"{c}|mean"] = e.mean
            row[f"{c}|lower"] = e.lower
            row[f"{c}|upper"] = e.upper
            row[f"{c}|covered"] = bool(e.lower <= true[c] <= e.upper)
        out.append(row)
    return out


# -- seed stability on the shipped tables ---------------------------------------------------
def run_published(task):
    """Fit one shipped table with one sampler seed: a result dict."""
    with _without_model_checks():
        return _run_published(task)


def _run_published(task):
    topic, embedding, seed, model, cores = task
    from bayesbias.datasets import published_table
    from bayesbias.verdicts import fit_for_verdict, verdict_from_fit

    table = published_table(topic, embedding)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # what a user gets: one refit with 4x the draws when an end is within Monte Carlo
        # error of its threshold (fit, report, compare)
        fit = fit_for_verdict(table, model, seed=seed, cores=cores)
    v = verdict_from_fit(fit)
    diag = fit.diagnostics()
    row = {"topic": topic, "embedding": embedding, "seed": seed, "model": model,
           "code": v.code, "draws": int(fit.idata.attrs.get("draws", 0)),
           "seconds": round(time.perf_counter() - t0, 3),
           "divergences": int(diag.divergences), "diagnostics_ok": bool(diag.ok)}
    for c in CONTRASTS:
        row[f"{c}|lower"], row[f"{c}|upper"] = v[c].lower, v[c].upper
        row[f"{c}|status"] = v[c].status
    return row


def summarize_published(rows):
    import pandas as pd

    df = pd.DataFrame(rows)
    if df.empty:
        return df
    # two runs of the same (table, seed) give identical draws: keep one
    df = df.drop_duplicates(["topic", "embedding", "seed", "model"])
    out = []
    for (topic, emb, model), g in df.groupby(["topic", "embedding", "model"], sort=False):
        counts = g["code"].value_counts()
        ah = g["associated - human|upper"]
        an = g["associated - none|upper"]
        rec = {"topic": topic, "embedding": emb, "model": model, "seeds": len(g),
               "distinct_verdicts": int(counts.size),
               "verdicts": "; ".join(f"{k} x{v}" for k, v in counts.items()),
               "ah_upper_min": float(ah.min()), "ah_upper_max": float(ah.max()),
               "an_upper_min": float(an.min()), "an_upper_max": float(an.max()),
               "fits_with_divergences": int((g["divergences"] > 0).sum())}
        # distance of the decisive interval ends from 0 in seed-to-seed sds (Monte Carlo
        # error of the end): below ~3 a verdict can flip with another seed
        for key, col in (("z_an", an), ("z_ah", ah)):
            sd = col.std(ddof=1) if len(col) > 2 else float("nan")
            rec[key] = float(abs(col.mean()) / sd) if sd and sd > 0 else float("nan")
        out.append(rec)
    return pd.DataFrame(out)


def format_published(res) -> str:
    if res.empty:
        return "(no results yet)"
    lines = [f"{'topic':<9}{'embedding':<17}{'model':<13}{'seeds':>6}{'distinct':>9}  "
             f"{'upper end assoc-human':<23}{'z':>6}  {'upper end assoc-none':<23}{'z':>6}  "
             "verdicts (count)"]
    for _, r in res.iterrows():
        lines.append(f"{r['topic']:<9}{r['embedding']:<17}{r['model']:<13}{int(r['seeds']):>6}"
                     f"{int(r['distinct_verdicts']):>9}  "
                     f"{r['ah_upper_min']:+.4f} to {r['ah_upper_max']:+.4f}  {r['z_ah']:>6.1f}  "
                     f"{r['an_upper_min']:+.4f} to {r['an_upper_max']:+.4f}  {r['z_an']:>6.1f}  "
                     f"{r['verdicts']}")
    lines.append("upper end: range over seeds of the upper 89% HDI end; z: |mean of that end| / "
                 "its sd over seeds (below ~3 another seed can flip the verdict)")
    return "\n".join(lines)


def main_published(args, out: Path) -> int:
    from bayesbias.config import defaults
    from bayesbias.datasets import published_tables

    raw = out.with_suffix(".seeds.jsonl")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if not args.summarize:
        done = {(r["topic"], r["embedding"], r["seed"], r["model"]) for r in read_rows(raw)}
        pairs = published_tables()
        if args.tables:
            wanted = {tuple(t.split(":")) for t in args.tables.split(",")}
            pairs = [p for p in pairs if p in wanted]
        # the headline table whose verdict flipped first
        pairs.sort(key=lambda p: p != ("religion", "reddit"))
        seeds = [defaults.seed + k for k in range(args.published_seeds)]
        # seed-major: every table gets its first seeds before any gets its last, so that a
        # run stopped early has covered every table; religion/Reddit gets all its seeds first
        head = [(t, e, s, m, args.cores) for t, e in pairs[:1] for s in seeds for m in models]
        rest = [(t, e, s, m, args.cores) for s in seeds for t, e in pairs[1:] for m in models]
        tasks = [task for task in head + rest if task[:4] not in done]
        print(f"{len(tasks)} fits of shipped tables to run", flush=True)
        t0 = time.time()
        for i, task in enumerate(tasks):
            if args.deadline_ts is not None and time.time() > args.deadline_ts:
                print("deadline reached: stopping", flush=True)
                break
            row = run_published(task)
            with raw.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            if (i + 1) % 10 == 0:
                print(f"{i + 1}/{len(tasks)} fits, {time.time() - t0:.0f} s", flush=True)
    res = summarize_published(read_rows(raw))
    if not res.empty:
        res.to_csv(out.with_suffix(".seeds.csv"), index=False)
    print(format_published(res), flush=True)
    return 0


# -- one attribute sd or one per kind, on the shipped tables --------------------------------
def attribute_sd_row(topic: str, embedding: str, seed: int = 1, cores: int | None = 1) -> dict:
    """Fit `crossed` with one shared attribute sd and with one per kind; compare them.

    Returns the posterior 5.5/50/94.5% quantiles of each sd, both verdicts and the PSIS-LOO
    difference (elpd of shared minus per kind, with its se; ArviZ ``compare``).
    """
    import arviz as az

    from bayesbias.datasets import published_table
    from bayesbias.models import fit_model
    from bayesbias.verdicts import verdict_from_fit

    table = published_table(topic, embedding)
    row, loos = {"topic": topic, "embedding": embedding}, {}
    with _without_model_checks(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind in ("shared", "per_kind"):
            fit = fit_model(table, "crossed", attribute_sd=kind, seed=seed, cores=cores)
            om = fit.posterior["omega"]
            dims = [d for d in om.dims if d not in ("chain", "draw")]
            parts = ([(str(k), om.sel({dims[0]: k}).values) for k in om[dims[0]].values]
                     if dims else [("shared", om.values)])
            for label, x in parts:
                q = np.quantile(x, [0.055, 0.5, 0.945])
                row[f"{kind}|{label}"] = [round(float(v), 4) for v in q]
            row[f"{kind}|verdict"] = verdict_from_fit(fit).code
            loos[kind] = az.loo(fit.with_log_likelihood())
    # paired difference of the pointwise elpd (az.compare rounds it to its se's precision)
    diff = (np.asarray(loos["shared"].elpd_i, float).ravel()
            - np.asarray(loos["per_kind"].elpd_i, float).ravel())
    row["loo_shared_minus_per_kind"] = round(float(diff.sum()), 2)
    row["loo_se"] = round(float(np.sqrt(diff.size * diff.var())), 2)
    return row


def format_attribute_sd(rows: list[dict]) -> str:
    head = (f"{'table':<26}{'shared':>22}{'stereotype':>24}{'human':>24}{'none':>24}"
            f"{'LOO shared - per kind':>24}")
    lines = [head]
    for r in rows:
        def q(key, r=r):
            v = r.get(key)
            return f"{v[1]:.3f} [{v[0]:.3f}, {v[2]:.3f}]" if v else "-"
        lines.append(f"{r['topic'] + '/' + r['embedding']:<26}{q('shared|shared'):>22}"
                     f"{q('per_kind|stereotype'):>24}{q('per_kind|human'):>24}"
                     f"{q('per_kind|none'):>24}"
                     f"{r['loo_shared_minus_per_kind']:>+17.2f} ± {r['loo_se']:.2f}")
    lines.append("sd of the attribute-word effects: posterior median [89% ETI], crossed with one "
                 "shared sd and with one per kind (the default); LOO: elpd difference and its se "
                 "(positive favours the shared sd)")
    return "\n".join(lines)


def main_attribute_sd(args, out: Path) -> int:
    from bayesbias.datasets import published_tables

    raw = out.with_suffix(".attribute_sd.jsonl")
    pairs = published_tables()
    if args.tables:
        wanted = {tuple(t.split(":")) for t in args.tables.split(",")}
        pairs = [p for p in pairs if p in wanted]
    done = {(r["topic"], r["embedding"]) for r in read_rows(raw)}
    if not args.summarize:
        for topic, emb in pairs:
            if (topic, emb) in done:
                continue
            if args.deadline_ts is not None and time.time() > args.deadline_ts:
                print("deadline reached: stopping", flush=True)
                break
            row = attribute_sd_row(topic, emb, seed=args.seed, cores=args.cores)
            with raw.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
    print(format_attribute_sd(read_rows(raw)), flush=True)
    return 0


# -- summary ------------------------------------------------------------------------------
def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson 95% interval of a binomial proportion."""
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def summarize(rows: list[dict]):
    import pandas as pd

    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df = df.drop_duplicates(["cell", "rep", "model"])
    out = []
    for (cell, model), g in df.groupby(["cell", "model"], sort=False):
        n = len(g)
        k = int((g["code"] == FALSE_POSITIVE).sum())
        lo, hi = wilson(k, n)
        setting = g["setting"].iloc[0]
        rec = {"cell": cell, "setting": setting, "omega": g["omega"].iloc[0], "model": model,
               "reps": n,
               ("power" if setting == "P" else "fp_rate"): k / n,
               "ci_lo": lo, "ci_hi": hi,
               # issue 49: borderline codes (an end on its threshold) apart, never findings
               "borderline_rate": float(g["code"].astype(str).str.startswith(
                   "borderline").mean())}
        for c in CONTRASTS:
            cov = g[f"{c}|covered"].mean()
            rec[f"cov[{c}]"] = cov
            # posterior-interval width vs spread of the estimates: how over-confident
            width = (g[f"{c}|upper"] - g[f"{c}|lower"]).mean()
            rec[f"width[{c}]"] = width
            rec[f"sd_est[{c}]"] = g[f"{c}|mean"].std(ddof=1) if n > 1 else float("nan")
        rec["fits_with_divergences"] = int((g["divergences"] > 0).sum())
        rec["fits_failing_diagnostics"] = int((~g["diagnostics_ok"].astype(bool)).sum())
        rec["median_seconds"] = float(g["seconds"].median())
        out.append(rec)
    res = pd.DataFrame(out)
    order = {s: i for i, s in enumerate(SETTINGS)}
    res = res.sort_values(["model", "setting", "omega"],
                          key=lambda s: s.map(order) if s.name == "setting" else s,
                          kind="stable").reset_index(drop=True)
    return res


def format_table(res) -> str:
    if res.empty:
        return "(no results yet)"
    lines = [f"{'model':<13}{'cell':<16}{'reps':>5}  {'FP rate / power [95% Wilson]':<30}"
             + "".join(f"{'cov ' + c.replace('associated', 'assoc'):>22}" for c in CONTRASTS)
             + f"{'bord':>6}{'div':>5}{'s/fit':>7}"]
    for _, r in res.iterrows():
        what = "power" if r["setting"] == "P" else "FP"
        val = r.get("power") if r["setting"] == "P" else r.get("fp_rate")
        flag = ""
        if r["setting"] != "P":
            flag = " ok" if r["ci_lo"] <= NOMINAL_ONE_SIDED else " HIGH"
        lines.append(
            f"{r['model']:<13}{r['cell']:<16}{int(r['reps']):>5}  "
            f"{what} {100 * val:5.1f}% [{100 * r['ci_lo']:4.1f}, {100 * r['ci_hi']:4.1f}]{flag:<5}"
            + "".join(f"{r[f'cov[{c}]']:>22.3f}" for c in CONTRASTS)
            + f"{100 * r.get('borderline_rate', 0.0):>5.1f}%"
            + f"{int(r['fits_with_divergences']):>5}{r['median_seconds']:>7.1f}")
    lines.append(f"FP: share of null tables whose verdict is {FALSE_POSITIVE!r} (target: the "
                 f"95% interval contains or lies below {100 * NOMINAL_ONE_SIDED:.1f}%, the "
                 "one-sided rate of an 89% interval; 'ok' = lower bound <= that). cov: share "
                 "of 89% HDIs containing the population contrast (target 0.85-0.93). bord: share of "
                 "verdicts with a borderline code (counted apart, never as findings). div: "
                 "fits with divergences.")
    return "\n".join(lines)


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut by a kill
                continue
    return rows


def write_summary(rows, out: Path):
    res = summarize(rows)
    if not res.empty:
        res.to_csv(out.with_suffix(".summary.csv"), index=False)
        out.with_suffix(".summary.json").write_text(
            json.dumps(res.to_dict(orient="records"), indent=1))
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200, help="tables per cell")
    ap.add_argument("--models", default="crossed,hierarchical",
                    help="comma-separated model specs fitted to every table")
    ap.add_argument("--omega", default="0,0.06,0.13",
                    help="comma-separated sds of the attribute effects (null cells)")
    ap.add_argument("--nulls", default="N1,N2", help="comma-separated nulls (N1, N2)")
    ap.add_argument("--power-omega", default="0.13",
                    help="comma-separated omegas of the power cell (empty: none)")
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--first-rep", type=int, default=0,
                    help="number of the first table of each cell (a second process on other "
                         "tables of the same cells: --first-rep 1000 --out OTHER)")
    ap.add_argument("--workers", type=int, default=1,
                    help="processes (each fits with cores=1 when > 1)")
    ap.add_argument("--cores", type=int, default=None,
                    help="cores per fit (default: 1 with several workers, else the package's)")
    ap.add_argument("--out", default="attribute_sample_check",
                    help="prefix: OUT.jsonl (raw, appended as fits finish; resumed), "
                         "OUT.summary.csv and OUT.summary.json")
    ap.add_argument("--summarize", action="store_true",
                    help="only print the table of the results already in OUT.jsonl")
    ap.add_argument("--merge", nargs="*", default=[],
                    help="with --summarize: other OUT prefixes whose results are added")
    ap.add_argument("--deadline", default=None,
                    help="stop submitting new tables after this UTC time (HH:MM)")
    ap.add_argument("--published-seeds", type=int, default=0,
                    help="instead of simulating: fit every shipped published table with this "
                         "many sampler seeds (defaults.seed + 0, 1, ...) and count the distinct "
                         "verdicts (OUT.seeds.jsonl, OUT.seeds.csv)")
    ap.add_argument("--tables", default="",
                    help="with --published-seeds or --attribute-sd: only these tables "
                         "(topic:embedding,...)")
    ap.add_argument("--attribute-sd", action="store_true",
                    help="instead of simulating: fit every shipped published table with one "
                         "shared attribute sd and with one per kind (--seed), and print the "
                         "sds, verdicts and PSIS-LOO difference (OUT.attribute_sd.jsonl)")
    args = ap.parse_args(argv)

    out = Path(args.out)
    args.deadline_ts = None
    if args.deadline:
        import datetime as dt

        hh, mm = (int(x) for x in args.deadline.split(":"))
        now = dt.datetime.now(dt.timezone.utc)
        args.deadline_ts = now.replace(hour=hh, minute=mm, second=0, microsecond=0).timestamp()
    if args.published_seeds:
        return main_published(args, out)
    if args.attribute_sd:
        return main_attribute_sd(args, out)
    raw = out.with_suffix(".jsonl")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if args.summarize:
        rows = read_rows(raw)
        for extra in args.merge:
            rows += read_rows(Path(extra).with_suffix(".jsonl"))
        res = write_summary(rows, out)
        print(format_table(res))
        return 0
    omegas = [float(x) for x in args.omega.split(",") if x.strip()]
    pomegas = [float(x) for x in args.power_omega.split(",") if x.strip()]
    nulls = [x.strip() for x in args.nulls.split(",") if x.strip()]
    todo_cells = cells(nulls, omegas, pomegas)
    done = {(r["cell"], r["rep"], r["model"]) for r in read_rows(raw)}
    tasks = []
    for rep in range(args.first_rep, args.first_rep + args.reps):
        for setting, omega in todo_cells:
            need = [m for m in models if (_cell_id(setting, omega), rep, m) not in done]
            if need:
                cores = args.cores if args.cores else (1 if args.workers > 1 else None)
                tasks.append((setting, omega, rep, args.seed, tuple(need), cores))
    deadline = args.deadline_ts
    print(f"{len(tasks)} tables to fit ({len(done)} fits already in {raw}); "
          f"models {models}; cells {[_cell_id(*c) for c in todo_cells]}", flush=True)
    t0 = time.time()
    n_done = 0

    def record(rows):
        nonlocal n_done
        with raw.open("a") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        n_done += 1
        if n_done % 10 == 0 or n_done == len(tasks):
            print(f"{n_done}/{len(tasks)} tables, {time.time() - t0:.0f} s", flush=True)

    def past_deadline():
        return deadline is not None and time.time() > deadline

    if args.workers <= 1:
        for task in tasks:
            if past_deadline():
                print("deadline reached: stopping", flush=True)
                break
            record(run_one(task))
    else:
        import multiprocessing as mp
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        ctx = mp.get_context("spawn")
        with ProcessPoolExecutor(args.workers, mp_context=ctx) as ex:
            it = iter(tasks)
            running = set()
            for task in it:
                running.add(ex.submit(run_one, task))
                if len(running) >= args.workers:
                    break
            while running:
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                for f in finished:
                    record(f.result())
                    if not past_deadline():
                        nxt = next(it, None)
                        if nxt is not None:
                            running.add(ex.submit(run_one, nxt))
    res = write_summary(read_rows(raw), out)
    print(format_table(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

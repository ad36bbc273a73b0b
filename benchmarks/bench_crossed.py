"""Benchmark (run by hand): the cost of the crossed default, against the paper's model.

Measured in the same run, in fresh processes with warm kernel caches:

- ``bayesbias report`` (default: crossed, plus the paper's model beside it) against
  ``bayesbias report --model hierarchical`` (the model of every verdict before issue 24);
- ``fit_model`` of both models on each shipped Reddit table: wall time and the smallest bulk
  ESS per second of sampling over the group means and contrasts.

and, in the same run (``--part kernel``, a few seconds), the crossed C kernel ``cx_logp`` against
its row-order predecessor (``cx_logp_rows`` below: three passes over the rows in table order,
indices stored as doubles, scratch from malloc; the kernel before issue 24's performance work):
CPU microseconds per call (a loop in C, best of 7), their ratio, and whether log-density and
gradient are bitwise equal on each shipped Reddit table; beside it the hierarchical kernel
``cm_logp`` on the same table; then one chain (1000 + 1000) of the religion fit with each
kernel (wrapped to count its calls): sampling CPU seconds, their ratio, CPU per gradient
evaluation minus the kernel's (nutpie's share at dim 338), and whether the draws are the same.
Each is sampled twice, alternating; the second round is reported (the first pays nutpie's
start-up, about 1.5 s once per process).

Run ``nice python benchmarks/bench_crossed.py [--part all|kernel|report] [--repeats 3]
[--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

_FIT_CODE = """
import json, time, warnings
warnings.simplefilter("ignore")
import arviz as az
from bayesbias.datasets import published_table
from bayesbias.models import fit_model
out = []
for topic in ("religion", "race", "gender"):
    table = published_table(topic, "reddit")
    for model in ("hierarchical", "crossed"):
        t0 = time.perf_counter()
        fit = fit_model(table, model, seed=1)
        wall = time.perf_counter() - t0
        ds = fit.group_mean_draws().to_dataset(name="g")
        ds["c"] = fit.contrast_draws()
        ess = min(float(az.ess(ds, method="bulk")[v].min()) for v in ("g", "c"))
        out.append({"table": topic, "model": model, "wall_s": wall,
                    "sampling_s": float(fit.idata.attrs["sampling_time_s"]),
                    "min_ess_bulk": ess,
                    "ess_per_s": ess / float(fit.idata.attrs["sampling_time_s"])})
print("RESULT" + json.dumps(out))
"""


#: The crossed kernel before this work: rows in table order (layout of _pack_rows), with
#: today's parameterisation of the attribute effects (2026-12-02).
_ROW_ORDER_KERNEL = r"""
int64_t cx_logp_rows(uint64_t dim, const double *x, double *out, double *logp_,
                     const double *data) {
    int64_t ns = (int64_t)data[0], no = (int64_t)data[1], na = (int64_t)data[2];
    int64_t ncell = (int64_t)data[3], nrow = (int64_t)data[4], nonc = (int64_t)data[5];
    int64_t kh = 8 + ns + no, j, c, q, i, a, g;
    const double *priors = data + 6, *smap = priors + 5 * kh, *cconn = smap + 4;
    const double *cn = cconn + ncell, *akind = cn + ncell, *agrp = akind + na;
    const double *gkind = agrp + na, *anch = gkind + 3, *rcell = anch + 3;
    const double *rattr = rcell + nrow, *ry = rattr + nrow;
    double h[16], gh[16], m[4], t[4], s[4], gm[4] = {0, 0, 0, 0}, gt[4] = {0, 0, 0, 0};
    double gs[4] = {0, 0, 0, 0}, o[4], lp = 0.0, cnt[3] = {0, 0, 0}, abar[3] = {0, 0, 0};
    double b[3], ob[3], gb[3] = {0, 0, 0}, gsum[3] = {0, 0, 0}, gmean[3] = {0, 0, 0};
    double *v, *gv, *sum, *ss, *dr, *dq;
    int64_t rc = 0;
    if ((int64_t)dim != kh + 3 + na || ns > 4 || no > 4) return -1;
    v = (double *)malloc(sizeof(double) * (size_t)(2 * na + 4 * ncell));
    if (v == NULL) return -2;
    gv = v + na;
    sum = gv + na;
    ss = sum + ncell;
    dr = ss + ncell;
    dq = dr + ncell;
    for (j = 0; j < kh; j++) {
        h[j] = priors[5 * j + 1] > 0.5 ? exp(x[j]) : x[j];
        gh[j] = 0.0;
    }
    for (j = 0; j < no; j++) o[j] = h[8 + ns + j];
    for (a = 0; a < na; a++) {
        g = (int64_t)agrp[a];
        cnt[g] += 1.0;
    }
    for (g = 0; g < 3; g++) {
        double og = gkind[g] >= 0 ? o[(int64_t)gkind[g]] : 1.0;
        ob[g] = cnt[g] > 0 ? og / sqrt(cnt[g]) : 1.0;  /* prior sd of b[g] */
        b[g] = ob[g] * x[kh + g];
    }
    for (a = 0; a < na; a++) {
        double ok = o[(int64_t)akind[a]], z = x[kh + 3 + a];
        g = (int64_t)agrp[a];
        v[a] = (nonc >> g) & 1 ? ok * z : z;  /* a[a] for now */
        abar[g] += v[a];
    }
    for (g = 0; g < 3; g++) abar[g] = cnt[g] > 0 ? abar[g] / cnt[g] : 0.0;
    for (a = 0; a < na; a++) {
        g = (int64_t)agrp[a];
        v[a] = b[g] + v[a] - abar[g];
        gv[a] = 0.0;
    }
    for (c = 0; c < 4; c++) {
        g = c < 2 ? 0 : c - 1;
        m[c] = h[c] - (cnt[g] > 0 ? b[g] : 0.0);
        t[c] = h[4 + c];
        s[c] = h[8 + (int64_t)smap[c]];
    }
    for (q = 0; q < ncell; q++) { sum[q] = 0.0; ss[q] = 0.0; }
    for (i = 0; i < nrow; i++) sum[(int64_t)rcell[i]] += ry[i] - v[(int64_t)rattr[i]];
    for (q = 0; q < ncell; q++) sum[q] /= cn[q];  /* now the mean rbar */
    for (i = 0; i < nrow; i++) {
        double d;
        q = (int64_t)rcell[i];
        d = ry[i] - v[(int64_t)rattr[i]] - sum[q];
        ss[q] += d * d;
    }
    for (q = 0; q < ncell; q++) {
        int64_t cc = (int64_t)cconn[q];
        double n = cn[q], sc = s[cc], tc = t[cc];
        double var = tc * tc + sc * sc / n;
        double r = sum[q] - m[cc];
        double dv;
        lp += (-0.5 * n * LOG_2PI - (n - 1.0) * log(sc) - ss[q] / (2.0 * sc * sc)
               - 0.5 * log(n) - 0.5 * log(var) - r * r / (2.0 * var));
        dv = -0.5 / var + 0.5 * r * r / (var * var);
        gm[cc] += r / var;
        gt[cc] += dv * 2.0 * tc;
        gs[cc] += -(n - 1.0) / sc + ss[q] / (sc * sc * sc) + dv * 2.0 * sc / n;
        dr[q] = 1.0 / (sc * sc);       /* d/dr_i = -(r_i - rbar) dr - dq */
        dq[q] = r / (var * n);
    }
    for (i = 0; i < nrow; i++) {
        q = (int64_t)rcell[i];
        a = (int64_t)rattr[i];
        gv[a] += (ry[i] - v[a] - sum[q]) * dr[q] + dq[q];  /* dL/dv_a = -sum_i dL/dr_i */
    }
    for (c = 0; c < 4; c++) {
        double pg;
        lp += prior((int)priors[5 * c], priors[5 * c + 2], priors[5 * c + 3],
                    priors[5 * c + 4], m[c], &pg);  /* the prior of M[c] */
        gm[c] += pg;
        gh[c] += gm[c];
        gh[4 + c] += gt[c];
        gh[8 + (int64_t)smap[c]] += gs[c];
    }
    /* chain rule to b and a: v = b[g] + a - abar[g], M[c] = A[c] - b[g(c)] */
    for (a = 0; a < na; a++) gsum[(int64_t)agrp[a]] += gv[a];
    for (g = 0; g < 3; g++) {
        gb[g] = gsum[g];
        gmean[g] = cnt[g] > 0 ? gsum[g] / cnt[g] : 0.0;
        gsum[g] = 0.0;
    }
    if (cnt[0] > 0) gb[0] -= gm[0] + gm[1];
    if (cnt[1] > 0) gb[1] -= gm[2];
    if (cnt[2] > 0) gb[2] -= gm[3];
    for (g = 0; g < 3; g++) {
        int64_t k = gkind[g] >= 0 ? (int64_t)gkind[g] : -1;
        double z = x[kh + g];
        lp += -0.5 * LOG_2PI - 0.5 * z * z;
        if (cnt[g] == 0) {  /* no attributes: zb[g] is unused, a standard Normal */
            out[kh + g] = -z;
        } else {
            gh[8 + ns + k] += gb[g] * z / sqrt(cnt[g]);
            out[kh + g] = gb[g] * ob[g] - z;
            if (!((nonc >> g) & 1)) {  /* abar[g] ~ Normal(0, h[g]); one log O less for d */
                double r = abar[g] / anch[g];
                lp += -0.5 * LOG_2PI - log(anch[g]) - 0.5 * r * r + log(o[k]);
                gh[8 + ns + k] += 1.0 / o[k];
                gsum[g] = abar[g] / (cnt[g] * anch[g] * anch[g]);
            }
        }
        if (!isfinite(out[kh + g])) { rc = 3; goto done; }
    }
    for (a = 0; a < na; a++) {
        int64_t k = (int64_t)akind[a];
        double z = x[kh + 3 + a], ok = o[k], ga;
        g = (int64_t)agrp[a];
        ga = gv[a] - gmean[g];
        if ((nonc >> g) & 1) {
            lp += -0.5 * LOG_2PI - 0.5 * z * z;
            gh[8 + ns + k] += ga * z;
            out[kh + 3 + a] = ga * ok - z;
        } else {
            double d = z - abar[g];
            lp += -0.5 * LOG_2PI - log(ok) - 0.5 * d * d / (ok * ok);
            gh[8 + ns + k] += -1.0 / ok + d * d / (ok * ok * ok);
            out[kh + 3 + a] = ga - d / (ok * ok) - gsum[g];
        }
        if (!isfinite(out[kh + 3 + a])) { rc = 3; goto done; }
    }
    for (j = 0; j < kh; j++) {
        double pg = 0.0, pl = 0.0, gg;
        if (j >= 4)  /* the M priors were added above */
            pl = prior((int)priors[5 * j], priors[5 * j + 2], priors[5 * j + 3],
                       priors[5 * j + 4], h[j], &pg);
        gg = gh[j] + pg;
        lp += pl;
        if (priors[5 * j + 1] > 0.5) {
            lp += x[j];
            out[j] = gg * h[j] + 1.0;
        } else {
            out[j] = gg;
        }
        if (!isfinite(out[j])) { rc = 3; goto done; }
    }
    logp_[0] = lp;
    if (!isfinite(lp)) rc = 4;
done:
    free(v);
    return rc;
}
"""

_BENCH_C = r"""
#include <time.h>
typedef int64_t (*lpfn)(uint64_t, const double *, double *, double *, const double *);
double bench_calls(void *fn, int64_t reps, uint64_t dim, const double *xs, int64_t nx,
                   double *out, double *lp, const double *data) {
    struct timespec t0, t1;
    int64_t r;
    lpfn f = (lpfn)fn;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    for (r = 0; r < reps; r++) f(dim, xs + (r % nx) * dim, out, lp, data);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    return ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)) / reps;
}
/* the kernels with a count of their calls (nutpie runs one chain here: no race) */
int64_t n_calls = 0;
int64_t counted_new(uint64_t dim, const double *x, double *out, double *lp, const double *d) {
    n_calls++;
    return cx_logp(dim, x, out, lp, d);
}
int64_t counted_old(uint64_t dim, const double *x, double *out, double *lp, const double *d) {
    n_calls++;
    return cx_logp_rows(dim, x, out, lp, d);
}
"""


def _pack_rows(new: np.ndarray, cells) -> np.ndarray:
    """Return the predecessor's layout: the same head, then each row's cell, attribute, y."""
    from bayesbias.models.crossed import _cell_layout

    ns, no, na, ncell = (int(v) for v in new[:4])
    head = 6 + 5 * (8 + ns + no) + 4 + 2 * ncell + 2 * na + 6  # ... sd index, anchors
    _, _, row_cell, _ = _cell_layout(cells)
    return np.ascontiguousarray(np.concatenate([
        new[:head], row_cell.astype(float), cells.attr_idx.astype(float), cells.y]))


def _kernel_part(out: dict) -> None:
    import ctypes
    import warnings

    from bayesbias.datasets import published_table
    from bayesbias.models import _native, cells_from_table, crossed, load_spec
    from bayesbias.models.marginal import _blocks_kernel

    lib_dir = tempfile.mkdtemp()
    src, so = Path(lib_dir) / "k.c", Path(lib_dir) / "k.so"
    src.write_text(_native.source() + _ROW_ORDER_KERNEL + _BENCH_C)
    cc = _native._compiler()
    subprocess.run([cc, *_native.FLAGS, "-o", str(so), str(src), "-lm"], check=True)
    lib = ctypes.CDLL(str(so))
    p = ctypes.POINTER(ctypes.c_double)
    lib.bench_calls.restype = ctypes.c_double
    lib.bench_calls.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint64, p,
                                ctypes.c_int64, p, p, p]
    fns = {}
    for name in ("cx_logp", "cx_logp_rows", "cm_logp"):
        f = getattr(lib, name)
        f.restype = ctypes.c_int64
        f.argtypes = [ctypes.c_uint64, p, p, p, p]
        fns[name] = f

    def call(name, x, data):
        g, lp = np.zeros(x.size), np.zeros(1)
        rc = fns[name](x.size, x.ctypes.data_as(p), g.ctypes.data_as(p), lp.ctypes.data_as(p),
                       data.ctypes.data_as(p))
        return rc, lp[0], g

    def per_call(name, xs, data, reps=2000):
        g, lp = np.zeros(xs.shape[1]), np.zeros(1)
        addr = ctypes.cast(fns[name], ctypes.c_void_p)
        return min(lib.bench_calls(addr, reps, xs.shape[1], xs.ctypes.data_as(p), len(xs),
                                   g.ctypes.data_as(p), lp.ctypes.data_as(p),
                                   data.ctypes.data_as(p)) for _ in range(7))

    spec, hspec = load_spec("crossed"), load_spec("hierarchical")
    out["kernel"] = []
    for topic in ("religion", "race", "gender"):
        table = published_table(topic, "reddit")
        cells = cells_from_table(table, spec.level)
        nonc = crossed.noncentred_groups(spec, cells)
        new = crossed.pack(spec, cells, nonc)
        old = _pack_rows(new, cells)
        rng = np.random.default_rng(7)
        xs = np.stack([crossed._initial(spec, cells, nonc, rng) for _ in range(16)])
        k = 3 + cells.attributes.size
        xs[8:, -k:] += rng.normal(0, 0.2, (8, k))
        xs = np.ascontiguousarray(xs)
        same = all(a[0] == b[0] == 0 and a[1] == b[1] and np.array_equal(a[2], b[2])
                   for a, b in ((call("cx_logp", x, new), call("cx_logp_rows", x, old))
                                for x in xs))
        t_old, t_new = per_call("cx_logp_rows", xs, old), per_call("cx_logp", xs, new)
        hk = _blocks_kernel(hspec, cells_from_table(table, hspec.level))
        hx = np.ascontiguousarray(np.stack([hk.init(np.random.default_rng(s))
                                            for s in range(16)]))
        t_h = per_call("cm_logp", hx, hk.data)
        row = {"table": topic, "rows": cells.n_rows, "dim": xs.shape[1], "old_us": 1e6 * t_old,
               "new_us": 1e6 * t_new, "ratio": t_old / t_new, "bitwise_equal": bool(same),
               "hierarchical_us": 1e6 * t_h}
        out["kernel"].append(row)
        print(f"kernel {topic:8s} {row['rows']} rows, dim {row['dim']}: row-order "
              f"{row['old_us']:.1f} us, cell-sorted {row['new_us']:.1f} us per call (ratio "
              f"{row['ratio']:.2f}; bitwise equal: {same}); hierarchical "
              f"{row['hierarchical_us']:.1f} us",
              flush=True)
    # nutpie's cost per leapfrog step: one chain of the religion fit with each kernel
    import dataclasses

    from bayesbias.models import _nutpie

    cells = cells_from_table(published_table("religion", "reddit"), spec.level)
    kernel = crossed.marginal_kernel(spec, cells)
    kernels = {"cell-sorted": (kernel, "counted_new", out["kernel"][0]["new_us"]),
               "row-order": (dataclasses.replace(kernel, data=_pack_rows(kernel.data, cells)),
                             "counted_old", out["kernel"][0]["old_us"])}
    out["sampling"] = {}
    draws = {}
    for label, (k, name, us) in [*kernels.items(), *kernels.items()]:  # 2nd round kept
        k = dataclasses.replace(k, logp=_native.CFunc(lib, name, 1))
        counter = ctypes.c_int64.in_dll(lib, "n_calls")
        counter.value = 0
        t0, w0 = time.process_time(), time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post, _ = _nutpie.run(k, lambda s, k=k: k.init(np.random.default_rng([1, s])),
                                  "bench", 1000, 1000, 1, 1, 1, 0.8)
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
        draws[label] = post["attribute_effect"].values
        n = counter.value
        row = {"calls": n, "cpu_s": cpu, "wall_s": wall, "per_step_us": 1e6 * cpu / n,
               "kernel_us": us, "rest_us": 1e6 * cpu / n - us}
        out["sampling"][label] = row
        print(f"religion crossed, 1 chain x (1000 + 1000), {label} kernel: {n} gradient "
              f"evaluations, sampling CPU {cpu:.2f} s (wall {wall:.2f} s) = "
              f"{row['per_step_us']:.1f} us per evaluation; the kernel alone {us:.1f} us, so "
              f"nutpie and the rest {row['rest_us']:+.1f} us (two separate measurements: "
              f"on a loaded machine the difference can come out negative)", flush=True)
    a, b = out["sampling"]["row-order"], out["sampling"]["cell-sorted"]
    same = np.array_equal(draws["row-order"], draws["cell-sorted"])
    print(f"sampling CPU ratio row-order / cell-sorted: {a['cpu_s'] / b['cpu_s']:.2f}; "
          f"same draws: {same}")
    out["sampling"]["same_draws"] = bool(same)


def _run(args, cwd) -> tuple[float, str]:
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True)
    if res.returncode not in (0, 3):
        raise RuntimeError(f"{' '.join(args)} failed:\n{res.stderr[-2000:]}")
    return time.perf_counter() - t0, res.stdout


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None)
    p.add_argument("--part", choices=("all", "kernel", "report"), default="all")
    args = p.parse_args()
    out = {"report": {}, "fits": None}
    if args.part in ("all", "kernel"):
        _kernel_part(out)
    if args.part == "kernel":
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=2))
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        _run(["-m", "bayesbias", "--quiet", "report", "-o", str(work / "warmup")], work)
        for label, extra in (("default (crossed)", []),
                             ("--model hierarchical", ["--model", "hierarchical"])):
            times = []
            for r in range(args.repeats):
                wall, _ = _run(["-m", "bayesbias", "--quiet", "report", *extra, "-o",
                                str(work / f"r{r}")], work)
                times.append(wall)
            out["report"][label] = times
            print(f"report {label}: median {statistics.median(times):.1f} s "
                  f"({', '.join(f'{t:.1f}' for t in times)})", flush=True)
        _, stdout = _run(["-c", _FIT_CODE], work)
        out["fits"] = json.loads(stdout.split("RESULT", 1)[1])
    a = statistics.median(out["report"]["default (crossed)"])
    b = statistics.median(out["report"]["--model hierarchical"])
    print(f"report ratio default / --model hierarchical: {a / b:.2f}")
    for f in out["fits"]:
        print(f"fit {f['table']:8s} {f['model']:12s} wall {f['wall_s']:5.1f} s, sampling "
              f"{f['sampling_s']:5.1f} s, min bulk ESS {f['min_ess_bulk']:6.0f}, "
              f"{f['ess_per_s']:7.0f} ESS/s")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

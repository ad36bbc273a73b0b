"""Profile (run by hand): wall and CPU seconds of the report's phases, in this process.

Wraps the report's costly calls (fits, sampling, diagnostics, model checks, jobs waited for,
section builders, writing) and runs :func:`bayesbias.report.run_report` on the default data;
prints per phase the calls, wall seconds and CPU seconds of this process (its threads
included: nutpie's chains, the threaded diagnostics), then the CPU of the worker processes.
A worker's job that this process ran itself while waiting shows under ``Job.result``.

    python benchmarks/profile_report_phases.py OUT_DIR [JOBS [MODEL [ROBUSTNESS 0/1]]]

e.g. ``... /tmp/r 2`` (the default report) and ``... /tmp/h 2 hierarchical 0`` (the
baseline of ``bench_report_default.py``).
"""

import resource
import sys
import time
from collections import defaultdict

T0 = time.perf_counter()
stats = defaultdict(lambda: [0, 0.0, 0.0])


def wrap(target, name, label):
    fn = getattr(target, name)

    def inner(*a, **k):
        t, c = time.perf_counter(), time.process_time()
        try:
            return fn(*a, **k)
        finally:
            s = stats[label]
            s[0] += 1
            s[1] += time.perf_counter() - t
            s[2] += time.process_time() - c

    setattr(target, name, inner)


import bayesbias.models.marginal as mg  # noqa: E402
import bayesbias.models.result as rs  # noqa: E402
import bayesbias.models.sampling as sm  # noqa: E402
import bayesbias.parallel as par  # noqa: E402
import bayesbias.report.document as doc  # noqa: E402
import bayesbias.report.pipeline as pl  # noqa: E402
import bayesbias.report.sections as sec  # noqa: E402

IMPORTS = time.perf_counter() - T0
wrap(sm, "fit_model", "fit_model (all)")
wrap(mg, "sample_marginal", "  sampling (sample_marginal)")
wrap(sm, "warn_checks", "  warn_checks (diagnostics + model checks)")
wrap(rs, "diagnose", "    diagnose")
wrap(rs, "_model_checks", "    model checks")
wrap(rs.Fit, "save", "Fit.save (netCDF)")
wrap(rs.Fit, "ppc", "Fit.ppc")
wrap(par.Job, "result", "Job.result (waits, or runs the job here)")
wrap(doc.Report, "write", "Report.write")
for i, build in enumerate(list(sec.SECTIONS)):
    holder = type("H", (), {"f": staticmethod(build)})
    wrap(holder, "f", f"section {build.__name__}")
    sec.SECTIONS[i] = holder.f


def main() -> int:
    out = sys.argv[1]
    jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    model = sys.argv[3] if len(sys.argv) > 3 else "crossed"
    robust = (sys.argv[4] == "1") if len(sys.argv) > 4 else True
    t, c = time.perf_counter(), time.process_time()
    pl.run_report(pl.ReportSettings(output=out, model=model, robustness=robust), jobs)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"imports {IMPORTS:.1f} s; run_report wall {time.perf_counter() - t:.1f} s, CPU "
          f"(this process) {time.process_time() - c:.1f} s; workers' CPU "
          f"{ru.ru_utime + ru.ru_stime:.1f} s")
    for k, (n, w, cp) in stats.items():
        print(f"{k:45s} n={n:3d} wall {w:7.2f} cpu {cp:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

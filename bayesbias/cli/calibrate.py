"""``bayesbias calibrate``: simulation-based calibration (SBC) of a model spec."""

from __future__ import annotations

from .._atomic import check_output
from ..config import defaults
from ._common import (
    add_json,
    add_output,
    add_parallel_options,
    add_parser,
    add_plot,
    add_sampling_options,
    add_seed,
    emit,
    positive_int,
    write_study_outputs,
)

DESCRIPTION = """\
Simulation-based calibration (Talts et al. 2018): draw every parameter from the spec's
priors, simulate a distance table shaped like a shipped one, fit the same spec, and rank
the true group means, contrasts and sds among the posterior draws; repeated --reps times.
Correct fitting gives uniform ranks: the command prints a chi-square uniformity test per
quantity and draws rank histograms (--plot). Each replication is a full NUTS fit (seconds);
--method exact calibrates the exact marginal posterior of the hierarchical model used by
'design' and 'fit --sensitivity' (milliseconds). Runs on Dask with --workers N or
--scheduler ADDRESS; the numbers depend on --seed only."""


def register(sub) -> None:
    """Add the ``calibrate`` sub-command to `sub`."""
    p = add_parser(
        sub, "calibrate", "simulation-based calibration of a model (rank histograms)",
        "  bayesbias calibrate --model hierarchical --method exact --reps 1000 --plot sbc.png\n"
        "  bayesbias calibrate --model additive --reps 500 --workers 2 -o sbc_additive.json\n"
        "  bayesbias calibrate --model separate --reps 50 --shape small --json",
        description=DESCRIPTION,
    )
    p.add_argument("--model", default="hierarchical",
                   help="spec name or .toml file (default hierarchical)")
    p.add_argument("--reps", type=positive_int, default=500,
                   help="replications (default 500)")
    p.add_argument("--method", choices=["nuts", "exact"], default="nuts",
                   help="nuts: NUTS fits (default), or exact: the exact marginal posterior "
                        "(hierarchical)")
    p.add_argument("--shape", choices=["religion", "small"], default="religion",
                   help="table shape: like the shipped religion list (default) or small")
    p.add_argument("--keep", type=positive_int, default=99,
                   help="thinned posterior draws each rank is taken among (default 99)")
    add_sampling_options(p, draws=500, tune=500, chains=2)
    add_seed(p, default=defaults.seed)
    add_parallel_options(p)
    add_plot(p, "save the rank histograms (PNG)")
    add_output(p, "write the ranks and tests as JSON")
    add_json(p)
    p.set_defaults(run=run)


def run(args) -> int:
    """Run ``bayesbias calibrate``; return the exit code."""
    from ..studies.calibration import sbc

    for path, what in ((args.plot, "--plot"), (args.output, "-o")):
        if path:
            check_output(path, what=what)
    result = sbc(args.model, reps=args.reps, shape=args.shape, method=args.method,
                 n_keep=args.keep, draws=args.draws, tune=args.tune, chains=args.chains,
                 seed=args.seed, workers=args.workers, scheduler=args.scheduler)
    payload = result.to_dict()
    lines = [str(result)]
    if not result.complete:
        lines.append("interrupted: the tests use the replications that finished")
    write_study_outputs(args, result, payload, lines)
    emit(args, {k: v for k, v in payload.items() if k != "ranks"} if not args.output
         else payload, "\n".join(lines))
    return 0 if result.complete else 130

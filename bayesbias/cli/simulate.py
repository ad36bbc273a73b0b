"""``bayesbias simulate``: how WEAT and MAC behave when there is no bias."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from .._atomic import atomic_write_bytes
from ..comparators.null import (
    DEFAULT_STATISTICS,
    NULLS,
    STATISTICS,
    NullStudy,
    neutral_pool,
    run_grid,
    run_null_study,
    summarize,
    summary_dict,
    weat_bound,
)
from ..comparators.weat import ALTERNATIVES, SD_CONVENTIONS
from ..config import defaults
from ..errors import InvalidArgumentError
from ..inputs import datasets
from ..parallel import dask_client
from ._common import (
    add_distances,
    add_json,
    add_output,
    add_parallel_options,
    add_parser,
    add_seed,
    emit,
    float_range,
    nonneg_int,
    positive_int,
    probability,
)

DESCRIPTION = """\
Simulate cosine similarities with no bias and compute WEAT and MAC on them: how large
can |WEAT| get by chance, and how often do the tests reject at --alpha?

Nulls: independent (Normal(mean, sd) similarities, as in Dobrzeniecka & Urbaniak),
hierarchical (plus word and attribute random effects, --word-sd / --attribute-sd),
resample (real neutral-word similarities of a distance table, --distances).
Several --sd values or --grid sizes run a grid on Dask; --workers N starts a local
cluster (results are identical for a given --seed whatever the number of workers)."""


def _size_pair(text: str) -> tuple[tuple[int, int], tuple[int, int]]:
    try:
        targets, attributes = text.lower().split("x")
        t = tuple(int(v) for v in targets.split(","))
        a = tuple(int(v) for v in attributes.split(","))
        if len(t) != 2 or len(a) != 2 or min(t + a) < 1:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"grid size must look like 8,8x8,8 (targets x attributes), got {text!r}") from None
    return t, a


def register(sub) -> None:
    """Add the ``simulate`` sub-command to `sub`."""
    p = add_parser(
        sub, "simulate", "null-simulation study: WEAT and MAC with no bias",
        "  bayesbias simulate --null independent --targets 8 8 --attributes 8 8 --sd 0.08 \\\n"
        "                     --reps 10000 --seed 1 --json\n"
        "  bayesbias simulate --targets 2 2 --attributes 5 5 --sd 0.05 "
        "--sd-convention population\n"
        "  bayesbias simulate --null hierarchical --word-sd 0.1 --attribute-sd 0.05\n"
        "  bayesbias simulate --null resample --distances published:religion:reddit "
        "--reps 2000\n"
        "  bayesbias simulate --grid 2,2x5,5 8,8x8,8 16,16x16,16 --sd 0.05 0.08 "
        "--workers 2 -o grid.nc",
        description=DESCRIPTION,
    )
    p.add_argument("--null", choices=NULLS, default="independent",
                   help="generative null (default independent)")
    p.add_argument("--targets", type=positive_int, nargs=2, default=[8, 8], metavar=("NX", "NY"),
                   help="sizes of the target sets X and Y (default 8 8)")
    p.add_argument("--attributes", type=positive_int, nargs=2, default=[8, 8], metavar=("NA", "NB"),
                   help="sizes of the attribute sets A and B (default 8 8)")
    p.add_argument("--grid", type=_size_pair, nargs="+", default=None,
                   help="grid of sizes, each NX,NYxNA,NB (overrides --targets/--attributes) "
                        "(default: none, one size)")
    p.add_argument("--sd", type=float_range(0.0, 10.0, low_open=True), nargs="+", default=[0.08],
                   help="similarity sd; several values make a grid (default 0.08)")
    p.add_argument("--mean", type=float_range(-1.0, 1.0), default=0.0,
                   help="mean similarity (default 0)")
    p.add_argument("--word-sd", type=float_range(0.0, 10.0), default=0.05,
                   help="hierarchical: word-effect sd (default 0.05)")
    p.add_argument("--attribute-sd", type=float_range(0.0, 10.0), default=0.05,
                   help="hierarchical: attribute-effect sd (default 0.05)")
    add_distances(p, help="resample: distance table with 'none' rows (a file or "
                          "published:TOPIC:EMBEDDING) (default: none)")
    p.add_argument("--reps", type=positive_int, default=10_000, help="replications (default 10000)")
    add_seed(p, None, f"seed (default {defaults.seed})")
    p.add_argument("--statistics", nargs="+", choices=list(STATISTICS),
                   default=list(DEFAULT_STATISTICS),
                   help="statistics to compute (default: " + " ".join(DEFAULT_STATISTICS) + ")")
    p.add_argument("--alternative", choices=ALTERNATIVES, default="two-sided",
                   help="WEAT permutation test alternative (default two-sided)")
    p.add_argument("--sd-convention", choices=list(SD_CONVENTIONS), default="sample",
                   help="WEAT effect-size sd: sample (n - 1, default) or population (n)")
    p.add_argument("--permutations", type=positive_int, default=999,
                   help="Monte Carlo splits per replication when not exact (default 999)")
    p.add_argument("--exact-limit", type=nonneg_int, default=20_000,
                   help="exact permutation test up to this many splits (default 20000)")
    p.add_argument("--thresholds", type=float_range(0.0, 100.0, low_open=True), nargs="+",
                   default=[0.5, 0.8, 1.27],
                   help="report the fraction of |WEAT d| >= each (default 0.5 0.8 1.27)")
    p.add_argument("--alpha", type=probability, default=0.05, help="test level (default 0.05)")
    add_parallel_options(p)
    add_output(p, "write every replication as NetCDF (.nc)")
    add_json(p)
    p.set_defaults(run=run)


def run(args) -> int:
    """Run ``bayesbias simulate``; return the exit code."""
    pool = None
    if args.null == "resample":
        if not args.distances:
            raise InvalidArgumentError("--null resample needs --distances (a distance table "
                                       "with 'none' rows)")

        pool = neutral_pool(datasets.read_table(args.distances))
    try:
        study = NullStudy(
            null=args.null, targets=tuple(args.targets), attributes=tuple(args.attributes),
            sd=args.sd[0], reps=args.reps,
            seed=defaults.seed if args.seed is None else args.seed,
            statistics=tuple(args.statistics), mean=args.mean, word_sd=args.word_sd,
            attribute_sd=args.attribute_sd, alternative=args.alternative,
            sd_convention=args.sd_convention, n_permutations=args.permutations,
            exact_limit=args.exact_limit, pool=pool)
    except ValueError as exc:
        raise InvalidArgumentError(str(exc)) from None
    if (args.workers or args.scheduler) and not getattr(args, "debug", False):
        import dask.distributed  # noqa: F401  (configures its INFO loggers on import)

        # keep the CLI quiet: dask.distributed logs every worker start and stop at INFO
        for name in ("distributed", "dask"):
            logging.getLogger(name).setLevel(logging.WARNING)
    client = None
    if args.scheduler:
        client, _ = dask_client(scheduler=args.scheduler)
    grid = args.grid is not None or len(args.sd) > 1
    try:
        if grid:
            ds = run_grid(study, sizes=args.grid, sds=args.sd, client=client,
                          n_workers=args.workers, use_dask=bool(client or args.workers))
        else:
            ds = run_null_study(study, client=client, n_workers=args.workers)
    finally:
        if client is not None:
            client.close()
    summary = summarize(ds, thresholds=args.thresholds, alpha=args.alpha)
    if args.output:
        path = Path(args.output)
        # in memory first: h5py crashes on a disk that fills up during the write
        atomic_write_bytes(path, ds.to_netcdf(engine="h5netcdf"), suffix=".nc")
    payload = {"study": study.describe(), "output": args.output}
    if grid:
        payload["grid"] = {"sizes": [f"{t[0]}+{t[1]} targets, {a[0]}+{a[1]} attributes"
                                     for t, a in (args.grid or [(study.targets,
                                                                  study.attributes)])],
                           "sd": args.sd}
    lines = [f"null study: {args.null}, {args.reps} replications per cell, seed {study.seed}"]
    cells = ([(c, summary.sel(size=c[0], sd=c[1])) for c in
              [(s, v) for s in summary.coords["size"].values for v in summary.sd.values]]
             if grid else [(None, summary)])
    payload["cells"] = []
    for label, cell in cells:
        d = summary_dict(cell.drop_vars([v for v in ("size", "sd", "n_targets", "n_attributes")
                                         if v in cell.coords]))
        if label is not None:
            d = {"size": str(label[0]), "sd": float(label[1]), **d}
        payload["cells"].append(d)
        lines.append(_text(d, label, study))
    if not grid:
        payload.update(payload.pop("cells")[0])
        payload["weat_bound_abs_d"] = weat_bound(*study.targets, study.sd_convention)
    emit(args, payload, "\n".join(lines))
    return 0


def _text(d: dict, label, study) -> str:
    head = (f"-- {label[0]}, sd {label[1]:g}" if label is not None else
            f"-- {study.targets[0]}+{study.targets[1]} targets, {study.attributes[0]}+"
            f"{study.attributes[1]} attributes, sd {study.sd:g} "
            f"(max possible |d| = {weat_bound(*study.targets, study.sd_convention):.3f})")
    out = [head]
    for s, q in d["quantiles"].items():
        out.append(f"  {s:15s} median {q['0.5']: .4f}   95% of replications in "
                   f"[{q['0.025']: .4f}, {q['0.975']: .4f}]")
    for e, fr in d.get("fraction_abs_effect_at_least", {}).items():
        out.append(f"  fraction |{e}| >= " + ", ".join(f"{t}: {v:.4f}" for t, v in fr.items()))
    for t, v in d.get("false_positive_rate", {}).items():
        out.append(f"  false-positive rate of {t} at alpha {d['alpha']}: {v:.4f}")
    return "\n".join(out)

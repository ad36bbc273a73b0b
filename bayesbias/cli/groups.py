"""``bayesbias groups``: Bayesian rates of a classifier per (intersectional) group."""

from __future__ import annotations

import logging
from pathlib import Path

from .._atomic import atomic_path, spreadsheet_safe
from ..errors import InputDataError, InvalidArgumentError
from ._common import (
    add_ci_prob,
    add_json,
    add_output,
    add_parser,
    add_plot,
    add_sampling_options,
    add_seed,
    emit,
    float_range,
    probability,
    to_jsonable,
)
from ._scored import add_prediction_options, read_table

log = logging.getLogger(__name__)

HELP = "Bayesian rates of a classifier per intersectional group, with intervals for every gap"


def register(sub) -> None:
    """Add the ``groups`` sub-command."""
    p = add_parser(
        sub, "groups", HELP,
        "  bayesbias groups --example adult_llama --metric tpr,fpr,error_rate\n"
        "  bayesbias groups scored.csv --sensitive race,sex,age --bins age=25,65 \\\n"
        "      --label y_true --pred y_pred --metric tpr,fpr,selection_rate --json\n"
        "  bayesbias groups scored.csv --sensitive gender --score p_toxic --threshold 0.5 \\\n"
        "      --metric fpr --structure independent --report groups-report\n",
        description="Per cell (one combination of the sensitive features' levels) and metric, "
                    "k ~ Binomial(n, p) with logit p = mean + main effects + interactions of "
                    "every order (each order its own sd), fitted on counts. Gives every "
                    "cell's and every group's rate, differences and ratios, equalized odds, "
                    "demographic parity and differential fairness with intervals, a verdict "
                    "per comparison against --delta, the interaction share of the "
                    "between-cell variance and a labelling plan. Docs: docs/groups.md.",
    )
    p.add_argument("table", nargs="?", default=None,
                   help="CSV or Parquet table of labels, predictions (or scores) and sensitive "
                        "columns (default: none; or --example)")
    p.add_argument("--example", choices=["adult_llama"], default=None,
                   help="use a shipped table: adult_llama (UCI Adult with Llama 3 70B "
                        "predictions, CC BY 4.0, SureMap); sets --label label --pred pred "
                        "--positive 'greater than 50K' --sensitive race,sex,age "
                        "--bins age=25,65 unless given (default: none)")
    p.add_argument("--sensitive", default=None,
                   help="comma-separated sensitive columns (required with a table; default: none, "
                        "race,sex,age with --example)")
    p.add_argument("--term", default=None, metavar="COL",
                   help="a column of terms nested in the groups (identity terms within a "
                        "group, e.g. 'muslim', 'christian' within religion): per-term rates "
                        "with intervals, and each cell's rate post-stratified over its terms "
                        "(default: none)")
    p.add_argument("--shared-terms", choices=["error", "split"], default="error",
                   help="a term label found in two groups: refuse it (naming the term and the "
                        "groups), or treat it as a different term in each group")
    p.add_argument("--metric", default="selection_rate,tpr,fpr",
                   help="comma-separated: selection_rate, tpr, fpr, tnr, fnr, error_rate, "
                        "accuracy, precision, base_rate")
    add_prediction_options(
        p, label="true-label column (default y_true)",
        positive="the positive class when labels are not 0/1, e.g. 'greater than 50K' "
                 "(default: labels must be 0/1 or True/False)",
        score="score column in [0, 1], predicted positive when >= --threshold "
              "(default: none)",
        pred="predicted-label column (default y_pred, unless --score)",
        threshold="threshold for --score")
    p.add_argument("--bins", action="append", default=None, metavar="COL=E1,E2",
                   help="bin a numeric sensitive column at these edges (left-closed bands; "
                        "age=25,65 gives <25, 25-64, >=65); repeat for several columns "
                        "(default: none)")
    p.add_argument("--missing", choices=["error", "level"], default="error",
                   help="missing sensitive values: refuse with their row numbers, or keep "
                        "them as a level 'missing'")
    p.add_argument("--structure", choices=["full", "additive", "independent"], default=None,
                   help="pooling: full (main effects and every interaction; default), "
                        "additive (main effects), independent (Beta(1,1) per cell, exact)")
    p.add_argument("--spec", default=None,
                   help="group-rates spec TOML (default: the shipped "
                        "models/groups/group_rates.toml)")
    p.add_argument("--delta", type=float_range(0.0, 1.0, low_open=True), default=0.05,
                   help="tolerance of the gap verdicts")
    p.add_argument("--reference", default=None,
                   help="also compare every group with this one (a cell 'A | B | C', or a "
                        "level of --feature) (default: none)")
    p.add_argument("--feature", default=None,
                   help="compare the levels of this one sensitive feature (post-stratified) "
                        "instead of the cells (default: none, the cells)")
    p.add_argument("--plan-width", type=probability, default=None, metavar="W",
                   help="add a labelling plan: labels per cell for an interval W wide "
                        "(default: none)")
    add_ci_prob(p, 0.9, "probability of every interval (equal-tailed)")
    add_seed(p, None, "random seed (default: the package default)")
    add_sampling_options(p, draws=1000, tune=1000, chains=4)
    add_output(p, "write the cell table (.csv or .parquet) or everything (.json)")
    add_plot(p, "save the figure of raw against pooled cell rates (.png, .svg or .pdf)")
    p.add_argument("--report", default=None, metavar="FOLDER",
                   help="write an HTML report folder (index.html, tables, figure) "
                        "(default: none)")
    add_json(p)
    p.set_defaults(run=run)


def _bins(values) -> dict:
    out = {}
    for text in values or []:
        col, sep, edges = text.partition("=")
        try:
            nums = [float(e) for e in edges.split(",") if e.strip()]
        except ValueError:
            nums = []
        if not sep or not col.strip() or not nums:
            raise InvalidArgumentError(f"--bins {text!r}: write COLUMN=EDGE,EDGE, e.g. age=25,65")
        out[col.strip()] = nums
    return out


def _options(args):
    """Return the table and the column options, with --example's defaults filled in."""
    if (args.table is None) == (args.example is None):
        raise InvalidArgumentError("give a TABLE or --example adult_llama (not both)")
    if args.example:
        from ..inputs.datasets import ADULT_LLAMA, adult_llama

        table = adult_llama()
        d = ADULT_LLAMA
        label = args.label or d["label"]
        pred = args.pred or (None if args.score else d["pred"])
        positive = args.positive if args.positive is not None else d["positive"]
        sensitive = args.sensitive or ",".join(d["sensitive"])
        bins = _bins(args.bins) if args.bins else {k: list(v) for k, v in d["bins"].items()}
    else:
        table = read_table(args.table)
        label = args.label or "y_true"
        pred = args.pred or (None if args.score else "y_pred")
        positive = args.positive
        sensitive = args.sensitive
        bins = _bins(args.bins)
        if not sensitive:
            raise InvalidArgumentError("give --sensitive (comma-separated sensitive columns)")
    if args.pred and args.score:
        raise InvalidArgumentError("give --pred or --score, not both")
    cols = [c.strip() for c in sensitive.split(",") if c.strip()]
    where = args.table or f"--example {args.example}"
    for flag, c in [("--label", label), ("--pred", pred), ("--score", args.score),
                    ("--term", args.term), *[("--sensitive", c) for c in cols]]:
        if c is not None and c not in table.columns:
            raise InputDataError(f"{where}: {flag} column {c!r} not found; columns: "
                                 f"{', '.join(map(str, table.columns))}")
    return table, label, pred, positive, cols, bins


def run(args) -> int:
    """Fit the group rates and print / write them."""
    from ..classifier.groups import GroupRates

    table, label, pred, positive, cols, bins = _options(args)
    metrics = [m.strip() for m in args.metric.split(",") if m.strip()]
    if not metrics:
        raise InvalidArgumentError(f"--metric: no metric names in {args.metric!r}")
    g = GroupRates(table[label], table[pred] if pred else None,
                   y_score=table[args.score] if args.score else None, threshold=args.threshold,
                   sensitive_features=table[cols], metrics=metrics, pos_label=positive,
                   bins=bins, missing=args.missing, structure=args.structure, spec=args.spec,
                   ci_prob=args.ci_prob, draws=args.draws, tune=args.tune, chains=args.chains,
                   seed=args.seed, term=table[args.term] if args.term else None,
                   shared_terms=args.shared_terms)
    payload = g.to_dict(delta=args.delta)
    text = str(g) if not args.feature else ""
    if args.feature:
        text = (str(g) + f"\n\nby {args.feature} (post-stratified):\n"
                + g.marginal(args.feature).round(4).to_string(index=False)
                + "\n\n" + g.difference(feature=args.feature, delta=args.delta)
                .round(4).to_string(index=False))
        payload["feature_comparisons"] = g.difference(feature=args.feature, delta=args.delta) \
            .to_dict(orient="records")
    if args.reference:
        ref = g.difference(reference=args.reference, feature=args.feature, delta=args.delta)
        payload["against_reference"] = ref.to_dict(orient="records")
        text += f"\n\nagainst {args.reference}:\n" + ref.round(4).to_string(index=False)
    if args.plan_width:
        plan = g.labelling_plan(args.plan_width, delta=args.delta)
        payload["labelling_plan"] = {"width": args.plan_width,
                                     "cells": plan.to_dict(orient="records"),
                                     "assurance": plan.attrs.get("assurance")}
        text += (f"\n\nlabelling plan (interval width {args.plan_width:g}):\n"
                 + plan.round(3).to_string(index=False))
    written = []
    if args.output:
        _write_output(args.output, g, payload)
        written.append(args.output)
    if args.plot:
        g.plot(args.plot)
        written.append(args.plot)
    if args.report:
        from ..report.groups import write_groups_report

        write_groups_report(g, args.report, delta=args.delta)
        written.append(f"{args.report}/index.html")
    payload["written"] = written
    text += "".join(f"\nwrote {w}" for w in written)
    emit(args, payload, text)
    return 0


def _write_output(path: str, g, payload) -> None:
    import json

    suffix = Path(path).suffix.lower()
    if suffix not in (".csv", ".parquet", ".json"):
        raise InvalidArgumentError(f"-o {path}: give a .csv, .parquet or .json file")
    with atomic_path(path, suffix=suffix) as tmp:
        if suffix == ".json":
            tmp.write_text(json.dumps(to_jsonable(payload), indent=2))
        elif suffix == ".csv":
            spreadsheet_safe(g.to_frame()).to_csv(tmp, index=False)
        else:
            g.to_frame().to_parquet(tmp, index=False)

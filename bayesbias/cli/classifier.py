"""``bayesbias classifier``: bias metrics of a classifier's scores, with intervals."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from ..classifier.auc import AUC_METRICS, nuanced_auc_metrics
from ..classifier.bernstein import CRITERIA, bbu_by_group
from ..classifier.data import (
    MADLIBS_REFERENCE_TERMS,
    counterfactual_frames,
    identity_groups,
    identity_terms,
    validate_classifier_data,
)
from ..classifier.generalized import METRICS, compute_metric
from ..errors import InputDataError
from ..io import atomic_path
from ._common import add_json, add_parser, emit

log = logging.getLogger(__name__)

COLUMNS = ["metric", "model", "level", "group", "value", "lower", "upper", "interval", "n",
           "note"]


def register(sub) -> None:
    """Add the ``classifier`` sub-command."""
    p = add_parser(
        sub, "classifier", "bias metrics of a classifier's scores across groups, with intervals",
        "  bayesbias classifier --data madlibs --score TOXICITY@1 --metrics bbu,auc,fped --json\n"
        "  bayesbias classifier --data madlibs --score TOXICITY@6 --terms all --metrics auc "
        "-o auc.csv\n"
        "  bayesbias classifier --data scores.csv --label toxicity --positive toxic \\\n"
        "      --score TOXICITY@1 --groups black,white --metrics bbu,auc,fped*,tpr_gap\n"
        "  bayesbias classifier --data madlibs --metrics cfgap,pertsd --terms all\n"
        "      # counterfactual metrics: source examples from the madlibs templates\n",
        description="Nuanced AUC metrics (Borkan et al. 2019, DeLong intervals), "
                    "Bernstein-bounded unfairness (Ethayarajh 2020; with Bayesian and "
                    "bootstrap intervals) and the generalized metrics of Czarnowska et al. "
                    "(2021; bootstrap intervals) for every group. Metric names: bbu, auc, "
                    + ", ".join(METRICS) + ".",
    )
    p.add_argument("--data", required=True,
                   help="CSV or Parquet table, or 'madlibs' for the shipped scored madlibs")
    p.add_argument("--label", default=None, help="gold label column (madlibs: toxicity)")
    p.add_argument("--positive", default=None,
                   help="value of the label column that is the positive class (madlibs: toxic)")
    p.add_argument("--score", default=None, help="score column (madlibs: TOXICITY@1)")
    p.add_argument("--pred", default=None, help="predicted label column (else score >= "
                   "--threshold)")
    p.add_argument("--threshold", type=float, default=0.5,
                   help="threshold turning scores into labels (default 0.5)")
    p.add_argument("--groups", default=None,
                   help="comma-separated boolean group columns (may overlap)")
    p.add_argument("--group-column", default=None, help="one categorical group column")
    p.add_argument("--terms", default="reference",
                   help="madlibs groups: 'reference' (the 12 terms of the published tables), "
                        "'all' (every recovered identity term) or comma-separated terms")
    p.add_argument("--text", default="phrase", help="text column for identity groups")
    p.add_argument("--template", default="template", help="template column")
    p.add_argument("--source", default=None,
                   help="source-example column for counterfactual metrics (madlibs: derived)")
    p.add_argument("--metrics", default="bbu,auc",
                   help="comma-separated: bbu, auc and names from the registry "
                        "(default bbu,auc)")
    p.add_argument("--criterion", default="demographic_parity", choices=list(CRITERIA),
                   help="cost/annotation for bbu (default demographic_parity)")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="coverage of every interval (default 0.95)")
    p.add_argument("--gamma", type=float, default=None,
                   help="bbu: lower bound on group proportions (default: estimated)")
    p.add_argument("--variance", default="estimate",
                   help="bbu: 'estimate', 'worst' or a number (default estimate)")
    p.add_argument("--n-boot", type=int, default=200,
                   help="bootstrap resamples for the generalized metrics and bbu "
                        "(default 200; 0 = no intervals)")
    p.add_argument("--seed", type=int, default=None, help="random seed")
    p.add_argument("-o", "--output", help="write the tidy table (.csv or .parquet)")
    add_json(p)
    p.set_defaults(run=run)


def _read(args) -> tuple[pd.DataFrame, dict]:
    if args.data == "madlibs":
        from ..datasets import madlibs

        table = madlibs()
        defaults = {"label": "toxicity", "positive": "toxic", "score": "TOXICITY@1"}
    else:
        path = Path(args.data)
        if not path.exists():
            raise InputDataError(f"{path}: no such file")
        try:
            table = (pd.read_parquet(path) if path.suffix.lower() in (".parquet", ".pq")
                     else pd.read_csv(path))
        except Exception as exc:  # parser errors vary by engine
            raise InputDataError(f"{path}: cannot read the table: {exc}") from None
        defaults = {}
    return table, defaults


def _groups(args, table: pd.DataFrame) -> tuple[pd.DataFrame | None, str | None]:
    if args.groups:
        return None, None
    if args.group_column:
        return None, args.group_column
    if args.text in table.columns:
        if args.terms == "reference":
            terms = list(MADLIBS_REFERENCE_TERMS)
        elif args.terms == "all":
            terms = identity_terms(table, text=args.text, template=args.template)
        else:
            terms = [t.strip() for t in args.terms.split(",") if t.strip()]
        return identity_groups(table, terms, text=args.text, template=args.template), None
    raise InputDataError("give --groups (boolean columns) or --group-column (a categorical "
                         "column), or a text column (--text) to derive identity groups")


def run(args) -> int:
    """Compute the requested metrics and print / write them."""
    table, dflt = _read(args)
    label = args.label or dflt.get("label")
    score = args.score or dflt.get("score")
    positive = args.positive if args.positive is not None else dflt.get("positive")
    if label is None:
        raise InputDataError("give --label (the gold label column)")
    metrics = [m.strip().lower() for m in args.metrics.split(",") if m.strip()]
    unknown = [m for m in metrics if m not in ("bbu", "auc") and m not in METRICS]
    if unknown:
        raise InputDataError(f"unknown metric(s) {', '.join(unknown)}; choose from bbu, auc, "
                             + ", ".join(METRICS))
    derived, group_column = _groups(args, table)
    if derived is not None:
        table = pd.concat([table, derived.add_prefix("group:")], axis=1)
        group_cols = [f"group:{c}" for c in derived.columns]
    else:
        group_cols = [g.strip() for g in args.groups.split(",")] if args.groups else None
    cd = validate_classifier_data(table, label, score=score, pred=args.pred,
                                  groups=group_cols, group_column=group_column,
                                  positive=positive,
                                  threshold=args.threshold if args.pred is None and score
                                  else None)
    if derived is not None:
        cd.groups.columns = list(derived.columns)
    model = score or args.pred
    variance = args.variance
    if variance not in ("estimate", "worst"):
        try:
            variance = float(variance)
        except ValueError:
            raise InputDataError(f"--variance must be 'estimate', 'worst' or a number, got "
                                 f"{args.variance!r}") from None
    ci = args.confidence
    rows: list[dict] = []
    payload: dict = {"data": args.data, "model": model, "n": cd.n,
                     "groups": {g: int(v) for g, v in cd.groups.sum().items()},
                     "confidence": ci, "threshold": cd.threshold, "metrics": {}}
    text: list[str] = [f"{args.data}: {cd.n} rows, {len(cd.group_names)} groups, model {model}"]
    for metric in metrics:
        if metric == "auc":
            if cd.score is None:
                raise InputDataError("the auc metrics need --score")
            r = nuanced_auc_metrics(cd.y, cd.score, cd.groups, ci_prob=ci)
            for g, rec in r.iterrows():
                for m in AUC_METRICS:
                    rows.append({"metric": m, "model": model, "level": "group", "group": g,
                                 "value": rec[m], "lower": rec[f"{m}_lower"],
                                 "upper": rec[f"{m}_upper"], "interval": "DeLong",
                                 "n": rec["n"], "note": rec["note"]})
            payload["metrics"]["auc"] = r.reset_index()
            text += ["", f"nuanced AUC metrics (Borkan et al. 2019), {ci:.0%} DeLong intervals:",
                     r[list(AUC_METRICS)].round(4).to_string()]
        elif metric == "bbu":
            if cd.pred is None:
                raise InputDataError("bbu needs predicted labels (--pred or --score with "
                                     "--threshold)")
            r = bbu_by_group(cd.y, cd.pred, cd.groups, criterion_name=args.criterion,
                             confidence=ci, gamma=args.gamma, variance=variance,
                             intervals=args.n_boot > 0, n_boot=max(args.n_boot, 1),
                             seed=args.seed)
            name = f"bbu:{args.criterion}"
            for g, rec in r.iterrows():
                kinds = [("bernstein", "lower", "upper")]
                if "bayes_lower" in rec:
                    kinds += [("bayes", "bayes_lower", "bayes_upper"),
                              ("bootstrap", "bootstrap_lower", "bootstrap_upper")]
                for kind, lo, hi in kinds:
                    rows.append({"metric": name, "model": model, "level": "group", "group": g,
                                 "value": rec["disparity"], "lower": rec.get(lo, np.nan),
                                 "upper": rec.get(hi, np.nan), "interval": kind,
                                 "n": rec["n_a"], "note": rec["note"]})
            payload["metrics"]["bbu"] = {"criterion": args.criterion,
                                         "description": CRITERIA[args.criterion].description,
                                         "by_group": r.reset_index()}
            cols = [c for c in ("disparity", "lower", "upper", "bayes_lower", "bayes_upper",
                                "bootstrap_lower", "bootstrap_upper", "claims_bias")
                    if c in r]
            text += ["", f"Bernstein-bounded unfairness ({args.criterion}), {ci:.0%} intervals "
                     "(Bernstein | Bayes HDI | bootstrap):", r[cols].round(4).to_string()]
        else:
            m = METRICS[metric]
            groups = cd.groups
            source = None
            if m.version == "counterfactual":
                if args.source:
                    if args.source not in table.columns:
                        raise InputDataError(f"source column {args.source!r} not in the table")
                    source = table[args.source].reset_index(drop=True)
                elif args.text in table.columns and args.template in table.columns:
                    source = counterfactual_frames(table, cd.groups, text=args.text,
                                                   template=args.template)
                    source = source.reset_index(drop=True)
                else:
                    raise InputDataError(f"{metric} is counterfactual: give --source")
            if m.two_groups_only and groups.shape[1] != 2:
                raise InputDataError(f"{metric} is defined for two groups; give exactly two "
                                     f"(got {groups.shape[1]}: e.g. --terms black,white)")
            res = compute_metric(metric, cd.y, groups, pred=cd.pred, prob=cd.score,
                                 source=source, ci_prob=ci if args.n_boot > 0 else None,
                                 n_boot=args.n_boot, seed=args.seed)
            for rec in res.to_frame().to_dict("records"):
                rows.append({**rec, "model": model, "interval": "bootstrap"
                             if args.n_boot > 0 else "", "note": ""})
            payload["metrics"][metric] = {
                "value": res.value, "lower": res.lower, "upper": res.upper, **res.info,
                "by_group": res.by_group.reset_index(),
                "pairs": res.pairs if res.pairs is not None else []}
            val = (f"{res.value:.4g}" + (f" [{res.lower:.4g}, {res.upper:.4g}]"
                                         if np.isfinite(res.lower) else "")
                   if np.isfinite(res.value) else "(vector-valued: per group)")
            col = "comparison" if "comparison" in res.by_group else "score"
            text += ["", f"{m.title} ({metric}) = {val}  -- {m.description}",
                     res.by_group[[c for c in res.by_group.columns
                                   if c.startswith(col) or c == "n"]].round(4).to_string()]
    tidy = pd.DataFrame(rows, columns=COLUMNS)
    if args.output:
        out = Path(args.output)
        with atomic_path(out) as tmp:
            if out.suffix.lower() in (".parquet", ".pq"):
                tidy.to_parquet(tmp, index=False)
            else:
                tidy.to_csv(tmp, index=False)
        payload["output"] = str(out)
        text.append(f"\nwrote {len(tidy)} rows to {out}")
    emit(args, payload, "\n".join(text))
    return 0

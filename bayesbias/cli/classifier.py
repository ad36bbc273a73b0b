"""``bayesbias classifier``: bias metrics of a classifier's scores, with intervals."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from .._atomic import atomic_path, spreadsheet_safe
from ..classifier.auc import AUC_METRICS
from ..classifier.bernstein import CRITERIA
from ..classifier.data import (
    MADLIBS_REFERENCE_TERMS,
    counterfactual_frames,
    identity_groups,
    identity_terms,
    validate_classifier_data,
)
from ..classifier.generalized import METRICS, PARITY_CODE
from ..classifier.summary import METRIC_CHOICES, classifier_bias
from ..config import defaults
from ..errors import InputDataError, InvalidArgumentError
from ..inputs.datasets import madlibs
from ._common import (
    add_bootstrap,
    add_ci_prob,
    add_json,
    add_option,
    add_output,
    add_parser,
    add_seed,
    emit,
    float_range,
)
from ._scored import add_prediction_options, read_table

log = logging.getLogger(__name__)


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
    add_prediction_options(
        p, label="gold label column (default: toxicity for madlibs; required otherwise)",
        positive="value of the label column that is the positive class (default: toxic "
                 "for madlibs; otherwise the label must be 0/1 or True/False)",
        score="score column (default: TOXICITY@1 for madlibs; none otherwise)",
        pred="predicted label column (default: none, score >= --threshold)",
        threshold="threshold turning scores into labels (default 0.5)")
    p.add_argument("--groups", default=None,
                   help="comma-separated boolean group columns (may overlap) (default: none; "
                        "groups from --group-column or the text column)")
    p.add_argument("--group-column", default=None,
                   help="one categorical group column (default: none)")
    p.add_argument("--terms", default="reference",
                   help="madlibs groups: 'reference' (the 12 terms of the published tables; "
                        "default), 'all' (every recovered identity term) or comma-separated "
                        "terms")
    p.add_argument("--text-column", default="phrase",
                   help="text column for identity groups (default phrase)")
    p.add_argument("--match", choices=["longest", "word"], default="longest",
                   help="madlibs groups: 'longest' (a phrase's longest identity term only, "
                        "default) or 'word' (every whole-word match, so 'american' also matches "
                        "'african american', as the published Borkan tables group)")
    p.add_argument("--template", default="template",
                   help="template column (default template)")
    p.add_argument("--source", default=None,
                   help="source-example column for counterfactual metrics (default: derived "
                        "from the text and template columns)")
    p.add_argument("--metrics", default="bbu,auc",
                   help="comma-separated: bbu, auc and names from the registry "
                        "(default bbu,auc)")
    p.add_argument("--criterion", default="demographic_parity", choices=list(CRITERIA),
                   help="cost/annotation for bbu (default demographic_parity)")
    add_ci_prob(p, 0.95, "probability of every interval (default 0.95)",
                deprecated=("--confidence",))
    p.add_argument("--gamma", type=float_range(0.0, 0.5, low_open=True), default=None,
                   help="bbu: lower bound on group proportions (default: estimated)")
    p.add_argument("--variance", default="estimate",
                   help="bbu: 'estimate', 'worst' or a number (default estimate)")
    add_bootstrap(p, 200, "bootstrap resamples for the generalized metrics and bbu "
                          "(default 200; 0 = no intervals)")

    add_seed(p, None, f"random seed (default {defaults.seed})")
    add_option(p, "--reading", deprecated=("--parity",), dest="reading",
               choices=["paper", "code"], default="paper",
                   help="Czarnowska et al.'s metrics where their paper and their code differ: "
                        "'paper' (default: Parity Gap of accuracy as in Table 2; Pos/Neg "
                        "AvgGF against all rows, as AvgGF) or 'code' (the values of the "
                        "authors' code: Parity Gap of the positive-prediction rate; Pos/Neg "
                        "AvgGF against the other groups; counterfactual metrics over term "
                        "combinations, --cf-average combinations). AvgGF and the other "
                        "metrics are the same in both")
    p.add_argument("--cf-average", choices=["groups", "combinations", "terms"], default=None,
                   help="counterfactual metrics with several terms per group: 'groups' "
                        "(score each group on all its terms, the authors' FlattenGroup.AVERAGE "
                        "option; default with --reading paper) or "
                        "'combinations' (every combination of one term per group, pooled over "
                        "all templates, a seeded sample of 100 above 100, as the authors' "
                        "code; default with --reading code; 'terms' is the earlier name). "
                        "AvgIF compares the groups' sets of terms in both")
    add_output(p, "write the tidy table (.csv or .parquet)")
    add_json(p)
    p.set_defaults(run=run)


def _read(args) -> tuple[pd.DataFrame, dict]:
    if args.data == "madlibs":
        table = madlibs()
        defaults = {"label": "toxicity", "positive": "toxic", "score": "TOXICITY@1"}
    else:
        table = read_table(args.data)
        defaults = {}
    return table, defaults


def _groups(args, table: pd.DataFrame) -> tuple[pd.DataFrame | None, str | None]:
    if args.groups:
        return None, None
    if args.group_column:
        return None, args.group_column
    if args.text_column in table.columns:
        if args.terms == "reference":
            terms = list(MADLIBS_REFERENCE_TERMS)
        elif args.terms == "all":
            terms = identity_terms(table, text=args.text_column, template=args.template)
        else:
            terms = [t.strip() for t in args.terms.split(",") if t.strip()]
            if not terms:
                raise InvalidArgumentError(f"--terms: no terms in {args.terms!r}")
        return identity_groups(table, terms, text=args.text_column, template=args.template,
                               match=args.match), None
    raise InvalidArgumentError("give --groups (boolean columns) or --group-column (a "
                               "categorical column), or a text column (--text-column) to "
                               "derive identity groups")


def run(args) -> int:
    """Compute the requested metrics and print / write them."""
    table, dflt = _read(args)
    label = args.label or dflt.get("label")
    score = args.score or dflt.get("score")
    positive = args.positive if args.positive is not None else dflt.get("positive")
    if label is None:
        raise InvalidArgumentError("give --label (the gold label column)")
    metrics = [m.strip().lower() for m in args.metrics.split(",") if m.strip()]
    if not metrics:
        raise InvalidArgumentError(f"--metrics: no metric names in {args.metrics!r}")
    if args.reading == "code":
        metrics = [PARITY_CODE.get(m, m) for m in metrics]
    cf_average = args.cf_average or ("combinations" if args.reading == "code" else "groups")
    unknown = [m for m in metrics if m not in METRIC_CHOICES]
    if unknown:
        raise InvalidArgumentError(f"unknown metric(s) {', '.join(unknown)}; choose from "
                                   + ", ".join(METRIC_CHOICES))
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
    variance = args.variance
    if variance not in ("estimate", "worst"):
        try:
            variance = float(variance)
        except ValueError:
            variance = float("nan")
        if not (np.isfinite(variance) and variance > 0):
            raise InvalidArgumentError(f"--variance must be 'estimate', 'worst' or a finite number "
                                       f"> 0, got {args.variance!r}")
    source = None
    if any(METRICS[m].version == "counterfactual" for m in metrics if m in METRICS):
        if args.source:
            if args.source not in table.columns:
                raise InputDataError(f"source column {args.source!r} not in the table")
            source = table[args.source]
        elif args.text_column in table.columns and args.template in table.columns:
            source = counterfactual_frames(table, cd.groups, text=args.text_column,
                                           template=args.template)
    model = score or args.pred
    res = classifier_bias(cd, metrics, ci_prob=args.ci_prob, criterion=args.criterion,
                          gamma=args.gamma, variance=variance, n_boot=args.bootstrap,
                          source=source, seed=args.seed, model=model,
                          cf_average=cf_average)
    ci = args.ci_prob
    res.settings.update(data=args.data, reading=args.reading)
    text: list[str] = [f"{args.data}: {cd.n} rows, {len(cd.group_names)} groups, model {model}"]
    for metric in metrics:
        if metric == "auc":
            r = res.auc
            text += ["", f"nuanced AUC metrics (Borkan et al. 2019), {ci:.0%} DeLong intervals "
                     f"(overall AUC {r.attrs['overall_auc']:.4f}):",
                     r[list(AUC_METRICS)].round(4).to_string()]
        elif metric == "bbu":
            r = res.bbu
            cols = [c for c in ("disparity", "lower", "upper", "bayes_lower", "bayes_upper",
                                "bootstrap_lower", "bootstrap_upper", "claims_bias")
                    if c in r]
            text += ["", f"Bernstein-bounded unfairness ({args.criterion}: "
                     f"{CRITERIA[args.criterion].description}), {ci:.0%} intervals "
                     "(Bernstein | Bayes HDI | bootstrap):", r[cols].round(4).to_string()]
        else:
            m, r = METRICS[metric], res.generalized[metric]
            val = (f"{r.value:.4g}" + (f" [{r.lower:.4g}, {r.upper:.4g}]"
                                       if np.isfinite(r.lower) else "")
                   if np.isfinite(r.value) else "(per group)")
            col = "comparison" if "comparison" in r.by_group else "score"
            text += ["", f"{m.title} ({metric}) = {val}  -- {m.description}",
                     r.by_group[[c for c in r.by_group.columns
                                 if c.startswith(col) or c == "n"]].round(4).to_string()]
            if r.info.get("version") == "counterfactual":
                text.append(f"{r.info['sources']} source examples, cf_average "
                            f"{r.info['cf_average']}: {r.info['evaluations']} evaluations"
                            + (f" ({r.info['cf_note']})" if r.info.get("cf_note") else ""))
            if r.info.get("note"):
                text.append(r.info["note"])
    if args.output:
        out = Path(args.output)
        with atomic_path(out) as tmp:
            if out.suffix.lower() in (".parquet", ".pq"):
                res.table.to_parquet(tmp, index=False)
            else:  # for spreadsheets: no cell runs as a formula
                spreadsheet_safe(res.table).to_csv(tmp, index=False)
        res.settings["output"] = str(out)
        text.append(f"\nwrote {len(res.table)} rows to {out}")
    emit(args, res.to_dict(), "\n".join(text))
    return 0

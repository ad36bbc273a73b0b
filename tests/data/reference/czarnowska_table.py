"""Print the authors' values next to ours for every registry metric, in each mode.

Reads the output of the authors' metric classes (``czarnowska_reference.json``, written by
``czarnowska_reference.py``) and computes the registry metrics on the same synthetic data
(``czarnowska_data.py``) in both readings (``--reading paper`` / ``code``) and, for the
counterfactual metrics, both ``cf_average`` modes. Usage, from the repository root::

    python tests/data/reference/czarnowska_table.py

Prints a markdown table; the assertions are in ``tests/test_generalized.py``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd

from bayesbias.classifier.generalized import METRICS, PARITY_CODE, compute_metric

HERE = Path(__file__).resolve().parent
SEED = 20  # the np.random.seed the reference script set before each combination sample
GROUP_CLASS = {"fped": ("FPED", "1"), "fped*": ("FixedFPED", "1"), "fned": ("FNED", "1"),
               "fned*": ("FixedFNED", "1"), "avggf": ("AverageGroupFairness", "1"),
               "avggf_code": ("AverageGroupFairness", "1"),
               "pos_avggf_code": ("AverageGroupFairnessOnlyClass", "1"),
               "neg_avggf_code": ("AverageGroupFairnessOnlyClass", "0"),
               "disparity_score": ("DisparsityScore", "1"),
               "disparity_score*": ("FixedDisparsityScore", "1"),
               "tpr_gap": ("TPRGapPCM", "1"), "tnr_gap": ("TNRGapPCM", "1"),
               "parity_gap_code": ("ParityGap", "1")}
VECTOR_CLASS = {"fpr_ratio": ("FPRRatioBCM", "1"), "pos_aeg": ("AverageEqualityGap", "1"),
                "neg_aeg": ("AverageEqualityGap", "0")}
CF_CLASS = {"cfgap": "CounterfactualFairnessGap", "pertss": "PerturbationScoreSensitivity",
            "pertsd": "PerturbationScoreDeviation", "pertsr": "PerturbationScoreRange",
            "avgif": "AverageIndividualFairness"}


def _load(name):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.10f}"


def _diff(a, b) -> str:
    return "-" if a is None or b is None else f"{abs(a - b):.1e}"


def rows() -> list[list[str]]:
    cd = _load("czarnowska_data")
    ref = json.loads((HERE / "czarnowska_reference.json").read_text())
    df = cd.group_data(0)
    y, g = df["y"].to_numpy(), pd.Series(df["group"])
    kw = dict(pred=df["pred"].to_numpy(), prob=df["prob"].to_numpy(), n_boot=0)
    out = []
    for name, m in METRICS.items():
        if m.version != "group" or m.generalized == "vbcm" or m.two_groups_only:
            continue
        ours = {}
        for reading in ("paper", "code"):
            used = PARITY_CODE.get(name, name) if reading == "code" else name
            ours[reading] = (used, compute_metric(used, y, g, **kw).value)
        cls = GROUP_CLASS.get(PARITY_CODE.get(name, name))
        theirs = ref["group"][cls[0]][cls[1]]["accumulated"] if cls else None
        label = f"{cls[0]}[{cls[1]}]" if cls else "none"
        out.append([name, m.code, "group (300 rows, 4 groups)", label, _fmt(theirs),
                    _fmt(ours["paper"][1]), _diff(theirs, ours["paper"][1]),
                    _fmt(ours["code"][1]), _diff(theirs, ours["code"][1])])
    for name, (cls, cl) in VECTOR_CLASS.items():
        by = compute_metric(name, y, g, **kw).by_group["comparison"]
        want = ref["group"][cls][cl]
        worst = max(abs(by[k] - want[k]) for k in by.index)
        vals = ", ".join(f"{k} {want[k]:.6f}/{by[k]:.6f}" for k in by.index)
        out.append([name, METRICS[name].code, "group, per group (theirs/ours)",
                    f"{cls}[{cl}]", vals, "same", f"{worst:.1e}", "same", f"{worst:.1e}"])
    for terms, what in (("one", "1 term per group"), ("unequal", "2-3 terms, unequal"),
                        ("large", "2-5 terms, >100 combos in 8 templates")):
        cf = cd.counterfactual_data(terms, 1)
        groups = pd.get_dummies(cf["group"]).astype(bool)
        ckw = dict(prob=cf["prob"].to_numpy(), source=cf["source"], n_boot=0, seed=SEED)
        for name, cls in CF_CLASS.items():
            got = {mode: compute_metric(name, cf["y"].to_numpy(), groups, cf_average=mode,
                                        **ckw).value for mode in ("groups", "combinations")}
            theirs = ref["counterfactual"][terms][cls]["results"]
            theirs = (theirs.get("1") or theirs["all"])["accumulated"]
            avg = ref["counterfactual"][terms].get(f"{cls}[AVERAGE]")
            avg = (avg["results"].get("1") or avg["results"]["all"])["accumulated"] \
                if avg else None
            flat = "NONE" if name == "avgif" else "RANDOM_MATCH"
            out.append([name, METRICS[name].code, f"counterfactual, {what}",
                        f"{cls}[{flat}]", _fmt(theirs), _fmt(got["groups"]),
                        _diff(theirs, got["groups"]), _fmt(got["combinations"]),
                        _diff(theirs, got["combinations"])])
            if avg is not None:
                out.append([name, METRICS[name].code, f"counterfactual, {what}",
                            f"{cls}[AVERAGE]", _fmt(avg), _fmt(got["groups"]),
                            _diff(avg, got["groups"]), _fmt(got["combinations"]),
                            _diff(avg, got["combinations"])])
    return out


def main() -> None:
    head = ["metric", "registry code", "data", "authors' class [class / flatten]", "authors",
            "ours: paper / groups", "|diff|", "ours: code / combinations", "|diff|"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows():
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()

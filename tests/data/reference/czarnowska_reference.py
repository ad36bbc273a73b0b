"""Reference values of Czarnowska et al.'s own metric classes on ``czarnowska_data``.

The authors' code (amazon-research/generalized-fairness-metrics, not a bayesbias dependency
and not copied here) is run unchanged: its ``expanded_checklist`` package is imported from a
checkout, the metric classes are instantiated, each gets a ``CoreRecord`` prepared as their
``EvaluationCore`` prepares it (``process_labels_preds_and_confs`` with
``drop_none_labels=True``), and ``compute`` returns the values. Only imports that the metric
classes do not use are replaced by empty modules (allennlp's spaCy tokenizer and the package
``__init__`` files that pull in the editor and the sequence-labelling tests). Third-party
modules the classes use: munch, tabulate, dill, overrides, pandas_ml (its confusion-matrix
statistics give the FPR, FNR, TPR, TNR and F1 of the prediction-based metrics; its package
``__init__`` is skipped and ``pandas.compat.range`` restored, see below).

Usage, from the repository root (``GFM_SRC`` is the directory holding ``expanded_checklist``;
``GFM_PKGS`` a directory with the five modules above, e.g. ``pip install --target``)::

    GFM_SRC=/tmp/gfm/src GFM_PKGS=/tmp/gfm/pkgs GFM_COMMIT=<their commit> \
        python tests/data/reference/czarnowska_reference.py

Writes ``czarnowska_reference.json``. The counterfactual classes sample 100 of a template's
term combinations when it has more than 100, with the global ``np.random`` state; this script
calls ``np.random.seed(SEED)`` before preparing each record, so the sample is reproducible.
"""

from __future__ import annotations

import copy
import datetime
import importlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 20
ACC = "accumulated"


def _import_authors_code(src: Path):
    for p in (os.environ.get("GFM_PKGS"), str(src)):
        if p and p not in sys.path:
            sys.path.insert(0, p)
    # unused heavy imports -> empty modules
    tok = types.ModuleType("allennlp.data.tokenizers.spacy_tokenizer")
    tok.SpacyTokenizer = lambda *a, **k: None
    spans = types.ModuleType("allennlp.data.dataset_readers.dataset_utils.span_utils")
    for name in ("allennlp", "allennlp.data", "allennlp.data.tokenizers",
                 "allennlp.data.dataset_readers", "allennlp.data.dataset_readers.dataset_utils"):
        sys.modules[name] = types.ModuleType(name)
    sys.modules[tok.__name__] = tok
    sys.modules[spans.__name__] = spans
    # pandas_ml 0.6.1 (confusion-matrix statistics) on a current pandas / scikit-learn: its
    # package __init__ needs removed scikit-learn functions and its statistics module imports
    # ``pandas.compat.range``; register the package without its __init__ and restore the name
    import pandas.compat

    pandas.compat.range = range
    pml = types.ModuleType("pandas_ml")
    pml.__path__ = [str(Path(importlib.util.find_spec("pandas_ml").origin).parent)]
    sys.modules["pandas_ml"] = pml
    pml.compat = importlib.import_module("pandas_ml.compat")
    pml.__version__ = importlib.import_module("pandas_ml.version").version
    pml.ConfusionMatrix = importlib.import_module("pandas_ml.confusion_matrix").ConfusionMatrix
    # packages whose __init__ pulls in unrelated modules: register them without running it
    base = src / "expanded_checklist"
    for name, path in [("expanded_checklist", base),
                       ("expanded_checklist.checklist", base / "checklist"),
                       ("expanded_checklist.checklist.tests", base / "checklist" / "tests"),
                       ("expanded_checklist.checklist.tests.classification",
                        base / "checklist" / "tests" / "classification"),
                       ("expanded_checklist.checklist.tests.sequence",
                        base / "checklist" / "tests" / "sequence"),
                       ("expanded_checklist.checklist.tests.task_agnostic",
                        base / "checklist" / "tests" / "task_agnostic")]:
        m = types.ModuleType(name)
        m.__path__ = [str(path)]
        sys.modules[name] = m
    core = importlib.import_module("expanded_checklist.checklist.core_record")
    ev = types.ModuleType("expanded_checklist.checklist.eval_core")
    ev.CoreRecord = core.CoreRecord
    sys.modules[ev.__name__] = ev
    tests = sys.modules["expanded_checklist.checklist.tests"]
    cls = importlib.import_module(
        "expanded_checklist.checklist.tests.classification.basic_classification_metrics")
    tests.BasicClassificationMetrics = cls.BasicClassificationMetrics
    tests.BasicSeqMetrics = type("BasicSeqMetrics", (), {})  # sequence tasks only
    pred = importlib.import_module("expanded_checklist.checklist.tests.task_agnostic.pred_scores")
    prob = importlib.import_module("expanded_checklist.checklist.tests.task_agnostic.prob_scores")
    utils = importlib.import_module("expanded_checklist.checklist.utils")
    return core, pred, prob, utils


def _run(core, utils, metric, data, meta, labels, preds, confs, shape, groups):
    rec = core.CoreRecord(data, meta, labels, preds, confs, [0, 1], shape, list(groups),
                          "SENT", 2, None)
    np.random.seed(SEED)  # noqa: NPY002 - their sample uses the global state
    rec.process_labels_preds_and_confs(metric.required_ds, metric.probability_based, True,
                                       metric.group_flatten_method)
    out = metric.compute(rec)
    return {str(cl): {(k if isinstance(k, str) else " | ".join(k)): float(v)
                      for k, v in res.items()}
            for cl, res in out.results.items()}, out.n_examples


def group_reference(core, pred, prob, utils, df):
    groups = sorted(df["group"].unique())
    parts = [df[df["group"] == g] for g in groups]
    data = [[f"x{i}" for i in p.index] for p in parts]
    meta = [[{} for _ in p.index] for p in parts]
    labels = [[int(v) for v in p["y"]] for p in parts]
    preds = [[int(v) for v in p["pred"]] for p in parts]
    confs = [[np.array([1 - v, v]) for v in p["prob"]] for p in parts]
    out = {}
    for name in ("FPED", "FNED", "FixedFPED", "FixedFNED", "FPRRatioBCM", "TPRGapPCM",
                 "TNRGapPCM", "DisparsityScore", "FixedDisparsityScore", "ParityGap"):
        out[name], _ = _run(core, utils, getattr(pred, name)(), data, meta, labels, preds,
                            confs, utils.DataShape.GROUPED, groups)
    for name in ("AverageGroupFairness", "AverageGroupFairnessOnlyClass",
                 "AverageEqualityGap"):
        out[name], _ = _run(core, utils, getattr(prob, name)(), data, meta, labels, preds,
                            confs, utils.DataShape.GROUPED, groups)
    return out


def counterfactual_reference(core, prob, utils, df):
    groups = list(dict.fromkeys(df["group"]))
    data, meta, labels, preds, confs = [], [], [], [], []
    for src, t in df.groupby("source", sort=False):
        per = [t[t["group"] == g].sort_values("term") for g in groups]
        both = list(zip(groups, per, strict=True))
        data.append([[f"{src}/{g}/{k}" for k in p["term"]] for g, p in both])
        m = {i: g for i, g in enumerate(groups)}
        m["SAMPLE"] = {g: [f"{g}{k}" for k in p["term"]] for g, p in both}
        m["TEMPLATE"] = src
        meta.append(m)
        labels.append(int(t["y"].iloc[0]))
        preds.append([[int(v >= 0.5) for v in p["prob"]] for p in per])
        confs.append([[np.array([1 - v, v]) for v in p["prob"]] for p in per])
    out = {}
    for name in ("CounterfactualFairnessGap", "PerturbationScoreSensitivity",
                 "PerturbationScoreDeviation", "PerturbationScoreRange",
                 "AverageIndividualFairness"):
        for flatten in (None, "AVERAGE"):
            metric = getattr(prob, name)()
            if flatten:  # the classes' other option: average each group's terms first
                if name == "AverageIndividualFairness":
                    continue
                metric._group_flatten_method = getattr(utils.FlattenGroup, flatten)
            res, n = _run(core, utils, metric, copy.deepcopy(data), copy.deepcopy(meta),
                          list(labels), copy.deepcopy(preds), copy.deepcopy(confs),
                          utils.DataShape.UNGROUPED, groups)
            out[name + (f"[{flatten}]" if flatten else "")] = {
                "flatten": str(metric.group_flatten_method), "results": res, "n_examples": n}
    return out


def main():
    sys.path.insert(0, str(HERE))
    import czarnowska_data as cd

    src = Path(os.environ.get("GFM_SRC", "/tmp/gfm/src"))
    core, pred, prob, utils = _import_authors_code(src)
    try:
        commit = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = ""
    import pandas_ml
    import scipy
    import sklearn
    out = {"provenance": {
        "command": "GFM_SRC=/tmp/gfm/src GFM_PKGS=/tmp/gfm/pkgs GFM_COMMIT=<commit> python "
                   "tests/data/reference/czarnowska_reference.py",
        "authors_code": "amazon-research/generalized-fairness-metrics, "
                        "expanded_checklist/checklist (metric classes run unchanged)",
        "authors_commit": commit or os.environ.get("GFM_COMMIT", ""),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": sys.version.split()[0], "platform": platform.platform(),
        "numpy": np.__version__, "scipy": scipy.__version__, "sklearn": sklearn.__version__,
        "pandas_ml": pandas_ml.__version__, "np_random_seed": SEED,
        "data": "tests/data/reference/czarnowska_data.py: group_data(seed=0), "
                "counterfactual_data(terms, seed=1)",
    }}
    out["group"] = group_reference(core, pred, prob, utils, cd.group_data(0))
    out["counterfactual"] = {t: counterfactual_reference(core, prob, utils,
                                                         cd.counterfactual_data(t, 1))
                             for t in cd.TERMS}
    (HERE / "czarnowska_reference.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "provenance"}, indent=1)[:3000])


if __name__ == "__main__":
    main()

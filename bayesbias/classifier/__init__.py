"""Bias in a classifier's predictions, measured on a sample, with honest uncertainty.

- :mod:`.data`: validation of score tables; identity groups recovered from templated text.
- :mod:`.bernstein`: Bernstein-bounded unfairness (Ethayarajh 2020) with Bayesian and
  bootstrap intervals side by side.
- :mod:`.auc`: the nuanced AUC metrics of Borkan et al. (2019) for many overlapping groups
  (sort once), with DeLong intervals.
- :mod:`.generalized`: PCM / BCM / VBCM / MCM of Czarnowska et al. (2021) and a registry of
  the named metrics from the literature.
- :mod:`.summary`: :func:`classifier_bias`, several metrics at once as one tidy table.
"""

from .._lazy import lazy_exports

# Imported on first use (PEP 562): `import bayesbias.classifier` stays light.
__getattr__, __dir__ = lazy_exports(__name__, {
    ".auc": (
        "AUC_METRICS",
        "nuanced_auc_baseline",
        "nuanced_auc_metrics",
        "nuanced_auc_table",
    ),
    ".bernstein": (
        "CRITERIA",
        "BBUResult",
        "bbu_by_group",
        "bernstein_half_width",
        "bernstein_min_n",
        "disparity_intervals",
        "groupwise_disparity",
        "smallest_claimable_delta",
    ),
    ".data": (
        "MADLIBS_REFERENCE_TERMS",
        "ClassifierData",
        "counterfactual_frames",
        "identity_groups",
        "identity_terms",
        "intersect_groups",
        "madlibs_data",
        "madlibs_terms",
        "MADLIBS_TERM_CATEGORIES",
        "validate_classifier_data",
    ),
    ".generalized": (
        "METRICS",
        "FairnessResult",
        "bcm",
        "compute_metric",
        "list_metrics",
        "mcm",
        "pcm",
        "vbcm",
    ),
    ".summary": (
        "ClassifierBias",
        "classifier_bias",
        "classifier_bias_from_arrays",
    ),
}, globals())

__all__ = [
    # data
    "ClassifierData", "validate_classifier_data", "identity_terms", "identity_groups",
    "intersect_groups", "counterfactual_frames", "madlibs_data", "MADLIBS_REFERENCE_TERMS",
    "madlibs_terms", "MADLIBS_TERM_CATEGORIES",
    # Bernstein-bounded unfairness
    "bernstein_half_width", "bernstein_min_n", "smallest_claimable_delta",
    "groupwise_disparity", "disparity_intervals", "bbu_by_group", "BBUResult", "CRITERIA",
    # nuanced AUC metrics
    "nuanced_auc_metrics", "nuanced_auc_table", "nuanced_auc_baseline", "AUC_METRICS",
    # everything at once
    "classifier_bias", "classifier_bias_from_arrays", "ClassifierBias",
    # generalized metrics
    "pcm", "bcm", "vbcm", "mcm", "compute_metric", "list_metrics", "METRICS", "FairnessResult",
]

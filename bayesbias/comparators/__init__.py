"""Frequentist comparators of embedding bias, each with intervals and null distributions.

WEAT (Caliskan et al. 2017) and MAC (Manzini et al. 2019) on similarity tables; RND, RNSB,
ECT, RIPA and Bolukbasi's direct and indirect bias on vectors (:mod:`.metrics`, one kernel
module each); the null-study engine (:mod:`.null`). The resampling they share with the
classifier metrics is :mod:`bayesbias.resampling`.
"""

from .._lazy import lazy_exports
from .mac import MacResult, MacTTest, class_scores, mac, mac_from_table, mac_ttest, mac_value
from .weat import (
    ALTERNATIVES,
    SD_CONVENTIONS,
    PermutationTest,
    WeatResult,
    association,
    bootstrap_effect_size,
    effect_size,
    mean_difference,
    permutation_test,
    sum_statistic,
    weat,
    weat_bound,
    weat_from_similarities,
    weat_from_table,
)

# The vector metrics (scipy.stats, xarray) are imported on first use (PEP 562), so that
# `bayesbias weat` and `mac` start without them. WEAT and MAC stay eager: their function
# names equal their module names, which lazy lookup would confuse.
__getattr__, __dir__ = lazy_exports(__name__, {
    ".metrics": ("METRICS", "MetricResult", "MetricTable", "embedding_metric", "metric_table"),
}, globals())

__all__ = [
    # WEAT, word layer
    "weat",
    "weat_from_table",
    "weat_from_similarities",
    "WeatResult",
    # WEAT, array layer
    "association",
    "effect_size",
    "sum_statistic",
    "mean_difference",
    "permutation_test",
    "PermutationTest",
    "bootstrap_effect_size",
    "weat_bound",
    "ALTERNATIVES",
    "SD_CONVENTIONS",
    # MAC
    "mac",
    "mac_from_table",
    "mac_ttest",
    "MacResult",
    "MacTTest",
    "class_scores",
    "mac_value",
    # RND, RNSB, ECT, RIPA, direct / indirect bias, WEAT-ES (word layer)
    "METRICS",
    "embedding_metric",
    "metric_table",
    "MetricResult",
    "MetricTable",
]

"""Frequentist comparators: WEAT (Caliskan et al. 2017) and MAC (Manzini et al. 2019)."""

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
    test_statistic,
    weat,
    weat_from_similarities,
    weat_from_table,
)

__all__ = [
    # WEAT, word layer
    "weat",
    "weat_from_table",
    "weat_from_similarities",
    "WeatResult",
    # WEAT, array layer
    "association",
    "effect_size",
    "test_statistic",
    "mean_difference",
    "permutation_test",
    "PermutationTest",
    "bootstrap_effect_size",
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
]

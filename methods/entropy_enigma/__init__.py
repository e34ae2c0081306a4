"""Entropy Enigma (Press, Shwartz-Ziv, LeCun & Bethge, ICML 2024): estimate a model's accuracy
on unlabelled data from how many predictions flip under test-time entropy minimisation.

Only BatchNorm affine parameters adapt, under batch statistics; the target is the un-adapted
model's accuracy (running statistics). The CPU-scale protocol (digits, a BN-MLP, 30 shifts)
runs all sets at once: each set gets its own copy of the BN layers (GroupedBatchNorm).
"""

from methods._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "adapt": ["EataLoss", "configure_for_em", "entropy", "entropy_minimize", "group_for_em", "predict"],
    "data": ["KINDS", "all_shifts", "apply_shift", "load_digits_split"],
    "flips": ["FlipStats", "authors_accuracy", "estimate_flips", "estimate_flips_many", "fit_flips_to_acc", "loco_predictions", "rank_weights"],
    "model": ["DigitsBNMLP", "builtin_source_model", "train_source"],
})

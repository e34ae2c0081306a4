"""Entropy Enigma (Press, Shwartz-Ziv, LeCun & Bethge, ICML 2024): estimate a model's accuracy
on unlabelled data from how many predictions flip under test-time entropy minimisation.

Only BatchNorm affine parameters adapt, under batch statistics; the target is the un-adapted
model's accuracy (running statistics). The CPU-scale protocol (digits, a BN-MLP, 30 shifts)
runs all sets at once: each set gets its own copy of the BN layers (GroupedBatchNorm).
"""

# Lazy: the workbench imports this package to read tools.py, which must not pull in
# numpy/scipy/torch; attributes load their module on first use (PEP 562).
from importlib import import_module

_EXPORTS = {
    "DigitsBNMLP": "methods.entropy_enigma.model",
    "EataLoss": "methods.entropy_enigma.adapt",
    "FlipStats": "methods.entropy_enigma.flips",
    "KINDS": "methods.entropy_enigma.data",
    "all_shifts": "methods.entropy_enigma.data",
    "apply_shift": "methods.entropy_enigma.data",
    "authors_accuracy": "methods.entropy_enigma.flips",
    "builtin_source_model": "methods.entropy_enigma.model",
    "configure_for_em": "methods.entropy_enigma.adapt",
    "entropy": "methods.entropy_enigma.adapt",
    "entropy_minimize": "methods.entropy_enigma.adapt",
    "estimate_flips": "methods.entropy_enigma.flips",
    "estimate_flips_many": "methods.entropy_enigma.flips",
    "fit_flips_to_acc": "methods.entropy_enigma.flips",
    "group_for_em": "methods.entropy_enigma.adapt",
    "load_digits_split": "methods.entropy_enigma.data",
    "loco_predictions": "methods.entropy_enigma.flips",
    "predict": "methods.entropy_enigma.adapt",
    "rank_weights": "methods.entropy_enigma.flips",
    "train_source": "methods.entropy_enigma.model",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

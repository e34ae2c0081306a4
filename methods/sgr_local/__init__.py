"""Local learning with successive gradient reconciliation (SGR).

After Yang et al., "Towards Interpretable Deep Local Learning with Successive Gradient
Reconciliation" (ICML 2024, arXiv 2406.05222).

[unverified reconstruction of SGR (arXiv 2406.05222): no public code; penalty form, weight and
normalisation are hyperparameters]

A network is cut into gradient-isolated modules, each with its own auxiliary head and loss, all
trained at once from the same minibatch. SGR adds to module l's loss the distance between its
input-gradient G^in_l = ∂CE_l/∂h_{l-1} and the output-gradient G^out_{l-1} = ∂CE_{l-1}/∂h_{l-1}
that module l-1 computed from its own CE and passed forward as a constant (the "forward mode"
of the paper's Fig. 1). Choices this package makes where the paper's text was not available:
squared L2 per sample (``distance="l2"``, or ``"cosine"``), summed-CE per-sample gradients,
λ = 1, the stop-gradient on the previous module's side, G^out handed forward within the same
step (no pipeline delay). The "BP-free" variant is not implemented.
"""


from __future__ import annotations

import importlib

# Exports resolve lazily: importing methods.sgr_local.tools (as the workbench does to list
# tools) must never pull in numpy or torch.
_EXPORTS = {
    "LocalNet": "methods.sgr_local.model",
    "ModuleContext": "methods.sgr_local.rules",
    "SavedTensorMeter": "methods.sgr_local.memory",
    "Split": "methods.sgr_local.data",
    "TrainConfig": "methods.sgr_local.training",
    "TrainResult": "methods.sgr_local.training",
    "grad_cosines": "methods.sgr_local.training",
    "load_digits_split": "methods.sgr_local.data",
    "load_npz_split": "methods.sgr_local.data",
    "local_rule": "methods.sgr_local.rules",
    "sgr_penalty": "methods.sgr_local.rules",
    "sgr_rule": "methods.sgr_local.rules",
    "train": "methods.sgr_local.training",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

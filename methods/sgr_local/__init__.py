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

from methods._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "data": ["Split", "load_digits_split", "load_npz_split"],
    "memory": ["SavedTensorMeter"],
    "model": ["LocalNet"],
    "rules": ["ModuleContext", "local_rule", "sgr_penalty", "sgr_rule"],
    "training": ["TrainConfig", "TrainResult", "grad_cosines", "train"],
})

"""LN-Nets: networks of linear layers and LayerNorm only, their capacity, and LSSR.

After Ni, Guo, Jia & Huang, "On the Nonlinearity of Layer Normalization" (ICML 2024,
arXiv 2406.01255).

[width-3 construction and LSSR are reconstructions (verify.md) consistent with the abstract's
claims; the paper's own construction may differ]

* :mod:`.ln` -- LN without affine (absorbed by the next linear layer) and LN-G (LN inside
  contiguous groups; no per-group affine, ε = 1e-5, ``groups`` is the group count: the package's
  choices where the paper's LN-G details were not seen).
* :mod:`.net` / :mod:`.capacity` -- trained LN-Nets on random labels against the same net with
  the norms removed (a single affine map).
* :mod:`.construction` -- verify.md's width-3 construction: LN maps R³ onto a circle, so each layer
  is a map of the circle; same-label clusters are merged one pair per layer.
* :mod:`.scatter` (``lssr``) -- the linear-invariant lower bound of the sum-of-squares ratio.
The VC-dimension bound is not implemented.
"""


from __future__ import annotations

import importlib

# Exports resolve lazily: importing methods.ln_net.tools (as the workbench does to list
# tools) must never pull in numpy or torch.
_EXPORTS = {
    "Construction": "methods.ln_net.construction",
    "GroupLayerNorm": "methods.ln_net.ln",
    "LNNet": "methods.ln_net.net",
    "construct": "methods.ln_net.construction",
    "forward_construction": "methods.ln_net.construction",
    "group_layer_norm": "methods.ln_net.ln",
    "layer_norm": "methods.ln_net.ln",
    "lssr": "methods.ln_net.scatter",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

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

from methods._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "construction": ["Construction", "construct", "forward_construction"],
    "ln": ["GroupLayerNorm", "group_layer_norm", "layer_norm"],
    "net": ["LNNet"],
    "scatter": ["lssr"],
})

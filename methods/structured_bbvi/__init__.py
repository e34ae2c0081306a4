"""Structured BBVI (Ko, Kim, Kim & Gardner, ICML 2024) on a hierarchical model with an exact posterior.

Mean-field, bordered block-diagonal ("structured") and full-rank Gaussian families, trained by
reparameterised BBVI. Optimiser and step grid from the authors' Dec-2023 code
(Red-Portal/HierarchicalBayesZoo.jl @4aad55f); the paper's theory (which may analyse projected or
proximal SGD rather than Adam) is unverified. The explanation that full-rank must shrink its step
as N grows (each of its O(d²) scale entries jitters by about the step) is ours.
"""

from methods._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "families": ["FAMILIES", "Family", "FullRank", "MeanField", "Structured", "n_scale_params", "structured_mask"],
    "problem": ["Dims", "HierProblem", "make_problem"],
    "vi": ["RunResult", "fit", "make_optimizer"],
})

"""Structured BBVI (Ko, Kim, Kim & Gardner, ICML 2024) on a hierarchical model with an exact posterior.

Mean-field, bordered block-diagonal ("structured") and full-rank Gaussian families, trained by
reparameterised BBVI. Optimiser and step grid from the authors' Dec-2023 code
(Red-Portal/HierarchicalBayesZoo.jl @4aad55f); the paper's theory (which may analyse projected or
proximal SGD rather than Adam) is unverified. The explanation that full-rank must shrink its step
as N grows (each of its O(d²) scale entries jitters by about the step) is ours.
"""

from methods.structured_bbvi.families import (
    FAMILIES,
    Family,
    FullRank,
    MeanField,
    Structured,
    n_scale_params,
    structured_mask,
)
from methods.structured_bbvi.problem import Dims, HierProblem, make_problem
from methods.structured_bbvi.vi import RunResult, fit, make_optimizer

__all__ = [
    "FAMILIES",
    "Dims",
    "Family",
    "FullRank",
    "HierProblem",
    "MeanField",
    "RunResult",
    "Structured",
    "fit",
    "make_optimizer",
    "make_problem",
    "n_scale_params",
    "structured_mask",
]
